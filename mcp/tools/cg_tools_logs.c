/*  cg_tools_logs — the execution log's tools (search_execution_logs, get_execution_log);
    the store is artifacts/cg_execlog, its handle the process's (server/cg_server.c, which
    also writes each session's lifecycle; the runs' entries are bridge/cg_run_record's). */
#include "mcp/tools/cg_tools.h"
#include "artifacts/cg_notebook.h"
#include "bridge/cg_outcome.h"
#include "base/cg_util.h"
#include "base/cg_utf8.h"

#include <math.h>
#include <string.h>

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
