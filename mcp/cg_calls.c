/*  cg_calls — the MCP core's calls in flight: a request whose answer comes later (a run, a
    session start, a client's response), its end, its cancellation, and what ends with a
    client or a session. What a feature keeps of a call or a client it hears through the
    hooks (cg_hooks_t); how a tool's call ends, through its call ops (cg_call_ops_t). */
#include "mcp/cg_jsonrpc.h"
#include "mcp/cg_server_int.h"
#include "base/cg_util.h"

#include <string.h>

json_t *
cg_server_notification (const char *method, json_t *params)
{
    return json_pack ("{s:s, s:s, s:o}", "jsonrpc", "2.0", "method", method, "params", params);
}

void
cg_request_notify (const cg_request_t *req, const char *method, json_t *params)
{
    cg_channel_send (req->channel, cg_server_notification (method, params));
}

void
cg_server_call_free_ (void **item)
{
    cg_call_t *call = *item;
    if (!call)
        return;
    cg_channel_release (&call->channel);
    free (call->client_request);
    free (call->request_state);
    json_decref (call->progress_token);
    json_decref (call->id);
    free (call->tool);
    free (call->session_id);
    free (call->run_id);
    json_decref (call->request);
    free (call->script);
    json_decref (call->context);
    free (call);
    *item = NULL;
}

cg_call_t *
cg_server_call_new (const cg_request_t *req, const char *tool, const char *session_id)
{
    cg_server_t *self = req->server;
    cg_call_t *call = cg_xcalloc (1, sizeof *call);
    call->channel = cg_channel_keep (req->channel);
    call->progress_token = req->progress_token ? json_incref (req->progress_token) : NULL;
    call->id = json_incref (req->id);
    call->tool = cg_xstrdup (tool);
    call->session_id = session_id ? cg_xstrdup (session_id) : NULL;
    call->started_us = req->started_us;
    call->modern = req->modern;
    snprintf (call->key, sizeof call->key, "c%lu", ++self->next_key);
    if (req->task) {
        //  Its request was answered with the task: the id may be used again, so the call
        //  takes one of its own (notifications/cancelled never reaches a task's call).
        call->task = req->task;
        json_decref (call->id);
        call->id = json_sprintf ("task:%s", call->key);
    }
    call->server = self;
    zhashx_insert (self->calls, call->key, call);
    for (size_t i = 0; i < self->hook_count; i++)
        if (self->hooks[i]->call_start)
            self->hooks[i]->call_start (self, call);
    return call;
}

void
cg_server_call_cancel (cg_server_t *self, cg_call_t *call)
{
    call->cancelled = true;
    cg_server_call_interrupt (self, call);
}

void
cg_server_call_interrupt (cg_server_t *self, cg_call_t *call)
{
    if (call->ending)
        return; /* its session's runner may be running another call's cell by now */
    zactor_t *runner = call->oneshot;
    if (!runner) {
        cg_registry_session_t *session =
            cg_registry_find (self->registry, call->channel->client->id, call->session_id);
        runner = session ? session->runner : NULL;
    }
    if (runner)
        cg_runner_cancel (runner);
}

zhashx_t *
cg_server_calls (cg_server_t *self)
{
    return self->calls;
}

cg_call_t *
cg_server_call (cg_server_t *self, const char *key)
{
    return key ? zhashx_lookup (self->calls, key) : NULL;
}

cg_request_t
cg_server_call_request (cg_server_t *self, cg_call_t *call)
{
    return (cg_request_t){.server = self,
                          .id = call->id,
                          .channel = call->channel,
                          .client = call->channel->client,
                          .progress_token = call->progress_token,
                          .call_name = call->tool,
                          .started_us = call->started_us,
                          .task = call->task,
                          .method = "tools/call",
                          .modern = call->modern};
}

void
cg_server_call_end (cg_server_t *self, cg_call_t *call)
{
    cg_server_call_record (call, NULL, 0, "unanswered");
    for (size_t i = 0; i < self->hook_count; i++)
        if (self->hooks[i]->call_end) /* (a task answered has ended: nothing changes then) */
            self->hooks[i]->call_end (self, call);
    cg_registry_oneshot_end (self->registry, &call->oneshot);
    zhashx_delete (self->calls, call->key);
}

void
cg_server_session_closing (cg_server_t *self, cg_registry_session_t *session, const char *why)
{
    cg_call_t *call = cg_server_call (self, session->busy);
    const cg_call_ops_t *ops = call && call->ops ? call->ops : self->call_ops;
    if (call && ops && ops->refusal)
        cg_server_call_answer (
            call, ops->refusal (call, session->language, session->id, "session_closed", why));
    else if (call)
        cg_server_call_fail (call, CG_JSONRPC_INTERNAL_ERROR, why);
    if (call)
        cg_server_call_end (self, call);
}

void
cg_server_session_close (cg_server_t *self, cg_registry_session_t *session, const char *why)
{
    cg_server_session_closing (self, session, why);
    cg_registry_retire (self->registry, session);
}

