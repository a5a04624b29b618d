/*  cg_admin — the operator's view of every sandbox, on the HTTP listener:
    GET /admin/sessions lists the sessions of all clients (and counts the one-shot runs),
    DELETE /admin/sessions/<slot> closes one (every front end is told, so its call in
    flight is answered; its sandbox destroyed). Behind the admin token on every listener,
    loopback ones included (any local user reaches those): --admin-token, else one kept
    0600 in <state dir>/admin-token; never the MCP clients' --http-token or the gateway's.
    Requests a browser makes (Origin or Sec-Fetch-Site) are refused. */
#ifndef CG_ADMIN_H
#define CG_ADMIN_H

#include "artifacts/cg_http.h"
#include "base/cg_config.h"
#include "bridge/cg_registry.h"

typedef struct cg_admin_t cg_admin_t;

/*  Closes SESSION for WHY, whoever owns it (the process tells every front end, then
    retires it). */
typedef void (cg_admin_close_fn) (void *arg, cg_registry_session_t *session, const char *why);

/*  Adds the /admin/sessions routes over REGISTRY to HTTP, closing with CLOSE (and ARG),
    and makes the admin token (the configured one, else the kept one; NULL when none could
    be kept, logged: the routes then answer 503). Logs how to use it. All borrowed; the
    admin must outlive the listener's last request. */
cg_admin_t *cg_admin_new (const cg_config_t *config, cg_registry_t *registry, cg_http_t *http,
                          cg_admin_close_fn *close, void *arg);

/*  The admin token (/metrics takes it too), or NULL. Borrowed. */
const char *cg_admin_token (cg_admin_t *self);

/*  Wipes the token and frees the admin. Sets *SELF_P to NULL; safe on NULL. */
void cg_admin_destroy (cg_admin_t **self_p);

#endif
