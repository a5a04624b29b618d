/*  cg_http — the HTTP listener (GNU libmicrohttpd, driven from the caller's poll loop):
    artifact downloads under /files/, and room for more routes (MCP's /mcp later). */
#define _GNU_SOURCE
#include "cg_http.h"

#include "../bridge/cg_util.h"

#include <arpa/inet.h>
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <sodium.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>

struct cg_http_t {
    struct MHD_Daemon *daemon;
    int port;                   /* the bound port */
    char *url_host;             /* host part of download URLs: "127.0.0.1", "[::1]" */
    bool loopback;              /* bound to a loopback address */
    cg_http_lookup_fn *lookup;
    void *lookup_arg;
    cg_http_mcp_fn *mcp;        /* the /mcp handler, NULL when none */
    void *mcp_arg;
    size_t mcp_body_max;
    cg_http_exchange_t *exchanges; /* live /mcp exchanges (to resume before stopping) */
};

struct cg_http_exchange_t {
    int refs;
    cg_http_t *http;
    struct MHD_Connection *connection; /* NULL once the request is over */
    char *method;
    char *body;
    size_t body_len, body_cap;
    bool too_large;             /* the body passed the limit: 413 */
    bool called;                /* the handler has seen it */
    bool suspended;             /* waiting in the access callback for an answer */
    struct MHD_Response *pending; /* the answer, queued at the next access callback */
    unsigned int pending_status;
    bool answered;
    bool streaming;             /* an SSE body: BUF is what is still to be sent */
    bool stream_closed;
    bool reader_suspended;      /* waiting in the content reader for more to send */
    char *buf;
    size_t buf_len, buf_off;
    cg_http_exchange_t *next, *prev;
};

/*  One request; MHD keeps it in *con_cls from the URI callback until the completion
    callback. */
typedef struct {
    size_t target_len;          /* length of the raw request target, query included */
    bool answered;              /* a response is queued */
    cg_http_exchange_t *exchange; /* for /mcp */
} s_request_t;

/*  A route answers every request whose path starts with PREFIX; REST is the raw
    (still percent-encoded) path after it. Handlers that take a body (a later /mcp) see
    MHD's usual repeated calls with UPLOAD_DATA. */
typedef enum MHD_Result (s_route_fn) (cg_http_t *self, struct MHD_Connection *connection,
                                      s_request_t *request, const char *method,
                                      const char *rest, const char *upload_data,
                                      size_t *upload_data_size);

static s_route_fn s_files_route;
static s_route_fn s_mcp_route;
static void s_exchange_unlink (cg_http_exchange_t *ex);

static const struct {
    const char *prefix;
    bool exact;                 /* the path is the prefix itself */
    s_route_fn *handler;
} s_routes[] = {
    { "/files/", false, s_files_route },
    { "/mcp", true, s_mcp_route },
};

/*  --------------------------------------------------------------------------------------
    Responses */

static enum MHD_Result
s_queue (struct MHD_Connection *connection, s_request_t *request, unsigned int status,
         struct MHD_Response *response)
{
    enum MHD_Result rc = MHD_queue_response (connection, status, response);
    MHD_destroy_response (response);
    if (rc == MHD_YES)
        request->answered = true;
    return rc;
}

static void
s_add_common_headers (struct MHD_Response *response)
{
    MHD_add_response_header (response, "X-Content-Type-Options", "nosniff");
    MHD_add_response_header (response, "Cache-Control", "no-store");
}

/*  Queues {"error": CODE, "message": MESSAGE} with STATUS. MESSAGE never echoes client
    input. Returns MHD_NO (closing the connection) only when MHD refuses the response. */
