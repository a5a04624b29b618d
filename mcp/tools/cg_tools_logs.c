/*  cg_tools_logs — the execution log's tools (search_execution_logs, get_execution_log)
    and what feeds it: every run's entry (cg_tools_finish) and each session's lifecycle
    (the registry's listener), in seed 002's layout; the store is artifacts/cg_execlog. */
#include "mcp/tools/cg_tools.h"
#include "artifacts/cg_notebook.h"
#include "bridge/cg_outcome.h"
#include "base/cg_util.h"
#include "base/cg_utf8.h"

#include <math.h>
#include <string.h>

cg_execlog_t *
cg_tools_log_open (const cg_config_t *config)
{
    cleanup_free char *dir =
        config->log_dir ? cg_xstrdup (config->log_dir) : cg_strdupf ("%s/logs", config->state_dir);
    cg_execlog_options_t options = {
        .mode = config->execution_log == CG_EXECUTION_LOG_OFF        ? CG_EXECLOG_OFF
                : config->execution_log == CG_EXECUTION_LOG_METADATA ? CG_EXECLOG_METADATA
                                                                     : CG_EXECLOG_FULL,
        .success_days = config->log_success_days,
        .failed_days = config->log_failed_days,
        .session_days = config->log_session_days};
    cg_error_t *err = NULL;
    cg_execlog_t *log = cg_execlog_open (dir, &options, &err);
    if (!log) {
        cg_log (0, "execution log: %s (executions are not logged)", cg_error_message (err));
        cg_error_destroy (&err);
    }
    return log;
}

void
cg_tools_log_sweep (cg_execlog_t *log)
{
    //  At most every CG_TOOLS_LOG_SWEEP_S (the first call sweeps at once).
    static int64_t next_us;
    if (!log || cg_now_us () < next_us)
        return;
    next_us = cg_now_us () + (int64_t)CG_TOOLS_LOG_SWEEP_S * 1000000;
    cg_error_t *err = NULL;
    int removed = cg_execlog_sweep (log, time (NULL), &err);
    if (removed < 0)
        cg_log (1, "execution log retention: %s", cg_error_message (err));
    else if (removed > 0)
        cg_log (2, "execution log retention: %d entries and files removed", removed);
    cg_error_destroy (&err);
}

void
cg_tools_log_session (void *arg, const cg_registry_session_t *session, const char *reason)
{
    cg_execlog_t *log = arg;
    if (!log)
        return;
    json_t *entry =
        reason ? json_pack ("{s:s, s:s, s:s, s:I, s:i}", "type", "session_end", "session_id",
                            session->id, "reason", reason, "total_duration_ms",
                            (json_int_t)((cg_now_us () - session->started_us) / 1000),
                            "executions_count", session->executions)
               : json_pack ("{s:s, s:s, s:s, s:o, s:n, s:s}", "type", "session_start", "session_id",
                            session->id, "language", session->language, "name",
                            session->name ? json_string (session->name) : json_null (), "pid",
                            "started_at", session->started_at);
    cg_error_t *err = NULL;
    if (cg_execlog_session_event (log, entry, &err) < 0)
        cg_log (1, "execution log: %s", cg_error_message (err));
    cg_error_destroy (&err);
    json_decref (entry);
}

//  --------------------------------------------------------------------------
//  The tools. Each client sees only its own executions (an HTTP client must not read
//  another's code): the owner is the MCP client's id, "stdio" for the stdio peer.

static bool
s_unavailable (const cg_request_t *req)
{
    if (cg_server_execlog (req->server))
        return false;
    cg_request_result (req, cg_tools_error_object ("log_unavailable",
                                                   "The execution log could not be opened "
                                                   "(see the server's log).",
                                                   NULL));
    return true;
}

