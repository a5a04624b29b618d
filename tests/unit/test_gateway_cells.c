/*  Unit tests: cg_gateway_cells — a WebSocket's cells followed from execute_request to the
    kernel's execute_reply and idle status for it and ended once through
    cg_registry_run_ended as tool "gateway": the code, the header's username, the streams,
    the error, the execution count; a silent request; messages of other requests ignored; a
    stream past CG_LOG_STREAM_MAX cut; the cells left when the connection ends, ended
    failed; an aborted cell (stop_on_error) ended as not run; the reply before or after the
    idle status, ended once; an error only the reply told; a cell whose other half never
    comes ended after CG_GATEWAY_CELLS_WAIT_US; the text/plain of an execute_result and a
    display_data kept (nothing else of them), within the byte budget. No sandbox runs. */
#include "gateway/cg_gateway_cells.h"
#include "base/cg_config.h"
#include "bridge/cg_run_record.h"
#include "base/cg_limits.h"
#include "base/cg_util.h"
#include "cg_test.h"

#include <stdlib.h>
#include <string.h>

static const cg_config_t *s_config;

//  The last run the observer was told of (its values copied), and how many.
static struct {
    int count;
    char tool[16], client_id[32], client_name[80], code[256], language[16], status[16];
    char *out, *message, *result;
    char log_status[16], log_result[16]; /* its execution-log entry's status and result */
    bool silent, cut, ran;
    cg_outcome_end_t end;
    size_t outputs;
    int executions, execution_count;
} s_last;

static void
s_observe (void *arg, const cg_registry_session_t *session, const cg_run_report_t *run)
{
    (void)arg;
    const cg_outcome_t *o = run->outcome;
    s_last.count++;
    snprintf (s_last.tool, sizeof s_last.tool, "%s", run->tool);
    snprintf (s_last.client_id, sizeof s_last.client_id, "%s", run->client_id);
    snprintf (s_last.client_name, sizeof s_last.client_name, "%s", run->client_name);
    snprintf (s_last.code, sizeof s_last.code, "%s",
              json_string_value (json_object_get (run->request, "code")));
    snprintf (s_last.language, sizeof s_last.language, "%s", o->language);
    snprintf (s_last.status, sizeof s_last.status, "%s", o->end == CG_OUTCOME_OK ? "ok" : "failed");
    free (s_last.out);
    free (s_last.message);
    s_last.out = cg_xstrdup (o->out.text);
    s_last.message = o->message ? cg_xstrdup (o->message) : NULL;
    free (s_last.result);
    const char *result = json_string_value (json_object_get (o->return_value, "text/plain"));
    s_last.result = result ? cg_xstrdup (result) : NULL;
    s_last.outputs = json_array_size (o->outputs);
    s_last.ran = o->ran;
    json_t *entry = cg_run_record_log_entry (s_config, session, run);
    const char *logged = json_string_value (json_object_get (entry, "result"));
    snprintf (s_last.log_status, sizeof s_last.log_status, "%s",
              json_string_value (json_object_get (entry, "status")));
    snprintf (s_last.log_result, sizeof s_last.log_result, "%s", logged ? logged : "(none)");
    json_decref (entry);
    s_last.end = o->end;
    s_last.silent = run->silent;
    s_last.cut = o->out.full_cut;
    s_last.executions = session ? session->executions : -1;
    s_last.execution_count = o->execution_count;
}

//  Forgets the last run (the count starts again at 0).
static void
s_forget (void)
{
    free (s_last.out);
    free (s_last.message);
    free (s_last.result);
    memset (&s_last, 0, sizeof s_last);
}

//  The front end's execute_request MSG_ID running CODE (SILENT or not), as cg_jmsg gives it.
static void
s_request (cg_jmsg_t *msg, const char *msg_id, const char *code, bool silent)
{
    memset (msg, 0, sizeof *msg);
    snprintf (msg->channel, sizeof msg->channel, "shell");
    snprintf (msg->msg_id, sizeof msg->msg_id, "%s", msg_id);
    snprintf (msg->msg_type, sizeof msg->msg_type, "execute_request");
    json_t *parts[4] = {
        json_pack ("{s:s, s:s, s:s, s:s}", "msg_id", msg_id, "msg_type", "execute_request",
                   "username", "nb-user", "session", "nb-session-1"),
        json_object (), json_object (), json_pack ("{s:s, s:b}", "code", code, "silent", silent)};
    for (int i = 0; i < 4; i++) {
        msg->parts[i] = json_dumps (parts[i], JSON_COMPACT);
        msg->part_len[i] = strlen (msg->parts[i]);
        json_decref (parts[i]);
    }
}

