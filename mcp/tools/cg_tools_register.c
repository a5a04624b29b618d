/*  cg_tools_register — the tools' place in the MCP core: tools/list and tools/call in the
    method table, tools/call's steps (another provider's names first, then 2026-07-28's
    retry after input_required), how a tool's call ends and takes its runner's events
    (cg_call_ops_t), which tools may run as tasks, the instructions that describe them, and
    the wait queue's hook on the loop. */
#include "mcp/tools/cg_tools.h"
#include "mcp/tools/cg_tools_wait.h"
#include "mcp/cg_jsonrpc.h"
#include "base/cg_util.h"

#include <string.h>

//  tools/list: the table's tools, then the providers'.
static void
s_list (const cg_request_t *req, json_t *params)
{
    (void)params;
    json_t *tools = cg_tools_list (cg_server_config (req->server));
    //  The tools that run code or fetch packages say what the network is.
    cleanup_free char *note = cg_tools_network_note (cg_server_registry (req->server));
    size_t i;
    json_t *tool;
    json_array_foreach (tools, i, tool)
    {
        const char *name = json_string_value (json_object_get (tool, "name"));
        bool install = strcmp (name, "install_package") == 0;
        if (strcmp (name, "execute_code") == 0 || install) {
            const char *text = json_string_value (json_object_get (tool, "description"));
            //  install_package itself needs not be pointed to.
            bool off = !cg_registry_egress (cg_server_registry (req->server));
            json_object_set_new (
                tool, "description",
                json_sprintf ("%s %s", text,
                              install && off ? "The sandbox has no network: local mirrors only."
                                             : note));
        }
    }
    const cg_provider_t *p;
    for (i = 0; (p = cg_server_provider (req->server, i)); i++) {
        json_t *more = p->tools ? p->tools () : NULL;
        json_array_extend (tools, more);
        json_decref (more);
    }
    cg_request_result (req, json_pack ("{s:o}", "tools", tools));
}

//  tools/call's first step: a tool of another provider is its own (not wrapped as a task
//  nor resumed as ours).
static bool
s_provided (const cg_request_t *req, json_t *params)
{
    const cg_provider_t *p;
    for (size_t i = 0; (p = cg_server_provider (req->server, i)); i++)
        if (p->call && p->call (req, params))
            return true;
    return false;
}

//  2026-07-28: the retry of an input_required answer.
static bool
s_resume (const cg_request_t *req, json_t *params)
{
    return req->modern && cg_tools_input_resume (req, params);
}

static json_t *
s_refusal (cg_call_t *call, const char *language, const char *session_id, const char *error,
           const char *message)
{
    return cg_tools_refusal (call->tool, language, session_id, error, message);
}

static void
s_response (cg_server_t *server, cg_call_t *call, json_t *message)
{
    if (call->asking)
        cg_tools_input_answer (server, call, message);
}

//  A runner's event for one of the tools' calls.
static void
s_runner_event (cg_server_t *server, cg_call_t *call, cg_registry_session_t *session,
                cg_runner_event_t *event)
{
    if (event->tag == CG_RUNNER_PROGRESS)
        cg_tools_progress (call, event);
    else if (event->tag == CG_RUNNER_RESULT) {
        //  The registry ends every run begun (cg_tools_begin); one it could not take has
        //  no record to end with: the call says so.
        cg_server_call_fail (call, CG_JSONRPC_INTERNAL_ERROR,
                             "the run was not tracked by the registry; its result is lost");
        cg_server_call_end (server, call);
    }
    else if (event->tag == CG_RUNNER_STARTED)
        cg_tools_started (server, call, session, event);
    else if (event->tag == CG_RUNNER_INPUT)
        cg_tools_input_ask (server, call, session, event);
}

//  A call that ends before its run did (answered by someone else, its client gone): the
//  registry forgets the run, whose RESULT, if it comes, finds neither.
static void
s_call_end (cg_server_t *server, cg_call_t *call)
{
    cg_registry_run_drop (cg_server_registry (server), call->key);
}

static unsigned
s_traits (const char *name)
{
    return cg_tools_is (name, CG_TOOL_RUNS) ? CG_TOOL_TRAIT_TASKS : 0;
}

void
cg_tools_register (cg_server_t *server)
{
    static const cg_call_ops_t ops = {.refusal = s_refusal,
                                      .abandon = cg_tools_abandon,
                                      .response = s_response,
                                      .runner_event = s_runner_event};
    cg_server_add_method (server, "tools/list", s_list, 0);
    cg_server_add_method (server, "tools/call", cg_tools_call, CG_METHOD_CALL);
    cg_server_add_step (server, "tools/call", s_provided, false);
    cg_server_add_step (server, "tools/call", s_resume, false);
    static const cg_hooks_t hooks = {.call_end = s_call_end};
    cg_server_set_call_ops (server, &ops);
    cg_server_add_hooks (server, &hooks);
    cg_server_set_tool_traits (server, s_traits);
    cleanup_free char *note = cg_tools_network_note (cg_server_registry (server));
    cleanup_free char *instructions = cg_strdupf (
        CG_TOOLS_INSTRUCTIONS " %s", cg_tools_language_list (), cg_tools_sandbox_note (), note);
    cg_server_set_instructions (server, instructions);
    if (cg_server_loop (server)) /* the calls waiting for their session, before every wait */
        cg_tools_wait_on_loop (server);
}
