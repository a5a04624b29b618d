/*  cg_conformance_register — the conformance fixtures as a provider the process registers
    under --tool-profile conformance (never by default): their tools beside the tool
    table's, their resources beside the workspaces', the prompts and completion methods,
    and their requests to the client answered through their calls' ops. */
#include "mcp/conformance/cg_conformance.h"
#include "mcp/cg_jsonrpc.h"

#include <string.h>

//  tools/call of a fixture (before any wrapping: a fixture is never a task nor a retry).
static bool
s_call (const cg_request_t *req, json_t *params)
{
    const char *name = json_string_value (json_object_get (params, "name"));
    if (name && cg_conformance_mrtr_known (name))
        cg_conformance_mrtr (req, name, params);
    else if (name && cg_conformance_known (name))
        cg_conformance_handle (req, name, json_object_get (params, "arguments"));
    else
        return false;
    return true;
}

//  prompts/list, prompts/get and completion/complete: the suite's fixtures.
static void
s_prompts_list (const cg_request_t *req, json_t *params)
{
    (void)params;
    json_t *prompts = cg_conformance_prompts ();
    json_array_append_new (prompts,
                           json_pack ("{s:s, s:s}", "name", "test_input_required_result_prompt",
                                      "description", "Conformance fixture: asks for its context."));
    cg_request_result (req, json_pack ("{s:o}", "prompts", prompts));
}

static void
s_prompts_get (const cg_request_t *req, json_t *params)
{
    const char *name = json_string_value (json_object_get (params, "name"));
    if (cg_conformance_mrtr_prompt (req, name, params))
        return;
    json_t *result =
        name ? cg_conformance_prompt (name, json_object_get (params, "arguments")) : NULL;
    if (result)
        cg_request_result (req, result);
    else
        cg_request_error (req, CG_JSONRPC_INVALID_PARAMS, "prompts/get: unknown prompt");
}

static void
s_complete (const cg_request_t *req, json_t *params)
{
    cg_request_result (req, cg_conformance_complete (params));
}

//  The client answered a fixture's request (sampling, elicitation): the call ends with it.
static void
s_response (cg_server_t *server, cg_call_t *call, json_t *message)
{
    cg_server_call_answer (call, cg_conformance_finish (call->tool, message));
    cg_server_call_end (server, call);
}

const cg_call_ops_t cg_conformance_call_ops = {.response = s_response};

void
cg_conformance_register (cg_server_t *server)
{
    static const cg_provider_t provider = {.tools = cg_conformance_tools,
                                           .call = s_call,
                                           .resources = cg_conformance_resources,
                                           .templates = cg_conformance_resource_templates,
                                           .read = cg_conformance_read};
    cg_server_add_provider (server, &provider);
    cg_server_add_method (server, "prompts/list", s_prompts_list, 0);
    cg_server_add_method (server, "prompts/get", s_prompts_get, 0);
    cg_server_add_method (server, "completion/complete", s_complete, 0);
}
