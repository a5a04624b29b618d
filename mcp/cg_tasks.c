/*  cg_tasks — MCP tasks (2025-11-25): a running tool's call as a task the client polls. */
#include "mcp/cg_tasks.h"
#include "mcp/cg_jsonrpc.h"
#include "mcp/cg_modern.h"
#include "mcp/cg_result.h"
#include "mcp/cg_server_int.h"
#include "base/cg_util.h"
#include "base/cg_utf8.h"

#include <sodium.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define S_TTL_DEFAULT_MS 3600000 /* a task's result is kept an hour unless asked otherwise */
#define S_TTL_MIN_MS 1000
#define S_TTL_MAX_MS 86400000 /* at most a day */
#define S_POLL_MS 1000        /* how often a client should poll tasks/get */
#define S_LIST_PAGE 100
#define S_WAITERS_MAX 16     /* tasks/result requests waiting on one task */
#define S_ENVELOPE_ROOM 1024 /* kept below --max-result-bytes for what wraps a kept result */
#define S_RELATED "io.modelcontextprotocol/related-task"

struct cg_task_t {
    char id[37];
    cg_server_t *server;
    cg_client_t *client;   /* its owner (borrowed: its tasks go with it) */
    cg_channel_t *channel; /* where its status notifications go (the creating request's) */
    char *tool;
    const char *status;                  /* working, input_required, completed, failed, cancelled */
    char *message;                       /* statusMessage, or NULL */
    char created_at[32], updated_at[32]; /* cg_log_timestamp's ISO 8601 */
    int64_t created_us;                  /* monotonic */
    int64_t ttl_ms;
    char call_key[32]; /* its call while it runs, "" once it ended */
    json_t *result;    /* the CallToolResult, once completed */
    int error_code;    /* once failed */
    char *error_message;
    zlistx_t *waiters; /* tasks/result requests waiting: s_waiter_t */
    json_t *ask;       /* an elicitation request waiting for a tasks/result stream, or
                          (2026-07-28) for the client's tasks/update */
    bool modern;       /* 2026-07-28's tasks extension: its wire shapes */
    /*  A conformance fixture's task (cg_tasks_fixture): no call; it ends by itself. */
    int64_t due_us;     /* when it ends (0: not a fixture's, or it waits for answers) */
    json_t *due_result; /* its result then, or NULL: it fails with ERROR_* */
    json_t *asks;       /* key -> input request still unanswered, or NULL */
    json_t *answers;    /* key -> the answer tasks/update gave */
    /*  Made for a tools/call whose tool has not started yet (s_new): in no table and not
        answered until its call starts (s_commit), or its tool refuses it at once
        (s_refused: then no task is made at all). */
    bool pending;
    bool refused;
    json_t *request_id; /* the tools/call's id, until its answer went out */
    size_t bytes;       /* what its kept result and error weigh (the caps' measure) */
};

//  A tasks/result request waiting for its task's end.
typedef struct {
    cg_channel_t *channel;
    json_t *id;
} s_waiter_t;

static bool
s_terminal (const cg_task_t *task)
{
    return strcmp (task->status, "working") != 0 && strcmp (task->status, "input_required") != 0;
}

static void
s_waiter_free (void **item)
{
    s_waiter_t *waiter = *item;
    if (waiter) {
        cg_channel_release (&waiter->channel);
        json_decref (waiter->id);
        free (waiter);
    }
    *item = NULL;
}

static void
s_task_free (void **item)
{
    cg_task_t *task = *item;
    if (task) {
        zlistx_destroy (&task->waiters);
        json_decref (task->ask);
        json_decref (task->due_result);
        json_decref (task->asks);
        json_decref (task->answers);
        cg_channel_release (&task->channel);
        json_decref (task->request_id);
        json_decref (task->result);
        free (task->tool);
        free (task->message);
        free (task->error_message);
        free (task);
    }
    *item = NULL;
}

