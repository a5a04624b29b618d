/*  cg_run_record — the registry's run observers: a run's execution-log entry, notebook
    cell, metrics and script counters. */
#include "bridge/cg_run_record.h"
#include "artifacts/cg_execlog_queue.h"
#include "artifacts/cg_metrics.h"
#include "artifacts/cg_notebook.h"
#include "artifacts/cg_scripts.h"
#include "base/cg_limits.h"
#include "base/cg_log.h"
#include "base/cg_util.h"

#include <math.h>
#include <string.h>

struct cg_run_record_t {
    const cg_config_t *config;
    cg_execlog_t *log;       /* NULL: nothing is logged */
    cg_worker_t *log_worker; /* the one thread that calls LOG */
    cg_worker_t *store;
};

//  --------------------------------------------------------------------------
//  The execution log

static json_t *
s_names (json_t *list)
{
    return list ? json_incref (list) : json_array ();
}

//  A stream cut in the result is logged as kept (STREAM's full text, up to
//  CG_LOG_STREAM_MAX: "<NAME>_truncated_in_log" when that is short of the whole), and the
//  saved file with the whole output, when the session kept one, is named.
static void
s_log_stream (json_t *entry, const char *name, const cg_outcome_stream_t *stream)
{
    if (stream->full) {
        json_object_set_new (entry, name, json_stringn (stream->full, stream->full_len));
        if (stream->full_cut) {
            cleanup_free char *mark = cg_strdupf ("%s_truncated_in_log", name);
            json_object_set_new (entry, mark, json_true ());
        }
    }
    if (stream->file) {
        cleanup_free char *key = cg_strdupf ("%s_file", name);
        json_object_set_new (entry, key, json_string (stream->file));
    }
}

//  Seed 002's context, packages and the run's script (run_script: which script, its
//  version and args, which are text as its code is: not in --execution-log metadata).
static void
s_log_context (json_t *entry, const cg_config_t *config, const cg_registry_session_t *session,
               const cg_run_report_t *run)
{
    json_t *script = json_object_get (run->request, "script");
    if (script) {
        json_t *copy = json_deep_copy (script);
        if (config->execution_log != CG_EXECUTION_LOG_FULL)
            json_object_del (copy, "args");
        json_object_set_new (entry, "script", copy);
    }
    //  The agent is the front end's client; there is no trace id or chat id in MCP, and no
    //  Guardian scan (the sandbox is the control).
    json_t *packages = json_array ();
    for (const char *p = session && session->packages ? zlistx_first (session->packages) : NULL; p;
         p = zlistx_next (session->packages))
        json_array_append_new (packages, json_string (p));
    json_object_set_new (entry, "packages_installed", packages);
    json_object_set_new (entry, "context",
                         json_pack ("{s:s, s:n, s:n}", "agent_id",
                                    run->client_name ? run->client_name : "", "trace_id",
                                    "chat_id"));
    json_object_set_new (entry, "guardian", json_pack ("{s:n, s:n}", "pre_scan", "post_scan"));
}