bool
cg_server_client_busy (cg_server_t *self, cg_client_t *client)
{
    zlistx_t *mine = cg_registry_sessions (self->registry, client->id);
    bool busy = zlistx_size (mine) > 0;
    zlistx_destroy (&mine);
    for (cg_call_t *c = zhashx_first (self->calls); c && !busy; c = zhashx_next (self->calls))
        busy = c->channel->client == client;
    return busy;
}

void
cg_server_client_end (cg_server_t *self, cg_client_t *client)
{
    zlistx_t *mine = cg_registry_sessions (self->registry, client->id);
    for (cg_registry_session_t *s = zlistx_first (mine); s; s = zlistx_next (mine))
        cg_server_session_close (self, s, "The MCP session was ended.");
    zlistx_purge (mine);
    for (cg_call_t *c = zhashx_first (self->calls); c; c = zhashx_next (self->calls))
        if (c->channel->client == client)
            zlistx_add_end (mine, c);
    for (cg_call_t *c = zlistx_first (mine); c; c = zlistx_next (mine)) {
        if (c->oneshot)
            cg_runner_term (c->oneshot);
        cg_server_call_end (self, c);
    }
    zlistx_destroy (&mine);
    for (size_t i = 0; i < self->hook_count; i++)
        if (self->hooks[i]->client_end)
            self->hooks[i]->client_end (self, client);
}

//  Ends CALL, which will get no answer in time, with WHY: as its owner says (a run is
//  answered as cancelled and logged), else with a JSON-RPC error.
static void
s_abandon (cg_server_t *self, cg_call_t *call, const char *why)
{
    const cg_call_ops_t *ops = call->ops ? call->ops : self->call_ops;
    if (ops && ops->abandon) {
        ops->abandon (self, call, why);
        return;
    }
    cg_server_call_fail (call, CG_JSONRPC_INTERNAL_ERROR, why);
    cg_server_call_end (self, call);
}

bool
cg_server_drain (cg_server_t *self, int *wait_ms)
{
    //  A run interrupted answers within --interrupt-grace-ms (then its kernel restarts);
    //  this much more is left for its answer to arrive.
    enum { SETTLE_MS = 2000 };
    size_t count = zhashx_size (self->calls);
    if (count == 0)
        return false;
    int64_t now = cg_now_us ();
    if (self->drain_stage == 0) {
        int grace_s = cg_stdio_writable (self->stdio) ? self->config->eof_grace_s : 0;
        self->drain_stage = 1;
        self->drain_until_us = now + grace_s * 1000000LL;
        cg_log (2,
                "stdin has ended with %zu call(s) in flight: they may run %d s more "
                "(--eof-grace), then they are cancelled",
                count, grace_s);
    }
    if (self->drain_stage == 1
        && (now >= self->drain_until_us || !cg_stdio_writable (self->stdio))) {
        self->drain_stage = 2;
        self->drain_until_us = now + (self->config->interrupt_grace_ms + SETTLE_MS) * 1000LL;
        cg_log (1, "stdin has ended: cancelling the %zu call(s) still in flight", count);
        for (cg_call_t *c = zhashx_first (self->calls); c; c = zhashx_next (self->calls))
            cg_server_call_interrupt (self, c);
    }
    else if (self->drain_stage == 2 && now >= self->drain_until_us) {
        zlistx_t *left = zlistx_new ();
        for (cg_call_t *c = zhashx_first (self->calls); c; c = zhashx_next (self->calls))
            zlistx_add_end (left, c);
        for (cg_call_t *c = zlistx_first (left); c; c = zlistx_next (left))
            s_abandon (self, c,
                       "stdin has ended and the call did not finish within --eof-grace: it was "
                       "cancelled as the server stopped");
        zlistx_destroy (&left);
        return zhashx_size (self->calls) > 0;
    }
    int ms = (int)((self->drain_until_us - now) / 1000) + 1;
    *wait_ms = *wait_ms < 0 || ms < *wait_ms ? ms : *wait_ms;
    return true;
}

int
cg_server_calls_tick (cg_server_t *self, int wait_ms)
{
    //  2026-07-28: a client that closes a request's stream cancels it. Looked at every 2 s.
    enum { EVERY_MS = 2000 };
    int64_t now = cg_now_us ();
    bool watching = false;
    for (cg_call_t *c = zhashx_first (self->calls); c; c = zhashx_next (self->calls)) {
        if (!c->modern || c->cancelled || c->task || !c->channel->ops->ping)
            continue;
        watching = true;
        if (now >= self->next_ping_us && !c->channel->ops->ping (c->channel)) {
            cg_log (2, "a 2026-07-28 request's stream was closed: its %s call is cancelled",
                    c->tool);
            cg_server_call_cancel (self, c);
        }
    }
    if (now >= self->next_ping_us)
        self->next_ping_us = now + EVERY_MS * 1000LL;
    if (!watching)
        return wait_ms;
    int ms = (int)((self->next_ping_us - now) / 1000) + 1;
    return wait_ms < 0 || ms < wait_ms ? ms : wait_ms;
}
