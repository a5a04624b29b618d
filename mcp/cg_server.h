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
#include "base/cg_worker.h"

#include <czmq.h>
#include <jansson.h>

typedef struct cg_server_t cg_server_t;
typedef struct cg_task_t cg_task_t; /* a tools/call run as a task (cg_tasks.h) */
typedef struct cg_tool_t cg_tool_t; /* a row of the tool table (cg_tools.h) */

/*  One request from a client, while it is handled. Everything is borrowed. */
typedef struct {
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
    char key[32];           /* its key: runners' messages name it */
    json_t *id;             /* JSON-RPC id */
    char *tool;             /* tool name */
    char *session_id;       /* NULL for a one-shot sandbox */
    char *run_id;           /* run_python's run id */
    zactor_t *oneshot;      /* the one-shot runner, owned here */
    bool cancelled;         /* notifications/cancelled arrived: send no response */
    cg_channel_t *channel;  /* where its answer goes (a reference) */
    json_t *progress_token; /* _meta.progressToken, or NULL */
    int progress;           /* progress notifications sent */
    char *client_request;   /* id of our request to the client it waits for, or NULL */
    bool asking;            /* CLIENT_REQUEST asks for a running cell's input (cg_tools_input) */
    json_t *request;        /* a run's {code, stdin?} for the execution log, or NULL */
    char *script;           /* run_script's script name (its runs are recorded), or NULL */
    json_t *context;        /* what its tool's finish needs (owned), or NULL */
    int64_t started_us;     /* when its request arrived */
    double timeout_s;       /* a run's timeout; 0: not a run */
    bool recorded;          /* its record is in the log (cg_oplog) */
    cg_task_t *task;        /* its answer goes to this task (cg_tasks), or NULL */
    bool modern;            /* its request was a 2026-07-28 one: so is its answer */
    char *request_state;    /* 2026-07-28: the requestState of its input_required answer */
} cg_call_t;

/*  Registers a call for REQ running TOOL in SESSION_ID (may be NULL). It keeps REQ's
    channel. Returns it (owned by the server until cg_server_call_end). */
cg_call_t *cg_server_call_new (const cg_request_t *req, const char *tool, const char *session_id);

/*  The calls in flight: key -> cg_call_t, borrowed (change it only through the functions
    here). */
zhashx_t *cg_server_calls (cg_server_t *self);

/*  Returns the call KEY, or NULL. */
cg_call_t *cg_server_call (cg_server_t *self, const char *key);

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

/*  Ends SESSION: answers its call in flight (if any) with error WHY, then retires it
    (its runner destroys the sandbox). */
void cg_server_session_close (cg_server_t *self, cg_registry_session_t *session, const char *why);

/*  The server's services. */
const cg_config_t *cg_server_config (cg_server_t *self);
cg_registry_t *cg_server_registry (cg_server_t *self);
cg_http_t *cg_server_http (cg_server_t *self);       /* the listener; NULL when off */
cg_execlog_t *cg_server_execlog (cg_server_t *self); /* NULL when it could not open */
cg_worker_t *cg_server_store (cg_server_t *self);    /* slow disk work off the loop */

/*  Dispatches REQ (its method set) with PARAMS to the method's handler, in either era
    (a 2026-07-28 request's _meta checked before); unknown methods get -32601 (HTTP 404). */
void cg_server_dispatch (cg_request_t *req, json_t *params);

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
