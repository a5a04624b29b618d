/*  cg_streamable — MCP's Streamable HTTP transport. */
#include "cg_streamable.h"
#include "cg_jsonrpc.h"
#include "../bridge/cg_util.h"

#include <string.h>

//  MCP sessions at once; more initialize requests get 503.
#define MAX_CLIENTS 1024

//  One POST's answer: first pending, then JSON or an SSE stream.
typedef enum { S_PENDING, S_STREAM, S_DONE } s_state_t;
typedef struct {
    cg_channel_t base;
    cg_http_exchange_t *exchange;
    json_t *request_id; /* the request the answer is for */
    s_state_t state;
} s_channel_t;

struct cg_streamable_t {
    cg_server_t *server;
    cg_http_t *http;
    zhashx_t *clients; /* Mcp-Session-Id -> cg_client_t */
};

//  True when MESSAGE is the response (result or error) to the request ID.
static bool
s_answers (json_t *message, json_t *id)
{
    return id && (json_object_get (message, "result") || json_object_get (message, "error"))
           && json_equal (json_object_get (message, "id"), id);
}

//  Sends MESSAGE: JSON when it is the response and nothing came before it, else events
//  on an SSE stream that ends with the response.
static void
s_send (cg_channel_t *base, json_t *message, const char *text, size_t len)
{
    s_channel_t *self = (s_channel_t *)base;
    bool final = s_answers (message, self->request_id);
    const char *headers[] = {"Mcp-Session-Id", base->client->id, NULL};
    if (self->state == S_PENDING && final) {
        cg_http_respond (self->exchange, 200, "application/json", text, len, headers);
        self->state = S_DONE;
    }
    else if (self->state != S_DONE) {
        if (self->state == S_PENDING) {
            cg_http_stream_open (self->exchange, headers);
            self->state = S_STREAM;
        }
        cleanup_free char *event = cg_strdupf ("event: message\ndata: %s\n\n", text);
        cg_http_stream_write (self->exchange, event, strlen (event));
        if (final) {
            cg_http_stream_close (self->exchange);
            self->state = S_DONE;
        }
    }
}

//  Ends the answer if it is still open (an empty stream when nothing was sent: a
//  cancelled request gets no response) and frees the channel.
static void
s_free (cg_channel_t *base)
{
    s_channel_t *self = (s_channel_t *)base;
    if (self->state == S_PENDING)
        cg_http_stream_open (self->exchange, NULL);
    if (self->state != S_DONE)
        cg_http_stream_close (self->exchange);
    cg_http_exchange_release (&self->exchange);
    json_decref (self->request_id);
    free (self);
}

static const cg_channel_ops_t s_ops = {.send = s_send, .free = s_free};

static void
s_client_free (void **item)
{
    cg_client_t *client = *item;
    if (!client)
        return;
    free (client->id);
    free (client);
    *item = NULL;
}

//  Answers EXCHANGE with STATUS and a JSON-RPC error (id null) saying MESSAGE.
static void
s_refuse (cg_http_exchange_t *ex, unsigned int status, int code, const char *message,
          const char *const *headers)
{
    json_t *error = cg_jsonrpc_error (NULL, code, message);
    cleanup_free char *body = json_dumps (error, JSON_COMPACT);
    json_decref (error);
    cg_http_respond (ex, status, "application/json", body, strlen (body), headers);
}

//  True when AUTHORITY ("host:port") names this listener on loopback.
static bool
s_loopback_authority (cg_streamable_t *self, const char *authority, size_t len)
{
    int port = cg_http_port (self->http);
    const char *hosts[] = {"127.0.0.1", "localhost", "[::1]", NULL};
    for (int i = 0; hosts[i]; i++) {
        cleanup_free char *expected = cg_strdupf ("%s:%d", hosts[i], port);
        if (strlen (expected) == len && strncasecmp (expected, authority, len) == 0)
            return true;
    }
    return false;
}

//  DNS rebinding: on loopback, Host must name this listener, and an Origin (a browser's
//  page) must be this listener too. Returns true when the request may go on.
static bool
s_origin_ok (cg_streamable_t *self, cg_http_exchange_t *ex)
{
    const char *host = cg_http_exchange_header (ex, "Host");
    if (cg_http_loopback (self->http)
        && (!host || !s_loopback_authority (self, host, strlen (host))))
        return false;
    const char *origin = cg_http_exchange_header (ex, "Origin");
    if (!origin)
        return true;
    const char *authority = strstr (origin, "://");
    if (!authority || (strncmp (origin, "http://", 7) != 0 && strncmp (origin, "https://", 8) != 0))
        return false;
    authority += 3;
    size_t len = strcspn (authority, "/");
    return s_loopback_authority (self, authority, len)
           || (host && strlen (host) == len && strncasecmp (host, authority, len) == 0);
}

