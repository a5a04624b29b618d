/*  cg_tools — the MCP tool registry: names, descriptions, input and output schemas, the
    validation of arguments, and the mapping of results onto MCP content. */
#ifndef CG_TOOLS_H
#define CG_TOOLS_H

#include "../bridge/cg_config.h"

#include <jansson.h>
#include <stdbool.h>

#define CG_MAX_CODE_BYTES (100 * 1024)
#define CG_MAX_STDIN_BYTES (1024 * 1024)

/*  Returns the tools/list "tools" array. Caller owns the result. */
json_t *cg_tools_list (const cg_config_t *config);

/*  Returns true when NAME is a tool this server serves. */
bool cg_tools_known (const char *name);

/*  Validates execute_code ARGUMENTS (borrowed, may be NULL). On success returns a new
    request object (language canonical, code, stdin, timeout in seconds, session_id,
    execution_id) and sets *error_result to NULL. On bad input returns NULL and sets
    *error_result to a complete tools/call result (isError, status setup_error,
    error_code INVALID_PARAMS or UNSUPPORTED_LANGUAGE) the caller owns. */
json_t *cg_tools_execute_request (const cg_config_t *config, json_t *arguments,
                                  json_t **error_result);

/*  Turns a structured execution result (stolen) into a tools/call result: text and
    image content blocks, structuredContent, isError. Caller owns the result. */
json_t *cg_tools_call_result (json_t *structured);

#endif
