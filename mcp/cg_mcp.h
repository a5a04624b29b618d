/*  cg_mcp — the MCP front end: the protocol over stdio (newline-delimited JSON-RPC) or
    Streamable HTTP, on the process's loop (server/). What it implements of the process's
    front-end contract (server/cg_frontend.h) is here; the core is cg_server.h. */
#ifndef CG_MCP_H
#define CG_MCP_H

#include "mcp/cg_server.h"
#include "artifacts/cg_execlog.h"
#include "artifacts/cg_http.h"
#include "base/cg_config.h"
#include "base/cg_loop.h"
#include "base/cg_worker.h"
#include "bridge/cg_registry.h"
#include "bridge/cg_runner_msg.h"

/*  What the process lends the MCP front end: all borrowed, and outliving it. */
typedef struct {
    const cg_config_t *config;
    cg_registry_t *registry;
    cg_loop_t *loop;
    cg_http_t *http;         /* the listener, NULL when off */
    cg_execlog_t *execlog;   /* NULL when it could not open */
    cg_worker_t *log_worker; /* the thread that alone writes EXECLOG */
    int in_fd, out_fd;       /* stdio's, used when CONFIG->http is not set */
    size_t store_max;        /* the disk work's queue (cg_server_store): works at once */
    size_t log_reads_max;    /* the log's searches and reads (cg_server_log_reads): at once */
    /*  What registers with the core once it is set up (and on the loop), in order: the
        features, the tools, the conformance fixtures. NULL-terminated. */
    cg_server_setup_fn *const *setup;
} cg_mcp_env_t;

/*  Serves MCP over Streamable HTTP at /mcp of ENV->http when ENV->config->http is set,
    else over ENV->in_fd/out_fd; registers its watches and hooks with ENV->loop. Once
    stdin has ended and its calls are answered (cg_server_drain), it stops the loop.
    Returns the front end; the caller destroys it (before the loop and the registry). */
cg_server_t *cg_mcp_new (const cg_mcp_env_t *env);

/*  Ends every one-shot sandbox of the calls in flight (all asked first, then each waited
    for), finishes the disk work queued (unless a signal stops the server), leaves the loop
    and frees the front end. Sets *SELF_P to NULL; safe on NULL. */
void cg_mcp_destroy (cg_server_t **self_p);

/*  True when KEY (a runner event's) is one of the calls in flight. */
bool cg_mcp_owns_key (cg_server_t *self, const char *key);

/*  A runner's EVENT for one of its calls (handed to the call's ops: PROGRESS, RESULT with
    its outcome taken, STARTED, INPUT), or a runner's LOG line (sent to the clients that
    asked for log messages). */
void cg_mcp_runner_event (cg_server_t *self, cg_runner_event_t *event);

#endif