zhashx_t *
cg_tasks_new (void)
{
    zhashx_t *tasks = zhashx_new ();
    zhashx_set_destructor (tasks, s_task_free);
    return tasks;
}

json_t *
cg_tasks_capability (void)
{
    return json_pack ("{s:{}, s:{}, s:{s:{s:{}}}}", "list", "cancel", "requests", "tools", "call");
}

//  The Task object of TASK (2026-07-28: ttlMs and pollIntervalMs).
static json_t *
s_model (const cg_task_t *task)
{
    json_t *model = json_pack (
        "{s:s, s:s, s:s, s:s, s:I, s:i}", "taskId", task->id, "status", task->status, "createdAt",
        task->created_at, "lastUpdatedAt", task->updated_at, task->modern ? "ttlMs" : "ttl",
        (json_int_t)task->ttl_ms, task->modern ? "pollIntervalMs" : "pollInterval", S_POLL_MS);
    if (task->message)
        json_object_set_new (model, "statusMessage", json_string (task->message));
    return model;
}

//  2026-07-28's DetailedTask: the Task with its result, error or pending input inline.
static json_t *
s_detailed (const cg_task_t *task)
{
    json_t *model = s_model (task);
    if (task->result)
        json_object_set (model, "result", task->result);
    else if (strcmp (task->status, "failed") == 0)
        json_object_set_new (model, "error",
                             json_pack ("{s:i, s:s}", "code", task->error_code, "message",
                                        task->error_message ? task->error_message : "failed"));
    else if (json_object_size (task->asks))
        json_object_set (model, "inputRequests", task->asks);
    else if (task->ask)
        json_object_set_new (model, "inputRequests",
                             json_pack ("{s:{s:s, s:O}}",
                                        json_string_value (json_object_get (task->ask, "id")),
                                        "method", "elicitation/create", "params",
                                        json_object_get (task->ask, "params")));
    return model;
}

//  Moves TASK to STATUS with MESSAGE (may be NULL) and tells its client
//  (notifications/tasks/status, on the channel it was created on while that is open).
static void
s_set_status (cg_task_t *task, const char *status, const char *message)
{
    task->status = status;
    free (task->message);
    task->message = message ? cg_xstrdup (message) : NULL;
    cg_log_timestamp (task->updated_at);
    if (task->channel)
        cg_channel_send (task->channel,
                         json_pack ("{s:s, s:s, s:o}", "jsonrpc", "2.0", "method",
                                    "notifications/tasks/status", "params", s_model (task)));
}

//  The task ID of REQ's client, or NULL (REQ answered with -32602).
static cg_task_t *
s_find (const cg_request_t *req, json_t *params)
{
    const char *id = json_string_value (json_object_get (params, "taskId"));
    cg_task_t *task = id ? zhashx_lookup (cg_server_tasks (req->server), id) : NULL;
    if (task && task->client == req->client)
        return task;
    cleanup_free char *message = id ? cg_strdupf ("Unknown task: %.*s", cg_utf8_prefix (id, 64), id)
                                    : cg_xstrdup ("'taskId' (a string) is required");
    cg_request_error (req, CG_JSONRPC_INVALID_PARAMS, message);
    return NULL;
}

//  What tasks/result answers for TASK, ended: its result with the related-task _meta, or
//  its error. A new JSON-RPC message for ID.
static json_t *
s_outcome (const cg_task_t *task, json_t *id)
{
    if (!task->result) {
        const char *message = task->error_message ? task->error_message : "the task was cancelled";
        return cg_jsonrpc_error (
            id, task->error_code ? task->error_code : CG_JSONRPC_INTERNAL_ERROR, message);
    }
    json_t *result = json_deep_copy (task->result);
    json_t *meta = json_object_get (result, "_meta");
    if (!json_is_object (meta)) {
        meta = json_object ();
        json_object_set_new (result, "_meta", meta);
    }
    json_object_set_new (meta, S_RELATED, json_pack ("{s:s}", "taskId", task->id));
    return cg_jsonrpc_result (id, result);
}