//  How many runs had ended when the last iopub message came.
static int s_count_before;

//  A kernel's iopub message TYPE with CONTENT (taken) for the request PARENT, relayed as
//  cg_gateway_ws does: a cell whose idle status it is ends after it. Returns true then.
static bool
s_iopub (cg_gateway_cells_t *cells, cg_registry_t *registry, cg_registry_session_t *session,
         const char *parent, const char *type, json_t *content)
{
    cg_msg_t msg = {.msg_id = "k1", .msg_type = type, .parent_msg_id = parent, .content = content};
    s_count_before = s_last.count;
    bool over = cg_gateway_cells_iopub (cells, &msg);
    if (over) {
        EXPECT (s_last.count == s_count_before, "not ended before its status is relayed");
        cg_gateway_cells_end (cells, registry, session, parent);
    }
    json_decref (content);
    return over;
}

static bool
s_status (cg_gateway_cells_t *cells, cg_registry_t *registry, cg_registry_session_t *session,
          const char *parent, const char *state)
{
    return s_iopub (cells, registry, session, parent, "status",
                    json_pack ("{s:s}", "execution_state", state));
}

//  The kernel's execute_reply with STATUS (ENAME: its error, or NULL) for the request
//  PARENT, relayed as cg_gateway_ws does: the cell ends after it when its idle status came.
//  Returns true when it was the followed cell's reply.
static bool
s_reply (cg_gateway_cells_t *cells, cg_registry_t *registry, cg_registry_session_t *session,
         const char *parent, const char *status, const char *ename)
{
    json_t *content = json_pack ("{s:s, s:i}", "status", status, "execution_count", 9);
    if (ename)
        json_object_set_new (content, "ename", json_string (ename));
    if (ename)
        json_object_set_new (content, "evalue", json_string ("from the reply"));
    cg_msg_t msg = {
        .msg_id = "k2", .msg_type = "execute_reply", .parent_msg_id = parent, .content = content};
    s_count_before = s_last.count;
    bool reply = cg_gateway_cells_shell (cells, &msg);
    if (reply) {
        EXPECT (s_last.count == s_count_before, "not ended before its reply is relayed");
        cg_gateway_cells_end (cells, registry, session, parent);
    }
    json_decref (content);
    return reply;
}

//  Sends the execute_request MSG_ID running CODE through CELLS.
static void
s_send (cg_gateway_cells_t *cells, const char *msg_id, const char *code,
        cg_registry_session_t *session, cg_registry_kernel_t *kernel)
{
    cg_jmsg_t msg;
    s_request (&msg, msg_id, code, false);
    EXPECT (cg_gateway_cells_sent (cells, &msg, session, kernel), "%s followed", msg_id);
    cg_jmsg_clear (&msg);
}

