/*  cg_tools_input — a running cell's input() when its stdin is used up: the user is asked
    through the client (elicitation/create, MCP 2025-06-18 and later, form mode) and the
    line is fed to the kernel; a client that cannot be asked, a decline or a cancel is EOF,
    as without elicitation. Passwords (getpass) are said to be passwords. */
#include "cg_tasks.h"
#include "cg_tools.h"
#include "../bridge/cg_utf8.h"
#include "../bridge/cg_util.h"

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
        zstr_sendx (runner, "INPUT", line, NULL);
}

void
cg_tools_input_ask (cg_server_t *server, cg_call_t *call, cg_registry_session_t *session,
                    zmsg_t *msg)
{
    cleanup_free char *prompt = zmsg_popstr (msg);
    cleanup_free char *password = zmsg_popstr (msg);
    if (!call || call->cancelled || call->client_request || !s_runner (call, session)) {
        if (call)
            s_reply (server, call, "\x04");
        return;
    }
    bool secret = password && strcmp (password, "1") == 0;
    const char *asked = prompt && *prompt ? prompt : "";
    cleanup_free char *message =
        cg_strdupf ("The running %s code asks for %s%s%.*s%s", call->tool,
                    secret ? "a password (it goes to the code and is not shown in the result)"
                           : "a line of input",
                    *asked ? ": \"" : ".", cg_utf8_prefix (asked, 512), asked, *asked ? "\"" : "");
    static unsigned s_asked = 0;
    call->client_request = cg_strdupf ("cellgate-input-%u", ++s_asked);
    call->asking = true;
    json_t *schema = json_pack (
        "{s:s, s:{s:{s:s, s:s, s:s}}, s:[s]}", "type", "object", "properties", "input", "type",
        "string", "title", secret ? "Password" : "Input", "description",
        secret ? "A password for the running code" : "One line for the running code's input()",
        "required", "input");
    json_t *request = json_pack ("{s:s, s:s, s:s, s:{s:s, s:o}}", "jsonrpc", "2.0", "id",
                                 call->client_request, "method", "elicitation/create", "params",
                                 "message", message, "requestedSchema", schema);
    //  A task's request was answered already: the user is asked on a tasks/result stream.
    if (call->task)
        cg_tasks_ask (call->task, request);
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
