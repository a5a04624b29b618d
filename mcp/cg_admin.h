/*  cg_admin — the operator's view of every sandbox, on the HTTP listener:
    GET /admin/sessions lists the sessions of all clients (and counts the one-shot runs),
    DELETE /admin/sessions/<slot> closes one (its call in flight is answered, its sandbox
    destroyed). Behind the bearer token (--http-token); with no token, served only on a
    loopback listener. Requests a browser makes (Origin or Sec-Fetch-Site) are refused. */
#ifndef CG_ADMIN_H
#define CG_ADMIN_H

#include "cg_server.h"

/*  Adds the /admin/sessions routes of SERVER to HTTP, its listener (both borrowed; SERVER
    must outlive the listener). */
void cg_admin_route (cg_server_t *server, cg_http_t *http);

#endif
