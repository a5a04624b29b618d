/*  cg_streamable — MCP's Streamable HTTP transport. */
#include "mcp/cg_streamable.h"
#include "mcp/cg_jsonrpc.h"
#include "mcp/cg_revision.h"
#include "artifacts/cg_http_guard.h"
#include "base/cg_fault.h"
#include "base/cg_util.h"
#include "base/cg_worker.h"

#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

//  One POST's answer: first pending, then JSON or an SSE stream.
typedef enum { S_PENDING, S_STREAM, S_DONE } s_state_t;
typedef struct {
    cg_channel_t base;
    cg_http_exchange_t *exchange;
    json_t *request_id; /* the request the answer is for */
    s_state_t state;
    int accepts;      /* CG_ACCEPT_JSON and/or CG_ACCEPT_SSE: what the answer may be */
    char *session_id; /* its Mcp-Session-Id header, copied: a message encoded off the loop may
                         go out after a DELETE freed the client; NULL for 2026-07-28's */
} s_channel_t;

//  An MCP session: the core's client and its standalone GET stream.
typedef struct {
    cg_client_t base;
    cg_http_exchange_t *listen; /* its open GET stream, or NULL */
} s_client_t;

struct cg_streamable_t {
    cg_server_t *server;
    cg_http_t *http;
    zhashx_t *clients;         /* Mcp-Session-Id -> s_client_t */
    int64_t next_reap_us;      /* when cg_streamable_reap looks at the clients next */
    cg_loop_hook_t *reap_hook; /* on the server's loop */
    cg_worker_t *parser;       /* parses the large bodies, off the loop */
    cg_loop_watch_t *parser_watch;
    bool ending; /* cg_streamable_destroy: bodies parsed from now on are dropped */
};

//  The large bodies waiting or being parsed at most; past it a POST is answered 503.
#define S_PARSE_QUEUE_MAX 16

//  True when MESSAGE is the response (result or error) to the request ID.
static bool
s_answers (json_t *message, json_t *id)
{
    return id && (json_object_get (message, "result") || json_object_get (message, "error"))
           && json_equal (json_object_get (message, "id"), id);
}

