/*  cg_frontend — the two front ends' rows of the contract, over their own functions. */
#include "server/cg_frontend.h"
#include "gateway/cg_gateway.h"
#include "mcp/cg_mcp.h"

static bool
s_mcp_owns_key (void *self, const char *key)
{
    return cg_mcp_owns_key (self, key);
}

static void
s_mcp_runner_event (void *self, cg_runner_event_t *event)
{
    cg_mcp_runner_event (self, event);
}

static void
s_mcp_session_closing (void *self, cg_registry_session_t *session, const char *why)
{
    cg_server_session_closing (self, session, why);
}

static void
s_mcp_destroy (void **self_p)
{
    cg_mcp_destroy ((cg_server_t **)self_p);
}

const cg_frontend_ops_t cg_frontend_mcp = {"mcp", s_mcp_owns_key, s_mcp_runner_event,
                                           s_mcp_session_closing, s_mcp_destroy};

static bool
s_gateway_owns_key (void *self, const char *key)
{
    return cg_gateway_owns_key (self, key);
}

static void
s_gateway_runner_event (void *self, cg_runner_event_t *event)
{
    cg_gateway_runner_event (self, event);
}

static void
s_gateway_destroy (void **self_p)
{
    cg_gateway_destroy ((cg_gateway_t **)self_p);
}

//  A session closed by an operator ends the gateway's WebSockets to it by itself (their
//  kernel is gone at the next round): nothing to answer.
const cg_frontend_ops_t cg_frontend_gateway = {"gateway", s_gateway_owns_key,
                                               s_gateway_runner_event, NULL, s_gateway_destroy};
