/*  cg_tasks — MCP tasks (revision 2025-11-25's experimental tasks): a tools/call of a
    running tool made with params.task answers at once with a task the client polls
    (tasks/get), waits on (tasks/result), lists (tasks/list) and cancels (tasks/cancel,
    which interrupts the kernel and keeps the session's state); the call's result is kept
    for the task's TTL. Internal to mcp/. */
#ifndef CG_TASKS_H
#define CG_TASKS_H

#include "mcp/cg_server.h"

/*  The tasks capability of initialize's result (a new object). */
json_t *cg_tasks_capability (void);

/*  tools/call with params.task (REQ, PARAMS; or a 2026-07-28 one cg_tasks_modern_wanted):
    checks the tool takes tasks and that the client has room for one more (--max-tasks,
    --max-task-results-mb and their per-client shares: else -32600 naming the limit), then
    runs the call with its answer going to a task. The task is made, and REQ answered with
    it (CreateTaskResult), when the call starts (cg_tasks_started); a call its tool refuses
    at once makes none and is answered as itself (2025-11-25: a JSON-RPC error carrying the
    refusal, as its client waits for a task or an error). */
void cg_tasks_call (const cg_request_t *req, json_t *params);

/*  TASK's call is CALL_KEY (a cg_server_call key): tasks/cancel cancels it. The first
    makes the task. */
void cg_tasks_started (cg_task_t *task, const char *call_key);

/*  The call CALL_KEY ended: when it is still TASK's and gave no answer, TASK fails. */
void cg_tasks_call_ended (cg_task_t *task, const char *call_key);

/*  The answer of TASK's call: RESULT (stolen; a CallToolResult), or when NULL the
    JSON-RPC error CODE with MESSAGE. Ends the task (completed, or failed) unless it was
    cancelled, and answers its tasks/result requests. */
void cg_tasks_finish (cg_task_t *task, json_t *result, int code, const char *message);

/*  TASK's cell asks the user for a line: REQUEST (an elicitation/create request, stolen)
    goes out on the stream of a tasks/result request of the task, now or when one comes
    (the client calls tasks/result when it sees input_required); the task is
    input_required until cg_tasks_answered. */
void cg_tasks_ask (cg_task_t *task, json_t *request);
void cg_tasks_answered (cg_task_t *task);

/*  tasks/get, tasks/result, tasks/list, tasks/cancel (a method each). */
void cg_tasks_get (const cg_request_t *req, json_t *params);
void cg_tasks_result (const cg_request_t *req, json_t *params);
void cg_tasks_list (const cg_request_t *req, json_t *params);
void cg_tasks_cancel (const cg_request_t *req, json_t *params);

/*  2026-07-28's tasks/update: answers a task's pending input (inputResponses). */
void cg_tasks_update (const cg_request_t *req, json_t *params);

/*  2026-07-28: true when REQ, a tools/call with PARAMS, runs as a task (the request
    declared the tasks extension, the tool runs code and may run past 60 s). */
bool cg_tasks_modern_wanted (const cg_request_t *req, json_t *params);

/*  A conformance fixture's 2026-07-28 task for REQ's TOOL (REQ answered with it now): it
    ends by itself AFTER_MS later with RESULT (stolen; NULL: failed, a protocol error), or,
    with ASKS (stolen; key -> input request; NULL or empty: none), once tasks/update
    answered them all (the answers are added to RESULT's content). NULL when the caps
    leave no room (REQ answered with the error). */
cg_task_t *cg_tasks_fixture (const cg_request_t *req, const char *tool, int64_t after_ms,
                             json_t *result, json_t *asks);

/*  Forgets the tasks past their TTL. Returns the ms until the next is due, or WAIT_MS when
    that is sooner (-1: none). */
int cg_tasks_tick (cg_server_t *server, int wait_ms);

/*  Forgets CLIENT's tasks (their tasks/result requests get no answer). */
void cg_tasks_client_end (cg_server_t *server, cg_client_t *client);

/*  The server's table of tasks: id -> cg_task_t (cg_tasks.c frees them). */
zhashx_t *cg_tasks_new (void);

/*  Registers tasks with SERVER: its table, the tasks methods, tools/call's step that runs
    a call as a task (after the steps registered before it: tools/call must be in the
    table), and the hooks that give a task its call's answer and forget a client's. */
void cg_tasks_register (cg_server_t *server);

#endif
