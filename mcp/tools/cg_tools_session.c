/*  cg_tools_session — the session tools: start_session, list_sessions, close_session. */
#include "mcp/tools/cg_tools.h"
#include "mcp/cg_jsonrpc.h"
#include "bridge/cg_notebook_command.h"
#include "base/cg_kernels.h"
#include "base/cg_util.h"
#include "base/cg_utf8.h"

#include <math.h>
#include <string.h>

void
cg_tools_start_session (const cg_request_t *req, json_t *arguments)
{
    json_t *language = json_object_get (arguments, "language");
    json_t *name = json_object_get (arguments, "name");
    json_t *working_dir = json_object_get (arguments, "working_dir");
    const char *canonical = NULL;
    const char *error = NULL;
    if (!cg_tools_language_arg (req, language, &canonical))
        return;
    if (!json_is_string (language))
        error = "'language' is a required string";
    else if (name && (!json_is_string (name) || json_string_length (name) > CG_SESSION_NAME_MAX))
        error = "'name' must be a string of at most " CG_STR (CG_SESSION_NAME_MAX) " characters";
    else if (working_dir
             && (!json_is_string (working_dir)
                 || (strcmp (json_string_value (working_dir), CG_WORKSPACE_MOUNT) != 0
                     && strcmp (json_string_value (working_dir), CG_WORKSPACE_MOUNT "/") != 0)))
        error = "working_dir is not a host path here: the session runs in a sandbox whose only "
                "writable directory is " CG_WORKSPACE_MOUNT
                " (the default). Omit working_dir, or pass " CG_WORKSPACE_MOUNT
                ", and upload files there instead.";
    if (error) {
        cg_request_result (req, cg_tools_error_object ("invalid_params", error, NULL));
        return;
    }
    cg_registry_t *registry = cg_server_registry (req->server);
    json_t *egress_allow = NULL;
    cleanup_free char *egress_error = NULL;
    if (cg_tools_egress_allow (registry, json_object_get (arguments, "egress_allow"), &egress_allow,
                               &egress_error)
        < 0) {
        cg_request_result (req, cg_tools_error_object ("invalid_params", egress_error, NULL));
        return;
    }
    char session_id[18] = "sess_";
    cg_random_hex (session_id + 5, 6);
    cg_registry_session_t *session = cg_registry_create (
        registry, req->client->id, session_id, canonical, json_string_value (name), egress_allow);
    json_decref (egress_allow);
    if (!session) {
        cg_request_result (req, cg_tools_max_sessions (req, NULL, NULL));
        return;
    }
    cg_call_t *call = cg_server_call_new (req, req->tool->name, session_id);
    cg_registry_set_busy (session, call->key);
    cg_runner_start (session->runner, call->key, canonical, NULL);
}

//  The kernel's pid as the runner reported it, or null.
static json_t *
s_pid (cg_registry_session_t *session)
{
    return session->pid > 0 ? json_integer (session->pid) : json_null ();
}

//  start_session's text: the session, and where a person can open its kernel in Jupyter.
//  A stdio client runs on the server's own machine, as its owner: its result also has
//  "notebook_command", the command that opens this very kernel (the token's file named,
//  never the token). Caller frees.
static char *
s_started_text (cg_server_t *server, cg_call_t *call, json_t *structured,
                cg_registry_session_t *session)
{
    const char *url = json_string_value (json_object_get (structured, "gateway_url"));
    const char *kernel = json_string_value (json_object_get (structured, "kernel_id"));
    if (!url || !kernel)
        return cg_strdupf ("Session %s started (%s).", session->id, session->language);
    const cg_config_t *config = cg_server_config (server);
    if (strcmp (call->channel->client->id, "stdio") == 0) {
        cleanup_free char *file =
            config->gateway_token ? NULL : cg_strdupf ("%s/gateway-token", config->state_dir);
        cleanup_free char *command = cg_notebook_command (url, file, kernel);
        json_t *text = json_string (command); /* NULL when the state dir is not UTF-8 */
        if (text)
            json_object_set_new (structured, "notebook_command", text);
    }
    return cg_strdupf ("Session %s started (%s). A person can open its kernel in Jupyter: "
                       "gateway %s, kernel %s.",
                       session->id, session->language, url, kernel);
}

void
cg_tools_started (cg_server_t *server, cg_call_t *call, cg_registry_session_t *session,
                  const cg_runner_event_t *event)
{
    const char *why = event->started.why;
    if (!call)
        return;
    if (session && session->busy && strcmp (session->busy, call->key) == 0)
        cg_registry_set_busy (session, NULL);
    if (!why)
        cg_server_call_fail (call, CG_JSONRPC_INTERNAL_ERROR, "the runner returned no result");
    else if (session && *why)
        cg_server_call_answer (call,
                               cg_tools_error_object ("sandbox_setup_failed", why, session->id));
    else if (session) {
        json_t *structured = json_pack (
            "{s:b, s:s, s:s, s:o, s:o, s:s}", "success", 1, "session_id", session->id, "language",
            session->language, "name", session->name ? json_string (session->name) : json_null (),
            "pid", s_pid (session), "started_at", session->started_at);
        cg_tools_kernel_id (structured, server, session, session->language);
        cleanup_free char *text = s_started_text (server, call, structured, session);
        cg_server_call_answer (call, cg_tools_object_result (structured, text, false));
    }
    //  A session whose start failed is not kept: it would hold a sandbox slot.
    if (session && (!why || *why))
        cg_registry_retire (cg_server_registry (server), session);
    cg_server_call_end (server, call);
}