//  Answers every tasks/result request waiting on TASK (ended).
static void
s_answer_waiters (cg_task_t *task)
{
    s_waiter_t *waiter;
    while ((waiter = zlistx_detach (task->waiters, NULL))) {
        cg_channel_send (waiter->channel, s_outcome (task, waiter->id));
        void *item = waiter;
        s_waiter_free (&item);
    }
}

//  The caps on tasks (--max-tasks, --max-task-results-mb and each client's share of them):
//  returns true when REQ's client may have one more task; else REQ is answered with
//  -32600 naming the limit it reached.
static bool
s_admit (const cg_request_t *req)
{
    const cg_config_t *config = cg_server_config (req->server);
    zhashx_t *tasks = cg_server_tasks (req->server);
    size_t mine = 0, bytes = 0, my_bytes = 0;
    for (cg_task_t *t = zhashx_first (tasks); t; t = zhashx_next (tasks)) {
        bytes += t->bytes;
        if (cg_client_same_owner (t->client, req->client)) {
            mine++;
            my_bytes += t->bytes;
        }
    }
    const struct {
        bool reached;
        const char *what, *flag;
        size_t max;
    } caps[] = {
        {mine >= (size_t)config->max_tasks_per_client, "this client keeps as many tasks as it may",
         "--max-tasks-per-client", (size_t)config->max_tasks_per_client},
        {my_bytes >= config->max_task_results_bytes_per_client,
         "the results this client's tasks keep weigh as much as they may",
         "--max-task-results-mb-per-client", config->max_task_results_bytes_per_client >> 20},
        {zhashx_size (tasks) >= (size_t)config->max_tasks,
         "the server keeps as many tasks as it may", "--max-tasks", (size_t)config->max_tasks},
        {bytes >= config->max_task_results_bytes,
         "the results all tasks keep weigh as much as they may", "--max-task-results-mb",
         config->max_task_results_bytes >> 20},
    };
    for (size_t i = 0; i < sizeof caps / sizeof caps[0]; i++) {
        if (!caps[i].reached)
            continue;
        cleanup_free char *message =
            cg_strdupf ("tools/call: no task was made: %s (%s %zu); a finished task is "
                        "forgotten once its TTL has passed",
                        caps[i].what, caps[i].flag, caps[i].max);
        cg_request_error_data (
            req, CG_JSONRPC_INVALID_REQUEST, message,
            json_pack ("{s:s, s:I}", "limit", caps[i].flag, "max", (json_int_t)caps[i].max));
        return false;
    }
    return true;
}

//  A task of REQ's client for TOOL, kept TTL_MS (bounded), pending: in no table yet and
//  REQ not answered (s_commit does both).
static cg_task_t *
s_new (const cg_request_t *req, const char *tool, json_int_t ttl_ms)
{
    cg_task_t *task = cg_xcalloc (1, sizeof *task);
    uint8_t b[16];
    randombytes_buf (b, sizeof b);
    sodium_bin2hex (task->id, sizeof task->id, b, sizeof b);
    task->server = req->server;
    task->client = req->client;
    task->channel = cg_channel_keep (req->channel);
    task->tool = cg_xstrdup (tool);
    task->status = "working";
    cg_log_timestamp (task->created_at);
    memcpy (task->updated_at, task->created_at, sizeof task->updated_at);
    task->created_us = cg_now_us ();
    task->ttl_ms = ttl_ms < S_TTL_MIN_MS   ? S_TTL_MIN_MS
                   : ttl_ms > S_TTL_MAX_MS ? S_TTL_MAX_MS
                                           : ttl_ms;
    task->waiters = zlistx_new ();
    task->modern = req->modern;
    task->pending = true;
    task->request_id = json_incref (req->id);
    return task;
}

