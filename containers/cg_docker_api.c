/*  cg_docker_api — the Docker Engine API over a unix socket with libcurl. */
#define _GNU_SOURCE
#include "containers/cg_docker_api.h"
#include "base/cg_util.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

//  The largest answer read (a container list of thousands is far below it).
#define S_REPLY_MAX (8 * 1024 * 1024)
#define S_TIMEOUT_S 60

struct cg_docker_api_t {
    char *host;        /* unix:///path or tcp://host:port */
    char *socket_path; /* the unix socket, or NULL for tcp */
    char *base_url;    /* http://docker or http://host:port */
    CURL *raw;         /* cg_docker_api_connect's */
};

typedef struct {
    char *data;
    size_t len;
    bool too_long;
} s_buffer_t;

static size_t
s_write_cb (char *data, size_t size, size_t count, void *arg)
{
    s_buffer_t *buf = arg;
    size_t n = size * count;
    if (buf->len + n > S_REPLY_MAX) {
        buf->too_long = true;
        return 0;
    }
    buf->data = cg_xrealloc (buf->data, buf->len + n + 1);
    memcpy (buf->data + buf->len, data, n);
    buf->len += n;
    buf->data[buf->len] = '\0';
    return n;
}

cg_docker_api_t *
cg_docker_api_new (const char *host, bool allow_tcp, cg_error_t **err)
{
    static bool initialized;
    if (!initialized) {
        curl_global_init (CURL_GLOBAL_NOTHING);
        initialized = true;
    }
    if (!host || !*host)
        host = getenv ("DOCKER_HOST");
    if (!host || !*host)
        host = "unix:///var/run/docker.sock";
    cg_docker_api_t *self = cg_xcalloc (1, sizeof *self);
    self->host = cg_xstrdup (host);
    if (strncmp (host, "unix://", 7) == 0 && host[7] == '/') {
        self->socket_path = cg_xstrdup (host + 7);
        self->base_url = cg_xstrdup ("http://docker");
    }
    else if (strncmp (host, "tcp://", 6) == 0 && allow_tcp && host[6])
        self->base_url = cg_strdupf ("http://%s", host + 6);
    else {
        cg_error_set (err, EINVAL,
                      strncmp (host, "tcp://", 6) == 0
                          ? "docker host %s: tcp:// has no TLS here, so anyone who reaches the "
                            "port is root on the engine; allow it with --docker-tcp on"
                          : "docker host %s: not unix:///path or tcp://host:port",
                      host);
        cg_docker_api_destroy (&self);
        return NULL;
    }
    return self;
}

void
cg_docker_api_destroy (cg_docker_api_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    cg_docker_api_t *self = *self_p;
    if (self->raw)
        curl_easy_cleanup (self->raw);
    free (self->host);
    free (self->socket_path);
    free (self->base_url);
    free (self);
    *self_p = NULL;
}

const char *
cg_docker_api_host (cg_docker_api_t *self)
{
    return self->host;
}

