/*  mcp_harness — the MCP core in memory, for unit tests: the server's core and every
    feature and tool registered as the process does (cg_serve_mcp_features), without the event
    loop or a transport; a registry on a fake backend that makes no container (a session
    or a one-shot run fails to start); and a channel that keeps what the core sends. No
    root, no runc, no kernel: each request is handled and answered in the same call. */
#ifndef MCP_HARNESS_H
#define MCP_HARNESS_H

#include "mcp/cg_mcp.h"
#include "server/cg_server.h"
#include "mcp/cg_server_int.h"

/*  A test's channel: every message sent on it is kept, in order. */
typedef struct {
    cg_channel_t base;
    json_t *sent; /* the messages sent since the last h_take */
    bool gone;    /* its ping answers false: the client closed its stream */
} h_channel_t;

typedef struct {
    cg_config_t config;
    cg_backend_t *backend;
    cg_instance_t *instance;
    cg_server_t server;
    char state_dir[64];
} h_t;

/*  Starts SELF: a config from the NULL-terminated flags ARGS (may be NULL) on a fresh
    state dir, the fake backend, the registry and the core, the features and tools
    registered, then EXTRA (may be NULL). Returns 0, or -1 (printed). */
int h_start (h_t *self, const char **args, cg_server_setup_fn *extra);

/*  Ends what h_start made, the state dir too. */
void h_stop (h_t *self);

/*  A new client named ID (stdio-like, not initialized) and a channel of its (one
    reference, the caller's; h_channel_free gives it back). */
cg_client_t *h_client (const char *id);
void h_client_free (cg_client_t **client_p);
h_channel_t *h_channel (cg_client_t *client);
void h_channel_free (h_channel_t **self_p);

/*  Handles the JSON text of one message (printf-formatted) from CHANNEL's client and
    returns what the core sent on CHANNEL meanwhile (a new array). */
json_t *h_send (h_t *self, h_channel_t *channel, const char *fmt, ...)
    __attribute__ ((format (printf, 3, 4)));

/*  What was sent on CHANNEL since the last take (a new array; the channel's is emptied). */
json_t *h_take (h_channel_t *channel);

/*  The first message of SENT (an array, borrowed) that answers ID (a response), or NULL. */
json_t *h_answer (json_t *sent, json_int_t id);

/*  The first notification METHOD in SENT, or NULL. */
json_t *h_note (json_t *sent, const char *method);

/*  A response's parts: its error's code (0 when none), its error's message ("" when
    none) and its result (borrowed; NULL when none). */
int h_error_code (json_t *message);
const char *h_error_text (json_t *message);
json_t *h_result (json_t *message);

/*  Initializes CHANNEL's client at protocol VERSION (its answer checked by the caller when
    it cares). */
void h_initialize (h_t *self, h_channel_t *channel, const char *version);

/*  The _meta a 2026-07-28 request carries, with CAPABILITIES (JSON text) as its
    clientCapabilities: a static string to put in a request's params. */
#define H_MODERN_META(capabilities)                                             \
    "\"_meta\": {\"io.modelcontextprotocol/protocolVersion\": \"2026-07-28\", " \
    "\"io.modelcontextprotocol/clientCapabilities\": " capabilities "}"

#endif