//  Makes TASK, pending, a task: into the table, and its tools/call answered with it (not
//  the call's record: that is its result's). 2026-07-28's answer is flat: resultType
//  "task". A channel that ends with that answer (an HTTP POST's) is let go.
static void
s_commit (cg_task_t *task)
{
    task->pending = false;
    zhashx_insert (cg_server_tasks (task->server), task->id, task);
    json_t *created = s_model (task);
    if (task->modern) {
        json_object_set_new (created, "resultType", json_string ("task"));
        cg_modern_result (created, "tools/call");
    }
    cg_channel_send (
        task->channel,
        cg_jsonrpc_result (task->request_id,
                           task->modern ? created : json_pack ("{s:o}", "task", created)));
    json_decref (task->request_id);
    task->request_id = NULL;
    if (!task->channel->standing)
        cg_channel_release (&task->channel);
}

//  The JSON-RPC error code of a refusal whose structuredContent is STRUCTURED: -32602 for
//  the call's arguments, -32603 for the rest (busy, no room for a sandbox).
static int
s_refusal_code (json_t *structured)
{
    static const char *const of_arguments[] = {"invalid_params", "unsupported_language",
                                               "session_not_found", NULL};
    const char *error = json_string_value (json_object_get (structured, "error_code"));
    if (!error)
        error = json_string_value (json_object_get (structured, "error"));
    for (int i = 0; error && of_arguments[i]; i++)
        if (strcasecmp (error, of_arguments[i]) == 0)
            return CG_JSONRPC_INVALID_PARAMS;
    return CG_JSONRPC_INTERNAL_ERROR;
}

//  TASK's tool answered at once, before it started anything, with RESULT (stolen) or the
//  JSON-RPC error CODE, MESSAGE: no task is made, and the answer goes out as the
//  tools/call's own. A 2025-11-25 client asked for a task, and takes a CreateTaskResult
//  or an error (the SDK's callToolStream), so a refusal (isError) is an error there that
//  says what the result would (its structuredContent as data). Returns false when RESULT
//  is a success: that is kept by a task as usual.
static bool
s_refused (cg_task_t *task, json_t *result, int code, const char *message)
{
    json_t *answer;
    if (result && !task->modern && !json_is_true (json_object_get (result, "isError")))
        return false;
    if (result && task->modern)
        answer = cg_jsonrpc_result (task->request_id, json_incref (result));
    else if (result) {
        json_t *structured = json_object_get (result, "structuredContent");
        json_t *first = json_array_get (json_object_get (result, "content"), 0);
        const char *text = json_string_value (json_object_get (structured, "error_message"));
        if (!text)
            text = json_string_value (json_object_get (structured, "message"));
        if (!text)
            text = json_string_value (json_object_get (first, "text"));
        answer = cg_jsonrpc_error (task->request_id, s_refusal_code (structured),
                                   text ? text : "the call was refused");
        if (structured)
            json_object_set (json_object_get (answer, "error"), "data", structured);
    }
    else
        answer = cg_jsonrpc_error (task->request_id, code, message ? message : "the call failed");
    json_decref (result);
    cg_channel_send (task->channel, answer);
    task->refused = true;
    return true;
}

//  Makes a task of REQ's client for TOOL, kept TTL_MS, and answers REQ with it. Returns it.
static cg_task_t *
s_create (const cg_request_t *req, const char *tool, json_int_t ttl_ms)
{
    cg_task_t *task = s_new (req, tool, ttl_ms);
    s_commit (task);
    return task;
}

