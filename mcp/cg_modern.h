/*  cg_modern — MCP revision 2026-07-28 (stateless) beside the handshake revisions: a request
    whose params._meta carries io.modelcontextprotocol/protocolVersion is served on its own,
    no initialize needed: its _meta checked (-32602, -32022), the methods 2026-07-28 removed
    refused (-32601), its result marked with resultType (and, for what may be cached,
    ttlMs and cacheScope) and the server's identity; server/discover says what the server
    speaks. Internal to mcp/. */
#ifndef CG_MODERN_H
#define CG_MODERN_H

#include "mcp/cg_revision.h"
#include "mcp/cg_server.h"

/*  Serves REQ (its method set), a cg_modern_request, with PARAMS: checks its _meta, then
    dispatches it (cg_server_dispatch) as a 2026-07-28 request. */
void cg_modern_handle (cg_request_t *req, json_t *params);

/*  Answers REQ -32021 (HTTP 400): it needs what REQUIRED (stolen; ClientCapabilities) names,
    which its request did not declare; MESSAGE says what. */
void cg_modern_missing (const cg_request_t *req, const char *message, json_t *required);

/*  Marks RESULT (an object; METHOD's) as 2026-07-28 wants it. */
void cg_modern_result (json_t *result, const char *method);

/*  server/discover's result (a new object). */
json_t *cg_modern_discover (const cg_request_t *req);

/*  Registers 2026-07-28 with SERVER: its requests served per request (their _meta checked,
    then dispatched), its answers marked, server/discover. */
void cg_modern_register (cg_server_t *server);

#endif