static enum MHD_Result
s_respond_error (struct MHD_Connection *connection, s_request_t *request, unsigned int status,
                 const char *code, const char *message)
{
    json_t *body_json = json_pack ("{s:s, s:s}", "error", code, "message", message);
    cleanup_free char *body = body_json ? json_dumps (body_json, JSON_COMPACT) : NULL;
    json_decref (body_json);
    if (!body)
        abort ();
    struct MHD_Response *response
        = MHD_create_response_from_buffer (strlen (body), body, MHD_RESPMEM_MUST_COPY);
    if (!response)
        return MHD_NO;
    MHD_add_response_header (response, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
    s_add_common_headers (response);
    if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
        MHD_add_response_header (response, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
    return s_queue (connection, request, status, response);
}

static enum MHD_Result
s_respond_not_found (struct MHD_Connection *connection, s_request_t *request)
{
    return s_respond_error (connection, request, MHD_HTTP_NOT_FOUND, "not_found", "no such file");
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

/*  Percent-decodes the LEN bytes at IN into a new buffer (NUL-terminated; it may hold NUL
    bytes, so callers use *OUT_LEN). Returns NULL on a malformed escape. Caller owns the
    result. */
static char *
s_percent_decode (const char *in, size_t len, size_t *out_len)
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
        out[used++] = (char) (high * 16 + low);
        i += 2;
    }
    out[used] = '\0';
    *out_len = used;
    return out;
}

/*  Appends the LEN bytes at IN to *P, percent-encoding all but RFC 3986 unreserved bytes. */
static void
s_percent_encode (char **p, const char *in, size_t len)
{
    static const char hex[] = "0123456789ABCDEF";
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char) in[i];
        if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'
            || c == '.' || c == '_' || c == '~')
            *(*p)++ = (char) c;
        else {
            *(*p)++ = '%';
            *(*p)++ = hex[c >> 4];
            *(*p)++ = hex[c & 15];
        }
    }
}

/*  --------------------------------------------------------------------------------------
    GET|HEAD /files/{session_id}/{path...}?token=T */

