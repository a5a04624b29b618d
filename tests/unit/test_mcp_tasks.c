/*  Unit tests: the MCP core's calls in memory (mcp_harness) — tasks (a call refused at
    once makes none; a finished one answers tasks/get, tasks/list, tasks/result and
    tasks/cancel; a working one cancelled stays cancelled), cancellation's order (a
    listener's id before a call's; a call cancelled gets no answer), and what goes when a
    client ends (its calls, tasks and listeners). A test provider's tools stand in for the
    runs, so no sandbox is needed. */
#include "mcp_harness.h"
#include "mcp/cg_jsonrpc.h"
#include "mcp/cg_tasks.h"
#include "base/cg_util.h"
#include "cg_test.h"

#include <string.h>

//  --------------------------------------------------------------------------
//  The test's provider: test_job ends by itself as a task (a fixture task: due at once,
//  or after an hour with "later"; failing with "fail"); test_wait waits for the client's
//  response to its request "ask-<key>", which answers it.

static void
s_wait_response (cg_server_t *server, cg_call_t *call, json_t *message)
{
    (void)message;
    cg_server_call_answer (
        call, json_pack ("{s:[{s:s, s:s}]}", "content", "type", "text", "text", "answered"));
    cg_server_call_end (server, call);
}

static const cg_call_ops_t s_wait_ops = {.response = s_wait_response};

static bool
s_call (const cg_request_t *req, json_t *params)
{
    const char *name = json_string_value (json_object_get (params, "name"));
    json_t *arguments = json_object_get (params, "arguments");
    if (name && strcmp (name, "test_job") == 0) {
        bool later = json_is_true (json_object_get (arguments, "later"));
        bool fail = json_is_true (json_object_get (arguments, "fail"));
        cg_tasks_fixture (
            req, name, later ? 3600 * 1000 : 0,
            fail ? NULL
                 : json_pack ("{s:[{s:s, s:s}]}", "content", "type", "text", "text", "job done"),
            NULL);
        return true;
    }
    if (name && strcmp (name, "test_wait") == 0) {
        cg_call_t *call = cg_server_call_new (req, name, NULL);
        call->ops = &s_wait_ops;
        call->client_request = cg_strdupf ("ask-%s", call->key);
        return true;
    }
    return false;
}

static void
s_register (cg_server_t *server)
{
    static const cg_provider_t provider = {.call = s_call};
    cg_server_add_provider (server, &provider);
}

//  The taskId of a CreateTaskResult in SENT for ID (2025-11-25's: in "task"; 2026-07-28's:
//  the result is the task, resultType "task"), or "" (a static copy).
static const char *
s_task_id (json_t *sent, json_int_t id)
{
    static char task_id[64];
    json_t *result = h_result (h_answer (sent, id));
    json_t *task = json_object_get (result, "task");
    const char *type = json_string_value (json_object_get (result, "resultType"));
    if (!task && type && strcmp (type, "task") == 0)
        task = result;
    const char *got = json_string_value (json_object_get (task, "taskId"));
    snprintf (task_id, sizeof task_id, "%s", got ? got : "");
    return task_id;
}

//  --------------------------------------------------------------------------

