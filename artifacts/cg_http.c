/*  cg_http — the HTTP listener (GNU libmicrohttpd, driven from the caller's poll loop):
    requests dispatched to the routes its callers register, with bounded URLs, headers,
    bodies and connections. */
#define _GNU_SOURCE
#include "artifacts/cg_http.h"
#include "artifacts/cg_http_listen.h"
#include "artifacts/cg_http_policy.h"

#include "base/cg_limits.h"
#include "base/cg_log.h"
#include "base/cg_utf8.h"
#include "base/cg_util.h"

#include <assert.h>
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <microhttpd.h>
#include <zmq.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

//  A request handler that holds the loop this long is logged (debug), with its request.
#define S_SLOW_HANDLER_US 20000

typedef struct {
    char *path;
    size_t path_len;
    unsigned flags; /* CG_HTTP_PREFIX, CG_HTTP_GET_ONLY */
    size_t body_max;
    cg_http_handler_fn *handler;
    void *arg;
} s_route_t;

struct cg_http_t {
    struct MHD_Daemon *daemon;
    int port;       /* the bound port */
    char *url_host; /* host part of URLs to us: "127.0.0.1", "[::1]" */
    char *base_url; /* what links to us start with: "http://HOST:PORT" or the public URL */
    bool loopback;  /* bound to a loopback address */
    s_route_t *routes;
    size_t routes_len;
    cg_http_exchange_t *exchanges; /* live exchanges (to resume before stopping) */
    cg_http_policy_t *policy;      /* who may hold connections, and how long they wait */
    cg_http_observer_fn *observer; /* told of every response, or NULL */
    void *observer_arg;
};

struct cg_http_exchange_t {
    int refs;
    cg_http_t *http;
    struct MHD_Connection *connection; /* NULL once the request is over */
    cg_http_handler_fn *handler;       /* the route's, with its ARG and BODY_MAX */
    void *arg;
    size_t body_max;
    char *method;
    char *path;
    char *body;
    size_t body_len, body_cap;
    bool too_large;               /* the body passed the limit: 413 */
    bool called;                  /* the handler has seen it */
    bool suspended;               /* waiting in the access callback for an answer */
    struct MHD_Response *pending; /* the answer, queued at the next access callback */
    unsigned int pending_status;
    bool answered;
    bool streaming; /* an SSE body: BUF is what is still to be sent */
    bool stream_closed;
    bool reader_suspended; /* waiting in the content reader for more to send */
    char *buf;
    size_t buf_len, buf_off;
    cg_http_exchange_t *next, *prev;
};

/*  One request; MHD keeps it in *con_cls from the URI callback until the completion
    callback. */
typedef struct {
    cg_http_t *http;
    const char *route;            /* the path of the route that took it, or NULL */
    size_t target_len;            /* length of the raw request target, query included */
    bool answered;                /* a response is queued */
    cg_http_exchange_t *exchange; /* once a route has taken the request */
} s_request_t;

/*  --------------------------------------------------------------------------------------
    Responses */

static enum MHD_Result
s_queue (struct MHD_Connection *connection, s_request_t *request, unsigned int status,
         struct MHD_Response *response)
{
    enum MHD_Result rc = MHD_queue_response (connection, status, response);
    MHD_destroy_response (response);
    if (rc == MHD_YES) {
        request->answered = true;
        cg_http_policy_request_in (connection);
    }
    if (rc == MHD_YES && request->http->observer)
        request->http->observer (request->http->observer_arg, request->route, status);
    return rc;
}

static void
s_add_common_headers (struct MHD_Response *response)
{
    MHD_add_response_header (response, "X-Content-Type-Options", "nosniff");
    MHD_add_response_header (response, "Cache-Control", "no-store");
}

/*  Returns {"error": CODE, "message": MESSAGE} as JSON text. Caller owns the result. */
static char *
s_error_body (const char *code, const char *message)
{
    json_t *body_json = json_pack ("{s:s, s:s}", "error", code, "message", message);
    char *body = body_json ? json_dumps (body_json, JSON_COMPACT) : NULL;
    json_decref (body_json);
    if (!body)
        abort ();
    return body;
}

/*  Queues {"error": CODE, "message": MESSAGE} with STATUS. MESSAGE never echoes client
    input. Returns MHD_NO (closing the connection) only when MHD refuses the response. */