void
cg_tasks_call (const cg_request_t *req, json_t *params)
{
    json_t *spec = req->modern ? NULL : json_object_get (params, "task");
    json_t *ttl = json_object_get (spec, "ttl");
    const char *name = json_string_value (json_object_get (params, "name"));
    if (!req->modern && (!json_is_object (spec) || (ttl && !json_is_integer (ttl)))) {
        cg_request_error (req, CG_JSONRPC_INVALID_PARAMS,
                          "tools/call: 'task' must be an object, its 'ttl' an integer (ms)");
        return;
    }
    if (!(cg_server_tool_traits (req->server, name) & CG_TOOL_TRAIT_TASKS)) {
        cg_request_error (req, CG_JSONRPC_METHOD_NOT_FOUND,
                          "tools/call: this tool does not run as a task (only the tools that "
                          "run code do: their execution.taskSupport is \"optional\")");
        return;
    }
    if (!s_admit (req))
        return;
    //  The call is validated first: the task is made when its run starts
    //  (cg_tasks_started); one refused at once makes none (s_refused).
    cg_task_t *task = s_new (req, name, ttl ? json_integer_value (ttl) : S_TTL_DEFAULT_MS);
    cg_request_t tasked = *req;
    tasked.task = task;
    tasked.progress_token = NULL;         /* its request is answered: progress has nowhere to go */
    cg_server_continue (&tasked, params); /* on to the tool */
    if (task->pending && !task->refused)
        s_commit (task); /* no call started and no answer: as a task, as it asked */
    if (task->refused) {
        void *item = task;
        s_task_free (&item);
    }
}

void
cg_tasks_started (cg_task_t *task, const char *call_key)
{
    if (task->pending)
        s_commit (task);
    snprintf (task->call_key, sizeof task->call_key, "%s", call_key);
}

void
cg_tasks_call_ended (cg_task_t *task, const char *call_key)
{
    if (strcmp (task->call_key, call_key) == 0)
        cg_tasks_finish (task, NULL, CG_JSONRPC_INTERNAL_ERROR, "the call ended without an answer");
}

//  What TASK keeps weighs (its result, fitted within --max-result-bytes first, and its
//  error): the tasks' byte caps count it.
static void
s_weigh (cg_task_t *task)
{
    size_t budget = cg_server_config (task->server)->max_result_bytes - S_ENVELOPE_ROOM;
    if (task->result)
        cg_result_fit (task->result, budget, cg_client_links (task->client));
    task->bytes = (task->result ? cg_result_size (task->result) : 0)
                  + (task->error_message ? strlen (task->error_message) : 0);
}

void
cg_tasks_finish (cg_task_t *task, json_t *result, int code, const char *message)
{
    if (task->pending && s_refused (task, result, code, message))
        return;
    if (task->pending) /* a success at once: kept by a task as asked */
        s_commit (task);
    task->call_key[0] = '\0';
    if (s_terminal (task)) { /* cancelled: what the interrupted run says is dropped */
        json_decref (result);
        return;
    }
    json_decref (task->ask);
    task->ask = NULL;
    task->result = result;
    task->error_code = result ? 0 : code;
    task->error_message = result ? NULL : cg_xstrdup (message ? message : "the call failed");
    s_weigh (task);
    s_set_status (task, result ? "completed" : "failed", result ? NULL : task->error_message);
    s_answer_waiters (task);
}

void
cg_tasks_ask (cg_task_t *task, json_t *request)
{
    json_t *params = json_object_get (request, "params");
    json_object_set_new (params, "_meta", json_pack ("{s:{s:s}}", S_RELATED, "taskId", task->id));
    s_set_status (task, "input_required", "The running code asks the user for a line of input.");
    s_waiter_t *waiter = zlistx_first (task->waiters);
    json_decref (task->ask);
    task->ask = NULL;
    if (waiter)
        cg_channel_send (waiter->channel, request);
    else
        task->ask = request;
}

void
cg_tasks_answered (cg_task_t *task)
{
    json_decref (task->ask);
    task->ask = NULL;
    if (strcmp (task->status, "input_required") == 0)
        s_set_status (task, "working", NULL);
}

void
cg_tasks_get (const cg_request_t *req, json_t *params)
{
    cg_task_t *task = s_find (req, params);
    if (task)
        cg_request_result (req, req->modern ? s_detailed (task) : s_model (task));
}

