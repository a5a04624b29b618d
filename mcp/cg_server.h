/*  cg_server — what the MCP core (cg_mcp.c) offers the transports and the tool handlers:
    the request being handled as an explicit value (no hidden "current" state), the
    server's services, and the calls in flight whose answers come later. Internal to mcp/. */
#ifndef CG_SERVER_H
#define CG_SERVER_H

#include "mcp/cg_channel.h"
#include "artifacts/cg_downloads.h"
#include "artifacts/cg_execlog.h"
#include "artifacts/cg_http.h"
#include "base/cg_config.h"
#include "bridge/cg_registry.h"
#include "base/cg_loop.h"
#include "base/cg_worker.h"

#include <czmq.h>
#include <jansson.h>

typedef struct cg_server_t cg_server_t;
typedef struct cg_task_t cg_task_t;         /* a tools/call run as a task (cg_tasks.h) */
typedef struct cg_tool_t cg_tool_t;         /* a row of the tool table (cg_tools.h) */
typedef struct cg_call_ops_t cg_call_ops_t; /* how a provider's calls end */

/*  One request from a client, while it is handled. Everything is borrowed. */
typedef struct {
    size_t step; /* the dispatch's next step (cg_server_continue) */
    cg_server_t *server;
    json_t *id;             /* its JSON-RPC id */
    cg_channel_t *channel;  /* where its answer goes */
    cg_client_t *client;    /* the channel's client */
    json_t *progress_token; /* tools/call's _meta.progressToken, or NULL */
    const cg_tool_t *tool;  /* tools/call's tool, or NULL */
    const char *call_name;  /* tools/call's tool name as asked, or NULL for other methods */
    int64_t started_us;     /* when it arrived (cg_now_us) */
    cg_task_t *task;        /* a tools/call run as this task: its answer goes there */
    const char *method;     /* its method */
    bool modern;            /* a 2026-07-28 request (per-request _meta, cg_modern) */
    bool modern_elicit;     /* and its clientCapabilities declare form elicitation */
    bool modern_tasks;      /* and the tasks extension (io.modelcontextprotocol/tasks) */
} cg_request_t;

/*  Answers REQ with the JSON-RPC result RESULT (stolen), or with an error. A tools/call's
    answer is also recorded in the log (cg_oplog). */
void cg_request_result (const cg_request_t *req, json_t *result);
void cg_request_error (const cg_request_t *req, int code, const char *message);

/*  As cg_request_error, with DATA (stolen) as the error's data. */
void cg_request_error_data (const cg_request_t *req, int code, const char *message, json_t *data);

/*  Sends a notification METHOD with PARAMS (stolen) on REQ's channel. */
void cg_request_notify (const cg_request_t *req, const char *method, json_t *params);

/*  A call whose answer comes later (a run, a session start, a client's response). */
typedef struct {
    char key[32];             /* its key: runners' messages name it */
    json_t *id;               /* JSON-RPC id */
    char *tool;               /* tool name */
    char *session_id;         /* NULL for a one-shot sandbox */
    char *run_id;             /* run_python's run id */
    zactor_t *oneshot;        /* the one-shot runner, owned here */
    bool cancelled;           /* notifications/cancelled arrived: send no response */
    bool ending;              /* its run ended; its answer waits for the log (cg_tools_run) */
    cg_channel_t *channel;    /* where its answer goes (a reference) */
    json_t *progress_token;   /* _meta.progressToken, or NULL */
    int progress;             /* progress notifications sent */
    char *client_request;     /* id of our request to the client it waits for, or NULL */
    bool asking;              /* CLIENT_REQUEST asks for a running cell's input (cg_tools_input) */
    json_t *request;          /* a run's {code, stdin?} for the execution log, or NULL */
    char *script;             /* run_script's script name (its runs are recorded), or NULL */
    json_t *context;          /* what its tool's finish needs (owned), or NULL */
    int64_t started_us;       /* when its request arrived */
    double timeout_s;         /* a run's timeout; 0: not a run */
    bool recorded;            /* its record is in the log (cg_oplog) */
    cg_task_t *task;          /* its answer goes to this task (cg_tasks), or NULL */
    bool modern;              /* its request was a 2026-07-28 one: so is its answer */
    char *request_state;      /* 2026-07-28: the requestState of its input_required answer */
    const cg_call_ops_t *ops; /* how it ends where the core cannot say, or NULL: the
                                 server's (cg_server_set_call_ops) */
    cg_server_t *server;
} cg_call_t;

