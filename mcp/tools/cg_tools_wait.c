/*  cg_tools_wait — runs that wait for their session's cancelled run to stop. */
#include "mcp/tools/cg_tools_wait.h"
#include "mcp/tools/cg_tools.h"
#include "base/cg_util.h"

#include <string.h>

//  The context key of a waiting call: the request it runs once the session is free.
#define S_REQUEST "wait_request"
#define S_DEADLINE "wait_deadline_us"

//  Returns CALL's waiting request, or NULL when CALL is not waiting.
static json_t *
s_waiting (const cg_call_t *call)
{
    return json_object_get (call->context, S_REQUEST);
}

//  The session CALL runs in, or NULL.
static cg_registry_session_t *
s_session (cg_server_t *server, const cg_call_t *call)
{
    return cg_registry_find (cg_server_registry (server), call->channel->client->id,
                             call->session_id);
}

bool
cg_tools_wait_defer (const cg_request_t *req, json_t **request_p)
{
    const char *session_id = json_string_value (json_object_get (*request_p, "session_id"));
    cg_registry_session_t *session =
        cg_registry_find (cg_server_registry (req->server), req->client->id, session_id);
    cg_call_t *running = session ? cg_server_call (req->server, session->busy) : NULL;
    if (!running || !running->cancelled)
        return false;
    zhashx_t *calls = cg_server_calls (req->server);
    for (cg_call_t *c = zhashx_first (calls); c; c = zhashx_next (calls))
        if (s_waiting (c) && s_session (req->server, c) == session)
            return false; /* one waits already: this one is refused as busy */
    cg_call_t *call = cg_server_call_new (req, req->tool->name, session_id);
    call->context = json_pack ("{s:o, s:I}", S_REQUEST, *request_p, S_DEADLINE,
                               (json_int_t)(cg_now_us () + CG_TOOLS_WAIT_MAX_MS * 1000LL));
    *request_p = NULL;
    return true;
}

//  Runs CALL's request now (refused session_busy when the session is still busy) unless
//  CALL was cancelled, and forgets CALL.
static void
s_resume (cg_server_t *server, cg_call_t *call)
{
    const cg_tool_t *tool = cg_tools_find (call->tool);
    if (!call->cancelled && tool) {
        cg_request_t req = {.server = server,
                            .id = call->id,
                            .channel = call->channel,
                            .client = call->channel->client,
                            .progress_token = call->progress_token,
                            .tool = tool,
                            .method = "tools/call",
                            .modern = call->modern,
                            .task = call->task};
        json_t *request = json_incref (s_waiting (call));
        cg_tools_begin (server, cg_tools_run_request (&req, &request));
    }
    cg_server_call_end (server, call);
}

int
cg_tools_wait_tick (cg_server_t *server, int wait_ms)
{
    zhashx_t *calls = cg_server_calls (server);
    zlistx_t *due = zlistx_new ();
    int64_t now = cg_now_us ();
    for (cg_call_t *c = zhashx_first (calls); c; c = zhashx_next (calls)) {
        if (!s_waiting (c))
            continue;
        cg_registry_session_t *session = s_session (server, c);
        int64_t deadline = json_integer_value (json_object_get (c->context, S_DEADLINE));
        if (c->cancelled || !session || !session->busy || now >= deadline)
            zlistx_add_end (due, c);
        else if (wait_ms < 0 || (deadline - now) / 1000 + 1 < wait_ms)
            wait_ms = (int)((deadline - now) / 1000 + 1);
    }
    for (cg_call_t *c = zlistx_first (due); c; c = zlistx_next (due))
        s_resume (server, c);
    zlistx_destroy (&due);
    return wait_ms;
}

static int
s_tick_cb (cg_loop_t *loop, void *arg)
{
    (void)loop;
    return cg_tools_wait_tick (arg, -1);
}

void
cg_tools_wait_on_loop (cg_server_t *server)
{
    cg_loop_before_wait (cg_server_loop (server), s_tick_cb, server);
}