void
cg_tasks_result (const cg_request_t *req, json_t *params)
{
    cg_task_t *task = s_find (req, params);
    if (!task)
        return;
    if (s_terminal (task)) {
        cg_channel_send (req->channel, s_outcome (task, req->id));
        return;
    }
    if (zlistx_size (task->waiters) >= S_WAITERS_MAX) {
        cleanup_free char *message = cg_strdupf (
            "tasks/result: %d requests wait for task %s already, the most one task takes",
            S_WAITERS_MAX, task->id);
        cg_request_error (req, CG_JSONRPC_INVALID_REQUEST, message);
        return;
    }
    if (task->ask) { /* the cell waits for the user: ask on this request's stream */
        cg_channel_send (req->channel, task->ask);
        task->ask = NULL;
    }
    s_waiter_t *waiter = cg_xcalloc (1, sizeof *waiter);
    waiter->channel = cg_channel_keep (req->channel);
    waiter->id = json_incref (req->id);
    zlistx_add_end (task->waiters, waiter);
}

void
cg_tasks_list (const cg_request_t *req, json_t *params)
{
    //  The cursor is the number of the client's tasks already listed, in creation order.
    const char *cursor = json_string_value (json_object_get (params, "cursor"));
    size_t skip = 0;
    if (json_object_get (params, "cursor")
        && (!cursor || !*cursor || strspn (cursor, "0123456789") != strlen (cursor)
            || strlen (cursor) > 9)) {
        cg_request_error (req, CG_JSONRPC_INVALID_PARAMS, "tasks/list: invalid cursor");
        return;
    }
    skip = cursor ? (size_t)atol (cursor) : 0;
    zhashx_t *tasks = cg_server_tasks (req->server);
    cg_task_t **sorted = cg_xcalloc (zhashx_size (tasks) + 1, sizeof *sorted);
    size_t count = 0;
    for (cg_task_t *t = zhashx_first (tasks); t; t = zhashx_next (tasks))
        if (t->client == req->client)
            sorted[count++] = t;
    //  Oldest first.
    for (size_t i = 1; i < count; i++)
        for (size_t j = i; j > 0 && sorted[j - 1]->created_us > sorted[j]->created_us; j--) {
            cg_task_t *swap = sorted[j];
            sorted[j] = sorted[j - 1];
            sorted[j - 1] = swap;
        }
    json_t *list = json_array ();
    for (size_t i = skip; i < count && i < skip + S_LIST_PAGE; i++)
        json_array_append_new (list, s_model (sorted[i]));
    json_t *result = json_pack ("{s:o}", "tasks", list);
    if (skip + S_LIST_PAGE < count)
        json_object_set_new (result, "nextCursor", json_sprintf ("%zu", skip + S_LIST_PAGE));
    free (sorted);
    cg_request_result (req, result);
}

void
cg_tasks_cancel (const cg_request_t *req, json_t *params)
{
    cg_task_t *task = s_find (req, params);
    if (!task)
        return;
    if (s_terminal (task) && req->modern) { /* 2026-07-28: an ack, whatever its state */
        cg_request_result (req, json_object ());
        return;
    }
    if (s_terminal (task)) {
        cleanup_free char *message =
            cg_strdupf ("tasks/cancel: task %s has ended (%s)", task->id, task->status);
        cg_request_error (req, CG_JSONRPC_INVALID_PARAMS, message);
        return;
    }
    //  The kernel is interrupted, as for notifications/cancelled: the session's state stays.
    cg_call_t *call = cg_server_call (req->server, task->call_key[0] ? task->call_key : NULL);
    if (call)
        cg_server_call_cancel (req->server, call);
    task->error_code = CG_JSONRPC_INTERNAL_ERROR;
    task->error_message = cg_xstrdup ("The task was cancelled (tasks/cancel); the session's "
                                      "state is kept.");
    s_weigh (task);
    s_set_status (task, "cancelled",
                  "Cancelled by the client; the kernel was interrupted and "
                  "the session's state is kept.");
    cg_request_result (req, req->modern ? json_object () : s_model (task));
    s_answer_waiters (task);
}