void
cg_tools_search_execution_logs (const cg_request_t *req, json_t *arguments)
{
    if (s_unavailable (req))
        return;
    json_t *language = json_object_get (arguments, "language");
    json_t *status = json_object_get (arguments, "status");
    json_t *limit = json_object_get (arguments, "limit");
    const char *canonical = NULL;
    const char *error = NULL;
    if (!cg_tools_language_arg (req, language, &canonical))
        return;
    if (language && !canonical)
        error = "'language' must be a string";
    else if (status
             && (!json_is_string (status)
                 || (strcmp (json_string_value (status), "success")
                     && strcmp (json_string_value (status), "failed")
                     && strcmp (json_string_value (status), "timeout"))))
        error = "'status' must be success, failed or timeout";
    else if (limit
             && (!json_is_integer (limit) || json_integer_value (limit) < 1
                 || json_integer_value (limit) > 100))
        error = "'limit' must be a whole number from 1 to 100";
    else if ((json_object_get (arguments, "query")
              && !json_is_string (json_object_get (arguments, "query")))
             || (json_object_get (arguments, "since")
                 && !json_is_string (json_object_get (arguments, "since"))))
        error = "'query' and 'since' must be strings";
    if (error) {
        cg_request_result (req, cg_tools_error_object ("invalid_params", error, NULL));
        return;
    }
    cg_execlog_query_t query = {
        .owner = req->client->id,
        .language = canonical,
        .status = json_string_value (status),
        .query = json_string_value (json_object_get (arguments, "query")),
        .since = json_string_value (json_object_get (arguments, "since")),
        .limit = limit ? (int)json_integer_value (limit) : 20,
    };
    cg_error_t *err = NULL;
    json_t *found = cg_execlog_search (cg_server_execlog (req->server), &query, &err);
    if (!found) {
        cg_request_result (req,
                           cg_tools_error_object ("invalid_params", cg_error_message (err), NULL));
        cg_error_destroy (&err);
        return;
    }
    cleanup_free char *text = json_dumps (found, JSON_COMPACT);
    cg_request_result (req, cg_tools_object_result (found, text, false));
}

void
cg_tools_get_execution_log (const cg_request_t *req, json_t *arguments)
{
    if (s_unavailable (req))
        return;
    const char *id = json_string_value (json_object_get (arguments, "execution_id"));
    if (!id) {
        cg_request_result (req, cg_tools_error_object (
                                    "invalid_params", "'execution_id' is a required string", NULL));
        return;
    }
    json_t *entry = cg_execlog_get (cg_server_execlog (req->server), id, req->client->id);
    if (!entry) {
        cleanup_free char *message =
            cg_strdupf ("No logged execution with id %.*s", cg_utf8_prefix (id, 64), id);
        json_t *result = cg_tools_error_object ("execution_not_found", message, NULL);
        json_object_set_new (json_object_get (result, "structuredContent"), "execution_id",
                             json_string (id));
        cg_request_result (req, result);
        return;
    }
    //  Seed 002's get_execution_log also names the artifacts at the top level.
    json_t *artifacts = json_object_get (entry, "artifacts");
    static const char *kinds[] = {"created", "modified", "deleted"};
    for (int i = 0; i < 3; i++) {
        cleanup_free char *key = cg_strdupf ("artifacts_%s", kinds[i]);
        json_t *list = json_object_get (artifacts, kinds[i]);
        json_object_set_new (entry, key, list ? json_incref (list) : json_array ());
    }
    //  ... and its context and scans at the top level too.
    json_t *context = json_object_get (entry, "context");
    json_t *guardian = json_object_get (entry, "guardian");
    json_object_set (entry, "agent_id", json_object_get (context, "agent_id"));
    json_object_set (entry, "trace_id", json_object_get (context, "trace_id"));
    json_object_set (entry, "guardian_pre_scan", json_object_get (guardian, "pre_scan"));
    json_object_set (entry, "guardian_post_scan", json_object_get (guardian, "post_scan"));
    if (!json_object_get (entry, "packages_installed"))
        json_object_set_new (entry, "packages_installed", json_array ());
    json_object_del (entry, "client_id");
    cleanup_free char *text = json_dumps (entry, JSON_COMPACT);
    cg_request_result (req, cg_tools_object_result (entry, text, false));
}
