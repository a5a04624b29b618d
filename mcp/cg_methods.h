/*  cg_methods — the MCP methods of the handshake: initialize (version negotiation), ping
    and logging/setLevel, and the capabilities the server declares. */
#ifndef CG_METHODS_H
#define CG_METHODS_H

#include "mcp/cg_server.h"

/*  initialize: agrees on a protocol revision with REQ's client and marks it initialized. */
void cg_methods_initialize (const cg_request_t *req, json_t *params);

/*  logging/setLevel: the most verbose server log level REQ's client receives. */
void cg_methods_set_log_level (const cg_request_t *req, json_t *params);

/*  Registers initialize, ping and logging/setLevel with SERVER. */
void cg_methods_register (cg_server_t *server);

/*  What initialize and server/discover say of the server to the LLM (the tools' text). */
const char *cg_methods_instructions (const cg_request_t *req);

/*  The server's capabilities for REQ's client (a new object): 2025's (MODERN false) or
    2026-07-28's. */
json_t *cg_methods_capabilities (const cg_request_t *req, bool modern);

#endif