//  2025-11-25 tasks: a refusal makes none; a finished task is kept and answered.
static void
s_test_tasks (void)
{
    h_t h;
    if (h_start (&h, NULL, s_register) < 0) {
        EXPECT (false, "h_start");
        return;
    }
    cg_client_t *client = h_client ("stdio");
    h_channel_t *channel = h_channel (client);
    h_initialize (&h, channel, "2025-11-25");
    json_t *sent =
        h_send (&h, channel,
                "{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": \"tools/call\", \"params\": "
                "{\"name\": \"list_sessions\", \"task\": {}}}");
    EXPECT (h_error_code (h_answer (sent, 1)) == CG_JSONRPC_METHOD_NOT_FOUND
                && strstr (h_error_text (h_answer (sent, 1)), "does not run as a task"),
            "a tool that runs no code takes no task");
    json_decref (sent);
    sent = h_send (&h, channel,
                   "{\"jsonrpc\": \"2.0\", \"id\": 2, \"method\": \"tools/call\", \"params\": "
                   "{\"name\": \"execute_code\", \"task\": {\"ttl\": 60000}, "
                   "\"arguments\": {\"code\": \"1\", \"bogus\": true}}}");
    EXPECT (h_error_code (h_answer (sent, 2)) == CG_JSONRPC_INVALID_PARAMS
                && strstr (h_error_text (h_answer (sent, 2)), "unknown argument 'bogus'"),
            "a call refused at once is answered as itself: %s", h_error_text (h_answer (sent, 2)));
    EXPECT (zhashx_size (h.server.tasks) == 0, "and makes no task");
    json_decref (sent);
    sent = h_send (&h, channel,
                   "{\"jsonrpc\": \"2.0\", \"id\": 3, \"method\": \"tasks/get\", "
                   "\"params\": {\"taskId\": \"nosuchtask\"}}");
    EXPECT (h_error_code (h_answer (sent, 3)) == CG_JSONRPC_INVALID_PARAMS
                && strstr (h_error_text (h_answer (sent, 3)), "Unknown task"),
            "tasks/get of no task");
    json_decref (sent);
    //  A job as a task: working, then completed by the tick.
    sent = h_send (&h, channel,
                   "{\"jsonrpc\": \"2.0\", \"id\": 4, \"method\": \"tools/call\", \"params\": "
                   "{\"name\": \"test_job\", \"task\": {}}}");
    cleanup_free char *done = cg_xstrdup (s_task_id (sent, 4));
    EXPECT (*done, "a CreateTaskResult");
    json_decref (sent);
    cg_tasks_tick (&h.server, -1);
    sent = h_take (channel);
    EXPECT (h_note (sent, "notifications/tasks/status"), "its status is told");
    json_decref (sent);
    sent = h_send (&h, channel,
                   "{\"jsonrpc\": \"2.0\", \"id\": 5, \"method\": \"tasks/get\", "
                   "\"params\": {\"taskId\": \"%s\"}}",
                   done);
    EXPECT (strcmp (json_string_value (json_object_get (h_result (h_answer (sent, 5)), "status")),
                    "completed")
                == 0,
            "tasks/get: completed");
    json_decref (sent);
    sent = h_send (&h, channel,
                   "{\"jsonrpc\": \"2.0\", \"id\": 6, \"method\": \"tasks/result\", "
                   "\"params\": {\"taskId\": \"%s\"}}",
                   done);
    json_t *result = h_result (h_answer (sent, 6));
    EXPECT (
        json_object_get (json_object_get (result, "_meta"), "io.modelcontextprotocol/related-task")
            && json_object_get (result, "content"),
        "tasks/result: the result, related to its task");
    json_decref (sent);
    sent = h_send (&h, channel,
                   "{\"jsonrpc\": \"2.0\", \"id\": 7, \"method\": \"tasks/cancel\", "
                   "\"params\": {\"taskId\": \"%s\"}}",
                   done);
    EXPECT (h_error_code (h_answer (sent, 7)) == CG_JSONRPC_INVALID_PARAMS
                && strstr (h_error_text (h_answer (sent, 7)), "has ended (completed)"),
            "tasks/cancel of a finished task");
    json_decref (sent);
    //  A failing job, and a long one cancelled: cancelled stays cancelled.
    sent = h_send (&h, channel,
                   "{\"jsonrpc\": \"2.0\", \"id\": 8, \"method\": \"tools/call\", \"params\": "
                   "{\"name\": \"test_job\", \"task\": {}, \"arguments\": {\"fail\": true}}}");
    cleanup_free char *failed = cg_xstrdup (s_task_id (sent, 8));
    json_decref (sent);
    sent = h_send (&h, channel,
                   "{\"jsonrpc\": \"2.0\", \"id\": 9, \"method\": \"tools/call\", \"params\": "
                   "{\"name\": \"test_job\", \"task\": {}, \"arguments\": {\"later\": true}}}");
    cleanup_free char *later = cg_xstrdup (s_task_id (sent, 9));
    json_decref (sent);
    cg_tasks_tick (&h.server, -1);
    json_decref (h_take (channel));
    sent = h_send (&h, channel,
                   "{\"jsonrpc\": \"2.0\", \"id\": 10, \"method\": \"tasks/result\", "
                   "\"params\": {\"taskId\": \"%s\"}}",
                   failed);
    EXPECT (h_error_code (h_answer (sent, 10)) == CG_JSONRPC_INTERNAL_ERROR,
            "a failed task's error");
    json_decref (sent);
    sent = h_send (&h, channel,
                   "{\"jsonrpc\": \"2.0\", \"id\": 11, \"method\": \"tasks/cancel\", "
                   "\"params\": {\"taskId\": \"%s\"}}",
                   later);
    EXPECT (strcmp (json_string_value (json_object_get (h_result (h_answer (sent, 11)), "status")),
                    "cancelled")
                    == 0
                && h_note (sent, "notifications/tasks/status"),
            "tasks/cancel of a working task");
    json_decref (sent);
    sent = h_send (&h, channel, "{\"jsonrpc\": \"2.0\", \"id\": 12, \"method\": \"tasks/list\"}");
    EXPECT (json_array_size (json_object_get (h_result (h_answer (sent, 12)), "tasks")) == 3,
            "tasks/list: the three tasks, the refused call none");
    json_decref (sent);
    h_channel_free (&channel);
    h_client_free (&client);
    h_stop (&h);
}

