/*  cg_mcp — the MCP server over stdio: lifecycle, version negotiation, dispatch of
    requests to session runners, concurrency and cancellation. */
#ifndef CG_MCP_H
#define CG_MCP_H

#include "mcp/cg_server.h"
#include "base/cg_config.h"
#include "bridge/cg_instance.h"
#include "containers/cg_container.h"

#define CG_VERSION "0.1.0"

/*  Serves MCP on IN_FD/OUT_FD (newline-delimited JSON-RPC) until the input closes, or,
    when CONFIG->http is set, over Streamable HTTP at http://CONFIG->http/mcp (the fds
    unused); in both cases until SIGINT/SIGTERM arrives. Then destroys every sandbox it
    created. EXTRA (may be NULL) registers more with the server after the features and
    tools (the conformance fixtures). All arguments are borrowed. Returns 0 on a clean
    end, 1 on a fatal error. */
int cg_mcp_serve (const cg_config_t *config, cg_backend_t *backend, cg_instance_t *instance,
                  int in_fd, int out_fd, cg_server_setup_fn *extra);

/*  Registers the features (initialize and the handshake's methods, 2026-07-28, tasks,
    subscriptions/listen, resources) and the tools with SERVER (its core set up), then
    EXTRA (may be NULL). */
void cg_mcp_features (cg_server_t *server, cg_server_setup_fn *extra);

#endif