//  Sends MESSAGE: JSON when it is the response, nothing came before it and the client
//  accepts JSON, else events on an SSE stream that ends with the response. A client that
//  does not accept SSE gets the response alone: what would come before it (progress,
//  log messages, a fixture's request) is dropped.
static void
s_send (cg_channel_t *base, json_t *message, const char *text, size_t len)
{
    s_channel_t *self = (s_channel_t *)base;
    bool final = s_answers (message, self->request_id);
    //  A 2026-07-28 client has no MCP session: none is named.
    const char *headers[] = {self->session_id ? "Mcp-Session-Id" : NULL, self->session_id, NULL};
    if (self->state == S_DONE)
        return;
    if (self->state == S_PENDING && final && ((self->accepts & CG_ACCEPT_JSON) || base->status)) {
        cg_http_respond (self->exchange, base->status ? base->status : 200, "application/json",
                         text, len, headers);
        self->state = S_DONE;
        return;
    }
    if (!(self->accepts & CG_ACCEPT_SSE))
        return;
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

//  Ends the answer if it is still open and frees the channel. A request that got no
//  response (a cancelled one) ends with an empty SSE stream, or 204 for a client that
//  takes JSON only.
static void
s_free (cg_channel_t *base)
{
    s_channel_t *self = (s_channel_t *)base;
    if (self->state == S_PENDING && !(self->accepts & CG_ACCEPT_SSE)) {
        cg_http_respond (self->exchange, 204, NULL, "", 0, NULL);
        self->state = S_DONE;
    }
    if (self->state == S_PENDING)
        cg_http_stream_open (self->exchange, NULL);
    if (self->state != S_DONE)
        cg_http_stream_close (self->exchange);
    cg_http_exchange_release (&self->exchange);
    json_decref (self->request_id);
    free (self->session_id);
    free (self);
}

//  True when the media range RANGE (LEN bytes, parameters cut off) is TYPE.
static bool
s_range_is (const char *range, size_t len, const char *type)
{
    return strlen (type) == len && strncasecmp (range, type, len) == 0;
}

int
cg_streamable_accepts (const char *accept)
{
    if (!accept)
        return CG_ACCEPT_JSON;
    int accepts = 0;
    //  Untrusted: the client's header, read as comma-separated media ranges with
    //  parameters ("text/event-stream;q=0.5"); q=0 means "not this one".
    for (const char *range = accept; *range;) {
        range += strspn (range, " \t,");
        size_t item = strcspn (range, ",");
        size_t type = strcspn (range, ";,");
        while (type > 0 && (range[type - 1] == ' ' || range[type - 1] == '\t'))
            type--;
        const char *q = NULL;
        for (const char *param = range + type; param < range + item; param++)
            if (*param == ';') {
                const char *name = param + 1 + strspn (param + 1, " \t");
                if (strncasecmp (name, "q=", 2) == 0)
                    q = name + 2;
            }
        bool refused = q && strtod (q, NULL) <= 0;
        if (!refused && type > 0) {
            if (s_range_is (range, type, "*/*"))
                accepts |= CG_ACCEPT_JSON | CG_ACCEPT_SSE;
            else if (s_range_is (range, type, "application/json")
                     || s_range_is (range, type, "application/*"))
                accepts |= CG_ACCEPT_JSON;
            else if (s_range_is (range, type, "text/event-stream")
                     || s_range_is (range, type, "text/*"))
                accepts |= CG_ACCEPT_SSE;
        }
        range += item;
    }
    return accepts;
}

//  A 2026-07-28 request whose client closes its stream is cancelled (cg_calls_tick): a
//  comment on the stream (opened for it) is how a closed connection is noticed.
static bool
s_ping (cg_channel_t *base)
{
    s_channel_t *self = (s_channel_t *)base;
    if (self->state == S_DONE || !(self->accepts & CG_ACCEPT_SSE))
        return true;
    if (!cg_http_exchange_alive (self->exchange))
        return false;
    if (self->state == S_PENDING) {
        cg_http_stream_open (self->exchange, NULL);
        self->state = S_STREAM;
    }
    cg_http_stream_write (self->exchange, ": keep-alive\n\n", 14);
    return cg_http_exchange_alive (self->exchange);
}

static const cg_channel_ops_t s_ops = {.send = s_send, .free = s_free, .ping = s_ping};

//  Ends CLIENT's GET stream, if it has one.
static void
s_listen_end (s_client_t *client)
{
    if (client->listen) {
        cg_http_stream_close (client->listen);
        cg_http_exchange_release (&client->listen);
    }
}

static void
s_client_free (void **item)
{
    s_client_t *client = *item;
    if (!client)
        return;
    s_listen_end (client);
    free (client->base.id);
    free (client);
    *item = NULL;
}

//  Answers EXCHANGE with STATUS and a JSON-RPC error (id null) saying MESSAGE.
static void
s_refuse (cg_http_exchange_t *ex, unsigned int status, int code, const char *message,
          const char *const *headers)
{
    cg_http_respond_json (ex, status, cg_jsonrpc_error (NULL, code, message), headers);
}

//  Answers a 2026-07-28 request MESSAGE on EXCHANGE with 400 and -32020 saying WHY.
static void
s_mismatch (cg_http_exchange_t *ex, json_t *message, const char *why)
{
    cleanup_free char *text = cg_strdupf ("Header mismatch: %s", why);
    cg_http_respond_json (
        ex, 400,
        cg_jsonrpc_error (json_object_get (message, "id"), CG_JSONRPC_HEADER_MISMATCH, text), NULL);
}

//  The checks every request to /mcp passes first. Returns true when it may go on (else
//  it was answered).
static bool
s_admit (cg_streamable_t *self, cg_http_exchange_t *ex)
{
    static const char *bearer[] = {"WWW-Authenticate", "Bearer realm=\"cellgate\"", NULL};
    if (!cg_http_guard_origin (self->http, ex)) {
        s_refuse (ex, 403, CG_JSONRPC_INVALID_REQUEST,
                  "Forbidden: Host or Origin is not this server", NULL);
        return false;
    }
    if (!cg_http_guard_token (ex, cg_server_config (self->server)->http_token)) {
        s_refuse (ex, 401, CG_JSONRPC_INVALID_REQUEST,
                  "Unauthorized: send Authorization: Bearer <token>", bearer);
        return false;
    }
    //  (A 2026-07-28 request's version is checked with its body: s_post; one that names
    //  an MCP session has it ignored.)
    const char *version = cg_http_exchange_header (ex, "MCP-Protocol-Version");
    bool stateless_post = strcmp (cg_http_exchange_method (ex), "POST") == 0
                          && (!cg_http_exchange_header (ex, "Mcp-Session-Id")
                              || (version && strcmp (version, CG_MODERN_VERSION) == 0));
    if (version && !cg_server_version_supported (version) && !stateless_post) {
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

//  2026-07-28's headers of a POST of MESSAGE: MCP-Protocol-Version, Mcp-Method and, for
//  tools/call, prompts/get and resources/read, Mcp-Name must say what the body says.
//  Returns true when they do (else the request was answered: 400, -32020).
static bool
s_modern_headers (cg_http_exchange_t *ex, json_t *message)
{
    json_t *params = json_object_get (message, "params");
    const char *method = json_string_value (json_object_get (message, "method"));
    const char *version = json_string_value (
        json_object_get (json_object_get (params, "_meta"), CG_MODERN_META_VERSION));
    //  (Mcp-Name: tools/call and prompts/get name, resources/read uri, the tasks
    //  extension's get, update and cancel taskId.)
    bool task = method
                && (strcmp (method, "tasks/get") == 0 || strcmp (method, "tasks/update") == 0
                    || strcmp (method, "tasks/cancel") == 0);
    const char *name_field = !method                                  ? NULL
                             : strcmp (method, "tools/call") == 0     ? "name"
                             : strcmp (method, "prompts/get") == 0    ? "name"
                             : strcmp (method, "resources/read") == 0 ? "uri"
                             : task                                   ? "taskId"
                                                                      : NULL;
    const struct {
        const char *header, *body;
    } checks[] = {
        {"MCP-Protocol-Version", version},
        {"Mcp-Method", method},
        {"Mcp-Name", name_field ? json_string_value (json_object_get (params, name_field)) : NULL}};
    for (size_t i = 0; i < sizeof checks / sizeof *checks; i++) {
        if (i == 2 && !name_field)
            break;
        //  A _meta without its version (a string) is the core's -32602, once a version
        //  header was sent at all.
        if (i == 0 && !version && cg_http_exchange_header (ex, checks[i].header))
            continue;
        cleanup_free char *sent =
            cg_modern_header_value (cg_http_exchange_header (ex, checks[i].header));
        if (!sent || !checks[i].body || strcmp (sent, checks[i].body) != 0) {
            cleanup_free char *why =
                cg_strdupf ("the %s header %s what the body says", checks[i].header,
                            sent ? "does not match" : "is missing, or not");
            s_mismatch (ex, message, why);
            return false;
        }
    }
    return true;
}

//  The owner of a client making its first request on EX: with several tokens in
//  --http-token, 1 + the index of the one it sent; else 0, its own (cg_client_same_owner).
static int
s_owner (cg_streamable_t *self, cg_http_exchange_t *ex)
{
    const char *tokens = cg_server_config (self->server)->http_token;
    if (!tokens || !strchr (tokens, ','))
        return 0;
    return cg_http_guard_token_index (ex, tokens) + 1;
}

//  Whether a new client owned by OWNER has room (--max-mcp-sessions, and its owner's share
//  --max-mcp-sessions-per-client). Returns true when it has; else EX is answered: 503 when
//  the server is full, 429 when the owner's share is.
static bool
s_room (cg_streamable_t *self, cg_http_exchange_t *ex, int owner)
{
    const cg_config_t *config = cg_server_config (self->server);
    int owned = 0;
    for (s_client_t *c = zhashx_first (self->clients); owner && c; c = zhashx_next (self->clients))
        owned += c->base.owner == owner;
    if (owned >= config->max_mcp_sessions_per_client) {
        cleanup_free char *message =
            cg_strdupf ("Too Many Requests: this client's token holds %d MCP sessions, its most "
                        "(--max-mcp-sessions-per-client); end one with DELETE",
                        owned);
        s_refuse (ex, 429, CG_JSONRPC_INVALID_REQUEST, message, NULL);
        return false;
    }
    if (zhashx_size (self->clients) >= (size_t)config->max_mcp_sessions) {
        cleanup_free char *message =
            cg_strdupf ("Service Unavailable: %d MCP sessions are open, the most "
                        "(--max-mcp-sessions); end one with DELETE",
                        config->max_mcp_sessions);
        s_refuse (ex, 503, CG_JSONRPC_INTERNAL_ERROR, message, NULL);
        return false;
    }
    return true;
}

//  The client of a 2026-07-28 POST: no MCP session; its bearer token (none: one anonymous
//  client) is who owns the sandboxes it makes. Returns it, or NULL when too many exist
//  (answered: 503).
static cg_client_t *
s_stateless_client (cg_streamable_t *self, cg_http_exchange_t *ex)
{
    const char *auth = cg_http_exchange_header (ex, "Authorization");
    unsigned char hash[16];
    crypto_generichash (hash, sizeof hash, (const unsigned char *)(auth ? auth : ""),
                        auth ? strlen (auth) : 0, NULL, 0);
    char id[48] = "stateless-";
    sodium_bin2hex (id + 10, sizeof id - 10, hash, 8);
    s_client_t *client = zhashx_lookup (self->clients, id);
    if (client)
        return &client->base;
    int owner = s_owner (self, ex);
    if (!s_room (self, ex, owner))
        return NULL;
    client = cg_xcalloc (1, sizeof *client);
    client->base = (cg_client_t){.id = cg_xstrdup (id),
                                 .initialized = true,
                                 .log_level = -1,
                                 .stateless = true,
                                 .owner = owner};
    snprintf (client->base.version, sizeof client->base.version, "%s", CG_MODERN_VERSION);
    zhashx_insert (self->clients, client->base.id, client);
    return &client->base;
}

//  Finds the POST's client: a new one for initialize. Returns it, or NULL when the
//  request was answered with an error.
static cg_client_t *
s_post_client (cg_streamable_t *self, cg_http_exchange_t *ex, json_t *message, const char *sid)
{
    const char *method = json_string_value (json_object_get (message, "method"));
    bool initialize =
        json_object_get (message, "id") && method && strcmp (method, "initialize") == 0;
    int owner = initialize ? s_owner (self, ex) : 0;
    if (initialize && !s_room (self, ex, owner))
        return NULL;
    if (initialize) {
        //  A new MCP session: its id is 128 random bits.
        s_client_t *client = cg_xcalloc (1, sizeof *client);
        client->base.log_level = -1;
        client->base.owner = owner;
        char hex[33];
        cg_random_hex (hex, 16);
        client->base.id = cg_xstrdup (hex);
        zhashx_insert (self->clients, client->base.id, client);
        return &client->base;
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
static void s_parse_later (cg_streamable_t *self, cg_http_exchange_t *ex, const char *sid,
                           int accepts);
static void s_post_message (cg_streamable_t *self, cg_http_exchange_t *ex, const char *sid,
                            int accepts, json_t *message, const json_error_t *jerr);

static void
s_post (cg_streamable_t *self, cg_http_exchange_t *ex, const char *sid)
{
    int accepts = cg_streamable_accepts (cg_http_exchange_header (ex, "Accept"));
    if (!accepts) {
        s_refuse (ex, 406, CG_JSONRPC_INVALID_REQUEST,
                  "Not Acceptable: accept application/json, text/event-stream or both (MCP "
                  "clients send both)",
                  NULL);
        return;
    }
    size_t len = 0;
    const char *body = cg_http_exchange_body (ex, &len);
    if (len > CG_JSONRPC_PARSE_ON_LOOP_MAX) {
        s_parse_later (self, ex, sid, accepts);
        return;
    }
    json_error_t jerr;
    json_t *message = json_loadb (body, len, JSON_REJECT_DUPLICATES, &jerr);
    s_post_message (self, ex, sid, accepts, message, &jerr);
}

//  A POST's body parsed off the loop (CG_JSONRPC_PARSE_ON_LOOP_MAX): the worker's alone until it
//  comes back.
typedef struct {
    cg_work_t work;
    cg_streamable_t *self;
    cg_http_exchange_t *exchange; /* kept: its body stays until it is released */
    char *sid;                    /* the Mcp-Session-Id, or NULL */
    int accepts;
    json_t *message; /* the parsed body, or NULL with JERR */
    json_error_t jerr;
} s_parse_t;

static void
s_parse_work (cg_work_t *work)
{
    s_parse_t *parse = (s_parse_t *)work;
    size_t len = 0;
    cg_fault_hold ("request_parse");
    //  Untrusted: the client's body, bounded by the route's limit.
    const char *body = cg_http_exchange_body (parse->exchange, &len);
    parse->message = json_loadb (body, len, JSON_REJECT_DUPLICATES, &parse->jerr);
}

//  Back on the loop: the POST goes on where s_post left it, if its client is still there.
static void
s_parse_after (cg_work_t *work, bool ran)
{
    s_parse_t *parse = (s_parse_t *)work;
    if (ran && !parse->self->ending && cg_http_exchange_alive (parse->exchange))
        s_post_message (parse->self, parse->exchange, parse->sid, parse->accepts, parse->message,
                        &parse->jerr);
    else
        json_decref (parse->message);
    cg_http_exchange_release (&parse->exchange);
    free (parse->sid);
    free (parse);
}

static void
s_parse_later (cg_streamable_t *self, cg_http_exchange_t *ex, const char *sid, int accepts)
{
    s_parse_t *parse = cg_xcalloc (1, sizeof *parse);
    *parse = (s_parse_t){.work = {.work_cb = s_parse_work, .after_cb = s_parse_after},
                         .self = self,
                         .exchange = cg_http_exchange_keep (ex),
                         .sid = sid ? cg_xstrdup (sid) : NULL,
                         .accepts = accepts};
    cg_error_t *err = NULL;
    if (cg_worker_queue (self->parser, &parse->work, false, &err) == 0)
        return;
    s_refuse (ex, 503, CG_JSONRPC_INTERNAL_ERROR, cg_error_message (err), NULL);
    cg_error_destroy (&err);
    cg_http_exchange_release (&parse->exchange);
    free (parse->sid);
    free (parse);
}

//  A POST's MESSAGE (taken; NULL: the body did not parse, JERR says why), from a client
//  that takes ACCEPTS, in the session SID (NULL: none).
static void
s_post_message (cg_streamable_t *self, cg_http_exchange_t *ex, const char *sid, int accepts,
                json_t *message, const json_error_t *jerr)
{
    if (!message) {
        cleanup_free char *text = cg_strdupf ("Parse error: %s", jerr->text);
        s_refuse (ex, 400, CG_JSONRPC_PARSE_ERROR, text, NULL);
        return;
    }
    const char *why = NULL;
    cg_jsonrpc_kind_t kind = cg_jsonrpc_classify (message, &why);
    cg_client_t *client = NULL;
    //  2026-07-28: a request with its per-request _meta, or a POST without a session that
    //  names that revision.
    const char *header = cg_http_exchange_header (ex, "MCP-Protocol-Version");
    bool modern = kind == CG_JSONRPC_REQUEST
                  && (cg_modern_request (message)
                      || (!sid && header && strcmp (header, CG_MODERN_VERSION) == 0));
    if (kind == CG_JSONRPC_INVALID)
        s_refuse (ex, 400, CG_JSONRPC_INVALID_REQUEST, why, NULL);
    else if (modern && !cg_modern_request (message)) {
        cg_http_respond_json (
            ex, 400,
            cg_jsonrpc_error (json_object_get (message, "id"), CG_JSONRPC_INVALID_PARAMS,
                              "a 2026-07-28 request carries params._meta with "
                              "io.modelcontextprotocol/protocolVersion and clientCapabilities"),
            NULL);
    }
    else if (modern) {
        if (s_modern_headers (ex, message))
            client = s_stateless_client (self, ex);
    }
    else
        client = s_post_client (self, ex, kind == CG_JSONRPC_REQUEST ? message : NULL, sid);
    if (client) {
        client->last_seen_us = cg_now_us ();
        s_channel_t *channel = cg_xcalloc (1, sizeof *channel);
        channel->base = (cg_channel_t){.ops = &s_ops,
                                       .client = client,
                                       .budget = cg_server_config (self->server)->max_result_bytes,
                                       .refs = 1,
                                       .encoder = cg_server_encoder (self->server)};
        channel->exchange = cg_http_exchange_keep (ex);
        channel->accepts = accepts;
        channel->session_id = client->stateless ? NULL : cg_xstrdup (client->id);
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

//  GET: the client's standalone SSE stream. Nothing is sent on it but keep-alive
//  comments (every message answers a request, on that request's response); while it is
//  open the client is present (cg_streamable_reap). A second GET replaces the first.
static void
s_get (cg_streamable_t *self, cg_http_exchange_t *ex, const char *sid)
{
    const char *accept = cg_http_exchange_header (ex, "Accept");
    s_client_t *client = sid ? zhashx_lookup (self->clients, sid) : NULL;
    if (accept && !(cg_streamable_accepts (accept) & CG_ACCEPT_SSE))
        s_refuse (ex, 406, CG_JSONRPC_INVALID_REQUEST, "Not Acceptable: accept text/event-stream",
                  NULL);
    else if (!sid)
        s_refuse (ex, 400, CG_JSONRPC_INVALID_REQUEST,
                  "Bad Request: Mcp-Session-Id header is required", NULL);
    else if (!client)
        s_refuse (ex, 404, CG_JSONRPC_INVALID_REQUEST, "Session not found", NULL);
    else {
        s_listen_end (client);
        const char *headers[] = {"Mcp-Session-Id", client->base.id, NULL};
        client->listen = cg_http_exchange_keep (ex);
        cg_http_stream_open (ex, headers);
        cg_http_stream_write (ex, ": open\n\n", 8);
        client->base.last_seen_us = cg_now_us ();
    }
}

//  cg_http's /mcp handler: one POST (a JSON-RPC message), GET or DELETE.
static void
s_handle (void *arg, cg_http_exchange_t *ex)
{
    cg_streamable_t *self = arg;
    static const char *allow[] = {"Allow", "GET, POST, DELETE", NULL};
    if (!s_admit (self, ex))
        return;
    const char *method = cg_http_exchange_method (ex);
    const char *sid = cg_http_exchange_header (ex, "Mcp-Session-Id");
    if (strcmp (method, "DELETE") == 0)
        s_delete (self, ex, sid, sid ? zhashx_lookup (self->clients, sid) : NULL);
    else if (strcmp (method, "POST") == 0)
        s_post (self, ex, sid);
    else if (strcmp (method, "GET") == 0)
        s_get (self, ex, sid);
    else
        s_refuse (
            ex, 405, CG_JSONRPC_INVALID_REQUEST,
            "Method Not Allowed: POST JSON-RPC messages; GET listens; DELETE ends the session",
            allow);
}

static int
s_reap_cb (cg_loop_t *loop, void *arg)
{
    (void)loop;
    return cg_streamable_reap (arg, -1);
}

//  The parser thread gave bodies back.
static void
s_parser_cb (cg_loop_t *loop, short revents, void *arg)
{
    (void)loop;
    (void)revents;
    cg_worker_collect (((cg_streamable_t *)arg)->parser);
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
    self->reap_hook = cg_loop_before_wait (cg_server_loop (server), s_reap_cb, self);
    self->parser = cg_worker_new_nice ("request parser", S_PARSE_QUEUE_MAX, CG_WORKER_NICE);
    self->parser_watch = cg_worker_watch (self->parser, cg_server_loop (server), s_parser_cb, self);
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
    cg_loop_hook_end (cg_server_loop (self->server), &self->reap_hook);
    cg_loop_unwatch (cg_server_loop (self->server), &self->parser_watch);
    self->ending = true;
    cg_worker_destroy (&self->parser);
    zhashx_destroy (&self->clients);
    free (self);
    *self_p = NULL;
}

//  True when CLIENT has a call in flight.
static bool
s_calling (cg_streamable_t *self, cg_client_t *client)
{
    zhashx_t *calls = cg_server_calls (self->server);
    for (cg_call_t *c = zhashx_first (calls); c; c = zhashx_next (calls))
        if (c->channel->client == client)
            return true;
    return false;
}

//  Ends CLIENT, gone for QUIET_S seconds: its sessions are closed (their sandboxes go)
//  and it is forgotten. Logged with what went.
static void
s_client_gone (cg_streamable_t *self, s_client_t *client, long quiet_s)
{
    zlistx_t *mine = cg_registry_sessions (cg_server_registry (self->server), client->base.id);
    char *ids = NULL;
    size_t len = 0;
    FILE *out = open_memstream (&ids, &len);
    if (!out)
        abort (); /* out of memory */
    for (cg_registry_session_t *s = zlistx_first (mine); s; s = zlistx_next (mine))
        fprintf (out, "%s%s", ftell (out) ? ", " : "", s->id);
    fclose (out);
    cg_log (2,
            "ending MCP session %.8s… (client '%s'): no request for %ld s, no call in flight and "
            "no open GET stream; %s%s",
            client->base.id, client->base.name, quiet_s,
            zlistx_size (mine) ? "closing its sessions " : "it held no session", ids);
    free (ids);
    zlistx_destroy (&mine);
    cg_server_client_end (self->server, &client->base);
    zhashx_delete (self->clients, client->base.id);
}

int
cg_streamable_reap (cg_streamable_t *self, int wait_ms)
{
    const cg_config_t *config = cg_server_config (self->server);
    int grace_s =
        config->client_grace_s < config->idle_ttl_s ? config->client_grace_s : config->idle_ttl_s;
    int every_ms = grace_s < 10 ? grace_s * 500 : 5000;
    int64_t now = cg_now_us ();
    if (now >= self->next_reap_us) {
        self->next_reap_us = now + (int64_t)every_ms * 1000;
        zlistx_t *gone = zlistx_new ();
        for (s_client_t *c = zhashx_first (self->clients); c; c = zhashx_next (self->clients)) {
            if (c->listen && !cg_http_exchange_alive (c->listen))
                s_listen_end (c);
            if (c->listen) {
                //  A write is how a closed connection is noticed; it also keeps the
                //  stream from timing out.
                cg_http_stream_write (c->listen, ": keep-alive\n\n", 14);
                c->base.last_seen_us = now;
            }
            else if (!c->base.stateless /* its sandboxes go with the idle TTL */
                     && now - c->base.last_seen_us >= (int64_t)grace_s * 1000000
                     && !s_calling (self, &c->base))
                zlistx_add_end (gone, c);
        }
        for (s_client_t *c = zlistx_first (gone); c; c = zlistx_next (gone))
            s_client_gone (self, c, (long)((now - c->base.last_seen_us) / 1000000));
        zlistx_destroy (&gone);
    }
    int until_ms = (int)((self->next_reap_us - now) / 1000) + 1;
    return wait_ms < 0 || until_ms < wait_ms ? until_ms : wait_ms;
}
