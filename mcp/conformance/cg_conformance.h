/*  cg_conformance — the fixture tools the official MCP conformance suite calls by name
    (test_simple_text, test_image_content, ...), its resources, prompts and completions:
    a provider the process registers only under --tool-profile conformance, never by
    default; no production file names them. */
#ifndef CG_CONFORMANCE_H
#define CG_CONFORMANCE_H

#include "mcp/cg_server.h"

#include <jansson.h>
#include <stdbool.h>

/*  Returns the fixture tools (a new array of tool definitions). */
json_t *cg_conformance_tools (void);

/*  Returns true when NAME is a fixture tool. */
bool cg_conformance_known (const char *name);

/*  Runs fixture NAME with ARGUMENTS (borrowed, may be NULL). Returns a new tools/call
    result, or NULL when the tool needs an answer from the client first: then
    *client_request is set to the request to send ({"method", "params"}, new). *notes
    is set to a new array of notification messages ({"method", "params"}) to send before
    the result; PROGRESS_TOKEN (may be NULL) is the call's _meta.progressToken. */
json_t *cg_conformance_call (const char *name, json_t *arguments, json_t *progress_token,
                             json_t **notes, json_t **client_request);

/*  Finishes fixture NAME once the client answered its request with RESPONSE (the
    JSON-RPC response message, borrowed). Returns a new tools/call result. */
json_t *cg_conformance_finish (const char *name, json_t *response);

/*  tools/call of fixture NAME for REQ: its notes, then its result, or a request to the
    client whose response finishes the call (cg_conformance_finish). */
void cg_conformance_handle (const cg_request_t *req, const char *name, json_t *arguments);

/*  The suite's fixture resources, served beside the workspaces' under the conformance
    profile: resources/list's entries (a new array), resources/templates/list's (a new
    array), and the contents array of resources/read of URI (new), or NULL when URI is none
    of them. */
json_t *cg_conformance_resources (void);
json_t *cg_conformance_resource_templates (void);
json_t *cg_conformance_read (const char *uri);

/*  The suite's fixture prompts (prompts/list's entries, a new array), prompts/get of NAME
    with ARGUMENTS (borrowed; a new result, or NULL for an unknown name), and
    completion/complete's result for PARAMS (borrowed; new). Conformance profile only. */
json_t *cg_conformance_prompts (void);
json_t *cg_conformance_prompt (const char *name, json_t *arguments);
json_t *cg_conformance_complete (json_t *params);

/*  The 2026-07-28 fixtures (cg_conformance_mrtr.c): known by NAME; appended to TOOLS;
    served for REQ with its whole PARAMS (inputResponses, requestState, _meta); and the
    prompt test_input_required_result_prompt (false for another NAME). */
bool cg_conformance_mrtr_known (const char *name);
void cg_conformance_mrtr_tools (json_t *tools);
void cg_conformance_mrtr (const cg_request_t *req, const char *name, json_t *params);
bool cg_conformance_mrtr_prompt (const cg_request_t *req, const char *name, json_t *params);

/*  Registers the fixtures with SERVER: a provider (tools, tools/call, resources), and the
    prompts/list, prompts/get and completion/complete methods. */
void cg_conformance_register (cg_server_t *server);

/*  How a fixture's call ends: the client's response to its request finishes it. */
extern const cg_call_ops_t cg_conformance_call_ops;

#endif
