/*  cg_tools — the MCP tool registry: names, descriptions, input and output schemas, the
    validation of arguments, and the results of the tools that do not run code (a run's
    result is cg_run_result's). */
#ifndef CG_TOOLS_H
#define CG_TOOLS_H

#include "../bridge/cg_config.h"
#include "../bridge/cg_limits.h"

#include <jansson.h>
#include <stdbool.h>

#define CG_MAX_STDIN_BYTES (1024 * 1024)

/*  Seed 001's tool (the seed001 tool profile) and its default timeout. */
#define CG_SEED001_TOOL "code_execution_sandbox.execute_code"
#define CG_SEED001_TIMEOUT_MS 5000

/*  Returns the tools/list "tools" array. Caller owns the result. */
json_t *cg_tools_list (const cg_config_t *config);

/*  Returns true when NAME is a tool this server serves. */
bool cg_tools_known (const char *name);

/*  Validates the ARGUMENTS (borrowed, may be NULL) of TOOL, one of the running tools
    (execute_code, run_python, send_to_session). On success returns a new request object
    (language canonical, code, stdin, timeout in seconds, session_id, execution_id,
    tool) and sets *error_result to NULL. On bad input returns NULL and sets
    *error_result to a complete tools/call result (isError, status setup_error,
    error_code INVALID_PARAMS or UNSUPPORTED_LANGUAGE) the caller owns. */
json_t *cg_tools_execute_request (const cg_config_t *config, const char *tool, json_t *arguments,
                                  json_t **error_result);

/*  Returns the canonical name of language NAME or an alias, or NULL if unsupported. */
const char *cg_tools_canonical_language (const char *name);

/*  Returns the supported languages with their aliases, for messages (static string). */
const char *cg_tools_supported_languages (void);

/*  What a well-formed session id is, for error messages. */
#define CG_SESSION_ID_RULE \
    "'session_id' must be 1 to " CG_STR (CG_SESSION_ID_MAX) " characters: letters, digits, '_', '.', '-', starting with a letter or digit"

/*  Returns true when ID is a well-formed session id. */
bool cg_tools_valid_session_id (const char *id);

/*  Returns a tools/call result of STRUCTURED (stolen) with one text block TEXT. Caller
    owns the result. */
json_t *cg_tools_object_result (json_t *structured, const char *text, bool is_error);

/*  Returns a tools/call result for an error object {error, message} (seed 002/004
    style) plus the given session_id (may be NULL). Caller owns the result. */
json_t *cg_tools_error_object (const char *error, const char *message, const char *session_id);

#endif