/*  Registers a call for REQ running TOOL in SESSION_ID (may be NULL). It keeps REQ's
    channel. Returns it (owned by the server until cg_server_call_end). */
cg_call_t *cg_server_call_new (const cg_request_t *req, const char *tool, const char *session_id);

/*  The calls in flight: key -> cg_call_t, borrowed (change it only through the functions
    here). */
zhashx_t *cg_server_calls (cg_server_t *self);

/*  Returns the call KEY, or NULL. */
cg_call_t *cg_server_call (cg_server_t *self, const char *key);

/*  The request CALL of SELF was made for, rebuilt to be answered or handled again later:
    everything borrowed from CALL; as a tools/call (its tool is the caller's to look up); a
    2026-07-28 request's modern_elicit and modern_tasks are the caller's to set. */
cg_request_t cg_server_call_request (cg_server_t *self, cg_call_t *call);

/*  Answers CALL with RESULT (a JSON-RPC result, stolen) unless it was cancelled; sends
    nothing and frees RESULT when it was. Either way CALL's record goes to the log once
    (cg_oplog; a call ended unanswered is recorded by cg_server_call_end). */
void cg_server_call_answer (cg_call_t *call, json_t *result);

/*  Answers CALL with a JSON-RPC error unless it was cancelled. */
void cg_server_call_fail (cg_call_t *call, int code, const char *message);

/*  Logs CALL's operations-log record (cg_oplog) unless it was logged: RESULT (borrowed),
    or the JSON-RPC error ERROR_CODE when RESULT is NULL; STATUS (may be NULL) overrides
    the result's, and a cancelled call's is "cancelled". cg_server_call_answer and _fail
    log it; cg_server_call_end logs a call ended unanswered as "unanswered". */
void cg_server_call_record (cg_call_t *call, const json_t *result, int error_code,
                            const char *status);

/*  Forgets CALL and frees it (ends its one-shot runner and its channel reference). */
void cg_server_call_end (cg_server_t *self, cg_call_t *call);

/*  Cancels CALL as notifications/cancelled does: its runner interrupts the cell (the
    session's state stays) and its answer is not sent. */
void cg_server_call_cancel (cg_server_t *self, cg_call_t *call);

/*  The tasks (cg_tasks.h): id -> cg_task_t. */
zhashx_t *cg_server_tasks (cg_server_t *self);

/*  SESSION is being closed: its call in flight (if any) is answered with error WHY (its
    ops' refusal, session_closed) and ended. */
void cg_server_session_closing (cg_server_t *self, cg_registry_session_t *session, const char *why);

/*  Ends SESSION: cg_server_session_closing, then retires it (its runner destroys the
    sandbox). */
void cg_server_session_close (cg_server_t *self, cg_registry_session_t *session, const char *why);

/*  The server's services. */
const cg_config_t *cg_server_config (cg_server_t *self);
cg_registry_t *cg_server_registry (cg_server_t *self);
cg_http_t *cg_server_http (cg_server_t *self);           /* the listener; NULL when off */
cg_execlog_t *cg_server_execlog (cg_server_t *self);     /* NULL when it could not open */
cg_worker_t *cg_server_store (cg_server_t *self);        /* slow disk work off the loop */
cg_worker_t *cg_server_files_worker (cg_server_t *self); /* uploads and reads off the loop */
cg_worker_t *cg_server_encoder (cg_server_t *self);      /* large messages' encoding */
cg_worker_t *cg_server_log_worker (cg_server_t *self);   /* the one thread writing the log */
cg_execlog_t *cg_server_log_reader (cg_server_t *self);  /* its reader, NULL when none */
cg_worker_t *cg_server_log_reads (cg_server_t *self);    /* the thread calling the reader */
cg_loop_t *cg_server_loop (cg_server_t *self);           /* the process's loop */

