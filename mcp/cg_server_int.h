/*  cg_server_int — the MCP core's state, shared by its parts: cg_mcp.c (the event loop,
    logging, the runners' messages), cg_dispatch.c (handling, the method table and the
    hooks) and cg_calls.c (requests' answers in flight: calls, their ends and
    cancellation, clients' ends). Internal to mcp/ and the process. */
#ifndef CG_SERVER_INT_H
#define CG_SERVER_INT_H

#include "mcp/cg_server.h"
#include "mcp/cg_stdio.h"
#include "mcp/cg_streamable.h"

#define CG_SERVER_HOOKS_MAX 8
#define CG_SERVER_PROVIDERS_MAX 4

struct cg_server_t {
    const cg_config_t *config;
    cg_registry_t *registry;
    cg_loop_t *loop;              /* the process's (borrowed) */
    cg_http_t *http;              /* the process's listener (borrowed), NULL when off */
    cg_stdio_t *stdio;            /* the stdio transport, NULL when serving HTTP */
    cg_loop_watch_t *stdin_watch; /* its input on the loop */
    cg_streamable_t *streamable;  /* the Streamable HTTP transport, or NULL */
    zhashx_t *calls;              /* key -> cg_call_t */
    unsigned long next_key;
    zlistx_t *logs;           /* "<level>\t<message>" logged on this thread */
    cg_execlog_t *execlog;    /* the process's execution log (borrowed), or NULL */
    cg_worker_t *store;       /* the script library's and notebooks' disk work (cg_tools_jobs) */
    cg_worker_t *files;       /* uploads' and read_artifact's (cg_tools_files) */
    cg_worker_t *log_worker;  /* the process's: the one thread that writes EXECLOG (borrowed) */
    cg_execlog_t *log_reader; /* EXECLOG's reader (cg_execlog_open_reader), or NULL */
    cg_worker_t *log_reads;   /* the thread that searches and reads with it (cg_tools_logs) */
    cg_worker_t *encoder;     /* encodes the large messages to clients (cg_channel_send) */
    zhashx_t *tasks;          /* id -> cg_task_t (cg_tasks) */
    int64_t next_ping_us;     /* when cg_server_calls_tick looks at the streams next */
    zlistx_t *listeners;      /* 2026-07-28's subscriptions/listen requests (cg_listen) */
    int64_t next_listen_us;
    int drain_stage;        /* stdin has ended (cg_server_drain): 0 not yet, 1 the calls in
                               flight may finish, 2 they were interrupted */
    int64_t drain_until_us; /* when this stage ends */
    zhashx_t *methods;      /* method -> its row of the method table (cg_dispatch) */
    const cg_hooks_t *hooks[CG_SERVER_HOOKS_MAX];
    size_t hook_count;
    const cg_call_ops_t *call_ops; /* the calls' that name none (the tools') */
    cg_tool_traits_fn *tool_traits;
    const cg_provider_t *providers[CG_SERVER_PROVIDERS_MAX];
    size_t provider_count;
    char *instructions; /* owned */
};

/*  Sets up SELF's core (calls, logs, the method table) with CONFIG and REGISTRY (both
    borrowed), no feature registered yet and no transport: the process adds those. */
void cg_server_core_init (cg_server_t *self, const cg_config_t *config, cg_registry_t *registry);

/*  Frees what cg_server_core_init and the features' registrations made. */
void cg_server_core_fini (cg_server_t *self);

/*  The notification METHOD with PARAMS (stolen), a new JSON-RPC message. */
json_t *cg_server_notification (const char *method, json_t *params);

/*  Cancels the 2026-07-28 calls whose client closed its stream (a comment on it tells,
    every 2 s). Returns the ms until it wants to look again, or WAIT_MS when sooner. */
int cg_server_calls_tick (cg_server_t *self, int wait_ms);

/*  Interrupts CALL's run as cg_server_call_cancel does, its answer still sent. */
void cg_server_call_interrupt (cg_server_t *self, cg_call_t *call);

/*  Once stdin has ended (stdio): the calls in flight may finish for --eof-grace seconds
    (none when the output failed too), then each is interrupted and answered with what
    its run came to; what still has no answer after --interrupt-grace-ms and a little more
    is answered as cancelled (cg_tools_abandon). Every one is answered and logged. Returns
    false once no call is left, else true with *WAIT_MS lowered to when to look again. */
bool cg_server_drain (cg_server_t *self, int *wait_ms);

/*  The calls table's destructor. */
void cg_server_call_free_ (void **item);

#endif
