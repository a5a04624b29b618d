/*  cg_oplog — one structured log record per tools/call (seed 004's stage 5). */
#include "mcp/cg_oplog.h"
#include "base/cg_utf8.h"
#include "base/cg_util.h"

#include <math.h>
#include <string.h>

//  The string VALUE, or FALLBACK (may be NULL), as a new JSON value (null when neither).
static json_t *
s_string_or (const json_t *value, const char *fallback)
{
    const char *text = json_string_value (value);
    if (!text)
        text = fallback;
    return text ? json_string (text) : json_null ();
}

//  A client-given name as a JSON string, its first S_NAME_MAX bytes: "" is none (null).
#define S_NAME_MAX 128
static json_t *
s_given (const char *text)
{
    if (!text || !*text)
        return json_null ();
    size_t len = strlen (text);
    cleanup_free char *cut = cg_utf8_clean (text, len < S_NAME_MAX ? len : S_NAME_MAX, NULL);
    return json_string (cut);
}

//  A client's id as logged: "stdio", or the first 8 characters of its Mcp-Session-Id,
//  which is a credential (the admin listing and the client-gone line show as much).
static json_t *
s_client_id (const cg_client_t *client)
{
    if (!client || !client->id)
        return json_null ();
    return json_stringn (client->id, strnlen (client->id, 8));
}

json_t *
cg_oplog_fields (const cg_oplog_call_t *call, int64_t now_us, const json_t *result, int error_code,
                 const char *status)
{
    const json_t *structured = json_object_get (result, "structuredContent");
    int64_t elapsed_us = now_us > call->started_us ? now_us - call->started_us : 0;
    json_t *fields =
        json_pack ("{s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:I}", "tool", s_given (call->tool),
                   "client_name", s_given (call->client ? call->client->name : NULL),
                   "client_version", s_given (call->client ? call->client->client_version : NULL),
                   "client_id", s_client_id (call->client), "session_id",
                   s_string_or (json_object_get (structured, "session_id"), call->session_id),
                   "run_id", s_string_or (json_object_get (structured, "run_id"), call->run_id),
                   "execution_id", s_string_or (json_object_get (structured, "execution_id"), NULL),
                   "duration_ms", (json_int_t)(elapsed_us / 1000));
    const json_t *exit_code = json_object_get (structured, "exit_code");
    json_object_set_new (fields, "exit_code",
                         json_is_integer (exit_code) ? json_copy (CG_UNCONST (exit_code))
                                                     : json_null ());
    const char *given = json_string_value (json_object_get (structured, "status"));
    json_t *is_error = json_object_get (result, "isError");
    if (!status && given)
        status = given;
    else if (!status && result)
        status = json_is_true (is_error) ? "error" : "success";
    else if (!status)
        status = "error";
    json_object_set_new (fields, "status", json_string (status));
    const char *code = json_string_value (json_object_get (structured, "error_code"));
    if (!code)
        code = json_string_value (json_object_get (structured, "error"));
    if (code)
        json_object_set_new (fields, "error_code", json_string (code));
    else if (!result && error_code)
        json_object_set_new (fields, "error_code", json_integer (error_code));
    if (call->timeout_s > 0)
        json_object_set_new (fields, "timeout_ms",
                             json_integer ((json_int_t)llround (call->timeout_s * 1000)));
    return fields;
}

void
cg_oplog_record (const cg_oplog_call_t *call, const json_t *result, int error_code,
                 const char *status)
{
    json_t *fields = cg_oplog_fields (call, cg_now_us (), result, error_code, status);
    cg_log_fields (2, fields, "tool call");
    json_decref (fields);
}
