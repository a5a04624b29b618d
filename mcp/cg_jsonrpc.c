/*  cg_jsonrpc — JSON-RPC 2.0 messages: classify what arrives, build what leaves. */
#include "mcp/cg_jsonrpc.h"

#include <string.h>

cg_jsonrpc_kind_t
cg_jsonrpc_classify (json_t *message, const char **why)
{
    *why = NULL;
    if (!json_is_object (message)) {
        *why = json_is_array (message) ? "batches are not supported"
                                       : "a message must be a JSON object";
        return CG_JSONRPC_INVALID;
    }
    const char *version = json_string_value (json_object_get (message, "jsonrpc"));
    if (!version || strcmp (version, "2.0") != 0) {
        *why = "'jsonrpc' must be \"2.0\"";
        return CG_JSONRPC_INVALID;
    }
    json_t *id = json_object_get (message, "id");
    if (id && !json_is_string (id) && !json_is_integer (id)) {
        *why = "'id' must be a string or an integer";
        return CG_JSONRPC_INVALID;
    }
    json_t *method = json_object_get (message, "method");
    if (method) {
        if (!json_is_string (method)) {
            *why = "'method' must be a string";
            return CG_JSONRPC_INVALID;
        }
        json_t *params = json_object_get (message, "params");
        if (params && !json_is_object (params)) {
            *why = "'params' must be an object";
            return CG_JSONRPC_INVALID;
        }
        return id ? CG_JSONRPC_REQUEST : CG_JSONRPC_NOTIFICATION;
    }
    if (id && (json_object_get (message, "result") || json_object_get (message, "error")))
        return CG_JSONRPC_RESPONSE;
    *why = "a message needs 'method', or 'result'/'error' with an 'id'";
    return CG_JSONRPC_INVALID;
}

json_t *
cg_jsonrpc_result (json_t *id, json_t *result)
{
    return json_pack ("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id", id, "result", result);
}

json_t *
cg_jsonrpc_error (json_t *id, int code, const char *message)
{
    return json_pack ("{s:s, s:O, s:{s:i, s:s}}", "jsonrpc", "2.0", "id", id ? id : json_null (),
                      "error", "code", code, "message", message);
}