json_t *
cg_run_record_log_entry (const cg_config_t *config, const cg_registry_session_t *session,
                         const cg_run_report_t *run)
{
    const cg_outcome_t *outcome = run->outcome;
    if (!outcome || !run->request)
        return NULL;
    const char *status = outcome->timed_out              ? "timeout"
                         : outcome->end == CG_OUTCOME_OK ? "success"
                                                         : "failed";
    json_t *entry = json_pack (
        "{s:s, s:s?, s:s, s:O, s:O?, s:s, s:s, s:b, s:I, s:s, s:s, s:{s:o, s:o, s:o}, s:s, s:s, "
        "s:s, s:s}",
        "execution_id", outcome->execution_id, "session_id", outcome->session_id, "language",
        outcome->language, "code", json_object_get (run->request, "code"), "stdin",
        json_object_get (run->request, "stdin"), "stdout", outcome->out.text, "stderr",
        outcome->err.text, "timed_out", outcome->timed_out, "duration_ms",
        (json_int_t)(outcome->duration_us / 1000), "sandbox_mode", "runc", "working_dir",
        CG_WORKSPACE_MOUNT, "artifacts", "created", s_names (outcome->created), "modified",
        s_names (outcome->modified), "deleted", s_names (outcome->deleted), "status", status,
        "tool", run->tool, "client_id", run->client_id, "front_end", run->front_end);
    json_object_set_new (entry, "exit_code",
                         outcome->timed_out ? json_null () : json_integer (outcome->exit_code));
    json_object_set_new (entry, "memory_peak_mb",
                         outcome->memory_known
                             ? json_real (round (outcome->memory_peak_mb * 10) / 10)
                             : json_null ());
    if (run->client_name)
        json_object_set_new (entry, "client_name", json_string (run->client_name));
    json_object_set_new (entry, "error_message",
                         outcome->message ? json_string (outcome->message) : json_null ());
    if (run->run_id)
        json_object_set_new (entry, "run_id", json_string (run->run_id));
    //  The value the code gave (its execute_result), as text: `2` for `1+1`.
    json_t *result = json_object_get (outcome->return_value, "text/plain");
    if (json_is_string (result))
        json_object_set_new (entry, "result", json_copy (result));
    if (outcome->egress && json_array_size (outcome->egress) > 0)
        json_object_set (entry, "egress", outcome->egress);
    s_log_context (entry, config, session, run);
    s_log_stream (entry, "stdout", &outcome->out);
    s_log_stream (entry, "stderr", &outcome->err);
    return entry;
}

//  cg_run_observer_fn: RUN's execution-log entry.
static void
s_log_cb (void *arg, const cg_registry_session_t *session, const cg_run_report_t *run)
{
    cg_run_record_t *self = arg;
    if (!self->log)
        return;
    json_t *entry = cg_run_record_log_entry (self->config, session, run);
    if (entry)
        cg_execlog_queue_record (self->log_worker, self->log, &entry);
    //  Each proxy request (--egress proxy) also goes to the session's own log.
    size_t i;
    json_t *request;
    json_array_foreach (session && run->outcome ? run->outcome->egress : NULL, i, request)
    {
        json_t *event = json_deep_copy (request);
        json_object_set_new (event, "type", json_string ("egress"));
        json_object_set_new (event, "session_id", json_string (session->id));
        json_object_set_new (event, "execution_id", json_string (run->outcome->execution_id));
        json_object_set_new (event, "client_id", json_string (run->client_id));
        cg_execlog_queue_session_event (self->log_worker, self->log, &event);
    }
}

//  --------------------------------------------------------------------------
//  The notebook record

//  cg_run_observer_fn: RUN's cell in SESSION's notebook record, when its code ran.
static void
s_notebook_cb (void *arg, const cg_registry_session_t *session, const cg_run_report_t *run)
{
    cg_run_record_t *self = arg;
    const cg_outcome_t *outcome = run->outcome;
    if (!session || !session->dir || !outcome || !outcome->ran || !run->request || run->silent)
        return;
    bool raised = outcome->end == CG_OUTCOME_RUNTIME_ERROR && !outcome->cancelled;
    cg_notebook_run_t cell_run = {
        .language = outcome->language,
        .execution_id = outcome->execution_id,
        .code = json_string_value (json_object_get (run->request, "code")),
        .stdout_text = outcome->out.text,
        .stderr_text = outcome->err.text,
        .outputs = outcome->outputs,
        .execution_count = outcome->execution_count,
        .error = raised ? outcome->message : NULL,
        .status = outcome->timed_out              ? "timeout"
                  : outcome->end == CG_OUTCOME_OK ? "success"
                                                  : "failed",
    };
    json_t *cell = cg_notebook_cell (&cell_run);
    cleanup_free char *path = cg_strdupf ("%s/%s", session->dir, CG_NOTEBOOK_FILE);
    cg_error_t *err = NULL;
    bool left_out = false;
    if (!cell
        || cg_notebook_append (path, cell, self->config->notebook_max_bytes, &left_out, &err) < 0)
        cg_log (1, "session %s: notebook: %s", session->id,
                cell ? cg_error_message (err) : "the run's cell could not be made");
    else if (left_out)
        cg_log (2,
                "session %s: its notebook record is full (--notebook-max-mb): a run is left "
                "out",
                session->id);
    cg_error_destroy (&err);
    json_decref (cell);
}

//  --------------------------------------------------------------------------
//  The metrics