//  2026-07-28's tasks extension: tasks/get inline, tasks/cancel an ack whatever the state.
static void
s_test_modern_tasks (void)
{
    h_t h;
    if (h_start (&h, NULL, s_register) < 0) {
        EXPECT (false, "h_start");
        return;
    }
    cg_client_t *client = h_client ("modern");
    h_channel_t *channel = h_channel (client);
#define S_TASKS_META H_MODERN_META ("{\"extensions\": {\"io.modelcontextprotocol/tasks\": {}}}")
    json_t *sent =
        h_send (&h, channel,
                "{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": \"tools/call\", \"params\": "
                "{\"name\": \"test_job\", " S_TASKS_META "}}");
    cleanup_free char *id = cg_xstrdup (s_task_id (sent, 1));
    EXPECT (*id, "a task made for a 2026-07-28 request");
    json_decref (sent);
    cg_tasks_tick (&h.server, -1);
    json_decref (h_take (channel));
    sent = h_send (&h, channel,
                   "{\"jsonrpc\": \"2.0\", \"id\": 2, \"method\": \"tasks/get\", "
                   "\"params\": {\"taskId\": \"%s\", " S_TASKS_META "}}",
                   id);
    json_t *result = h_result (h_answer (sent, 2));
    EXPECT (json_object_get (result, "result") && json_object_get (result, "ttlMs")
                && strcmp (json_string_value (json_object_get (result, "resultType")), "complete")
                       == 0,
            "tasks/get: a DetailedTask, marked");
    json_decref (sent);
    sent = h_send (&h, channel,
                   "{\"jsonrpc\": \"2.0\", \"id\": 3, \"method\": \"tasks/cancel\", "
                   "\"params\": {\"taskId\": \"%s\", " S_TASKS_META "}}",
                   id);
    EXPECT (json_is_object (h_result (h_answer (sent, 3))), "tasks/cancel of a finished task: ack");
    json_decref (sent);
    h_channel_free (&channel);
    h_client_free (&client);
    h_stop (&h);
}

//  notifications/cancelled: a listener with the id goes first (its hook), a call's answer
//  is then not sent; without it the answer goes out.
static void
s_test_cancellation (void)
{
    h_t h;
    if (h_start (&h, NULL, s_register) < 0) {
        EXPECT (false, "h_start");
        return;
    }
    cg_client_t *client = h_client ("stdio");
    h_channel_t *channel = h_channel (client);
    h_initialize (&h, channel, "2025-11-25");
    json_t *sent =
        h_send (&h, channel,
                "{\"jsonrpc\": \"2.0\", \"id\": 5, \"method\": \"subscriptions/listen\", "
                "\"params\": {\"notifications\": {}, " H_MODERN_META ("{}") "}}");
    EXPECT (h_note (sent, "notifications/subscriptions/acknowledged")
                && zlistx_size (h.server.listeners) == 1,
            "a listener");
    json_decref (sent);
    sent = h_send (&h, channel,
                   "{\"jsonrpc\": \"2.0\", \"id\": 5, \"method\": \"tools/call\", \"params\": "
                   "{\"name\": \"test_wait\"}}");
    EXPECT (json_array_size (sent) == 0 && zhashx_size (h.server.calls) == 1, "a call waits");
    json_decref (sent);
    cg_call_t *call = zhashx_first (h.server.calls);
    cleanup_free char *ask = cg_xstrdup (call->client_request);
    sent = h_send (&h, channel,
                   "{\"jsonrpc\": \"2.0\", \"method\": \"notifications/cancelled\", "
                   "\"params\": {\"requestId\": 5}}");
    EXPECT (zlistx_size (h.server.listeners) == 0 && !call->cancelled,
            "the listener goes first, the call stays");
    json_decref (sent);
    sent = h_send (&h, channel,
                   "{\"jsonrpc\": \"2.0\", \"method\": \"notifications/cancelled\", "
                   "\"params\": {\"requestId\": 5}}");
    EXPECT (call->cancelled, "then the call is cancelled");
    json_decref (sent);
    sent = h_send (&h, channel, "{\"jsonrpc\": \"2.0\", \"id\": \"%s\", \"result\": {}}", ask);
    EXPECT (json_array_size (sent) == 0 && zhashx_size (h.server.calls) == 0,
            "a cancelled call's answer is not sent, and it ends");
    json_decref (sent);
    sent = h_send (&h, channel,
                   "{\"jsonrpc\": \"2.0\", \"id\": 6, \"method\": \"tools/call\", \"params\": "
                   "{\"name\": \"test_wait\"}}");
    json_decref (sent);
    call = zhashx_first (h.server.calls);
    cleanup_free char *ask2 = cg_xstrdup (call->client_request);
    sent = h_send (&h, channel, "{\"jsonrpc\": \"2.0\", \"id\": \"%s\", \"result\": {}}", ask2);
    EXPECT (h_result (h_answer (sent, 6)) && zhashx_size (h.server.calls) == 0,
            "not cancelled: answered");
    json_decref (sent);
    h_channel_free (&channel);
    h_client_free (&client);
    h_stop (&h);
}