static bool
s_token_ok (cg_streamable_t *self, cg_http_exchange_t *ex)
{
    return cg_http_exchange_bearer (ex, cg_server_config (self->server)->http_token);
}

//  The checks every request to /mcp passes first. Returns true when it may go on (else
//  it was answered).
static bool
s_admit (cg_streamable_t *self, cg_http_exchange_t *ex)
{
    static const char *bearer[] = {"WWW-Authenticate", "Bearer realm=\"cellgate\"", NULL};
    if (!s_origin_ok (self, ex)) {
        s_refuse (ex, 403, CG_JSONRPC_INVALID_REQUEST,
                  "Forbidden: Host or Origin is not this server", NULL);
        return false;
    }
    if (!s_token_ok (self, ex)) {
        s_refuse (ex, 401, CG_JSONRPC_INVALID_REQUEST,
                  "Unauthorized: send Authorization: Bearer <token>", bearer);
        return false;
    }
    const char *version = cg_http_exchange_header (ex, "MCP-Protocol-Version");
    if (version && !cg_server_version_supported (version)) {
        s_refuse (ex, 400, CG_JSONRPC_INVALID_REQUEST,
                  "Bad Request: unsupported MCP-Protocol-Version", NULL);
        return false;
    }
    return true;
}

//  DELETE: ends the MCP session SID.
static void
s_delete (cg_streamable_t *self, cg_http_exchange_t *ex, const char *sid, cg_client_t *client)
{
    if (!sid)
        s_refuse (ex, 400, CG_JSONRPC_INVALID_REQUEST,
                  "Bad Request: Mcp-Session-Id header is required", NULL);
    else if (!client)
        s_refuse (ex, 404, CG_JSONRPC_INVALID_REQUEST, "Session not found", NULL);
    else {
        cg_server_client_end (self->server, client);
        zhashx_delete (self->clients, client->id);
        cg_http_respond (ex, 200, NULL, "", 0, NULL);
    }
}

//  Finds the POST's client: a new one for initialize. Returns it, or NULL when the
//  request was answered with an error.
static cg_client_t *
s_post_client (cg_streamable_t *self, cg_http_exchange_t *ex, json_t *message, const char *sid)
{
    const char *method = json_string_value (json_object_get (message, "method"));
    bool initialize =
        json_object_get (message, "id") && method && strcmp (method, "initialize") == 0;
    if (initialize && zhashx_size (self->clients) >= MAX_CLIENTS) {
        s_refuse (ex, 503, CG_JSONRPC_INTERNAL_ERROR,
                  "Service Unavailable: too many MCP sessions; end one with DELETE", NULL);
        return NULL;
    }
    if (initialize) {
        //  A new MCP session: its id is 128 random bits.
        cg_client_t *client = cg_xcalloc (1, sizeof *client);
        client->log_level = -1;
        char hex[33];
        cg_random_hex (hex, 16);
        client->id = cg_xstrdup (hex);
        zhashx_insert (self->clients, client->id, client);
        return client;
    }
    cg_client_t *client = sid ? zhashx_lookup (self->clients, sid) : NULL;
    if (!sid)
        s_refuse (ex, 400, CG_JSONRPC_INVALID_REQUEST,
                  "Bad Request: Mcp-Session-Id header is required", NULL);
    else if (!client)
        s_refuse (ex, 404, CG_JSONRPC_INVALID_REQUEST, "Session not found", NULL);
    return client;
}

