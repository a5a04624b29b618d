/*  Unit tests: cg_gateway_cells — a WebSocket's cells followed from execute_request to the
    kernel's idle status for it and ended through cg_registry_run_ended as tool "gateway":
    the code, the header's username, the streams, the error, the execution count; a silent
    request; messages of other requests ignored; a stream past CG_LOG_STREAM_MAX cut; the
    cells left when the connection ends, ended failed. No sandbox runs. */
#include "gateway/cg_gateway_cells.h"
#include "base/cg_config.h"
#include "base/cg_limits.h"
#include "base/cg_util.h"
#include "cg_test.h"

#include <stdlib.h>
#include <string.h>

//  The last run the observer was told of (its values copied), and how many.
static struct {
    int count;
    char tool[16], client_id[32], client_name[80], code[256], language[16], status[16];
    char *out, *message;
    bool silent, cut;
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
    s_last.silent = run->silent;
    s_last.cut = o->out.full_cut;
    s_last.executions = session ? session->executions : -1;
    s_last.execution_count = o->execution_count;
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
    free (s_last.out);
    free (s_last.message);
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
    cg_registry_t *registry = cg_registry_new (&config, NULL, NULL);
    cg_registry_observe_runs (registry, s_observe, NULL);
    s_cells (registry);
    cg_registry_destroy (&registry);
    cg_config_clear (&config);
    printf ("%d passed, %d failed\n", s_passes, s_failures);
    return s_failures ? 1 : 0;
}