static enum MHD_Result
s_respond_error (struct MHD_Connection *connection, s_request_t *request, unsigned int status,
                 const char *code, const char *message)
{
    cleanup_free char *body = s_error_body (code, message);
    struct MHD_Response *response =
        MHD_create_response_from_buffer (strlen (body), body, MHD_RESPMEM_MUST_COPY);
    if (!response)
        return MHD_NO;
    MHD_add_response_header (response, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
    s_add_common_headers (response);
    if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
        MHD_add_response_header (response, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
    return s_queue (connection, request, status, response);
}

/*  --------------------------------------------------------------------------------------
    URL pieces */

static int
s_hex_value (char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

char *
cg_http_percent_decode (const char *in, size_t len, size_t *out_len)
{
    char *out = cg_xmalloc (len + 1);
    size_t used = 0;
    for (size_t i = 0; i < len; i++) {
        if (in[i] != '%') {
            out[used++] = in[i];
            continue;
        }
        int high = i + 2 < len ? s_hex_value (in[i + 1]) : -1;
        int low = i + 2 < len ? s_hex_value (in[i + 2]) : -1;
        if (high < 0 || low < 0) {
            free (out);
            return NULL;
        }
        out[used++] = (char)(high * 16 + low);
        i += 2;
    }
    out[used] = '\0';
    *out_len = used;
    return out;
}

/*  --------------------------------------------------------------------------------------
    Exchanges: requests handed whole to a route's handler, answered now or later */

static void
s_exchange_unlink (cg_http_exchange_t *ex)
{
    if (!ex->http)
        return;
    if (ex->prev)
        ex->prev->next = ex->next;
    else
        ex->http->exchanges = ex->next;
    if (ex->next)
        ex->next->prev = ex->prev;
    ex->next = ex->prev = NULL;
    ex->http = NULL;
}

cg_http_exchange_t *
cg_http_exchange_keep (cg_http_exchange_t *exchange)
{
    exchange->refs++;
    return exchange;
}

void
cg_http_exchange_release (cg_http_exchange_t **exchange_p)
{
    if (!exchange_p || !*exchange_p)
        return;
    cg_http_exchange_t *ex = *exchange_p;
    *exchange_p = NULL;
    if (--ex->refs > 0)
        return;
    if (ex->pending)
        MHD_destroy_response (ex->pending);
    free (ex->method);
    free (ex->path);
    free (ex->body);
    free (ex->buf);
    free (ex);
}

const char *
cg_http_exchange_method (cg_http_exchange_t *exchange)
{
    return exchange->method;
}

const char *
cg_http_exchange_path (cg_http_exchange_t *exchange)
{
    return exchange->path;
}

const char *
cg_http_exchange_query (cg_http_exchange_t *exchange, const char *name)
{
    return exchange->connection
               ? MHD_lookup_connection_value (exchange->connection, MHD_GET_ARGUMENT_KIND, name)
               : NULL;
}

const char *
cg_http_exchange_header (cg_http_exchange_t *exchange, const char *name)
{
    return exchange->connection
               ? MHD_lookup_connection_value (exchange->connection, MHD_HEADER_KIND, name)
               : NULL;
}

const char *
cg_http_exchange_body (cg_http_exchange_t *exchange, size_t *len)
{
    if (len)
        *len = exchange->body_len;
    return exchange->body ? exchange->body : "";
}

bool
cg_http_exchange_alive (cg_http_exchange_t *exchange)
{
    return exchange->connection != NULL;
}

//  Hands RESPONSE to the connection: at the next access callback, which a suspended
//  connection gets once resumed.
static void
s_answer (cg_http_exchange_t *ex, unsigned int status, struct MHD_Response *response,
          const char *const *headers)
{
    if (ex->answered || !ex->connection) {
        MHD_destroy_response (response);
        return;
    }
    s_add_common_headers (response);
    for (size_t i = 0; headers && headers[i] && headers[i + 1]; i += 2)
        MHD_add_response_header (response, headers[i], headers[i + 1]);
    ex->answered = true;
    ex->pending = response;
    ex->pending_status = status;
    if (ex->suspended) {
        ex->suspended = false;
        MHD_resume_connection (ex->connection);
    }
}

void
cg_http_respond (cg_http_exchange_t *exchange, unsigned int status, const char *content_type,
                 const char *body, size_t len, const char *const *headers)
{
    struct MHD_Response *response =
        MHD_create_response_from_buffer (len, CG_UNCONST (body ? body : ""), MHD_RESPMEM_MUST_COPY);
    if (!response)
        return;
    if (content_type)
        MHD_add_response_header (response, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
    s_answer (exchange, status, response, headers);
}

void
cg_http_respond_json (cg_http_exchange_t *exchange, unsigned int status, json_t *body,
                      const char *const *headers)
{
    cleanup_free char *text = json_dumps (body, JSON_COMPACT);
    json_decref (body);
    if (!text)
        abort (); /* out of memory */
    cg_http_respond (exchange, status, "application/json", text, strlen (text), headers);
}

void
cg_http_respond_error (cg_http_exchange_t *exchange, unsigned int status, const char *code,
                       const char *message)
{
    cleanup_free char *body = s_error_body (code, message);
    cg_http_respond (exchange, status, "application/json", body, strlen (body), NULL);
}

void
cg_http_respond_file (cg_http_exchange_t *exchange, int *fd_p, uint64_t size,
                      const char *content_type, const char *const *headers)
{
    cleanup_close int fd = *fd_p;
    *fd_p = -1;
    if (exchange->answered || !exchange->connection)
        return;
    struct MHD_Response *response = MHD_create_response_from_fd64 (size, fd);
    if (!response) {
        cg_http_respond_error (exchange, MHD_HTTP_INTERNAL_SERVER_ERROR, "internal",
                               "cannot create the response");
        return;
    }
    fd = -1; /* the response owns it now */
    MHD_add_response_header (response, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
    s_answer (exchange, MHD_HTTP_OK, response, headers);
}

typedef struct { /* what an upgrade answer hands over */
    cg_http_upgrade_fn *fn;
    void *arg;
} s_upgrade_t;

static void
s_upgrade_cb (void *cls, struct MHD_Connection *connection, void *con_cls, const char *extra_in,
              size_t extra_in_size, MHD_socket sock, struct MHD_UpgradeResponseHandle *urh)
{
    (void)con_cls;
    cg_http_policy_upgraded (connection);
    s_upgrade_t upgrade = *(s_upgrade_t *)cls;
    free (cls);
    upgrade.fn (upgrade.arg, (int)sock, extra_in, extra_in_size, (cg_http_upgraded_t *)urh);
}

void
cg_http_respond_upgrade (cg_http_exchange_t *exchange, const char *const *headers,
                         cg_http_upgrade_fn *fn, void *arg)
{
    s_upgrade_t *upgrade = cg_xcalloc (1, sizeof *upgrade);
    *upgrade = (s_upgrade_t){.fn = fn, .arg = arg};
    struct MHD_Response *response = MHD_create_response_for_upgrade (s_upgrade_cb, upgrade);
    if (!response) {
        free (upgrade);
        cg_http_respond_error (exchange, MHD_HTTP_INTERNAL_SERVER_ERROR, "internal",
                               "cannot create the response");
        return;
    }
    //  (16 bytes are lost when the client leaves before: MHD has no hook for that.)
    s_answer (exchange, MHD_HTTP_SWITCHING_PROTOCOLS, response, headers);
}

void
cg_http_upgraded_close (cg_http_upgraded_t *upgraded)
{
    if (upgraded)
        MHD_upgrade_action ((struct MHD_UpgradeResponseHandle *)upgraded, MHD_UPGRADE_ACTION_CLOSE);
}

static ssize_t
s_stream_reader (void *cls, uint64_t pos, char *buf, size_t max)
{
    (void)pos;
    cg_http_exchange_t *ex = cls;
    if (ex->buf_off < ex->buf_len) {
        size_t n = ex->buf_len - ex->buf_off;
        if (n > max)
            n = max;
        memcpy (buf, ex->buf + ex->buf_off, n);
        ex->buf_off += n;
        if (ex->buf_off == ex->buf_len)
            ex->buf_off = ex->buf_len = 0;
        return (ssize_t)n;
    }
    if (ex->stream_closed || !ex->connection)
        return MHD_CONTENT_READER_END_OF_STREAM;
    //  Nothing to send yet: wait without polling until a write resumes us.
    ex->reader_suspended = true;
    MHD_suspend_connection (ex->connection);
    return 0;
}

static void
s_stream_free (void *cls)
{
    cg_http_exchange_t *ex = cls;
    cg_http_exchange_release (&ex);
}

void
cg_http_stream_open (cg_http_exchange_t *exchange, const char *const *headers)
{
    if (exchange->answered || !exchange->connection)
        return;
    struct MHD_Response *response = MHD_create_response_from_callback (
        MHD_SIZE_UNKNOWN, 4096, s_stream_reader, cg_http_exchange_keep (exchange), s_stream_free);
    if (!response) {
        cg_http_exchange_release (&exchange);
        return;
    }
    exchange->streaming = true;
    MHD_add_response_header (response, MHD_HTTP_HEADER_CONTENT_TYPE, "text/event-stream");
    s_answer (exchange, MHD_HTTP_OK, response, headers);
}

static void
s_stream_wake (cg_http_exchange_t *ex)
{
    if (ex->reader_suspended && ex->connection) {
        ex->reader_suspended = false;
        MHD_resume_connection (ex->connection);
    }
}

void
cg_http_stream_write (cg_http_exchange_t *exchange, const char *data, size_t len)
{
    if (!exchange->streaming || exchange->stream_closed || !exchange->connection)
        return;
    exchange->buf = cg_xrealloc (exchange->buf, exchange->buf_len + len + 1);
    memcpy (exchange->buf + exchange->buf_len, data, len);
    exchange->buf_len += len;
    s_stream_wake (exchange);
}

void
cg_http_stream_close (cg_http_exchange_t *exchange)
{
    exchange->stream_closed = true;
    s_stream_wake (exchange);
}

/*  --------------------------------------------------------------------------------------
    Routes */

void
cg_http_route (cg_http_t *self, const char *path, unsigned flags, size_t body_max,
               cg_http_handler_fn *handler, void *arg)
{
    assert (path && handler);
    s_route_t *route = NULL;
    for (size_t i = 0; i < self->routes_len && !route; i++)
        if (strcmp (self->routes[i].path, path) == 0)
            route = &self->routes[i];
    if (!route) {
        self->routes = cg_xrealloc (self->routes, (self->routes_len + 1) * sizeof *self->routes);
        route = &self->routes[self->routes_len++];
        route->path = cg_xstrdup (path);
        route->path_len = strlen (path);
    }
    route->flags = flags;
    route->body_max = body_max;
    route->handler = handler;
    route->arg = arg;
}

//  Returns the route for URL (an exact one first, else the longest prefix), or NULL.
static const s_route_t *
s_route_find (cg_http_t *self, const char *url)
{
    const s_route_t *best = NULL;
    for (size_t i = 0; i < self->routes_len; i++) {
        const s_route_t *route = &self->routes[i];
        bool prefix = route->flags & CG_HTTP_PREFIX;
        if (strncmp (url, route->path, route->path_len) != 0
            || (!prefix && url[route->path_len] != '\0'))
            continue;
        if (!prefix)
            return route;
        if (!best || route->path_len > best->path_len)
            best = route;
    }
    return best;
}

static bool
s_has_body (struct MHD_Connection *connection)
{
    const char *length =
        MHD_lookup_connection_value (connection, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    return (length && strcmp (length, "0") != 0)
           || MHD_lookup_connection_value (connection, MHD_HEADER_KIND,
                                           MHD_HTTP_HEADER_TRANSFER_ENCODING);
}

//  The first call for a request to ROUTE: the headers are in. Refuses what the route does
//  not take (a method, a declared body over the limit); else makes the exchange.
static enum MHD_Result
s_exchange_start (cg_http_t *self, const s_route_t *route, struct MHD_Connection *connection,
                  s_request_t *request, const char *url, const char *method)
{
    if (route->flags & CG_HTTP_GET_ONLY) {
        if (strcmp (method, MHD_HTTP_METHOD_GET) != 0 && strcmp (method, MHD_HTTP_METHOD_HEAD) != 0)
            return s_respond_error (connection, request, MHD_HTTP_METHOD_NOT_ALLOWED,
                                    "method_not_allowed", "only GET and HEAD are allowed here");
        if (s_has_body (connection))
            return s_respond_error (connection, request, MHD_HTTP_CONTENT_TOO_LARGE,
                                    "payload_too_large",
                                    "a GET or HEAD request here takes no body");
    }
    const char *length =
        MHD_lookup_connection_value (connection, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    if (length && strtoull (length, NULL, 10) > route->body_max)
        return s_respond_error (connection, request, MHD_HTTP_CONTENT_TOO_LARGE,
                                "payload_too_large", "the request body is larger than the limit");
    cg_http_exchange_t *ex = cg_xcalloc (1, sizeof *ex);
    ex->refs = 1;
    ex->http = self;
    ex->connection = connection;
    ex->handler = route->handler;
    ex->arg = route->arg;
    ex->body_max = route->body_max;
    ex->method = cg_xstrdup (method);
    ex->path = cg_xstrdup (url);
    ex->next = self->exchanges;
    if (ex->next)
        ex->next->prev = ex;
    self->exchanges = ex;
    request->exchange = ex;
    return MHD_YES;
}

//  The later calls for a request: its body, bounded, then the handler, then its answer.
static enum MHD_Result
s_exchange_continue (struct MHD_Connection *connection, s_request_t *request,
                     const char *upload_data, size_t *upload_data_size)
{
    cg_http_exchange_t *ex = request->exchange;
    if (*upload_data_size > 0) {
        //  Untrusted: the body, bounded before it is kept.
        if (!ex->too_large && ex->body_len + *upload_data_size <= ex->body_max) {
            if (ex->body_len + *upload_data_size + 1 > ex->body_cap) {
                ex->body_cap = (ex->body_len + *upload_data_size + 1) * 2;
                if (ex->body_cap > ex->body_max + 1)
                    ex->body_cap = ex->body_max + 1;
                ex->body = cg_xrealloc (ex->body, ex->body_cap);
            }
            memcpy (ex->body + ex->body_len, upload_data, *upload_data_size);
            ex->body_len += *upload_data_size;
            ex->body[ex->body_len] = '\0';
        }
        else
            ex->too_large = true;
        *upload_data_size = 0;
        return MHD_YES;
    }
    if (ex->too_large)
        return s_respond_error (connection, request, MHD_HTTP_CONTENT_TOO_LARGE,
                                "payload_too_large", "the request body is larger than the limit");
    if (!ex->called) {
        ex->called = true;
        cg_http_policy_request_in (connection);
        int64_t start = cg_now_us ();
        ex->handler (ex->arg, ex);
        int64_t took = cg_now_us () - start;
        if (took >= S_SLOW_HANDLER_US) /* (the loop's log says the turn; this, the request) */
            cg_log (3, "http: the handler of %s %.*s held the loop %.1f ms", ex->method,
                    cg_utf8_prefix (ex->path, 200), ex->path, (double)took / 1000);
    }
    if (ex->pending) {
        struct MHD_Response *response = ex->pending;
        ex->pending = NULL;
        return s_queue (connection, request, ex->pending_status, response);
    }
    //  No answer yet: wait, without holding up the loop, until one comes.
    ex->suspended = true;
    MHD_suspend_connection (connection);
    return MHD_YES;
}

bool
cg_http_loopback (cg_http_t *self)
{
    return self->loopback;
}

const char *
cg_http_host (cg_http_t *self)
{
    return self->url_host;
}

void
cg_http_set_public_url (cg_http_t *self, const char *url)
{
    free (self->base_url);
    self->base_url =
        url ? cg_xstrdup (url) : cg_strdupf ("http://%s:%d", self->url_host, self->port);
    if (url)
        cg_log (2, "http: links use the public URL %s", url);
}

const char *
cg_http_base_url (cg_http_t *self)
{
    return self->base_url;
}

void
cg_http_set_limits (cg_http_t *self, const cg_http_limits_t *limits)
{
    cg_http_policy_set_limits (self->policy, limits);
}

void
cg_http_set_observer (cg_http_t *self, cg_http_observer_fn *fn, void *arg)
{
    self->observer = fn;
    self->observer_arg = arg;
}

/*  --------------------------------------------------------------------------------------
    MHD callbacks */

/*  Leaves escapes in the path and the query arguments alone: MHD would otherwise decode
    "%00" into a NUL that silently cuts the path short, and "%2F" into a separator we could
    no longer tell from a real one. Routes decode what they use, with lengths. */
static size_t
s_unescape_cb (void *cls, struct MHD_Connection *connection, char *s)
{
    (void)cls;
    (void)connection;
    return strlen (s);
}

//  MHD calls this before it has accepted the request, and calls the completion callback
//  only for requests that reached the access handler: a request refused in between (a
//  malformed header, say) would leak what this allocated. So nothing is allocated here:
//  the target's length travels in the pointer itself, tagged odd (allocations are even),
//  and the access handler makes the request.
static void *
s_uri_cb (void *cls, const char *uri, struct MHD_Connection *connection)
{
    (void)cls;
    (void)connection;
    size_t len = strlen (uri);
    if (len > CG_HTTP_URL_MAX)
        len = CG_HTTP_URL_MAX + 1;
    return (void *)(((uintptr_t)len << 1) | 1);
}

static void
s_completed_cb (void *cls, struct MHD_Connection *connection, void **con_cls,
                enum MHD_RequestTerminationCode toe)
{
    (void)cls;
    (void)toe;
    cg_http_policy_request_done (connection);
    s_request_t *request = ((uintptr_t)*con_cls & 1) ? NULL : *con_cls;
    if (request && request->exchange) {
        cg_http_exchange_t *ex = request->exchange;
        ex->connection = NULL;
        s_exchange_unlink (ex);
        cg_http_exchange_release (&request->exchange);
    }
    free (request);
    *con_cls = NULL;
}

static enum MHD_Result
s_access_cb (void *cls, struct MHD_Connection *connection, const char *url, const char *method,
             const char *version, const char *upload_data, size_t *upload_data_size, void **con_cls)
{
    (void)version;
    cg_http_t *self = cls;
    uintptr_t tag = (uintptr_t)*con_cls;
    if (tag & 1) {
        s_request_t *fresh = cg_xcalloc (1, sizeof *fresh);
        fresh->http = self;
        fresh->target_len = tag >> 1;
        *con_cls = fresh;
    }
    s_request_t *request = *con_cls;
    if (!request)
        return MHD_NO; /* the URI callback always sets it; never reached */
    if (request->answered) {
        *upload_data_size = 0; /* a body sent after the answer is dropped */
        return MHD_YES;
    }
    if (request->exchange)
        return s_exchange_continue (connection, request, upload_data, upload_data_size);
    if (request->target_len > CG_HTTP_URL_MAX)
        return s_respond_error (connection, request, MHD_HTTP_URI_TOO_LONG, "uri_too_long",
                                "the request URL is longer than 4096 bytes");
    const s_route_t *route = s_route_find (self, url);
    if (!route)
        return s_respond_error (connection, request, MHD_HTTP_NOT_FOUND, "not_found",
                                "no such resource");
    request->route = route->path;
    return s_exchange_start (self, route, connection, request, url, method);
}

//  libmicrohttpd's error log: FMT is its own printf format.
static void s_log_cb (void *cls, const char *fmt, va_list args)
    __attribute__ ((format (printf, 2, 0)));

static void
s_log_cb (void *cls, const char *fmt, va_list args)
{
    (void)cls;
    cleanup_free char *message = cg_vstrdupf (fmt, args);
    size_t len = strlen (message);
    while (len > 0 && (message[len - 1] == '\n' || message[len - 1] == '\r'))
        message[--len] = '\0';
    /*  Debug: most of these are caused by clients (malformed requests, resets). */
    cg_log (3, "http: %s", message);
}

/*  --------------------------------------------------------------------------------------
    Listener */

cg_http_t *
cg_http_new (const char *listen, cg_error_t **err)
{
    assert (listen);
    cg_http_t *self = cg_xcalloc (1, sizeof *self);
    int fd = cg_http_listen_socket (listen, &self->url_host, &self->port, err);
    if (fd < 0) {
        cg_http_destroy (&self);
        return NULL;
    }
    self->loopback = strncmp (listen, "127.", 4) == 0 || strncmp (listen, "[::1]:", 6) == 0;
    self->policy = cg_http_policy_new (&(cg_http_limits_t){CG_HTTP_PER_ADDRESS_DEFAULT,
                                                           CG_HTTP_OWNER_RESERVE_DEFAULT,
                                                           CG_HTTP_REQUEST_TIMEOUT_S_DEFAULT},
                                       CG_HTTP_CONNECTIONS_MAX);
    /*  No MHD thread: MHD_USE_EPOLL alone gives one epoll fd for the caller's poll loop.
        SIGPIPE is left to MHD (MSG_NOSIGNAL), so file bodies go out with pread and send,
        not sendfile: a file that shrinks while it is sent (a sandbox truncating it) ends
        the response at once instead of stalling it. Upgrades: the gateway's WebSockets.
        The policy admits connections and counts them; MHD's own limit leaves room for
        those the policy has shut down and MHD has yet to free. */
    self->daemon = MHD_start_daemon (
        MHD_USE_EPOLL | MHD_USE_ERROR_LOG | MHD_ALLOW_SUSPEND_RESUME | MHD_ALLOW_UPGRADE, 0,
        cg_http_policy_accept_cb, self->policy, s_access_cb, self, MHD_OPTION_EXTERNAL_LOGGER,
        s_log_cb, self, MHD_OPTION_LISTEN_SOCKET, (MHD_socket)fd, MHD_OPTION_NOTIFY_CONNECTION,
        cg_http_policy_notify_cb, self->policy, MHD_OPTION_CONNECTION_LIMIT,
        (unsigned int)(CG_HTTP_CONNECTIONS_MAX + CG_HTTP_CONNECTIONS_CLOSING),
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)CG_HTTP_CONNECTION_TIMEOUT_S,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)CG_HTTP_CONNECTION_MEMORY,
        MHD_OPTION_STRICT_FOR_CLIENT, (int)1, MHD_OPTION_UNESCAPE_CALLBACK, s_unescape_cb, self,
        MHD_OPTION_URI_LOG_CALLBACK, s_uri_cb, self, MHD_OPTION_NOTIFY_COMPLETED, s_completed_cb,
        self, MHD_OPTION_END);
    if (!self->daemon) {
        close (fd);
        cg_error_set (err, EIO, "listen on %s: libmicrohttpd refused to start", listen);
        cg_http_destroy (&self);
        return NULL;
    }
    //  The address bound, as given (0.0.0.0 and [::] included), with the port chosen.
    cg_log (2, "http: listening on http://%.*s:%d/", (int)(strrchr (listen, ':') - listen), listen,
            self->port);
    cg_http_set_public_url (self, NULL);
    return self;
}

void
cg_http_destroy (cg_http_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    cg_http_t *self = *self_p;
    //  MHD must not be stopped with suspended connections: wake them, ended.
    for (cg_http_exchange_t *ex = self->exchanges; ex; ex = ex->next) {
        ex->stream_closed = true;
        if ((ex->suspended || ex->reader_suspended) && ex->connection)
            MHD_resume_connection (ex->connection);
        ex->suspended = ex->reader_suspended = false;
    }
    if (self->daemon)
        MHD_stop_daemon (self->daemon); /* closes the listening socket too */
    cg_http_policy_destroy (&self->policy);
    for (size_t i = 0; i < self->routes_len; i++)
        free (self->routes[i].path);
    free (self->routes);
    free (self->url_host);
    free (self->base_url);
    free (self);
    *self_p = NULL;
}

int
cg_http_fd (cg_http_t *self)
{
    const union MHD_DaemonInfo *info = MHD_get_daemon_info (self->daemon, MHD_DAEMON_INFO_EPOLL_FD);
    return info ? info->epoll_fd : -1;
}

int
cg_http_timeout_ms (cg_http_t *self)
{
    MHD_UNSIGNED_LONG_LONG timeout = 0;
    int due = cg_http_policy_timeout_ms (self->policy);
    if (MHD_get_timeout (self->daemon, &timeout) != MHD_YES)
        return due;
    int mhd = timeout > INT_MAX ? INT_MAX : (int)timeout;
    return due >= 0 && due < mhd ? due : mhd;
}

void
cg_http_process (cg_http_t *self)
{
    if (MHD_run (self->daemon) != MHD_YES)
        cg_log (1, "http: MHD_run failed");
    cg_http_policy_sweep (self->policy);
}

int
cg_http_port (cg_http_t *self)
{
    return self->port;
}

static void
s_fd_cb (cg_loop_t *loop, short revents, void *arg)
{
    (void)loop;
    (void)revents;
    cg_http_process (arg);
}

static int
s_before_wait_cb (cg_loop_t *loop, void *arg)
{
    (void)loop;
    cg_http_process (arg);
    return cg_http_timeout_ms (arg);
}

void
cg_http_on_loop (cg_http_t *self, cg_loop_t *loop)
{
    cg_loop_watch_fd (loop, cg_http_fd (self), ZMQ_POLLIN, s_fd_cb, self);
    cg_loop_before_wait (loop, s_before_wait_cb, self);
}
