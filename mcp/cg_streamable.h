/*  cg_streamable — MCP's Streamable HTTP transport at /mcp on the server's listener:
    MCP sessions (Mcp-Session-Id), Host/Origin and bearer-token checks, and one channel
    per POST whose answer is JSON or an SSE stream. */
#ifndef CG_STREAMABLE_H
#define CG_STREAMABLE_H

#include "cg_server.h"

typedef struct cg_streamable_t cg_streamable_t;

/*  Serves MCP at /mcp on HTTP (borrowed); request bodies over MESSAGE_MAX get 413. */
cg_streamable_t *cg_streamable_new (cg_server_t *server, cg_http_t *http, size_t message_max);
void cg_streamable_destroy (cg_streamable_t **self_p);

/*  Forgets the MCP sessions that sent nothing for IDLE_TTL_S seconds and hold no sandbox
    session or call: a client that never says DELETE does not stay forever. */
void cg_streamable_reap (cg_streamable_t *self, int idle_ttl_s);

#endif
