/*  cg_admin — /admin/sessions: list and close any sandbox. */
#include "server/cg_admin.h"
#include "artifacts/cg_http_guard.h"
#include "base/cg_util.h"

#include <sodium.h>
#include <string.h>

#define S_PATH "/admin/sessions"

struct cg_admin_t {
    const cg_config_t *config;
    cg_registry_t *registry;
    cg_http_t *http;
    cg_admin_close_fn *close;
    void *close_arg;
    char *token; /* or NULL: the routes answer 503 */
};

//  Returns true when EX may use the admin routes; else it was answered.
static bool
s_admit (cg_admin_t *admin, cg_http_exchange_t *ex)
{
    //  Untrusted: every header is the client's. A browser's page (a downloaded HTML file
    //  included) must never reach these routes, whatever its origin. Loopback is no
    //  credential (any local user reaches it): the admin token is, on every listener.
    if (!cg_http_guard_origin (admin->http, ex) || cg_http_exchange_header (ex, "Origin")
        || cg_http_exchange_header (ex, "Sec-Fetch-Site"))
        cg_http_respond_error (ex, 403, "forbidden", "the admin routes take no browser requests");
    else
        return cg_http_guard_admin (ex, admin->token);
    return false;
}

//  GET /admin/sessions: every client's sessions (owners cut to 8 characters: an
//  Mcp-Session-Id is a client's credential) and the sandboxes that are not sessions.
static void
s_list (cg_admin_t *admin, cg_http_exchange_t *ex)
{
    cg_registry_t *registry = admin->registry;
    const cg_config_t *config = admin->config;
    json_t *list = json_array ();
    zlistx_t *all = cg_registry_sessions (registry, NULL);
    int64_t now = cg_now_us ();
    for (cg_registry_session_t *s = zlistx_first (all); s; s = zlistx_next (all)) {
        cleanup_free char *owner = cg_strdupf ("%.8s", s->owner);
        json_array_append_new (
            list, json_pack ("{s:s, s:s, s:s, s:s, s:s*, s:b, s:I, s:s, s:s, s:i}", "slot", s->slot,
                             "session_id", s->id, "owner", owner, "language", s->language, "name",
                             s->name, "busy", s->busy != NULL, "idle_s",
                             (json_int_t)((now - s->last_activity_us) / 1000000), "started_at",
                             s->started_at, "last_activity_at", s->last_activity_at, "executions",
                             s->executions));
    }
    zlistx_destroy (&all);
    size_t oneshots = 0, closing = 0;
    cg_registry_counts (registry, &oneshots, &closing);
    cg_http_respond_json (ex, 200,
                          json_pack ("{s:o, s:I, s:I, s:i, s:i}", "sessions", list, "oneshot_runs",
                                     (json_int_t)oneshots, "closing", (json_int_t)closing,
                                     "max_sessions", config->max_sessions, "oneshot_reserve",
                                     config->oneshot_reserve),
                          NULL);
}

//  DELETE /admin/sessions/<slot>: closes that session, whoever owns it.
static void
s_close (cg_admin_t *admin, cg_http_exchange_t *ex, const char *slot)
{
    cg_registry_session_t *session = cg_registry_find_slot (admin->registry, slot);
    if (!session) {
        cg_http_respond_error (ex, 404, "not_found", "no session in that slot");
        return;
    }
    json_t *body = json_pack ("{s:s, s:s}", "closed", session->slot, "session_id", session->id);
    cg_log (2, "admin: closing session %s (slot %s) of MCP client %.8s…", session->id,
            session->slot, session->owner);
    admin->close (admin->close_arg, session, "An operator closed this session.");
    cg_http_respond_json (ex, 200, body, NULL);
}

static void
s_handle (void *arg, cg_http_exchange_t *ex)
{
    cg_admin_t *admin = arg;
    static const char *allow[] = {"Allow", "GET, DELETE", NULL};
    if (!s_admit (admin, ex))
        return;
    const char *path = cg_http_exchange_path (ex) + strlen (S_PATH);
    const char *method = cg_http_exchange_method (ex);
    bool collection = strcmp (path, "") == 0 || strcmp (path, "/") == 0;
    //  Untrusted: the slot is looked up as an exact string, never used as a path.
    const char *slot = path[0] == '/' ? path + 1 : NULL;
    if (!collection && !slot)
        cg_http_respond_error (ex, 404, "not_found", "no such route");
    else if (strcmp (method, collection ? "GET" : "DELETE") == 0)
        collection ? s_list (admin, ex) : s_close (admin, ex, slot);
    else {
        const char *body = "{\"error\":\"method_not_allowed\",\"message\":\"GET /admin/sessions "
                           "lists; DELETE /admin/sessions/<slot> closes\"}";
        cg_http_respond (ex, 405, "application/json", body, strlen (body), allow);
    }
}

//  The admin token: the configured one, else the one kept 0600 in <state dir>/admin-token
//  (made at first start). Logs how to use it. Returns it (caller frees), or NULL (logged).
static char *
s_token (const cg_config_t *config, cg_http_t *http)
{
    const char *base = cg_http_base_url (http);
    if (config->admin_token) {
        cg_log (2,
                "admin: %s/admin/sessions and %s/metrics take \"Authorization: Bearer "
                "<the --admin-token>\"",
                base, base);
        return cg_xstrdup (config->admin_token);
    }
    cg_error_t *err = NULL;
    char *token = cg_http_guard_kept_token (config->state_dir, "admin-token", &err);
    if (!token) {
        cg_log (0,
                "admin: cannot keep a token: %s; /admin/sessions and /metrics answer 503 (set "
                "--admin-token)",
                cg_error_message (err));
        cg_error_destroy (&err);
        return NULL;
    }
    //  As the gateway's line says how to reach it, without the secret: the file is the
    //  owner's alone (0600), and the log may go where others read.
    cg_log (2,
            "admin: curl -H \"Authorization: Bearer $(cat %s/admin-token)\" %s/metrics (and "
            "/admin/sessions)",
            config->state_dir, base);
    return token;
}

cg_admin_t *
cg_admin_new (const cg_config_t *config, cg_registry_t *registry, cg_http_t *http,
              cg_admin_close_fn *close, void *arg)
{
    cg_admin_t *self = cg_xcalloc (1, sizeof *self);
    *self = (cg_admin_t){config, registry, http, close, arg, s_token (config, http)};
    cg_http_route (http, S_PATH, CG_HTTP_PREFIX, 0, s_handle, self);
    return self;
}

const char *
cg_admin_token (cg_admin_t *self)
{
    return self->token;
}

void
cg_admin_destroy (cg_admin_t **self_p)
{
    cg_admin_t *self = *self_p;
    if (!self)
        return;
    if (self->token) {
        sodium_memzero (self->token, strlen (self->token));
        free (self->token);
    }
    free (self);
    *self_p = NULL;
}
