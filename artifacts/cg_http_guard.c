/*  cg_http_guard — Host, Origin and bearer-token checks for the listener's routes, and the
    tokens the server keeps in its state dir. */
#define _GNU_SOURCE
#include "artifacts/cg_http_guard.h"
#include "base/cg_util.h"

#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

//  True when AUTHORITY ("host:port", LEN bytes) names HTTP on loopback.
static bool
s_loopback_authority (cg_http_t *http, const char *authority, size_t len)
{
    int port = cg_http_port (http);
    const char *hosts[] = {"127.0.0.1", "localhost", "[::1]", NULL};
    for (int i = 0; hosts[i]; i++) {
        cleanup_free char *expected = cg_strdupf ("%s:%d", hosts[i], port);
        if (strlen (expected) == len && strncasecmp (expected, authority, len) == 0)
            return true;
    }
    return false;
}

bool
cg_http_guard_origin (cg_http_t *http, cg_http_exchange_t *ex)
{
    //  Untrusted: Host and Origin are the client's.
    const char *host = cg_http_exchange_header (ex, "Host");
    if (cg_http_loopback (http) && (!host || !s_loopback_authority (http, host, strlen (host))))
        return false;
    const char *origin = cg_http_exchange_header (ex, "Origin");
    if (!origin)
        return true;
    const char *authority = strstr (origin, "://");
    if (!authority || (strncmp (origin, "http://", 7) != 0 && strncmp (origin, "https://", 8) != 0))
        return false;
    authority += 3;
    size_t len = strcspn (authority, "/");
    return s_loopback_authority (http, authority, len)
           || (host && strlen (host) == len && strncasecmp (host, authority, len) == 0);
}

int
cg_http_guard_token_index (cg_http_exchange_t *ex, const char *expected)
{
    if (!expected)
        return 0;
    const char *given = cg_http_exchange_header (ex, "Authorization");
    if (!given || strncasecmp (given, "Bearer ", 7) != 0)
        return -1;
    given += 7;
    size_t len = strlen (given);
    //  EXPECTED may list several tokens, comma-separated (one per client): each is compared
    //  in constant time, and all of them are.
    int match = -1;
    for (int index = 0; *expected; index++) {
        size_t token_len = strcspn (expected, ",");
        if (len == token_len && sodium_memcmp (given, expected, len) == 0)
            match = index;
        expected += token_len + (expected[token_len] == ',');
    }
    return match;
}

bool
cg_http_guard_token (cg_http_exchange_t *ex, const char *expected)
{
    return cg_http_guard_token_index (ex, expected) >= 0;
}

void
cg_http_guard_unauthorized (cg_http_exchange_t *ex)
{
    static const char *bearer[] = {"WWW-Authenticate", "Bearer realm=\"cellgate\"", NULL};
    static const char body[] = "{\"error\":\"unauthorized\",\"message\":\"send "
                               "Authorization: Bearer <token>\"}";
    cg_http_respond (ex, 401, "application/json", body, sizeof body - 1, bearer);
}

bool
cg_http_guard_admin (cg_http_exchange_t *ex, const char *token)
{
    static const char *bearer[] = {"WWW-Authenticate", "Bearer realm=\"cellgate admin\"", NULL};
    static const char body[] =
        "{\"error\":\"unauthorized\",\"message\":\"the operator routes (/admin/sessions, "
        "/metrics) need the admin token: Authorization: Bearer <the content of admin-token in "
        "the server's state dir, or its --admin-token>; the MCP and gateway tokens do not "
        "open them\"}";
    if (!token) {
        cg_http_respond_error (ex, 503, "unavailable",
                               "the operator routes are off: the server could not keep an admin "
                               "token (see its log; set --admin-token)");
        return false;
    }
    if (cg_http_guard_token (ex, token))
        return true;
    cg_http_respond (ex, 401, "application/json", body, sizeof body - 1, bearer);
    return false;
}

#define S_KEPT_MIN 16
#define S_KEPT_MAX 256

//  Returns the valid token in NAME under DIR_FD (see cg_http_guard_kept_token), or NULL.
static char *
s_kept_read (int dir_fd, const char *name)
{
    cleanup_close int fd = openat (dir_fd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat (fd, &st) < 0 || !S_ISREG (st.st_mode) || st.st_uid != geteuid ()
        || (st.st_mode & 077) != 0 || st.st_size < S_KEPT_MIN || st.st_size > S_KEPT_MAX)
        return NULL;
    char *token = cg_xcalloc (1, S_KEPT_MAX + 1);
    ssize_t n = read (fd, token, S_KEPT_MAX);
    if (n < S_KEPT_MIN || strspn (token, "0123456789abcdef") != (size_t)n) {
        sodium_memzero (token, S_KEPT_MAX);
        free (token);
        return NULL;
    }
    return token;
}

//  Writes TOKEN to NAME under DIR_FD, 0600, unless NAME exists. Returns 0, or -1 with
//  errno set (EEXIST: it exists).
static int
s_kept_write (int dir_fd, const char *name, const char *token)
{
    char tmp[32] = ".cg-tmp-";
    cg_random_hex (tmp + 8, 8);
    cleanup_close int fd =
        openat (dir_fd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return -1;
    size_t len = strlen (token);
    int rc = fchmod (fd, 0600) == 0 && write (fd, token, len) == (ssize_t)len ? 0 : -1;
    if (rc == 0)
        rc = renameat2 (dir_fd, tmp, dir_fd, name, RENAME_NOREPLACE);
    int saved = errno;
    if (rc < 0)
        unlinkat (dir_fd, tmp, 0);
    errno = saved;
    return rc;
}

char *
cg_http_guard_kept_token (const char *dir, const char *name, cg_error_t **err)
{
    cleanup_close int dir_fd = open (dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir_fd < 0) {
        cg_error_set (err, errno, "open %s: %s", dir, strerror (errno));
        return NULL;
    }
    for (int attempt = 0; attempt < 3; attempt++) {
        char *kept = s_kept_read (dir_fd, name);
        if (kept)
            return kept;
        char token[65];
        cg_random_hex (token, 32);
        if (s_kept_write (dir_fd, name, token) == 0)
            return cg_xstrdup (token);
        if (errno != EEXIST) {
            cg_error_set (err, errno, "write %s/%s: %s", dir, name, strerror (errno));
            return NULL;
        }
        //  There is one: another server's, just made (read at the next turn), or one
        //  that is not a token of ours (a wrong owner or mode, a link): replaced.
        if (!(kept = s_kept_read (dir_fd, name)))
            unlinkat (dir_fd, name, 0);
        else
            return kept;
    }
    cg_error_set (err, EEXIST, "%s/%s: cannot replace what is there with a token", dir, name);
    return NULL;
}
