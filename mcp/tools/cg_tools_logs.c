/*  cg_tools_logs — the execution log's tools (search_execution_logs, get_execution_log);
    the store is artifacts/cg_execlog, its handle the process's (server/cg_server.c, which
    also writes each session's lifecycle; the runs' entries are bridge/cg_run_record's).
    The arguments are checked on the loop; the search or read runs as a job on the log's
    reader (cg_server_log_reads, cg_server_log_reader), beside its writer, once the writes
    queued before it are done (cg_execlog_ticket_wait: a run whose answer came before it
    was asked is indexed by then), and a long one holds no write. */
#include "mcp/tools/cg_tools.h"
#include "artifacts/cg_notebook.h"
#include "bridge/cg_outcome.h"
#include "base/cg_fault.h"
#include "base/cg_util.h"
#include "base/cg_utf8.h"

#include <math.h>
#include <string.h>

static bool
s_unavailable (const cg_request_t *req)
{
    if (cg_server_log_reader (req->server))
        return false;
    cg_request_result (req, cg_tools_error_object ("log_unavailable",
                                                   "The execution log could not be opened "
                                                   "(see the server's log).",
                                                   NULL));
    return true;
}

//  A search or a read, on the log's worker: every field is the job's own.
typedef struct {
    cg_tool_job_t job;
    cg_execlog_t *log;        /* the reader */
    uint64_t ticket;          /* the last write queued before it (cg_execlog_ticket_last) */
    cg_execlog_query_t query; /* its strings are the job's (the fields below) */
    char *owner, *language, *status, *text, *since;
    char *execution_id; /* get_execution_log's */
} s_log_job_t;

static void
s_log_job_free (cg_tool_job_t *job)
{
    s_log_job_t *self = (s_log_job_t *)job;
    free (self->owner);
    free (self->language);
    free (self->status);
    free (self->text);
    free (self->since);
    free (self->execution_id);
}

static char *
s_dup (const char *text)
{
    return text ? cg_xstrdup (text) : NULL;
}

static s_log_job_t *
s_log_job_new (const cg_request_t *req, void (*run) (cg_tool_job_t *))
{
    s_log_job_t *self = cg_xcalloc (1, sizeof *self);
    self->job.run = run;
    self->job.free = s_log_job_free;
    self->log = cg_server_log_reader (req->server);
    self->ticket = cg_execlog_ticket_last (cg_server_execlog (req->server));
    self->owner = cg_xstrdup (req->client->id);
    return self;
}

//  On the log's reader, before a search or a read: once the writes queued before it are done.
static void
s_read_begin (s_log_job_t *self)
{
    cg_execlog_ticket_wait (self->log, self->ticket);
    cg_fault_hold ("log_read");
}

//  On the log's reader.
static void
s_search_run (cg_tool_job_t *job)
{
    s_log_job_t *self = (s_log_job_t *)job;
    s_read_begin (self);
    cg_error_t *err = NULL;
    json_t *found = cg_execlog_search (self->log, &self->query, &err);
    if (!found) {
        job->result = cg_tools_error_object ("invalid_params", cg_error_message (err), NULL);
        cg_error_destroy (&err);
        return;
    }
    cleanup_free char *text = json_dumps (found, JSON_COMPACT);
    job->result = cg_tools_object_result (found, text, false);
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
    s_log_job_t *job = s_log_job_new (req, s_search_run);
    job->language = s_dup (canonical);
    job->status = s_dup (json_string_value (status));
    job->text = s_dup (json_string_value (json_object_get (arguments, "query")));
    job->since = s_dup (json_string_value (json_object_get (arguments, "since")));
    job->query = (cg_execlog_query_t){
        .owner = job->owner,
        .language = job->language,
        .status = job->status,
        .query = job->text,
        .since = job->since,
        .limit = limit ? (int)json_integer_value (limit) : 20,
    };
    cg_tools_job_start_on (req, &job->job, cg_server_log_reads (req->server));
}

//  On the log's reader: the entry, in get_execution_log's layout, or execution_not_found.
static void
s_get_run (cg_tool_job_t *job)
{
    s_log_job_t *self = (s_log_job_t *)job;
    const char *id = self->execution_id;
    s_read_begin (self);
    json_t *entry = cg_execlog_get (self->log, id, self->owner);
    if (!entry) {
        cleanup_free char *message =
            cg_strdupf ("No logged execution with id %.*s", cg_utf8_prefix (id, 64), id);
        job->result = cg_tools_error_object ("execution_not_found", message, NULL);
        json_object_set_new (json_object_get (job->result, "structuredContent"), "execution_id",
                             json_string (id));
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
    job->result = cg_tools_object_result (entry, text, false);
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
    s_log_job_t *job = s_log_job_new (req, s_get_run);
    job->execution_id = cg_xstrdup (id);
    cg_tools_job_start_on (req, &job->job, cg_server_log_reads (req->server));
}
