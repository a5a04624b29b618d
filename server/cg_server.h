/*  cg_server — the process: it owns the loop (cg_loop), the registry of sessions, the HTTP
    listener with its downloads, /metrics and /admin (cg_admin), the execution log's handle,
    and the front ends (cg_frontend: MCP and, on the listener, the Jupyter gateway); it routes
    each runner event to the front end whose request it answers, and ends it all in order. */
#ifndef CG_SERVER_PROCESS_H
#define CG_SERVER_PROCESS_H

#include "mcp/cg_server.h"
#include "base/cg_config.h"
#include "bridge/cg_instance.h"
#include "containers/cg_container.h"
#include "egress/cg_egress.h"

/*  Serves MCP on IN_FD/OUT_FD (newline-delimited JSON-RPC) until the input closes, or,
    when CONFIG->http is set, over Streamable HTTP at http://CONFIG->http/mcp (the fds
    unused); in both cases until SIGINT/SIGTERM arrives. The sessions a previous server
    kept are adopted first (--keep-sessions). Then destroys every sandbox it created. EXTRA
    (may be NULL) registers more with the MCP core after its features and tools (the
    conformance fixtures). EGRESS: --egress proxy's service the sandboxes get their way out
    from (its access log and relay are read on the loop), or NULL. All arguments are
    borrowed. Returns 0 on a clean end, 1 on a fatal error. */
int cg_serve (const cg_config_t *config, cg_backend_t *backend, cg_instance_t *instance,
              cg_egress_t *egress, int in_fd, int out_fd, cg_server_setup_fn *extra);

/*  Registers MCP's features (initialize and the handshake's methods, 2026-07-28, tasks,
    subscriptions/listen, resources) and the tools with SERVER (its core set up), then EXTRA
    (may be NULL): what cg_serve does, for a core driven without the loop (the tests). */
void cg_serve_mcp_features (cg_server_t *server, cg_server_setup_fn *extra);

#endif