//  A client's end takes its calls, tasks and listeners, and leaves another client's.
static void
s_test_client_end (void)
{
    h_t h;
    if (h_start (&h, NULL, s_register) < 0) {
        EXPECT (false, "h_start");
        return;
    }
    cg_client_t *mine = h_client ("mine"), *other = h_client ("other");
    h_channel_t *channel = h_channel (mine), *elsewhere = h_channel (other);
    h_initialize (&h, channel, "2025-11-25");
    h_initialize (&h, elsewhere, "2025-11-25");
    h_channel_t *both[] = {channel, elsewhere};
    for (int i = 0; i < 2; i++) {
        json_decref (h_send (&h, both[i],
                             "{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": \"tools/call\", "
                             "\"params\": {\"name\": \"test_job\", \"task\": {}, "
                             "\"arguments\": {\"later\": true}}}"));
        json_decref (h_send (&h, both[i],
                             "{\"jsonrpc\": \"2.0\", \"id\": 2, \"method\": \"tools/call\", "
                             "\"params\": {\"name\": \"test_wait\"}}"));
        json_decref (
            h_send (&h, both[i],
                    "{\"jsonrpc\": \"2.0\", \"id\": 3, \"method\": "
                    "\"subscriptions/listen\", \"params\": {\"notifications\": {}, " H_MODERN_META (
                        "{}") "}}"));
        //  Mine holds two listeners side by side: its end frees both (a walk that took
        //  "next" before deleting by zlistx_find read the second after freeing it).
        if (i == 0)
            json_decref (h_send (&h, both[i],
                                 "{\"jsonrpc\": \"2.0\", \"id\": 5, \"method\": "
                                 "\"subscriptions/listen\", \"params\": {\"notifications\": "
                                 "{}, " H_MODERN_META ("{}") "}}"));
        json_decref (h_send (&h, both[i],
                             "{\"jsonrpc\": \"2.0\", \"id\": 4, \"method\": "
                             "\"resources/subscribe\", \"params\": {\"uri\": \"x://y\"}}"));
    }
    EXPECT (zhashx_size (h.server.tasks) == 2 && zhashx_size (h.server.calls) == 2
                && zlistx_size (h.server.listeners) == 3,
            "two clients' tasks, calls and listeners");
    EXPECT (cg_server_client_busy (&h.server, mine), "a client with a call is busy");
    cg_server_client_end (&h.server, mine);
    EXPECT (zhashx_size (h.server.tasks) == 1 && zhashx_size (h.server.calls) == 1
                && zlistx_size (h.server.listeners) == 1,
            "the other client's are left: %zu tasks, %zu calls, %zu listeners",
            zhashx_size (h.server.tasks), zhashx_size (h.server.calls),
            zlistx_size (h.server.listeners));
    EXPECT (!cg_server_client_busy (&h.server, mine), "the ended client holds nothing");
    json_t *sent = h_take (channel);
    EXPECT (!h_answer (sent, 2), "the ended client's call is not answered");
    json_decref (sent);
    h_channel_free (&channel);
    h_channel_free (&elsewhere);
    h_stop (&h);
    h_client_free (&mine);
    h_client_free (&other);
}

int
main (void)
{
    s_test_tasks ();
    s_test_modern_tasks ();
    s_test_cancellation ();
    s_test_client_end ();
    printf ("%d passed, %d failed\n", s_passes, s_failures);
    return s_failures ? 1 : 0;
}