static void
s_cells (cg_registry_t *registry)
{
    cg_registry_session_t session = {.id = "s1", .owner = "mcp-client-7", .language = "python"};
    cg_registry_kernel_t kernel = {.language = "python"};
    cg_gateway_cells_t *cells = cg_gateway_cells_new ();
    cg_jmsg_t msg;
    s_request (&msg, "m1", "print(1)\n1/0", false);
    EXPECT (cg_gateway_cells_sent (cells, &msg, &session, &kernel), "followed");
    EXPECT (cg_gateway_cells_has (cells, "m1") && !cg_gateway_cells_has (cells, "m2")
                && !cg_gateway_cells_has (cells, NULL),
            "has m1 only");
    cg_jmsg_clear (&msg);
    EXPECT (!s_status (cells, registry, &session, "m1", "busy"), "busy does not end it");
    EXPECT (!s_iopub (cells, registry, &session, "m1", "execute_input",
                      json_pack ("{s:s, s:i}", "code", "print(1)", "execution_count", 7)),
            "input");
    s_iopub (cells, registry, &session, "m1", "stream",
             json_pack ("{s:s, s:s}", "name", "stdout", "text", "1\n"));
    s_iopub (cells, registry, &session, "other", "stream",
             json_pack ("{s:s, s:s}", "name", "stdout", "text", "the agent's\n"));
    s_iopub (cells, registry, &session, "m1", "error",
             json_pack ("{s:s, s:s, s:[]}", "ename", "ZeroDivisionError", "evalue",
                        "division by zero", "traceback"));
    EXPECT (s_last.count == 0, "nothing ended yet");
    EXPECT (!s_status (cells, registry, &session, "other", "idle"), "another request's idle");
    EXPECT (!s_reply (cells, registry, &session, "other", "ok", NULL), "another request's reply");
    EXPECT (s_reply (cells, registry, &session, "m1", "error", "ZeroDivisionError"), "its reply");
    EXPECT (s_last.count == 0, "the reply alone does not end it");
    EXPECT (s_status (cells, registry, &session, "m1", "idle"), "idle ends it");
    EXPECT (s_last.count == 1, "told once: %d", s_last.count);
    EXPECT (strcmp (s_last.tool, "gateway") == 0, "tool %s", s_last.tool);
    EXPECT (strcmp (s_last.client_id, "mcp-client-7") == 0, "the session's owner: %s",
            s_last.client_id);
    EXPECT (strcmp (s_last.client_name, "nb-user") == 0, "the username: %s", s_last.client_name);
    EXPECT (strcmp (s_last.code, "print(1)\n1/0") == 0, "code %s", s_last.code);
    EXPECT (strcmp (s_last.language, "python") == 0, "language");
    EXPECT (strcmp (s_last.out, "1\n") == 0, "stdout %s", s_last.out);
    EXPECT (strcmp (s_last.status, "failed") == 0 && s_last.message
                && strcmp (s_last.message, "ZeroDivisionError: division by zero") == 0,
            "failed: %s", s_last.message ? s_last.message : "(none)");
    EXPECT (s_last.execution_count == 7, "execution count %d", s_last.execution_count);
    EXPECT (s_last.executions == 1, "the session counted it: %d", s_last.executions);
    EXPECT (!cg_gateway_cells_has (cells, "m1"), "forgotten");

    //  A silent request, with more output than the log keeps.
    s_request (&msg, "m2", "x = 1", true);
    cg_gateway_cells_sent (cells, &msg, &session, &kernel);
    cg_jmsg_clear (&msg);
    size_t big = CG_LOG_STREAM_MAX / 4 * 3;
    char *text = cg_xmalloc (big + 1);
    memset (text, 'a', big);
    text[big] = '\0';
    for (int i = 0; i < 2; i++)
        s_iopub (cells, registry, &session, "m2", "stream",
                 json_pack ("{s:s, s:s}", "name", "stdout", "text", text));
    free (text);
    s_reply (cells, registry, &session, "m2", "ok", NULL);
    EXPECT (s_status (cells, registry, &session, "m2", "idle"), "ended");
    EXPECT (s_last.count == 2 && s_last.silent && strcmp (s_last.status, "ok") == 0, "silent ok");
    EXPECT (strlen (s_last.out) == CG_LOG_STREAM_MAX && s_last.cut, "cut at the log's cap: %zu",
            strlen (s_last.out));

    //  A cell still followed when the connection ends is ended failed, saying why.
    s_request (&msg, "m3", "import time; time.sleep(100)", false);
    cg_gateway_cells_sent (cells, &msg, &session, &kernel);
    cg_jmsg_clear (&msg);
    cg_gateway_cells_end_all (cells, registry, NULL, "the connection closed");
    EXPECT (s_last.count == 3 && strcmp (s_last.status, "failed") == 0 && s_last.message
                && strcmp (s_last.message, "the connection closed") == 0 && s_last.executions == -1,
            "ended failed, no session: %s", s_last.message ? s_last.message : "(none)");
    EXPECT (!cg_gateway_cells_has (cells, "m3"), "forgotten");
    cg_gateway_cells_destroy (&cells);
    EXPECT (!cells, "destroyed");
    zlistx_destroy (&session.languages);
    s_forget ();
}

