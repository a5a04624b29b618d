/*  cg_dispatch — the MCP core's handling of a message: its kind, the hooks that may take a
    request first (2026-07-28's per-request era), the handshake's order (initialize before
    the rest), and the method table the features and tools register with at start, as
    redis's command table: a method's steps, then its handler. The core names no feature:
    what it cannot say itself it asks through the hooks, the call ops and the providers. */
#include "mcp/cg_jsonrpc.h"
#include "mcp/cg_server_int.h"
#include "base/cg_utf8.h"
#include "base/cg_util.h"

#include <assert.h>
#include <string.h>

//  Steps one method may have (its era's wrappings: a provider's names, input, tasks).
#define S_STEPS_MAX 8

//  One row of the method table.
typedef struct {
    const char *name;
    cg_method_fn *fn;
    unsigned flags; /* CG_METHOD_* */
    cg_method_step_fn *steps[S_STEPS_MAX];
    size_t step_count;
} s_method_t;

static void
s_method_free (void **item)
{
    free (*item);
    *item = NULL;
}

void
cg_server_core_init (cg_server_t *self, const cg_config_t *config, cg_registry_t *registry)
{
    self->config = config;
    self->registry = registry;
    self->calls = zhashx_new ();
    zhashx_set_destructor (self->calls, cg_server_call_free_);
    self->logs = zlistx_new ();
    zlistx_set_destructor (self->logs, (zlistx_destructor_fn *)zstr_free);
    self->methods = zhashx_new ();
    zhashx_set_destructor (self->methods, s_method_free);
}

void
cg_server_core_fini (cg_server_t *self)
{
    zhashx_destroy (&self->tasks);
    zlistx_destroy (&self->listeners);
    zhashx_destroy (&self->calls);
    zhashx_destroy (&self->methods);
    zlistx_destroy (&self->logs);
    free (self->instructions);
    self->instructions = NULL;
}

//  --------------------------------------------------------------------------
//  The table

void
cg_server_add_method (cg_server_t *self, const char *method, cg_method_fn *fn, unsigned flags)
{
    s_method_t *row = zhashx_lookup (self->methods, method);
    if (!row) {
        row = cg_xcalloc (1, sizeof *row);
        row->name = method;
        zhashx_insert (self->methods, method, row);
    }
    row->fn = fn;
    row->flags = flags;
}

void
cg_server_add_step (cg_server_t *self, const char *method, cg_method_step_fn *step, bool first)
{
    s_method_t *row = zhashx_lookup (self->methods, method);
    assert (row && row->step_count < S_STEPS_MAX); /* a registration mistake */
    if (first) {
        memmove (row->steps + 1, row->steps, row->step_count * sizeof row->steps[0]);
        row->steps[0] = step;
    }
    else
        row->steps[row->step_count] = step;
    row->step_count++;
}

bool
cg_server_has_method (cg_server_t *self, const char *method, unsigned *flags)
{
    s_method_t *row = method ? zhashx_lookup (self->methods, method) : NULL;
    if (flags)
        *flags = row ? row->flags : 0;
    return row != NULL;
}

void
cg_server_continue (const cg_request_t *req, json_t *params)
{
    s_method_t *row = zhashx_lookup (req->server->methods, req->method);
    cg_request_t next = *req;
    while (next.step < row->step_count) {
        cg_method_step_fn *step = row->steps[next.step++];
        if (step (&next, params))
            return;
    }
    row->fn (&next, params);
}

void
cg_server_dispatch (cg_request_t *req, json_t *params)
{
    const char *method = req->method;
    s_method_t *row = zhashx_lookup (req->server->methods, method);
    if (!row) {
        cleanup_free char *text =
            cg_strdupf ("Method not found: %.*s", cg_utf8_prefix (method, 128), method);
        cg_channel_status (req->channel, 404);
        cg_request_error (req, CG_JSONRPC_METHOD_NOT_FOUND, text);
        return;
    }
    if (row->flags & CG_METHOD_CALL) {
        json_t *token = json_object_get (json_object_get (params, "_meta"), "progressToken");
        req->progress_token = json_is_string (token) || json_is_integer (token) ? token : NULL;
        const char *name = json_string_value (json_object_get (params, "name"));
        req->call_name = name ? name : "";
    }
    req->step = 0;
    cg_server_continue (req, params);
}

//  --------------------------------------------------------------------------
//  What the features and tools register beside methods