static bool
s_has_body (struct MHD_Connection *connection)
{
    const char *length
        = MHD_lookup_connection_value (connection, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    return (length && strcmp (length, "0") != 0)
           || MHD_lookup_connection_value (connection, MHD_HEADER_KIND,
                                           MHD_HTTP_HEADER_TRANSFER_ENCODING);
}

/*  Types a browser would render with script on the listener's origin: always downloaded. */
static bool
s_is_active_content (const char *mime)
{
    return strcmp (mime, "text/html") == 0 || strcmp (mime, "image/svg+xml") == 0
           || strcmp (mime, "application/xhtml+xml") == 0 || strcmp (mime, "text/xml") == 0
           || strcmp (mime, "application/xml") == 0;
}

static enum MHD_Result
s_files_route (cg_http_t *self, struct MHD_Connection *connection, s_request_t *request,
               const char *method, const char *rest, const char *upload_data,
               size_t *upload_data_size)
{
    (void) upload_data;
    (void) upload_data_size;
    if (strcmp (method, MHD_HTTP_METHOD_GET) != 0 && strcmp (method, MHD_HTTP_METHOD_HEAD) != 0)
        return s_respond_error (connection, request, MHD_HTTP_METHOD_NOT_ALLOWED,
                                "method_not_allowed", "only GET and HEAD are allowed here");
    if (s_has_body (connection))
        return s_respond_error (connection, request, MHD_HTTP_CONTENT_TOO_LARGE,
                                "payload_too_large", "a download request takes no body");

    /*  Untrusted from here on: the session id, the path and the token all come from the
        client's URL, raw (our unescape callback leaves escapes alone), at most
        CG_HTTP_URL_MAX bytes in all. */
    const char *slash = strchr (rest, '/');
    if (!slash)
        return s_respond_not_found (connection, request);
    const char *raw_token
        = MHD_lookup_connection_value (connection, MHD_GET_ARGUMENT_KIND, "token");
    size_t session_len = 0, path_len = 0, token_len = 0;
    cleanup_free char *session_id = s_percent_decode (rest, (size_t) (slash - rest), &session_len);
    cleanup_free char *path = s_percent_decode (slash + 1, strlen (slash + 1), &path_len);
    cleanup_free char *token
        = raw_token ? s_percent_decode (raw_token, strlen (raw_token), &token_len) : NULL;
    if (!session_id || !path || (raw_token && !token))
        return s_respond_error (connection, request, MHD_HTTP_BAD_REQUEST, "bad_request",
                                "malformed percent-encoding in the URL");

    /*  Whatever fails before the file is open gets the same 404, so that a client without
        the token learns nothing about which sessions or files exist. */
    if (!token || token_len == 0 || token_len > CG_HTTP_TOKEN_MAX || session_len == 0
        || session_len > CG_SESSION_ID_MAX || memchr (session_id, '\0', session_len))
        return s_respond_not_found (connection, request);
    cg_workspace_t *workspace = self->lookup (self->lookup_arg, session_id, token, token_len);
    if (!workspace)
        return s_respond_not_found (connection, request);

    cg_error_t *err = NULL;
    cleanup_free char *rel = cg_workspace_normalize_len (path, path_len, &err);
    if (!rel) {
        cg_log (3, "http: download from %s refused: %s", session_id, cg_error_message (err));
        cg_error_destroy (&err);
        return s_respond_not_found (connection, request);
    }
    struct stat st;
    cleanup_close int fd = cg_workspace_open_file (workspace, rel, O_RDONLY, &st, &err);
    if (fd < 0) {
        cg_log (3, "http: download of %s from %s refused: %s", rel, session_id,
                cg_error_message (err));
        cg_error_destroy (&err);
        return s_respond_not_found (connection, request);
    }
    const char *slash_in_rel = strrchr (rel, '/');
    const char *mime = cg_mime_type (slash_in_rel ? slash_in_rel + 1 : rel);
    struct MHD_Response *response = MHD_create_response_from_fd64 ((uint64_t) st.st_size, fd);
    if (!response)
        return s_respond_error (connection, request, MHD_HTTP_INTERNAL_SERVER_ERROR, "internal",
                                "cannot create the response");
    fd = -1; /* the response owns it now */
    MHD_add_response_header (response, MHD_HTTP_HEADER_CONTENT_TYPE, mime);
    s_add_common_headers (response);
    MHD_add_response_header (response, "Content-Security-Policy", "sandbox");
    if (s_is_active_content (mime))
        MHD_add_response_header (response, "Content-Disposition", "attachment");
    cg_log (3, "http: %s %s from %s (%lld bytes)", method, rel, session_id, (long long) st.st_size);
    return s_queue (connection, request, MHD_HTTP_OK, response);
}

/*  --------------------------------------------------------------------------------------
    /mcp: requests handed whole to the MCP layer, answered now or later */

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
    struct MHD_Response *response
        = MHD_create_response_from_buffer (len, (void *) (body ? body : ""), MHD_RESPMEM_MUST_COPY);
    if (!response)
        return;
    if (content_type)
        MHD_add_response_header (response, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
    s_answer (exchange, status, response, headers);
}

static ssize_t
s_stream_reader (void *cls, uint64_t pos, char *buf, size_t max)
{
    (void) pos;
    cg_http_exchange_t *ex = cls;
    if (ex->buf_off < ex->buf_len) {
        size_t n = ex->buf_len - ex->buf_off;
        if (n > max)
            n = max;
        memcpy (buf, ex->buf + ex->buf_off, n);
        ex->buf_off += n;
        if (ex->buf_off == ex->buf_len)
            ex->buf_off = ex->buf_len = 0;
        return (ssize_t) n;
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

static enum MHD_Result
s_mcp_route (cg_http_t *self, struct MHD_Connection *connection, s_request_t *request,
             const char *method, const char *rest, const char *upload_data,
             size_t *upload_data_size)
{
    (void) rest;
    if (!self->mcp)
        return s_respond_error (connection, request, MHD_HTTP_NOT_FOUND, "not_found", "no such resource");
    cg_http_exchange_t *ex = request->exchange;
    if (!ex) {
        //  First call: the headers are in. A declared body over the limit is refused now.
        const char *length = MHD_lookup_connection_value (connection, MHD_HEADER_KIND,
                                                          MHD_HTTP_HEADER_CONTENT_LENGTH);
        if (length && strtoull (length, NULL, 10) > self->mcp_body_max)
            return s_respond_error (connection, request, MHD_HTTP_CONTENT_TOO_LARGE,
                                    "payload_too_large", "the request body is larger than the limit");
        ex = cg_xcalloc (1, sizeof *ex);
        ex->refs = 1;
        ex->http = self;
        ex->connection = connection;
        ex->method = cg_xstrdup (method);
        ex->next = self->exchanges;
        if (ex->next)
            ex->next->prev = ex;
        self->exchanges = ex;
        request->exchange = ex;
        return MHD_YES;
    }
    if (*upload_data_size > 0) {
        //  Untrusted: the body, bounded before it is kept.
        if (!ex->too_large && ex->body_len + *upload_data_size <= self->mcp_body_max) {
            if (ex->body_len + *upload_data_size + 1 > ex->body_cap) {
                ex->body_cap = (ex->body_len + *upload_data_size + 1) * 2;
                if (ex->body_cap > self->mcp_body_max + 1)
                    ex->body_cap = self->mcp_body_max + 1;
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
        return s_respond_error (connection, request, MHD_HTTP_CONTENT_TOO_LARGE, "payload_too_large",
                                "the request body is larger than the limit");
    if (!ex->called) {
        ex->called = true;
        self->mcp (self->mcp_arg, ex);
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

void
cg_http_set_mcp (cg_http_t *self, size_t body_max, cg_http_mcp_fn *handler, void *arg)
{
    self->mcp = handler;
    self->mcp_arg = arg;
    self->mcp_body_max = body_max;
}

bool
cg_http_loopback (cg_http_t *self)
{
    return self->loopback;
}

/*  --------------------------------------------------------------------------------------
    MHD callbacks */

/*  Leaves escapes in the path and the query arguments alone: MHD would otherwise decode
    "%00" into a NUL that silently cuts the path short, and "%2F" into a separator we could
    no longer tell from a real one. Routes decode what they use, with lengths. */
static size_t
s_unescape_cb (void *cls, struct MHD_Connection *connection, char *s)
{
    (void) cls;
    (void) connection;
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
    (void) cls;
    (void) connection;
    size_t len = strlen (uri);
    if (len > CG_HTTP_URL_MAX)
        len = CG_HTTP_URL_MAX + 1;
    return (void *) (((uintptr_t) len << 1) | 1);
}

static void
s_completed_cb (void *cls, struct MHD_Connection *connection, void **con_cls,
                enum MHD_RequestTerminationCode toe)
{
    (void) cls;
    (void) connection;
    (void) toe;
    s_request_t *request = ((uintptr_t) *con_cls & 1) ? NULL : *con_cls;
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
             const char *version, const char *upload_data, size_t *upload_data_size,
             void **con_cls)
{
    (void) version;
    cg_http_t *self = cls;
    uintptr_t tag = (uintptr_t) *con_cls;
    if (tag & 1) {
        s_request_t *fresh = cg_xcalloc (1, sizeof *fresh);
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
    if (request->target_len > CG_HTTP_URL_MAX)
        return s_respond_error (connection, request, MHD_HTTP_URI_TOO_LONG, "uri_too_long",
                                "the request URL is longer than 4096 bytes");
    for (size_t i = 0; i < sizeof s_routes / sizeof s_routes[0]; i++) {
        size_t prefix_len = strlen (s_routes[i].prefix);
        if (strncmp (url, s_routes[i].prefix, prefix_len) == 0 && (!s_routes[i].exact || url[prefix_len] == '\0'))
            return s_routes[i].handler (self, connection, request, method, url + prefix_len,
                                        upload_data, upload_data_size);
    }
    return s_respond_error (connection, request, MHD_HTTP_NOT_FOUND, "not_found",
                            "no such resource");
}

static void
s_log_cb (void *cls, const char *fmt, va_list args)
{
    (void) cls;
    cleanup_free char *message = cg_vstrdupf (fmt, args);
    size_t len = strlen (message);
    while (len > 0 && (message[len - 1] == '\n' || message[len - 1] == '\r'))
        message[--len] = '\0';
    /*  Debug: most of these are caused by clients (malformed requests, resets). */
    cg_log (3, "http: %s", message);
}

/*  --------------------------------------------------------------------------------------
    Listener */

/*  Parses "HOST:PORT" (IPv6 hosts in brackets) into *ADDR. Fills *URL_HOST with the host
    for download URLs (caller owns it). Returns 0, or -1 with *err set to EINVAL. */
static int
s_parse_listen (const char *listen, struct sockaddr_storage *addr, socklen_t *addr_len,
                char **url_host, cg_error_t **err)
{
    const char *host = listen, *host_end, *port_text;
    bool ipv6 = listen[0] == '[';
    if (ipv6) {
        host = listen + 1;
        host_end = strchr (host, ']');
        if (!host_end || host_end[1] != ':')
            return cg_error_set (err, EINVAL, "listen address %s: expected [IPV6]:PORT", listen);
        port_text = host_end + 2;
    }
    else {
        host_end = strrchr (listen, ':');
        if (!host_end)
            return cg_error_set (err, EINVAL, "listen address %s: expected HOST:PORT", listen);
        if (memchr (listen, ':', (size_t) (host_end - listen)))
            return cg_error_set (err, EINVAL,
                                 "listen address %s: an IPv6 address goes in brackets", listen);
        port_text = host_end + 1;
    }
    size_t port_digits = strspn (port_text, "0123456789");
    long port = port_digits >= 1 && port_digits <= 5 ? strtol (port_text, NULL, 10) : -1;
    if (port_text[port_digits] != '\0' || port < 0 || port > 65535)
        return cg_error_set (err, EINVAL, "listen address %s: bad port", listen);
    size_t host_len = (size_t) (host_end - host);
    char host_text[INET6_ADDRSTRLEN];
    if (host_len == 0 || host_len >= sizeof host_text)
        return cg_error_set (err, EINVAL, "listen address %s: bad host", listen);
    memcpy (host_text, host, host_len);
    host_text[host_len] = '\0';

    memset (addr, 0, sizeof *addr);
    char canonical[INET6_ADDRSTRLEN];
    if (ipv6) {
        struct sockaddr_in6 *in6 = (struct sockaddr_in6 *) addr;
        in6->sin6_family = AF_INET6;
        in6->sin6_port = htons ((uint16_t) port);
        if (inet_pton (AF_INET6, host_text, &in6->sin6_addr) != 1)
            return cg_error_set (err, EINVAL,
                                 "listen address %s: the host is not a numeric IPv6 address",
                                 listen);
        *addr_len = sizeof *in6;
        bool any = memcmp (&in6->sin6_addr, &in6addr_any, sizeof in6addr_any) == 0;
        inet_ntop (AF_INET6, any ? &in6addr_loopback : &in6->sin6_addr, canonical,
                   sizeof canonical);
        *url_host = cg_strdupf ("[%s]", canonical);
    }
    else {
        struct sockaddr_in *in4 = (struct sockaddr_in *) addr;
        in4->sin_family = AF_INET;
        in4->sin_port = htons ((uint16_t) port);
        if (inet_pton (AF_INET, host_text, &in4->sin_addr) != 1)
            return cg_error_set (err, EINVAL,
                                 "listen address %s: the host is not a numeric IPv4 address",
                                 listen);
        *addr_len = sizeof *in4;
        struct in_addr loopback = { htonl (INADDR_LOOPBACK) };
        bool any = in4->sin_addr.s_addr == htonl (INADDR_ANY);
        inet_ntop (AF_INET, any ? &loopback : &in4->sin_addr, canonical, sizeof canonical);
        *url_host = cg_xstrdup (canonical);
    }
    return 0;
}

/*  Opens, binds and listens on LISTEN; fills *PORT with the bound port. Returns the
    socket, or -1 with *err set. */
static int
s_listen_socket (const char *listen_text, char **url_host, int *port, cg_error_t **err)
{
    struct sockaddr_storage addr;
    socklen_t addr_len = 0;
    if (s_parse_listen (listen_text, &addr, &addr_len, url_host, err) < 0)
        return -1;
    cleanup_close int fd = socket (addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return cg_error_set (err, errno, "listen on %s: socket: %s", listen_text, strerror (errno));
    int on = 1;
    if (setsockopt (fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on) < 0)
        return cg_error_set (err, errno, "listen on %s: SO_REUSEADDR: %s", listen_text,
                             strerror (errno));
    if (addr.ss_family == AF_INET6
        && setsockopt (fd, IPPROTO_IPV6, IPV6_V6ONLY, &on, sizeof on) < 0)
        return cg_error_set (err, errno, "listen on %s: IPV6_V6ONLY: %s", listen_text,
                             strerror (errno));
    if (bind (fd, (struct sockaddr *) &addr, addr_len) < 0)
        return cg_error_set (err, errno, "listen on %s: bind: %s", listen_text, strerror (errno));
    if (listen (fd, 128) < 0)
        return cg_error_set (err, errno, "listen on %s: listen: %s", listen_text, strerror (errno));
    struct sockaddr_storage bound;
    socklen_t bound_len = sizeof bound;
    if (getsockname (fd, (struct sockaddr *) &bound, &bound_len) < 0)
        return cg_error_set (err, errno, "listen on %s: getsockname: %s", listen_text,
                             strerror (errno));
    *port = ntohs (bound.ss_family == AF_INET6 ? ((struct sockaddr_in6 *) &bound)->sin6_port
                                               : ((struct sockaddr_in *) &bound)->sin_port);
    int out = fd;
    fd = -1;
    return out;
}

cg_http_t *
cg_http_new (const char *listen, cg_http_lookup_fn *lookup, void *arg, cg_error_t **err)
{
    assert (listen && lookup);
    cg_http_t *self = cg_xcalloc (1, sizeof *self);
    self->lookup = lookup;
    self->lookup_arg = arg;
    int fd = s_listen_socket (listen, &self->url_host, &self->port, err);
    if (fd < 0) {
        cg_http_destroy (&self);
        return NULL;
    }
    self->loopback = strncmp (listen, "127.", 4) == 0 || strncmp (listen, "[::1]:", 6) == 0;
    /*  No MHD thread: MHD_USE_EPOLL without MHD_USE_INTERNAL_POLLING_THREAD gives one epoll
        fd for the caller's poll loop. SIGPIPE is left to MHD (MSG_NOSIGNAL), so file
        bodies go out with pread and send rather than sendfile: a file the sandbox
        truncates mid-download then ends the response at once instead of stalling it. */
    self->daemon = MHD_start_daemon (
        MHD_USE_EPOLL | MHD_USE_ERROR_LOG | MHD_ALLOW_SUSPEND_RESUME, 0, NULL, NULL, s_access_cb, self,
        MHD_OPTION_EXTERNAL_LOGGER, s_log_cb, self,
        MHD_OPTION_LISTEN_SOCKET, (MHD_socket) fd,
        MHD_OPTION_CONNECTION_LIMIT, (unsigned int) CG_HTTP_CONNECTIONS_MAX,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int) CG_HTTP_CONNECTION_TIMEOUT_S,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t) CG_HTTP_CONNECTION_MEMORY,
        MHD_OPTION_STRICT_FOR_CLIENT, (int) 1,
        MHD_OPTION_UNESCAPE_CALLBACK, s_unescape_cb, self,
        MHD_OPTION_URI_LOG_CALLBACK, s_uri_cb, self,
        MHD_OPTION_NOTIFY_COMPLETED, s_completed_cb, self,
        MHD_OPTION_END);
    if (!self->daemon) {
        close (fd);
        cg_error_set (err, EIO, "listen on %s: libmicrohttpd refused to start", listen);
        cg_http_destroy (&self);
        return NULL;
    }
    cg_log (2, "http: listening on http://%s:%d/", self->url_host, self->port);
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
    free (self->url_host);
    free (self);
    *self_p = NULL;
}

int
cg_http_fd (cg_http_t *self)
{
    const union MHD_DaemonInfo *info
        = MHD_get_daemon_info (self->daemon, MHD_DAEMON_INFO_EPOLL_FD);
    return info ? info->epoll_fd : -1;
}

int
cg_http_timeout_ms (cg_http_t *self)
{
    MHD_UNSIGNED_LONG_LONG timeout = 0;
    if (MHD_get_timeout (self->daemon, &timeout) != MHD_YES)
        return -1;
    return timeout > INT_MAX ? INT_MAX : (int) timeout;
}

void
cg_http_process (cg_http_t *self)
{
    if (MHD_run (self->daemon) != MHD_YES)
        cg_log (1, "http: MHD_run failed");
}

int
cg_http_port (cg_http_t *self)
{
    return self->port;
}

char *
cg_http_download_url (cg_http_t *self, const char *session_id, const char *token,
                      const char *rel)
{
    cg_error_t *err = NULL;
    cleanup_free char *canonical = cg_workspace_normalize (rel, &err);
    if (!canonical) {
        cg_error_destroy (&err);
        return NULL;
    }
    cleanup_free char *prefix = cg_strdupf ("http://%s:%d/files/", self->url_host, self->port);
    size_t cap = strlen (prefix) + 3 * (strlen (session_id) + strlen (canonical) + strlen (token))
                 + sizeof "/?token=";
    char *url = cg_xmalloc (cap);
    char *p = stpcpy (url, prefix);
    s_percent_encode (&p, session_id, strlen (session_id));
    *p++ = '/';
    for (const char *segment = canonical;;) {
        const char *end = strchrnul (segment, '/');
        s_percent_encode (&p, segment, (size_t) (end - segment));
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