void
cg_tasks_update (const cg_request_t *req, json_t *params)
{
    if (!req->modern) {
        cg_request_error (req, CG_JSONRPC_METHOD_NOT_FOUND,
                          "Method not found: tasks/update is 2026-07-28's");
        return;
    }
    cg_task_t *task = s_find (req, params);
    if (!task)
        return;
    json_t *responses = json_object_get (params, "inputResponses");
    if (!json_is_object (responses)) {
        cg_request_error (req, CG_JSONRPC_INVALID_PARAMS,
                          "tasks/update: 'inputResponses' must be an object");
        return;
    }
    //  A fixture's: what it asked is answered; with all answered it ends.
    const char *asked;
    json_t *request, *given;
    void *tmp;
    json_object_foreach_safe (task->asks, tmp, asked, request)
    {
        if (!json_is_object (given = json_object_get (responses, asked)))
            continue;
        json_object_set (task->answers, asked, given);
        json_object_del (task->asks, asked);
    }
    if (task->asks && !json_object_size (task->asks)
        && strcmp (task->status, "input_required") == 0) {
        s_set_status (task, "working", NULL);
        task->due_us = cg_now_us ();
    }
    //  Keys not asked for are ignored; the one the cell waits for is fed to it.
    const char *key = task->ask ? json_string_value (json_object_get (task->ask, "id")) : NULL;
    json_t *answer = key ? json_object_get (responses, key) : NULL;
    cg_call_t *call = cg_server_call (req->server, task->call_key[0] ? task->call_key : NULL);
    if (json_is_object (answer) && call && call->asking) {
        json_t *message = json_pack ("{s:O}", "result", answer);
        cg_server_call_response (req->server, call, message);
        json_decref (message);
    }
    cg_request_result (req, json_object ());
}

bool
cg_tasks_modern_wanted (const cg_request_t *req, json_t *params)
{
    //  A task when the client takes them (this request's extension) and the call may run
    //  past a client's usual request timeout: a running tool asked for more than 60 s.
    const char *name = json_string_value (json_object_get (params, "name"));
    json_t *arguments = json_object_get (params, "arguments");
    double seconds = json_number_value (json_object_get (arguments, "timeout"));
    if (json_is_number (json_object_get (arguments, "timeout_ms")))
        seconds = json_number_value (json_object_get (arguments, "timeout_ms")) / 1000;
    return req->modern_tasks && (cg_server_tool_traits (req->server, name) & CG_TOOL_TRAIT_TASKS)
           && seconds > 60;
}

//  A fixture task's result when it ends: its due result, with the answers it got said.
static json_t *
s_fixture_result (cg_task_t *task)
{
    if (!task->due_result)
        return NULL;
    json_t *result = json_deep_copy (task->due_result);
    if (json_object_size (task->answers)) {
        cleanup_free char *answers = json_dumps (task->answers, JSON_COMPACT | JSON_SORT_KEYS);
        json_array_append_new (json_object_get (result, "content"),
                               json_pack ("{s:s, s:s}", "type", "text", "text", answers));
    }
    return result;
}

cg_task_t *
cg_tasks_fixture (const cg_request_t *req, const char *tool, int64_t after_ms, json_t *result,
                  json_t *asks)
{
    if (!s_admit (req)) {
        json_decref (result);
        json_decref (asks);
        return NULL;
    }
    cg_task_t *task = s_create (req, tool, S_TTL_DEFAULT_MS);
    task->due_result = result;
    task->answers = json_object ();
    if (json_object_size (asks)) {
        task->asks = asks;
        s_set_status (task, "input_required", "The job waits for its answers.");
    }
    else {
        json_decref (asks);
        task->due_us = cg_now_us () + after_ms * 1000;
    }
    return task;
}

