/*  cg_jsonrpc — JSON-RPC 2.0 messages: classify what arrives, build what leaves. */
#ifndef CG_JSONRPC_H
#define CG_JSONRPC_H

#include <jansson.h>

#define CG_JSONRPC_PARSE_ERROR -32700
#define CG_JSONRPC_INVALID_REQUEST -32600
#define CG_JSONRPC_METHOD_NOT_FOUND -32601
#define CG_JSONRPC_INVALID_PARAMS -32602
#define CG_JSONRPC_INTERNAL_ERROR -32603

typedef enum {
    CG_JSONRPC_REQUEST,      /* method + id */
    CG_JSONRPC_NOTIFICATION, /* method, no id */
    CG_JSONRPC_RESPONSE,     /* result or error + id (from the client) */
    CG_JSONRPC_INVALID,      /* anything else */
} cg_jsonrpc_kind_t;

/*  Classifies MESSAGE (borrowed). For CG_JSONRPC_INVALID, *why says what is wrong. */
cg_jsonrpc_kind_t cg_jsonrpc_classify (json_t *message, const char **why);

/*  Returns a new response {jsonrpc, id, result}; RESULT is stolen, ID borrowed. */
json_t *cg_jsonrpc_result (json_t *id, json_t *result);

/*  Returns a new error response; ID borrowed (NULL means null). */
json_t *cg_jsonrpc_error (json_t *id, int code, const char *message);

/*  2026-07-28's error codes. */
#define CG_JSONRPC_RESOURCE_NOT_FOUND -32002 /* 2025's resources/read */
#define CG_JSONRPC_HEADER_MISMATCH -32020
#define CG_JSONRPC_MISSING_CAPABILITY -32021
#define CG_JSONRPC_UNSUPPORTED_VERSION -32022

/*  A message past this is parsed on its transport's parser thread (a stdio line, the lines
    after it waiting their turn; an HTTP POST's body), not on the loop: jansson reads some
    100 MB/s, so an upload's 11 MB would hold the loop for 100 ms or more. */
#define CG_JSONRPC_PARSE_ON_LOOP_MAX (64 * 1024)

#endif
