/*  cg_downloads — artifact downloads over the HTTP listener: GET|HEAD
    /files/<session_id>/<path>?token=<token> streams a file of that session's workspace. */
#define _GNU_SOURCE
#include "artifacts/cg_downloads.h"
#include "artifacts/cg_metrics.h"

#include "base/cg_util.h"

#include <assert.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>

struct cg_downloads_t {
    cg_downloads_lookup_fn *lookup;
    void *lookup_arg;
};

/*  Types a browser would render with script on the listener's origin: always downloaded. */
static bool
s_is_active_content (const char *mime)
{
    return strcmp (mime, "text/html") == 0 || strcmp (mime, "image/svg+xml") == 0
           || strcmp (mime, "application/xhtml+xml") == 0 || strcmp (mime, "text/xml") == 0
           || strcmp (mime, "application/xml") == 0;
}

static void
s_not_found (cg_http_exchange_t *ex)
{
    cg_http_respond_error (ex, 404, "not_found", "no such file");
}

//  The route's handler: the listener has already refused other methods than GET and HEAD
//  and requests with a body.
static void
s_serve (void *arg, cg_http_exchange_t *ex)
{
    cg_downloads_t *self = arg;
    /*  Untrusted from here on: the session id, the path and the token all come from the
        client's URL, raw (the listener leaves escapes alone), at most CG_HTTP_URL_MAX
        bytes in all. */
    const char *rest = cg_http_exchange_path (ex) + strlen (CG_DOWNLOADS_PREFIX);
    const char *slash = strchr (rest, '/');
    if (!slash) {
        s_not_found (ex);
        return;
    }
    const char *raw_token = cg_http_exchange_query (ex, "token");
    size_t session_len = 0, path_len = 0, token_len = 0;
    cleanup_free char *session_id =
        cg_http_percent_decode (rest, (size_t)(slash - rest), &session_len);
    cleanup_free char *path = cg_http_percent_decode (slash + 1, strlen (slash + 1), &path_len);
    cleanup_free char *token =
        raw_token ? cg_http_percent_decode (raw_token, strlen (raw_token), &token_len) : NULL;
    if (!session_id || !path || (raw_token && !token)) {
        cg_http_respond_error (ex, 400, "bad_request", "malformed percent-encoding in the URL");
        return;
    }

    /*  Whatever fails before the file is open gets the same 404, so that a client without
        the token learns nothing about which sessions or files exist. */
    if (!token || token_len == 0 || token_len > CG_DOWNLOADS_TOKEN_MAX || session_len == 0
        || session_len > CG_SESSION_ID_MAX || memchr (session_id, '\0', session_len)) {
        s_not_found (ex);
        return;
    }
    cg_workspace_t *workspace = self->lookup (self->lookup_arg, session_id, token, token_len);
    if (!workspace) {
        s_not_found (ex);
        return;
    }

    cg_error_t *err = NULL;
    cleanup_free char *rel = cg_workspace_normalize_len (path, path_len, &err);
    if (!rel) {
        cg_log (3, "http: download from %s refused: %s", session_id, cg_error_message (err));
        cg_error_destroy (&err);
        s_not_found (ex);
        return;
    }
    struct stat st;
    int fd = cg_workspace_open_file (workspace, rel, O_RDONLY, &st, &err);
    if (fd < 0) {
        cg_log (3, "http: download of %s from %s refused: %s", rel, session_id,
                cg_error_message (err));
        cg_error_destroy (&err);
        s_not_found (ex);
        return;
    }
    const char *slash_in_rel = strrchr (rel, '/');
    const char *mime = cg_mime_type (slash_in_rel ? slash_in_rel + 1 : rel);
    const char *headers[] = {"Content-Security-Policy", "sandbox",
                             s_is_active_content (mime) ? "Content-Disposition" : NULL,
                             "attachment", NULL};
    cg_log (3, "http: %s %s from %s (%lld bytes)", cg_http_exchange_method (ex), rel, session_id,
            (long long)st.st_size);
    if (strcmp (cg_http_exchange_method (ex), "GET") == 0)
        cg_metrics_download ((uint64_t)st.st_size);
    cg_http_respond_file (ex, &fd, (uint64_t)st.st_size, mime, headers);
}

cg_downloads_t *
cg_downloads_new (cg_http_t *http, cg_downloads_lookup_fn *lookup, void *arg)
{
    assert (http && lookup);
    cg_downloads_t *self = cg_xcalloc (1, sizeof *self);
    self->lookup = lookup;
    self->lookup_arg = arg;
    cg_http_route (http, CG_DOWNLOADS_PREFIX, CG_HTTP_PREFIX | CG_HTTP_GET_ONLY, 0, s_serve, self);
    return self;
}

void
cg_downloads_destroy (cg_downloads_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    free (*self_p);
    *self_p = NULL;
}

/*  Appends the LEN bytes at IN to *P, percent-encoding all but RFC 3986 unreserved bytes. */
static void
s_percent_encode (char **p, const char *in, size_t len)
{
    static const char hex[] = "0123456789ABCDEF";
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)in[i];
        if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'
            || c == '.' || c == '_' || c == '~')
            *(*p)++ = (char)c;
        else {
            *(*p)++ = '%';
            *(*p)++ = hex[c >> 4];
            *(*p)++ = hex[c & 15];
        }
    }
}

char *
cg_downloads_url (cg_http_t *http, const char *session_id, const char *token, const char *rel)
{
    cg_error_t *err = NULL;
    cleanup_free char *canonical = cg_workspace_normalize (rel, &err);
    if (!canonical) {
        cg_error_destroy (&err);
        return NULL;
    }
    cleanup_free char *prefix = cg_strdupf ("%s" CG_DOWNLOADS_PREFIX, cg_http_base_url (http));
    size_t cap = strlen (prefix) + 3 * (strlen (session_id) + strlen (canonical) + strlen (token))
                 + sizeof "/?token=";
    char *url = cg_xmalloc (cap);
    char *p = stpcpy (url, prefix);
    s_percent_encode (&p, session_id, strlen (session_id));
    *p++ = '/';
    for (const char *segment = canonical;;) {
        const char *end = strchrnul (segment, '/');
        s_percent_encode (&p, segment, (size_t)(end - segment));
        if (*end == '\0')
            break;
        *p++ = '/';
        segment = end + 1;
    }
    p = stpcpy (p, "?token=");
    s_percent_encode (&p, token, strlen (token));
    *p = '\0';
    return url;
}
