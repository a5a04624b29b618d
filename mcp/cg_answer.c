/*  cg_answer — where the answer of every tools/call goes out, now (cg_request_result,
    cg_request_error) or later (cg_server_call_answer, cg_server_call_fail), and so where
    each gets its operations-log record (cg_oplog, seed 004's stage 5). */
#include "mcp/cg_jsonrpc.h"
#include "mcp/cg_oplog.h"
#include "mcp/cg_modern.h"
#include "mcp/cg_server.h"
#include "mcp/cg_tasks.h"

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
    s_request_record (req, result, 0);
    if (req->modern)
        cg_modern_result (result, req->method);
    if (req->task)
        cg_tasks_finish (req->task, result, 0, NULL);
    else
        cg_channel_send (req->channel, cg_jsonrpc_result (req->id, result));
}

void
cg_request_error (const cg_request_t *req, int code, const char *message)
{
    //  2026-07-28: a resource not found is invalid params (-32002 is 2025's).
    if (req->modern && code == CG_JSONRPC_RESOURCE_NOT_FOUND)
        code = CG_JSONRPC_INVALID_PARAMS;
    s_request_record (req, NULL, code);
    if (req->task)
        cg_tasks_finish (req->task, NULL, code, message);
    else
        cg_channel_send (req->channel, cg_jsonrpc_error (req->id, code, message));
}

void
cg_request_error_data (const cg_request_t *req, int code, const char *message, json_t *data)
{
    if (req->modern && code == CG_JSONRPC_RESOURCE_NOT_FOUND)
        code = CG_JSONRPC_INVALID_PARAMS;
    s_request_record (req, NULL, code);
    if (req->task) {
        json_decref (data);
        cg_tasks_finish (req->task, NULL, code, message);
        return;
    }
    json_t *error = cg_jsonrpc_error (req->id, code, message);
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

void
cg_server_call_answer (cg_call_t *call, json_t *result)
{
    cg_server_call_record (call, result, 0, NULL);
    if (call->modern)
        cg_modern_result (result, "tools/call");
    if (call->task)
        cg_tasks_finish (call->task, result, 0, NULL);
    else if (call->cancelled)
        json_decref (result); /* the spec: no response to a cancelled request */
    else
        cg_channel_send (call->channel, cg_jsonrpc_result (call->id, result));
}

void
cg_server_call_fail (cg_call_t *call, int code, const char *message)
{
    cg_server_call_record (call, NULL, code, NULL);
    if (call->task)
        cg_tasks_finish (call->task, NULL, code, message);
    else if (!call->cancelled)
        cg_channel_send (call->channel, cg_jsonrpc_error (call->id, code, message));
}