//  A POST: one JSON-RPC message, answered on its own channel.
static void
s_post (cg_streamable_t *self, cg_http_exchange_t *ex, const char *sid)
{
    const char *accept = cg_http_exchange_header (ex, "Accept");
    if (accept && !strstr (accept, "*/*")
        && (!strstr (accept, "application/json") || !strstr (accept, "text/event-stream"))) {
        s_refuse (ex, 406, CG_JSONRPC_INVALID_REQUEST,
                  "Not Acceptable: accept both application/json and text/event-stream", NULL);
        return;
    }
    size_t len = 0;
    const char *body = cg_http_exchange_body (ex, &len);
    json_error_t jerr;
    json_t *message = json_loadb (body, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!message) {
        cleanup_free char *text = cg_strdupf ("Parse error: %s", jerr.text);
        s_refuse (ex, 400, CG_JSONRPC_PARSE_ERROR, text, NULL);
        return;
    }
    const char *why = NULL;
    cg_jsonrpc_kind_t kind = cg_jsonrpc_classify (message, &why);
    cg_client_t *client = NULL;
    if (kind == CG_JSONRPC_INVALID)
        s_refuse (ex, 400, CG_JSONRPC_INVALID_REQUEST, why, NULL);
    else
        client = s_post_client (self, ex, kind == CG_JSONRPC_REQUEST ? message : NULL, sid);
    if (client) {
        client->last_seen_us = cg_now_us ();
        s_channel_t *channel = cg_xcalloc (1, sizeof *channel);
        channel->base = (cg_channel_t){.ops = &s_ops,
                                       .client = client,
                                       .budget = cg_server_config (self->server)->max_result_bytes,
                                       .refs = 1};
        channel->exchange = cg_http_exchange_keep (ex);
        channel->request_id =
            kind == CG_JSONRPC_REQUEST ? json_incref (json_object_get (message, "id")) : NULL;
        cg_server_handle (self->server, &channel->base, message);
        if (kind != CG_JSONRPC_REQUEST && channel->state == S_PENDING) {
            cg_http_respond (ex, 202, NULL, "", 0, NULL);
            channel->state = S_DONE;
        }
        cg_channel_t *base = &channel->base;
        cg_channel_release (&base);
    }
    json_decref (message);
}

//  cg_http's /mcp handler: one POST (a JSON-RPC message), GET or DELETE.
static void
s_handle (void *arg, cg_http_exchange_t *ex)
{
    cg_streamable_t *self = arg;
    static const char *allow[] = {"Allow", "POST, DELETE", NULL};
    if (!s_admit (self, ex))
        return;
    const char *method = cg_http_exchange_method (ex);
    const char *sid = cg_http_exchange_header (ex, "Mcp-Session-Id");
    if (strcmp (method, "DELETE") == 0)
        s_delete (self, ex, sid, sid ? zhashx_lookup (self->clients, sid) : NULL);
    else if (strcmp (method, "POST") == 0)
        s_post (self, ex, sid);
    else
        //  No server-initiated stream: every message to a client answers one of its
        //  requests and goes on that request's response.
        s_refuse (ex, 405, CG_JSONRPC_INVALID_REQUEST,
                  "Method Not Allowed: POST JSON-RPC messages; DELETE ends the session", allow);
}

cg_streamable_t *
cg_streamable_new (cg_server_t *server, cg_http_t *http, size_t message_max)
{
    cg_streamable_t *self = cg_xcalloc (1, sizeof *self);
    self->server = server;
    self->http = http;
    self->clients = zhashx_new ();
    zhashx_set_destructor (self->clients, s_client_free);
    cg_http_route (http, "/mcp", 0, message_max, s_handle, self);
    const cg_config_t *config = cg_server_config (server);
    cleanup_free char *host =
        cg_xstrndup (config->http, (size_t)(strrchr (config->http, ':') - config->http));
    cleanup_free char *public_mcp =
        config->public_url ? cg_strdupf (", for clients %s/mcp", config->public_url) : NULL;
    cg_log (2, "serving MCP at http://%s:%d/mcp%s%s", host, cg_http_port (http),
            public_mcp ? public_mcp : "", config->http_token ? " (bearer token required)" : "");
    return self;
}

void
cg_streamable_destroy (cg_streamable_t **self_p)
{
    cg_streamable_t *self = *self_p;
    if (!self)
        return;
    zhashx_destroy (&self->clients);
    free (self);
    *self_p = NULL;
}

void
cg_streamable_reap (cg_streamable_t *self, int idle_ttl_s)
{
    int64_t cutoff = cg_now_us () - (int64_t)idle_ttl_s * 1000000;
    zlistx_t *stale = zlistx_new ();
    for (cg_client_t *c = zhashx_first (self->clients); c; c = zhashx_next (self->clients))
        if (c->last_seen_us <= cutoff && !cg_server_client_busy (self->server, c))
            zlistx_add_end (stale, c);
    for (cg_client_t *c = zlistx_first (stale); c; c = zlistx_next (stale)) {
        cg_log (2, "forgetting MCP session %.8s…: idle for %d s", c->id, idle_ttl_s);
        zhashx_delete (self->clients, c->id);
    }
    zlistx_destroy (&stale);
}