//  The reply and the idle status in either order, an aborted cell, an error only the
//  reply told, and a cell whose other half never comes.
static void
s_replies (cg_registry_t *registry)
{
    cg_registry_session_t session = {.id = "s2", .owner = "mcp-client-8", .language = "python"};
    cg_registry_kernel_t kernel = {.language = "python"};
    cg_gateway_cells_t *cells = cg_gateway_cells_new ();

    //  A cell the kernel aborted (an earlier one failed, stop_on_error): busy, its reply
    //  "aborted", idle, and no error on iopub. It did not run.
    s_send (cells, "a1", "print('queued')", &session, &kernel);
    s_status (cells, registry, &session, "a1", "busy");
    s_reply (cells, registry, &session, "a1", "aborted", NULL);
    EXPECT (s_last.count == 0, "not ended before its idle status");
    EXPECT (s_status (cells, registry, &session, "a1", "idle"), "idle");
    EXPECT (s_last.count == 1, "ended once: %d", s_last.count);
    EXPECT (s_last.end != CG_OUTCOME_OK && !s_last.ran && s_last.end == CG_OUTCOME_SETUP_FAILURE,
            "aborted: not run, not a success (end %d, ran %d)", (int)s_last.end, s_last.ran);
    EXPECT (s_last.message && strstr (s_last.message, "aborted"), "says aborted: %s",
            s_last.message ? s_last.message : "(none)");
    EXPECT (strcmp (s_last.log_status, "failed") == 0, "logged failed: %s", s_last.log_status);
    EXPECT (!cg_gateway_cells_has (cells, "a1"), "forgotten");

    //  The idle status before the reply (two sockets): ended at the reply, once, with it.
    s_send (cells, "a2", "1+1", &session, &kernel);
    s_status (cells, registry, &session, "a2", "busy");
    s_iopub (cells, registry, &session, "a2", "execute_result",
             json_pack ("{s:i, s:{s:s, s:s}, s:{}}", "execution_count", 3, "data", "text/plain",
                        "2", "image/png", "iVBORw0KGgo=", "metadata"));
    EXPECT (s_status (cells, registry, &session, "a2", "idle"), "idle");
    EXPECT (s_last.count == 1 && cg_gateway_cells_has (cells, "a2"), "waits for its reply");
    EXPECT (cg_gateway_cells_due (cells) > 0, "waits at most a while");
    EXPECT (s_reply (cells, registry, &session, "a2", "ok", NULL), "its reply");
    EXPECT (s_last.count == 2, "ended once at its reply: %d", s_last.count);
    EXPECT (s_last.end == CG_OUTCOME_OK && s_last.ran, "a success");
    EXPECT (s_last.result && strcmp (s_last.result, "2") == 0, "its result: %s",
            s_last.result ? s_last.result : "(none)");
    EXPECT (s_last.outputs == 1, "one output: %zu", s_last.outputs);
    EXPECT (strcmp (s_last.log_result, "2") == 0 && strcmp (s_last.log_status, "success") == 0,
            "its log entry holds its result: %s (%s)", s_last.log_result, s_last.log_status);
    EXPECT (s_last.execution_count == 9, "the reply's execution count: %d", s_last.execution_count);
    EXPECT (cg_gateway_cells_due (cells) == 0, "none waits");
    EXPECT (!s_reply (cells, registry, &session, "a2", "ok", NULL)
                && !s_status (cells, registry, &session, "a2", "idle") && s_last.count == 2,
            "a late second reply or idle ends nothing");

    //  The reply says error, iopub's error was missed: an error all the same.
    s_send (cells, "a3", "raise KeyError", &session, &kernel);
    s_reply (cells, registry, &session, "a3", "error", "KeyError");
    s_status (cells, registry, &session, "a3", "idle");
    EXPECT (s_last.count == 3 && s_last.end == CG_OUTCOME_RUNTIME_ERROR && s_last.ran,
            "an error: %d", (int)s_last.end);
    EXPECT (s_last.message && strcmp (s_last.message, "KeyError: from the reply") == 0,
            "the reply's error: %s", s_last.message ? s_last.message : "(none)");

    //  Only the reply came (the idle status was dropped): ended after the wait, not before.
    s_send (cells, "a4", "print('flood')", &session, &kernel);
    s_iopub (cells, registry, &session, "a4", "stream",
             json_pack ("{s:s, s:s}", "name", "stdout", "text", "flood\n"));
    s_reply (cells, registry, &session, "a4", "ok", NULL);
    int64_t due = cg_gateway_cells_due (cells);
    EXPECT (due > 0, "due");
    EXPECT (!cg_gateway_cells_expire (cells, registry, &session, due - 1) && s_last.count == 3,
            "not before it is due");
    EXPECT (cg_gateway_cells_expire (cells, registry, &session, due) && s_last.count == 4,
            "ended when due, its idle status never came");
    EXPECT (s_last.end == CG_OUTCOME_OK && strcmp (s_last.out, "flood\n") == 0,
            "with what it had: %s", s_last.out);
    EXPECT (!cg_gateway_cells_has (cells, "a4") && cg_gateway_cells_due (cells) == 0, "forgotten");

    //  Only the idle status came, then the connection closed: ended once, by end_all.
    s_send (cells, "a5", "x", &session, &kernel);
    s_status (cells, registry, &session, "a5", "idle");
    cg_gateway_cells_end_all (cells, registry, &session, "the connection closed");
    EXPECT (s_last.count == 5 && cg_gateway_cells_due (cells) == 0, "ended by end_all");
    cg_gateway_cells_destroy (&cells);
    zlistx_destroy (&session.languages);
    s_forget ();
}

