/*  cg_answer — where the answer of every tools/call goes out, now (cg_request_result,
    cg_request_error) or later (cg_server_call_answer, cg_server_call_fail), and so where
    each gets its operations-log record (cg_oplog, seed 004's stage 5). */
#include "mcp/cg_jsonrpc.h"
#include "mcp/cg_oplog.h"
#include "mcp/cg_server_int.h"

//  Lets the hooks shape ANSWER (2026-07-28's marks, its codes).
static void
s_shape (cg_answer_t *answer)
{
    cg_server_t *server = answer->server;
    for (size_t i = 0; i < server->hook_count; i++)
        if (server->hooks[i]->answer_shape)
            server->hooks[i]->answer_shape (answer);
}

//  Returns true when a hook took ANSWER (a task keeps it), its result stolen.
static bool
s_divert (cg_answer_t *answer)
{
    cg_server_t *server = answer->server;
    for (size_t i = 0; i < server->hook_count; i++)
        if (server->hooks[i]->answer_divert && server->hooks[i]->answer_divert (answer))
            return true;
    return false;
}

//  The answer of REQ: RESULT (stolen), or the error CODE with MESSAGE.
static cg_answer_t
s_answer_of (const cg_request_t *req, json_t *result, int code, const char *message)
{
    return (cg_answer_t){.server = req->server,
                         .method = req->method,
                         .modern = req->modern,
                         .task = req->task,
                         .result = result,
                         .code = code,
                         .message = message};
}

//  Logs the record of REQ, a tools/call answered now with RESULT (borrowed), or with the
//  JSON-RPC error CODE when RESULT is NULL. Other methods get none.
static void
s_request_record (const cg_request_t *req, const json_t *result, int code)
{
    if (!req->call_name)
        return;
    cg_oplog_call_t record = {
        .client = req->client, .tool = req->call_name, .started_us = req->started_us};
    cg_oplog_record (&record, result, code, NULL);
}

void
cg_request_result (const cg_request_t *req, json_t *result)
{
    cg_answer_t answer = s_answer_of (req, result, 0, NULL);
    s_shape (&answer);
    s_request_record (req, answer.result, 0);
    if (!s_divert (&answer))
        cg_channel_send (req->channel, cg_jsonrpc_result (req->id, answer.result));
}

void
cg_request_error (const cg_request_t *req, int code, const char *message)
{
    cg_request_error_data (req, code, message, NULL);
}

void
cg_request_error_data (const cg_request_t *req, int code, const char *message, json_t *data)
{
    cg_answer_t answer = s_answer_of (req, NULL, code, message);
    s_shape (&answer);
    s_request_record (req, NULL, answer.code);
    if (s_divert (&answer)) {
        json_decref (data);
        return;
    }
    json_t *error = cg_jsonrpc_error (req->id, answer.code, message);
    if (data)
        json_object_set_new (json_object_get (error, "error"), "data", data);
    cg_channel_send (req->channel, error);
}

void
cg_server_call_record (cg_call_t *call, const json_t *result, int error_code, const char *status)
{
    if (call->recorded)
        return;
    call->recorded = true;
    cg_oplog_call_t record = {.client = call->channel->client,
                              .tool = call->tool,
                              .session_id = call->session_id,
                              .run_id = call->run_id,
                              .started_us = call->started_us,
                              .timeout_s = call->timeout_s};
    cg_oplog_record (&record, result, error_code, call->cancelled ? "cancelled" : status);
}

//  The answer of CALL (a tools/call): RESULT (stolen), or the error CODE with MESSAGE.
static cg_answer_t
s_call_answer (cg_call_t *call, json_t *result, int code, const char *message)
{
    return (cg_answer_t){.server = call->server,
                         .method = "tools/call",
                         .modern = call->modern,
                         .task = call->task,
                         .result = result,
                         .code = code,
                         .message = message};
}

void
cg_server_call_answer (cg_call_t *call, json_t *result)
{
    cg_answer_t answer = s_call_answer (call, result, 0, NULL);
    s_shape (&answer);
    cg_server_call_record (call, answer.result, 0, NULL);
    if (s_divert (&answer))
        ;
    else if (call->cancelled)
        json_decref (answer.result); /* the spec: no response to a cancelled request */
    else
        cg_channel_send (call->channel, cg_jsonrpc_result (call->id, answer.result));
}

void
cg_server_call_fail (cg_call_t *call, int code, const char *message)
{
    cg_answer_t answer = s_call_answer (call, NULL, code, message);
    s_shape (&answer);
    cg_server_call_record (call, NULL, answer.code, NULL);
    if (!s_divert (&answer) && !call->cancelled)
        cg_channel_send (call->channel, cg_jsonrpc_error (call->id, answer.code, message));
}