int
cg_tasks_tick (cg_server_t *server, int wait_ms)
{
    zhashx_t *tasks = cg_server_tasks (server);
    int64_t now = cg_now_us (), next = INT64_MAX;
    zlistx_t *expired = zlistx_new ();
    for (cg_task_t *t = zhashx_first (tasks); t; t = zhashx_next (tasks)) {
        if (t->due_us && t->due_us <= now && !s_terminal (t)) {
            t->due_us = 0;
            cg_tasks_finish (t, s_fixture_result (t), CG_JSONRPC_INTERNAL_ERROR,
                             "the fixture's job failed (a protocol error, on purpose)");
        }
        else if (t->due_us && !s_terminal (t) && t->due_us < next)
            next = t->due_us;
        int64_t due = t->created_us + t->ttl_ms * 1000;
        //  A task still running is kept until it ends, whatever its TTL.
        if (due <= now && s_terminal (t))
            zlistx_add_end (expired, t->id);
        else if (due > now && due < next)
            next = due;
    }
    for (const char *id = zlistx_first (expired); id; id = zlistx_next (expired))
        zhashx_delete (tasks, id);
    zlistx_destroy (&expired);
    if (next == INT64_MAX)
        return wait_ms;
    int ms = (int)((next - now) / 1000 + 1);
    return wait_ms < 0 || ms < wait_ms ? ms : wait_ms;
}

void
cg_tasks_client_end (cg_server_t *server, cg_client_t *client)
{
    zhashx_t *tasks = cg_server_tasks (server);
    zlistx_t *gone = zlistx_new ();
    for (cg_task_t *t = zhashx_first (tasks); t; t = zhashx_next (tasks))
        if (t->client == client)
            zlistx_add_end (gone, t->id);
    for (const char *id = zlistx_first (gone); id; id = zlistx_next (gone))
        zhashx_delete (tasks, id);
    zlistx_destroy (&gone);
}

//  --------------------------------------------------------------------------
//  Registration

//  tools/call's step: a call as a task. Tasks are 2025-11-25's: an older client's "task"
//  is an unknown parameter, and 2026-07-28 has them in an extension (a legacy "task" there
//  is ignored).
static bool
s_call_step (const cg_request_t *req, json_t *params)
{
    bool wanted = req->modern ? cg_tasks_modern_wanted (req, params)
                              : json_object_get (params, "task")
                                    && strcmp (req->client->version, "2025-11-25") >= 0;
    if (wanted)
        cg_tasks_call (req, params);
    return wanted;
}

//  A task's answer goes to the task, not to a channel.
static bool
s_answer_divert (cg_answer_t *answer)
{
    if (!answer->task)
        return false;
    cg_tasks_finish (answer->task, answer->result, answer->code, answer->message);
    return true;
}

static void
s_call_start (cg_server_t *server, cg_call_t *call)
{
    (void)server;
    if (call->task)
        cg_tasks_started (call->task, call->key);
}

static void
s_call_end (cg_server_t *server, cg_call_t *call)
{
    (void)server;
    if (call->task)
        cg_tasks_call_ended (call->task, call->key);
}

//  The loop's hook (when the server has a loop): cg_tasks_tick before every wait.
static int
s_tick_cb (cg_loop_t *loop, void *arg)
{
    (void)loop;
    return cg_tasks_tick (arg, -1);
}

void
cg_tasks_register (cg_server_t *server)
{
    static const cg_hooks_t hooks = {.answer_divert = s_answer_divert,
                                     .call_start = s_call_start,
                                     .call_end = s_call_end,
                                     .client_end = cg_tasks_client_end};
    server->tasks = cg_tasks_new ();
    cg_server_add_hooks (server, &hooks);
    cg_server_add_method (server, "tasks/get", cg_tasks_get, 0);
    cg_server_add_method (server, "tasks/result", cg_tasks_result, CG_METHOD_HANDSHAKE);
    cg_server_add_method (server, "tasks/list", cg_tasks_list, CG_METHOD_HANDSHAKE);
    cg_server_add_method (server, "tasks/cancel", cg_tasks_cancel, 0);
    cg_server_add_method (server, "tasks/update", cg_tasks_update, 0);
    cg_server_add_step (server, "tools/call", s_call_step, false);
    if (cg_server_loop (server))
        cg_loop_before_wait (cg_server_loop (server), s_tick_cb, server);
}