/*  Dispatches REQ (its method set) with PARAMS through the method table: the method's
    steps, then its handler, in either era (a 2026-07-28 request's _meta checked before);
    unknown methods get -32601 (HTTP 404). */
void cg_server_dispatch (cg_request_t *req, json_t *params);

//  --------------------------------------------------------------------------
//  The method table and the hooks: features and tools register at start; the core calls
//  them through these and never by name (redis's command table).

/*  A method's handler: answers REQ (now, or through a call answered later). */
typedef void (cg_method_fn) (const cg_request_t *req, json_t *params);

/*  A step run before a method's handler (in the order added; FIRST puts it ahead of those
    added before): returns true when it took REQ (answered it, or passed it on with
    cg_server_continue), false to let the next step or the handler have it. */
typedef bool (cg_method_step_fn) (const cg_request_t *req, json_t *params);

enum {
    CG_METHOD_ANYTIME = 1,   /* served before initialize too (initialize, ping, discover) */
    CG_METHOD_HANDSHAKE = 2, /* the handshake revisions' only: 2026-07-28 removed it */
    CG_METHOD_CALL = 4,      /* a call of a named tool: params.name is what the operations
                                log records it under, _meta.progressToken its progress */
};

/*  Adds METHOD (a static string) served by FN with FLAGS (CG_METHOD_*); a second add of
    one METHOD replaces its handler and flags, its steps stay. */
void cg_server_add_method (cg_server_t *self, const char *method, cg_method_fn *fn, unsigned flags);

/*  Adds STEP before METHOD's handler (METHOD added first). */
void cg_server_add_step (cg_server_t *self, const char *method, cg_method_step_fn *step,
                         bool first);

/*  Returns true when METHOD is in the table, and sets *FLAGS (may be NULL) to its flags. */
bool cg_server_has_method (cg_server_t *self, const char *method, unsigned *flags);

/*  From a step: hands REQ (a copy it may have changed) to the steps after the one running,
    then to the handler. */
void cg_server_continue (const cg_request_t *req, json_t *params);

/*  An answer on its way out (cg_request_result, _error, cg_server_call_answer, _fail):
    RESULT (a JSON-RPC result, owned by the answer) or, when NULL, the error CODE with
    MESSAGE. */
typedef struct {
    cg_server_t *server;
    const char *method; /* the request's method ("tools/call" for a call's) */
    bool modern;        /* a 2026-07-28 request's */
    cg_task_t *task;    /* the task it goes to instead of a channel (cg_tasks), or NULL */
    json_t *result;
    int code;
    const char *message;
} cg_answer_t;

/*  What a feature hooks into the core; any field may be NULL. */
typedef struct {
    /*  A request before the core's own handling (initialize first, then the methods):
        returns true when it took it (2026-07-28's per-request _meta: cg_modern). */
    bool (*request) (cg_request_t *req, json_t *message);
    /*  notifications/cancelled of CLIENT's request REQUEST_ID: true when it was the
        feature's (then no call is cancelled). */
    bool (*cancelled) (cg_server_t *server, cg_client_t *client, json_t *request_id);
    /*  Shapes an answer before it is recorded and sent (RESULT and CODE may change). */
    void (*answer_shape) (cg_answer_t *answer);
    /*  Returns true when it took the answer instead of a channel (RESULT stolen). */
    bool (*answer_divert) (cg_answer_t *answer);
    /*  A call was registered, and a call ends (before it is freed). */
    void (*call_start) (cg_server_t *server, cg_call_t *call);
    void (*call_end) (cg_server_t *server, cg_call_t *call);
    /*  CLIENT ends: what the feature keeps of it goes. */
    void (*client_end) (cg_server_t *server, cg_client_t *client);
} cg_hooks_t;

/*  Adds HOOKS (static; borrowed): each runs in the order added. */
void cg_server_add_hooks (cg_server_t *self, const cg_hooks_t *hooks);

/*  How the calls of a tool provider end, where the core cannot say (any field may be
    NULL: the core's plain answer then). */
