/*  cg_mcp — the MCP server over stdio: lifecycle, version negotiation, dispatch of
    requests to session runners, concurrency and cancellation. */
#ifndef CG_MCP_H
#define CG_MCP_H

#include "base/cg_config.h"
#include "bridge/cg_instance.h"
#include "containers/cg_container.h"

#define CG_VERSION "0.1.0"

/*  Serves MCP on IN_FD/OUT_FD (newline-delimited JSON-RPC) until the input closes, or,
    when CONFIG->http is set, over Streamable HTTP at http://CONFIG->http/mcp (the fds
    unused); in both cases until SIGINT/SIGTERM arrives. Then destroys every sandbox it
    created. All arguments are borrowed. Returns 0 on a clean end, 1 on a fatal error. */
int cg_mcp_serve (const cg_config_t *config, cg_backend_t *backend, cg_instance_t *instance,
                  int in_fd, int out_fd);

#endif