//  Points CURL at SELF's socket and URL PATH.
static void
s_target (cg_docker_api_t *self, CURL *curl, const char *path)
{
    cleanup_free char *url = cg_strdupf ("%s/" CG_DOCKER_API_VERSION "%s", self->base_url, path);
    curl_easy_setopt (curl, CURLOPT_URL, url);
    if (self->socket_path)
        curl_easy_setopt (curl, CURLOPT_UNIX_SOCKET_PATH, self->socket_path);
    curl_easy_setopt (curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt (curl, CURLOPT_PROTOCOLS_STR, "http");
}

int
cg_docker_api_call (cg_docker_api_t *self, const char *method, const char *path, json_t *body,
                    json_t **reply, cg_error_t **err)
{
    if (reply)
        *reply = NULL;
    //  A handle per call: runner threads call at once, and a handle is not to be shared.
    CURL *curl = curl_easy_init ();
    if (!curl)
        abort ();
    s_target (self, curl, path);
    curl_easy_setopt (curl, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt (curl, CURLOPT_TIMEOUT, (long)S_TIMEOUT_S);
    cleanup_free char *text = body ? json_dumps (body, JSON_COMPACT) : NULL;
    struct curl_slist *headers = curl_slist_append (NULL, "Content-Type: application/json");
    headers = curl_slist_append (headers, "Expect:");
    curl_easy_setopt (curl, CURLOPT_HTTPHEADER, headers);
    if (text || strcmp (method, "POST") == 0) {
        curl_easy_setopt (curl, CURLOPT_POSTFIELDS, text ? text : "");
        curl_easy_setopt (curl, CURLOPT_POSTFIELDSIZE, (long)(text ? strlen (text) : 0));
    }
    s_buffer_t buf = {0};
    curl_easy_setopt (curl, CURLOPT_WRITEFUNCTION, s_write_cb);
    curl_easy_setopt (curl, CURLOPT_WRITEDATA, &buf);
    CURLcode rc = curl_easy_perform (curl);
    curl_slist_free_all (headers);
    long status = 0;
    curl_easy_getinfo (curl, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_cleanup (curl);
    if (rc != CURLE_OK) {
        free (buf.data);
        return cg_error_set (err, buf.too_long ? E2BIG : EIO, "%s %s on %s: %s", method, path,
                             self->host,
                             buf.too_long ? "answer too long" : curl_easy_strerror (rc));
    }
    //  The engine's answer: JSON or nothing (204), else an error that says so.
    json_t *value = NULL;
    if (buf.len > 0) {
        json_error_t jerr;
        value = json_loadb (buf.data, buf.len, JSON_DECODE_ANY, &jerr);
        if (!value) {
            int n =
                cg_error_set (err, EPROTO, "%s %s on %s: status %ld, not JSON: %.*s", method, path,
                              self->host, status, (int)(buf.len > 200 ? 200 : buf.len), buf.data);
            free (buf.data);
            return n;
        }
    }
    free (buf.data);
    if (reply)
        *reply = value;
    else
        json_decref (value);
    return (int)status;
}

int
cg_docker_api_fail (int status, json_t *reply, cg_error_t **err, const char *format, ...)
{
    va_list args;
    va_start (args, format);
    cleanup_free char *context = NULL;
    if (vasprintf (&context, format, args) < 0)
        abort ();
    va_end (args);
    const char *message = json_string_value (json_object_get (reply, "message"));
    return cg_error_set (err, status == 404 ? ENOENT : EIO, "%s: %s (status %d)", context,
                         message ? message : "the engine refused", status);
}

int
cg_docker_api_connect (cg_docker_api_t *self, cg_error_t **err)
{
    if (self->raw)
        curl_easy_cleanup (self->raw);
    self->raw = curl_easy_init ();
    if (!self->raw)
        abort ();
    s_target (self, self->raw, "/_ping");
    curl_easy_setopt (self->raw, CURLOPT_CONNECT_ONLY, 1L);
    CURLcode rc = curl_easy_perform (self->raw);
    curl_socket_t fd = CURL_SOCKET_BAD;
    if (rc == CURLE_OK)
        rc = curl_easy_getinfo (self->raw, CURLINFO_ACTIVESOCKET, &fd);
    if (rc != CURLE_OK || fd == CURL_SOCKET_BAD)
        return cg_error_set (err, EIO, "connect to %s: %s", self->host, curl_easy_strerror (rc));
    //  libcurl leaves it non-blocking; the attach is read and written in blocking calls.
    int flags = fcntl (fd, F_GETFL);
    if (flags < 0 || fcntl (fd, F_SETFL, flags & ~O_NONBLOCK) < 0)
        return cg_error_set (err, errno, "connect to %s: %s", self->host, strerror (errno));
    return (int)fd;
}

char *
cg_docker_api_escape (cg_docker_api_t *self, const char *text)
{
    (void)self;
    char *escaped = curl_easy_escape (NULL, text, 0);
    if (!escaped)
        abort ();
    char *copy = cg_xstrdup (escaped);
    curl_free (escaped);
    return copy;
}
