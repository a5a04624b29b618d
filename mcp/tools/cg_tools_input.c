/*  cg_tools_input — a running cell's input() when its stdin is used up: the user is asked
    through the client (elicitation/create, MCP 2025-06-18 and later, form mode) and the
    line is fed to the kernel; a client that cannot be asked, a decline or a cancel is EOF,
    as without elicitation. Passwords (getpass) are said to be passwords. */
#include "mcp/cg_jsonrpc.h"
#include "mcp/cg_modern.h"
#include "mcp/cg_tasks.h"
#include "mcp/tools/cg_tools.h"
#include "base/cg_utf8.h"
#include "base/cg_util.h"

#include <string.h>

//  The runner that runs CALL: its one-shot runner, or SESSION's.
static zactor_t *
s_runner (cg_call_t *call, cg_registry_session_t *session)
{
    return call->oneshot ? call->oneshot : session ? session->runner : NULL;
}

//  Sends LINE ("\x04": EOF) to the cell CALL runs.
static void
s_reply (cg_server_t *server, cg_call_t *call, const char *line)
{
    cg_registry_session_t *session =
        call->session_id ? cg_registry_find (cg_server_registry (server), call->channel->client->id,
                                             call->session_id)
                         : NULL;
    zactor_t *runner = s_runner (call, session);
    if (runner)
        cg_runner_input (runner, line);
}

//  The one string field the user is asked for (a password when SECRET).
static json_t *
s_schema (bool secret)
{
    return json_pack (
        "{s:s, s:{s:{s:s, s:s, s:s}}, s:[s]}", "type", "object", "properties", "input", "type",
        "string", "title", secret ? "Password" : "Input", "description",
        secret ? "A password for the running code" : "One line for the running code's input()",
        "required", "input");
}

//  Answers CALL's (2026-07-28) request with input_required: REQUEST's elicitation (taken)
//  under its id, and a new requestState that names CALL.
static void
s_input_required (cg_call_t *call, json_t *request)
{
    char state[33];
    cg_random_hex (state, 16);
    free (call->request_state);
    call->request_state = cg_xstrdup (state);
    json_t *params = json_object_get (request, "params");
    json_object_set_new (params, "mode", json_string ("form"));
    json_t *result =
        json_pack ("{s:s, s:{s:{s:s, s:O}}, s:s}", "resultType", "input_required", "inputRequests",
                   json_string_value (json_object_get (request, "id")), "method",
                   "elicitation/create", "params", params, "requestState", state);
    json_decref (request);
    cg_modern_result (result, "tools/call");
    cg_channel_send (call->channel, cg_jsonrpc_result (call->id, result));
}

bool
cg_tools_input_resume (const cg_request_t *req, json_t *params)
{
    const char *state = json_string_value (json_object_get (params, "requestState"));
    json_t *responses = json_object_get (params, "inputResponses");
    if (!json_object_get (params, "requestState"))
        return false;
    zhashx_t *calls = cg_server_calls (req->server);
    cg_call_t *call = NULL;
    for (cg_call_t *c = zhashx_first (calls); state && c && !call; c = zhashx_next (calls))
        if (c->request_state && strcmp (c->request_state, state) == 0
            && c->channel->client == req->client && c->asking)
            call = c;
    if (!call || (responses && !json_is_object (responses))) {
        cg_request_error (req, CG_JSONRPC_INVALID_PARAMS,
                          call ? "inputResponses must be an object"
                               : "requestState names no call waiting for input (it was "
                                 "answered, or its cell ended)");
        return true;
    }
    //  The call now answers this request.
    cg_channel_release (&call->channel);
    call->channel = cg_channel_keep (req->channel);
    json_decref (call->id);
    call->id = json_incref (req->id);
    zstr_free (&call->request_state);
    json_t *answer = json_object_get (responses, call->client_request);
    if (!json_is_object (answer)) {
        //  Not answered: asked again, on this request.
        cleanup_free char *key = cg_xstrdup (call->client_request);
        json_t *request =
            json_pack ("{s:s, s:s, s:{s:s, s:o}}", "id", key, "method", "elicitation/create",
                       "params", "message", "The running code still waits for a line of input.",
                       "requestedSchema", s_schema (false));
        s_input_required (call, request);
        return true;
    }
    json_t *message = json_pack ("{s:O}", "result", answer);
    cg_tools_input_answer (req->server, call, message);
    json_decref (message);
    return true;
}

void
cg_tools_input_ask (cg_server_t *server, cg_call_t *call, cg_registry_session_t *session,
                    const cg_runner_event_t *event)
{
    const char *prompt = event->input.prompt;
    if (!call || call->cancelled || call->client_request || !s_runner (call, session)) {
        if (call)
            s_reply (server, call, "\x04");
        return;
    }
    bool secret = event->input.password;
    const char *asked = prompt && *prompt ? prompt : "";
    cleanup_free char *message =
        cg_strdupf ("The running %s code asks for %s%s%.*s%s", call->tool,
                    secret ? "a password (it goes to the code and is not shown in the result)"
                           : "a line of input",
                    *asked ? ": \"" : ".", cg_utf8_prefix (asked, 512), asked, *asked ? "\"" : "");
    static unsigned s_asked = 0;
    call->client_request = cg_strdupf ("cellgate-input-%u", ++s_asked);
    call->asking = true;
    json_t *schema = s_schema (secret);
    json_t *request = json_pack ("{s:s, s:s, s:s, s:{s:s, s:o}}", "jsonrpc", "2.0", "id",
                                 call->client_request, "method", "elicitation/create", "params",
                                 "message", message, "requestedSchema", schema);
    //  A task's request was answered already: the user is asked on a tasks/result stream.
    //  2026-07-28: the call's request is answered input_required; the client retries it
    //  with the answer and the requestState (cg_tools_input_resume).
    if (call->task)
        cg_tasks_ask (call->task, request);
    else if (call->modern)
        s_input_required (call, request);
    else
        cg_channel_send (call->channel, request);
}

void
cg_tools_input_answer (cg_server_t *server, cg_call_t *call, json_t *message)
{
    json_t *result = json_object_get (message, "result");
    const char *action = json_string_value (json_object_get (result, "action"));
    const char *line =
        json_string_value (json_object_get (json_object_get (result, "content"), "input"));
    free (call->client_request);
    call->client_request = NULL;
    call->asking = false;
    //  One line: what follows a newline would be the next input() call's, which asks anew.
    cleanup_free char *first = NULL;
    if (action && strcmp (action, "accept") == 0 && line) {
        const char *newline = strchr (line, '\n');
        first = newline ? cg_strdupf ("%.*s", (int)(newline - line), line) : cg_xstrdup (line);
    }
    s_reply (server, call, first ? first : "\x04");
    if (call->task)
        cg_tasks_answered (call->task);
}
