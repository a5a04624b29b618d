/*  cg_admin — the operator's view of every sandbox, on the HTTP listener:
    GET /admin/sessions lists the sessions of all clients (and counts the one-shot runs),
    DELETE /admin/sessions/<slot> closes one (its call in flight is answered, its sandbox
    destroyed). Behind the admin token on every listener, loopback ones included (any
    local user reaches those): --admin-token, else one kept 0600 in <state dir>/admin-token;
    never the MCP clients' --http-token or the gateway's. Requests a browser makes (Origin
    or Sec-Fetch-Site) are refused. */
#ifndef CG_ADMIN_H
#define CG_ADMIN_H

#include "mcp/cg_server.h"

/*  Adds the /admin/sessions routes of SERVER to HTTP, its listener (both borrowed; SERVER
    must outlive the listener), and makes SERVER's admin token (the configured one, else
    the kept one; NULL when none could be kept, logged: the routes then answer 503). Logs
    how to use it. */
void cg_admin_route (cg_server_t *server, cg_http_t *http);

/*  Wipes and frees *TOKEN_P, sets it to NULL. Safe on NULL. */
void cg_admin_token_free (char **token_p);

#endif