//  Display outputs: only their text/plain is kept, within the cells' byte budget.
static void
s_displays (cg_registry_t *registry)
{
    cg_registry_session_t session = {.id = "s3", .owner = "mcp-client-9", .language = "python"};
    cg_registry_kernel_t kernel = {.language = "python"};
    cg_gateway_cells_t *cells = cg_gateway_cells_new ();
    s_send (cells, "d1", "display", &session, &kernel);
    s_iopub (cells, registry, &session, "d1", "display_data",
             json_pack ("{s:{s:s}, s:{}}", "data", "image/png", "iVBORw0KGgo=", "metadata"));
    s_iopub (cells, registry, &session, "d1", "display_data",
             json_pack ("{s:{s:s, s:s}, s:{}}", "data", "text/plain", "<Figure>", "text/html",
                        "<b>x</b>", "metadata"));
    s_reply (cells, registry, &session, "d1", "ok", NULL);
    s_status (cells, registry, &session, "d1", "idle");
    EXPECT (s_last.count == 1 && s_last.outputs == 1 && !s_last.result,
            "one text/plain display, no result: %zu", s_last.outputs);

    //  Cells that hold the whole budget with their output: a later result is left out.
    size_t big = CG_LOG_STREAM_MAX;
    char *text = cg_xmalloc (big + 1);
    memset (text, 'b', big);
    text[big] = '\0';
    int held = CG_GATEWAY_CELLS_BYTES_MAX / CG_LOG_STREAM_MAX;
    for (int i = 0; i < held; i++) {
        char id[16];
        snprintf (id, sizeof id, "f%d", i);
        s_send (cells, id, "print('b' * 2**20)", &session, &kernel);
        s_iopub (cells, registry, &session, id, "stream",
                 json_pack ("{s:s, s:s}", "name", "stdout", "text", text));
    }
    s_send (cells, "d2", "'c' * 2**20", &session, &kernel);
    s_iopub (cells, registry, &session, "d2", "execute_result",
             json_pack ("{s:i, s:{s:s}, s:{}}", "execution_count", 4, "data", "text/plain", text,
                        "metadata"));
    s_reply (cells, registry, &session, "d2", "ok", NULL);
    s_status (cells, registry, &session, "d2", "idle");
    EXPECT (s_last.count == 2 && !s_last.result && s_last.outputs == 0,
            "past the budget, the result is left out: %zu", s_last.outputs);
    cg_gateway_cells_end_all (cells, registry, &session, "the connection closed");
    EXPECT (s_last.count == 2 + held, "the rest ended: %d", s_last.count);

    //  The budget is back: a result past CG_LOG_STREAM_MAX is cut to it.
    s_send (cells, "d3", "'c' * (2**20 + 1)", &session, &kernel);
    char *more = cg_xmalloc (big + 2);
    memset (more, 'c', big + 1);
    more[big + 1] = '\0';
    s_iopub (cells, registry, &session, "d3", "execute_result",
             json_pack ("{s:i, s:{s:s}, s:{}}", "execution_count", 5, "data", "text/plain", more,
                        "metadata"));
    s_reply (cells, registry, &session, "d3", "ok", NULL);
    s_status (cells, registry, &session, "d3", "idle");
    EXPECT (s_last.result && strlen (s_last.result) == CG_LOG_STREAM_MAX,
            "cut at the log's cap: %zu", s_last.result ? strlen (s_last.result) : 0);
    free (text);
    free (more);
    cg_gateway_cells_destroy (&cells);
    zlistx_destroy (&session.languages);
    s_forget ();
}

int
main (void)
{
    cg_config_t config;
    cg_error_t *err = NULL;
    char *argv[] = {NULL};
    if (cg_config_load (&config, 0, argv, &err) < 0) {
        fprintf (stderr, "config: %s\n", cg_error_message (err));
        return 1;
    }
    s_config = &config;
    cg_registry_t *registry = cg_registry_new (&config, NULL, NULL, NULL);
    cg_registry_observe_runs (registry, s_observe, NULL);
    s_cells (registry);
    s_replies (registry);
    s_displays (registry);
    cg_registry_destroy (&registry);
    cg_config_clear (&config);
    printf ("%d passed, %d failed\n", s_passes, s_failures);
    return s_failures ? 1 : 0;
}