struct cg_call_ops_t {
    /*  The answer (a tools/call result) refusing CALL with ERROR (seed 004's code) and
        MESSAGE, its session SESSION_ID (LANGUAGE) being closed. Caller owns it. */
    json_t *(*refusal) (cg_call_t *call, const char *language, const char *session_id,
                        const char *error, const char *message);
    /*  Answers and ends CALL, which will get no answer in time (the server stops), WHY. */
    void (*abandon) (cg_server_t *server, cg_call_t *call, const char *why);
    /*  The client's response MESSAGE (a JSON-RPC response) to CALL's CLIENT_REQUEST. */
    void (*response) (cg_server_t *server, cg_call_t *call, json_t *message);
    /*  A runner's EVENT for CALL (PROGRESS, RESULT, STARTED, INPUT; cg_runner_msg.h; what
        it holds may be taken), CALL's session being SESSION (NULL: a one-shot run's, or
        gone). */
    void (*runner_event) (cg_server_t *server, cg_call_t *call, cg_registry_session_t *session,
                          cg_runner_event_t *event);
};

/*  OPS (static) for the calls that name none of their own (cg_call_t.ops): the tools'. */
void cg_server_set_call_ops (cg_server_t *self, const cg_call_ops_t *ops);

/*  Hands MESSAGE (a JSON-RPC response, borrowed) to CALL's owner (its ops' response). */
void cg_server_call_response (cg_server_t *self, cg_call_t *call, json_t *message);

/*  What a tool provider answers the features: the traits of tool NAME. */
enum { CG_TOOL_TRAIT_TASKS = 1 /* it may run as a task (it runs code) */ };
typedef unsigned (cg_tool_traits_fn) (const char *name);
void cg_server_set_tool_traits (cg_server_t *self, cg_tool_traits_fn *fn);
unsigned cg_server_tool_traits (cg_server_t *self, const char *name);

/*  More tools and resources beside the tool table's (the conformance fixtures: registered
    by the process under --tool-profile conformance). Any field may be NULL. */
typedef struct {
    json_t *(*tools) (void); /* tools/list entries (a new array) */
    /*  tools/call of PARAMS' name: true when the tool is its own (REQ answered). */
    bool (*call) (const cg_request_t *req, json_t *params);
    json_t *(*resources) (void);       /* resources/list entries before the workspaces' (new) */
    json_t *(*templates) (void);       /* resources/templates/list entries (new) */
    json_t *(*read) (const char *uri); /* resources/read contents of URI (new), or NULL */
} cg_provider_t;

/*  Adds PROVIDER (static; borrowed). */
void cg_server_add_provider (cg_server_t *self, const cg_provider_t *provider);

/*  The I-th provider, or NULL past the last. */
const cg_provider_t *cg_server_provider (cg_server_t *self, size_t i);

/*  What initialize and server/discover say of the server to the LLM (static text; the
    tools set it), or NULL. */
void cg_server_set_instructions (cg_server_t *self, const char *text); /* copied */
const char *cg_server_instructions (cg_server_t *self);

/*  A feature's registration at start (cg_tasks_register, ...). */
typedef void (cg_server_setup_fn) (cg_server_t *server);

/*  For the transports: handles MESSAGE (borrowed), which arrived on CHANNEL. */
void cg_server_handle (cg_server_t *self, cg_channel_t *channel, json_t *message);

/*  For the transports: forgets CLIENT, closing its sessions (answering their calls in
    flight) and dropping its other calls (their streams end). */
void cg_server_client_end (cg_server_t *self, cg_client_t *client);

/*  True when CLIENT holds a session or a call. */
bool cg_server_client_busy (cg_server_t *self, cg_client_t *client);

/*  cg_log's level (0 error .. 3 debug) for an MCP logging level NAME; -1 when unknown. */
int cg_server_log_level_of (const char *name);

/*  The protocol revisions spoken, newest first, NULL-terminated; and our spelling of
    VERSION, or NULL when we do not speak it. */
extern const char *const cg_server_versions[];
const char *cg_server_version_supported (const char *version);

#endif
