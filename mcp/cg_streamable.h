/*  cg_streamable — MCP's Streamable HTTP transport at /mcp on the server's listener:
    MCP sessions (Mcp-Session-Id), Host/Origin and bearer-token checks, and one channel
    per POST whose answer is JSON or an SSE stream. */
#ifndef CG_STREAMABLE_H
#define CG_STREAMABLE_H

#include "mcp/cg_server.h"

typedef struct cg_streamable_t cg_streamable_t;

/*  Serves MCP at /mcp on HTTP (borrowed); request bodies over MESSAGE_MAX get 413. Its
    reaping (cg_streamable_reap) runs on SERVER's loop before every wait. */
cg_streamable_t *cg_streamable_new (cg_server_t *server, cg_http_t *http, size_t message_max);
void cg_streamable_destroy (cg_streamable_t **self_p);

/*  What an answer to a POST may be: a JSON body, an SSE stream, or either. */
#define CG_ACCEPT_JSON 1
#define CG_ACCEPT_SSE 2

/*  Reads a POST's Accept header (NULL: none) and returns what it lets the answer be:
    CG_ACCEPT_JSON | CG_ACCEPT_SSE when it names both types, or wildcards that cover both;
    CG_ACCEPT_JSON when it names application/json (or the application wildcard) without
    the event stream, and when there is no header at all (a plain HTTP client, which
    need not read SSE); CG_ACCEPT_SSE for text/event-stream (or the text wildcard)
    alone; 0 for neither (the POST gets 406). A media range with q=0 does not count. */
int cg_streamable_accepts (const char *accept);

/*  Ends the MCP sessions whose client is gone: no request for --client-grace seconds (or
    the idle TTL, when shorter), no call in flight and no open GET stream. Their sandbox
    sessions are closed and this is logged. Keeps the GET streams alive. Looks at most
    every few seconds; returns WAIT_MS (the loop's next wait, -1: none) lowered to the ms
    until it should be called again. */
int cg_streamable_reap (cg_streamable_t *self, int wait_ms);

#endif