//  One entry of list_sessions: seed 002's fields, memory_mb to 0.1 MB, and languages.
static json_t *
s_list_entry (cg_registry_t *registry, cg_registry_session_t *s)
{
    json_t *packages = cg_registry_names (s->packages);
    json_t *entry =
        json_pack ("{s:s, s:s, s:o, s:s, s:s, s:i, s:o, s:o, s:o, s:b}", "session_id", s->id,
                   "language", s->language, "name", s->name ? json_string (s->name) : json_null (),
                   "started_at", s->started_at, "last_activity_at", s->last_activity_at,
                   "executions_count", s->executions, "pid", s_pid (s), "memory_mb",
                   s->memory_mb >= 0 ? json_real (round (s->memory_mb * 10) / 10) : json_null (),
                   "packages_installed", packages, "busy", s->busy != NULL);
    json_object_set_new (entry, "languages", cg_registry_names (s->languages));
    json_object_set_new (entry, "egress", cg_tools_egress_describe (registry, s));
    //  The workspace's own file system, as the kernel counts it; null: no limit.
    cg_wsfs_usage_t usage;
    if (cg_registry_usage (s, &usage) == 1)
        json_object_update_new (entry,
                                json_pack ("{s:f, s:f, s:I, s:I}", "workspace_limit_mb",
                                           usage.size_mb, "workspace_used_mb", usage.used_mb,
                                           "workspace_inodes_limit", (json_int_t)usage.inodes,
                                           "workspace_inodes_used", (json_int_t)usage.inodes_used));
    else
        json_object_update_new (entry, json_pack ("{s:n, s:n, s:n, s:n}", "workspace_limit_mb",
                                                  "workspace_used_mb", "workspace_inodes_limit",
                                                  "workspace_inodes_used"));
    return entry;
}

//  The languages the server offers (base/cg_kernels.h): each with its aliases, and its
//  Jupyter kernel's name and display name (none for bash).
static json_t *
s_languages (void)
{
    const cg_kernels_t *kernels = cg_kernels ();
    json_t *languages = json_array ();
    for (size_t i = 0; i < cg_kernels_count (kernels); i++) {
        const cg_language_t *l = cg_kernels_at (kernels, i);
        json_t *aliases = json_array ();
        for (char **alias = l->aliases; alias && *alias; alias++)
            json_array_append_new (aliases, json_string (*alias));
        json_array_append_new (languages,
                               json_pack ("{s:s, s:o, s:s?, s:s}", "name", l->name, "aliases",
                                          aliases, "kernel", l->command ? NULL : l->kernel_name,
                                          "display_name", l->display_name));
    }
    return languages;
}

void
cg_tools_list_sessions (const cg_request_t *req, json_t *arguments)
{
    (void)arguments;
    json_t *list = json_array ();
    zlistx_t *mine = cg_registry_sessions (cg_server_registry (req->server), req->client->id);
    for (cg_registry_session_t *s = zlistx_first (mine); s; s = zlistx_next (mine))
        json_array_append_new (list, s_list_entry (cg_server_registry (req->server), s));
    zlistx_destroy (&mine);
    json_t *structured =
        json_pack ("{s:o, s:o, s:o}", "sessions", list, "limits",
                   cg_backend_limits (cg_registry_backend (cg_server_registry (req->server))),
                   "languages", s_languages ());
    //  Numbers as the transports write them (9 digits): 87.4, not 87.400000000000006.
    cleanup_free char *text = json_dumps (structured, JSON_COMPACT | JSON_REAL_PRECISION (9));
    cg_request_result (req, cg_tools_object_result (structured, text, false));
}

void
cg_tools_close_session (const cg_request_t *req, json_t *arguments)
{
    json_t *session_id = json_object_get (arguments, "session_id");
    if (!json_is_string (session_id)) {
        cg_request_result (req, cg_tools_error_object ("invalid_params",
                                                       "'session_id' is a required string", NULL));
        return;
    }
    const char *sid = json_string_value (session_id);
    cg_registry_session_t *session =
        cg_registry_find (cg_server_registry (req->server), req->client->id, sid);
    if (!session) {
        cleanup_free char *message =
            cg_strdupf ("No active session with id %.*s", cg_utf8_prefix (sid, 128), sid);
        cg_request_result (req, cg_tools_error_object ("session_not_found", message, sid));
        return;
    }
    int64_t duration_ms = (cg_now_us () - session->started_us) / 1000;
    int executions = session->executions;
    cleanup_free char *kept_id = cg_xstrdup (sid);
    cg_server_session_close (req->server, session,
                             "The session was closed while this call was running.");
    json_t *structured = json_pack ("{s:b, s:s, s:s, s:I, s:i}", "success", 1, "status", "closed",
                                    "session_id", kept_id, "duration_total_ms",
                                    (json_int_t)duration_ms, "executions_count", executions);
    cleanup_free char *text = cg_strdupf ("Session %s closed.", kept_id);
    cg_request_result (req, cg_tools_object_result (structured, text, false));
}
