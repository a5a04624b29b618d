/*  Internal to gateway/: what the REST side (cg_gateway.c) and the WebSocket side
    (cg_gateway_ws.c) share. */
#ifndef CG_GATEWAY_INT_H
#define CG_GATEWAY_INT_H

#include "gateway/cg_gateway.h"
#include "gateway/cg_jmsg.h"
#include "base/cg_worker.h"

#define CG_GATEWAY_SOCKETS_MAX 64 /* WebSockets at once, all kernels */

struct cg_gateway_t {
    const cg_config_t *config;
    cg_registry_t *registry;
    cg_http_t *http;
    char *token;
    json_t *kernelspecs; /* the /api/kernelspecs answer */
    zhashx_t *waiting;   /* key -> cg_http_exchange_t (kept): a start or restart */
    unsigned next_key;
    zlistx_t *sockets;    /* s_socket_t (cg_gateway_ws.c) */
    cg_loop_t *loop;      /* the process's: the WebSockets and their kernels' channels */
    cg_worker_t *decoder; /* checks and parses the kernels' large messages, off the loop */
};

/*  The Jupyter kernel name of LANGUAGE ("python3", "javascript") and back (NULL when
    unknown). */
const char *cg_gateway_kernel_name (const char *language);
const char *cg_gateway_language (const char *kernel_name);

/*  What of a start request's ENV (untrusted; NULL: none) reaches the kernel: KERNEL_*
    variables (what GatewayClient forwards) and LANG, LC_ALL, TZ; other names are dropped
    (logged). Returns a new object of strings, or NULL with *WHY (static) when ENV is not
    an object of strings or a relative KERNEL_WORKING_DIR climbs out of the workspace. */
json_t *cg_gateway_kernel_env (const json_t *env, const char **why);

/*  Answers a WebSocket upgrade for KERNEL (of SESSION) on EXCHANGE, already authorized. */
void cg_gateway_ws_attach (cg_gateway_t *self, cg_http_exchange_t *exchange,
                           cg_registry_kernel_t *kernel);

/*  The loop's before-wait hook (ARG: the gateway): drops connections whose kernel went,
    follows restarts, nudges, sends what waits, and watches each WebSocket for what it
    wants. Returns the ms until it wants to run again (-1: no wish). */
int cg_gateway_ws_before_wait (cg_loop_t *loop, void *arg);

/*  Ends every WebSocket. */
void cg_gateway_ws_close_all (cg_gateway_t *self);

/*  The decoder's socket is readable: the large kernel messages checked meanwhile are
    relayed (cg_loop_fn, ARG: the gateway). */
void cg_gateway_ws_decoded (cg_loop_t *loop, short revents, void *arg);

#endif