void
cg_server_add_hooks (cg_server_t *self, const cg_hooks_t *hooks)
{
    assert (self->hook_count < CG_SERVER_HOOKS_MAX);
    self->hooks[self->hook_count++] = hooks;
}

void
cg_server_set_call_ops (cg_server_t *self, const cg_call_ops_t *ops)
{
    self->call_ops = ops;
}

void
cg_server_call_response (cg_server_t *self, cg_call_t *call, json_t *message)
{
    const cg_call_ops_t *ops = call->ops ? call->ops : self->call_ops;
    if (ops && ops->response)
        ops->response (self, call, message);
}

void
cg_server_set_tool_traits (cg_server_t *self, cg_tool_traits_fn *fn)
{
    self->tool_traits = fn;
}

unsigned
cg_server_tool_traits (cg_server_t *self, const char *name)
{
    return name && self->tool_traits ? self->tool_traits (name) : 0;
}

void
cg_server_add_provider (cg_server_t *self, const cg_provider_t *provider)
{
    assert (self->provider_count < CG_SERVER_PROVIDERS_MAX);
    self->providers[self->provider_count++] = provider;
}

const cg_provider_t *
cg_server_provider (cg_server_t *self, size_t i)
{
    return i < self->provider_count ? self->providers[i] : NULL;
}

void
cg_server_set_instructions (cg_server_t *self, const char *text)
{
    free (self->instructions);
    self->instructions = text ? cg_xstrdup (text) : NULL;
}

const char *
cg_server_instructions (cg_server_t *self)
{
    return self->instructions;
}

//  --------------------------------------------------------------------------
//  Handling

//  notifications/cancelled: a feature's request (a listener) goes; else the call's runner
//  is told to stop, and its result is not sent.
static void
s_cancelled (cg_server_t *self, cg_client_t *client, json_t *request_id)
{
    for (size_t i = 0; i < self->hook_count; i++)
        if (self->hooks[i]->cancelled && self->hooks[i]->cancelled (self, client, request_id))
            return;
    for (cg_call_t *call = zhashx_first (self->calls); request_id && call;
         call = zhashx_next (self->calls))
        if (json_equal (call->id, request_id) && !call->cancelled
            && call->channel->client == client) {
            cg_server_call_cancel (self, call);
            return;
        }
}

//  A response from the client: the answer to one of our requests, for its call's owner.
static void
s_client_response (cg_server_t *self, cg_client_t *client, json_t *message)
{
    const char *id = json_string_value (json_object_get (message, "id"));
    for (cg_call_t *call = zhashx_first (self->calls); id && call; call = zhashx_next (self->calls))
        if (call->client_request && strcmp (call->client_request, id) == 0
            && call->channel->client == client) {
            cg_server_call_response (self, call, message);
            return;
        }
}

void
cg_server_handle (cg_server_t *self, cg_channel_t *channel, json_t *message)
{
    const char *why = NULL;
    cg_jsonrpc_kind_t kind = cg_jsonrpc_classify (message, &why);
    cg_request_t req = {.server = self,
                        .id = json_object_get (message, "id"),
                        .channel = channel,
                        .client = channel->client,
                        .started_us = cg_now_us ()};
    if (kind == CG_JSONRPC_INVALID) {
        req.id = json_is_object (message) ? req.id : NULL;
        cg_request_error (&req, CG_JSONRPC_INVALID_REQUEST, why);
        return;
    }
    if (kind == CG_JSONRPC_RESPONSE) {
        s_client_response (self, req.client, message);
        return;
    }
    const char *method = json_string_value (json_object_get (message, "method"));
    json_t *params = json_object_get (message, "params");
    if (kind == CG_JSONRPC_NOTIFICATION) {
        if (strcmp (method, "notifications/cancelled") == 0)
            s_cancelled (self, req.client, json_object_get (params, "requestId"));
        return; /* notifications/initialized and unknown ones need nothing */
    }
    req.method = method;
    for (size_t i = 0; i < self->hook_count; i++)
        if (self->hooks[i]->request && self->hooks[i]->request (&req, message))
            return; /* 2026-07-28: checked, then cg_server_dispatch */
    unsigned flags = 0;
    bool known = cg_server_has_method (self, method, &flags);
    if (!req.client->initialized && !(known && flags & CG_METHOD_ANYTIME))
        cg_request_error (&req, CG_JSONRPC_INVALID_REQUEST,
                          "the session is not initialized: send 'initialize' first");
    else
        cg_server_dispatch (&req, params);
}