//  How OUTCOME (NULL: none came) ended, in the metrics' terms.
static cg_metrics_run_status_t
s_metrics_status (const cg_outcome_t *outcome)
{
    if (outcome && outcome->timed_out)
        return CG_METRICS_RUN_TIMEOUT;
    if (!outcome || outcome->end == CG_OUTCOME_SETUP_FAILURE)
        return CG_METRICS_RUN_SETUP_ERROR;
    return outcome->end == CG_OUTCOME_OK          ? CG_METRICS_RUN_SUCCESS
           : outcome->end == CG_OUTCOME_CANCELLED ? CG_METRICS_RUN_CANCELLED
                                                  : CG_METRICS_RUN_ERROR;
}

//  cg_run_observer_fn: cellgate_runs_total and the duration histogram.
static void
s_metrics_cb (void *arg, const cg_registry_session_t *session, const cg_run_report_t *run)
{
    (void)arg;
    (void)session;
    const cg_outcome_t *outcome = run->outcome;
    cg_metrics_run (s_metrics_status (outcome), outcome && outcome->ran,
                    outcome ? (double)outcome->duration_us / 1e6 : 0);
}

//  --------------------------------------------------------------------------
//  The script library's counters

//  A finished run's record (cg_scripts_record_run), on the store worker.
typedef struct {
    cg_work_t work;
    char *dir, *name;
    bool success;
} s_ran_t;

static void
s_ran_work (cg_work_t *work)
{
    s_ran_t *self = (s_ran_t *)work;
    cg_error_t *err = NULL;
    if (cg_scripts_record_run (self->dir, self->name, self->success, &err) < 0) {
        cg_log (1, "run_script %s: its run was not recorded: %s", self->name,
                cg_error_message (err));
        cg_error_destroy (&err);
    }
}

static void
s_ran_after (cg_work_t *work, bool ran)
{
    s_ran_t *self = (s_ran_t *)work;
    (void)ran;
    free (self->dir);
    free (self->name);
    free (self);
}

//  cg_run_observer_fn: a run_script run counts in its script's metadata.
static void
s_script_cb (void *arg, const cg_registry_session_t *session, const cg_run_report_t *run)
{
    cg_run_record_t *self = arg;
    (void)session;
    if (!run->script)
        return;
    const cg_config_t *config = self->config;
    s_ran_t *ran = cg_xcalloc (1, sizeof *ran);
    *ran = (s_ran_t){.work = {.work_cb = s_ran_work, .after_cb = s_ran_after},
                     .dir = config->scripts_dir ? cg_xstrdup (config->scripts_dir)
                                                : cg_strdupf ("%s/scripts", config->state_dir),
                     .name = cg_xstrdup (run->script),
                     .success = run->outcome && run->outcome->end == CG_OUTCOME_OK};
    //  Forced: one per finished run, which the sessions bound.
    cg_error_t *err = NULL;
    if (cg_worker_queue (self->store, &ran->work, true, &err) < 0) {
        cg_log (1, "run_script %s: its run was not recorded: %s", run->script,
                cg_error_message (err));
        cg_error_destroy (&err);
        s_ran_after (&ran->work, false);
    }
}

//  --------------------------------------------------------------------------

cg_run_record_t *
cg_run_record_new (cg_registry_t *registry, const cg_config_t *config, cg_execlog_t *log,
                   cg_worker_t *log_worker, cg_worker_t *store)
{
    cg_run_record_t *self = cg_xcalloc (1, sizeof *self);
    *self =
        (cg_run_record_t){.config = config, .log = log, .log_worker = log_worker, .store = store};
    //  The notebook record, the log's entry and the script counters before the answer (a
    //  client may export the notebook, search the log or list its scripts as soon as it has
    //  it: an MCP answer waits for the log's writes queued before it); the rest after.
    cg_registry_observe_runs_early (registry, s_notebook_cb, self);
    cg_registry_observe_runs_early (registry, s_log_cb, self);
    cg_registry_observe_runs (registry, s_metrics_cb, NULL);
    cg_registry_observe_runs_early (registry, s_script_cb, self);
    return self;
}

void
cg_run_record_destroy (cg_run_record_t **self_p)
{
    free (*self_p);
    *self_p = NULL;
}
