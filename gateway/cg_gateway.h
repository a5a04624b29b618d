/*  cg_gateway — the Jupyter Kernel Gateway API ("jupyter-websocket" mode, as
    jupyter_server's GatewayClient calls it) on the server's HTTP listener: kernelspecs,
    kernels (each one a kernel of a cellgate session: its own sandbox), and each kernel's
    channels over a WebSocket, re-signed toward the kernel so no key leaves the host.
    MCP sessions' kernels are listed too: the gateway token is the operator's key.
    Single-threaded: everything here runs on the process's loop. */
#ifndef CG_GATEWAY_H
#define CG_GATEWAY_H

#include "artifacts/cg_http.h"
#include "base/cg_config.h"
#include "base/cg_loop.h"
#include "bridge/cg_registry.h"
#include "bridge/cg_runner_msg.h"

#include <czmq.h>

typedef struct cg_gateway_t cg_gateway_t;

/*  The owner of the sessions the gateway starts (cg_registry's owner). */
#define CG_GATEWAY_OWNER "jupyter-gateway"

/*  Serves the gateway on HTTP (routes /api/ and /kernelspecs/) with the configured token,
    or the one kept in <state dir>/gateway-token (made 0600 at first start), and logs the
    command line a notebook server uses to reach it (cg_notebook_command: where the
    token is, never the token); its WebSockets and their kernels'
    channels are watched on LOOP. All arguments are borrowed and must outlive it. Returns
    NULL when the token file cannot be written (logged). */
cg_gateway_t *cg_gateway_new (const cg_config_t *config, cg_registry_t *registry, cg_http_t *http,
                              cg_loop_t *loop);

/*  Closes every WebSocket and frees the gateway; before cg_http_destroy. Safe on NULL. */
void cg_gateway_destroy (cg_gateway_t **self_p);

/*  True when KEY (a runner event's) is one of the gateway's kernel starts or restarts
    waiting for their answer. */
bool cg_gateway_owns_key (cg_gateway_t *self, const char *key);

/*  A runner's EVENT for one of its requests (STARTED, RESTARTED): the waiting exchange is
    answered; other events are ignored. */
void cg_gateway_runner_event (cg_gateway_t *self, const cg_runner_event_t *event);

#endif
