/*  cg_admin — /admin/sessions: list and close any sandbox. */
#include "cg_admin.h"
#include "../artifacts/cg_http_guard.h"
#include "../bridge/cg_util.h"

#include <string.h>

#define S_PATH "/admin/sessions"

//  Returns true when EX may use the admin routes; else it was answered.
static bool
s_admit (cg_server_t *server, cg_http_exchange_t *ex)
{
    const char *token = cg_server_config (server)->http_token;
    //  Untrusted: every header is the client's. A browser's page (a downloaded HTML file
    //  included) must never reach these routes, whatever its origin.
    if (!cg_http_guard_origin (cg_server_http (server), ex)
        || cg_http_exchange_header (ex, "Origin") || cg_http_exchange_header (ex, "Sec-Fetch-Site"))
        cg_http_respond_error (ex, 403, "forbidden", "the admin routes take no browser requests");
    else if (!token && !cg_http_loopback (cg_server_http (server)))
        cg_http_respond_error (ex, 403, "forbidden",
                               "the admin routes need --http-token on a listener that is not "
                               "loopback-only");
    else if (!cg_http_guard_token (ex, token))
        cg_http_guard_unauthorized (ex);
    else
        return true;
    return false;
}

//  GET /admin/sessions: every client's sessions (owners cut to 8 characters: an
//  Mcp-Session-Id is a client's credential) and the sandboxes that are not sessions.
static void
s_list (cg_server_t *server, cg_http_exchange_t *ex)
{
    cg_registry_t *registry = cg_server_registry (server);
    const cg_config_t *config = cg_server_config (server);
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
s_close (cg_server_t *server, cg_http_exchange_t *ex, const char *slot)
{
    cg_registry_session_t *session = cg_registry_find_slot (cg_server_registry (server), slot);
    if (!session) {
        cg_http_respond_error (ex, 404, "not_found", "no session in that slot");
        return;
    }
    json_t *body = json_pack ("{s:s, s:s}", "closed", session->slot, "session_id", session->id);
    cg_log (2, "admin: closing session %s (slot %s) of MCP client %.8s…", session->id,
            session->slot, session->owner);
    cg_server_session_close (server, session, "An operator closed this session.");
    cg_http_respond_json (ex, 200, body, NULL);
}

static void
s_handle (void *arg, cg_http_exchange_t *ex)
{
    cg_server_t *server = arg;
    static const char *allow[] = {"Allow", "GET, DELETE", NULL};
    if (!s_admit (server, ex))
        return;
    const char *path = cg_http_exchange_path (ex) + strlen (S_PATH);
    const char *method = cg_http_exchange_method (ex);
    bool collection = strcmp (path, "") == 0 || strcmp (path, "/") == 0;
    //  Untrusted: the slot is looked up as an exact string, never used as a path.
    const char *slot = path[0] == '/' ? path + 1 : NULL;
    if (!collection && !slot)
        cg_http_respond_error (ex, 404, "not_found", "no such route");
    else if (strcmp (method, collection ? "GET" : "DELETE") == 0)
        collection ? s_list (server, ex) : s_close (server, ex, slot);
    else {
        const char *body = "{\"error\":\"method_not_allowed\",\"message\":\"GET /admin/sessions "
                           "lists; DELETE /admin/sessions/<slot> closes\"}";
        cg_http_respond (ex, 405, "application/json", body, strlen (body), allow);
    }
}

void
cg_admin_route (cg_server_t *server, cg_http_t *http)
{
    cg_http_route (http, S_PATH, CG_HTTP_PREFIX, 0, s_handle, server);
}
