/*  cg_tools — the MCP tools: the tool table (names, schemas, handlers, flags), the
    schema-driven check of arguments, the handlers by family, and the results of the tools
    that do not run code (a run's result is cg_run_result's). */
#ifndef CG_TOOLS_H
#define CG_TOOLS_H

#include "mcp/cg_server.h"
#include "base/cg_config.h"
#include "base/cg_limits.h"
#include "bridge/cg_outcome.h"
#include "bridge/cg_runner_msg.h"
#include "base/cg_worker.h"

#include <jansson.h>
#include <stdbool.h>

#define CG_MAX_STDIN_BYTES (1024 * 1024)

/*  What the sandbox offers, said in the tool descriptions and initialize's instructions
    (the packages are the ones scripts/setup.sh installs). */
/*  What the sandboxes reach, for the instructions and the descriptions of the tools that
    make or run them: no network (--egress off), or the hosts of --egress proxy's list
    (REGISTRY's egress service). Caller frees. */
char *cg_tools_network_note (cg_registry_t *registry);

/*  Checks a tool's EGRESS_ALLOW argument (a session's own list within the server's):
    returns 0 with *ALLOW a new normalized list (or NULL when EGRESS_ALLOW is NULL), or -1
    with *ERROR a new message for invalid_params. */
int cg_tools_egress_allow (cg_registry_t *registry, json_t *egress_allow, json_t **allow,
                           char **error);

/*  list_sessions' "egress" of SESSION: "off", or {mode, allow, own_list}. */
json_t *cg_tools_egress_describe (cg_registry_t *registry, const cg_registry_session_t *session);

/*  What initialize and server/discover say of the server to the LLM. */
#define CG_TOOLS_INSTRUCTIONS                                                               \
    "cellgate runs code in isolated sandboxes: execute_code takes %s; run_python, "         \
    "Python. %s Pass a session_id "                                                         \
    "to keep variables and the files in " CG_WORKSPACE_MOUNT " between calls. upload_file " \
    "puts data in; list_artifacts and read_artifact get results out (a chart a run shows "  \
    "comes back as an image; read_artifact with format 'image' shows a saved one; "         \
    "download_url links work in a browser). calculate does exact math with SymPy. "         \
    "save_script and run_script keep reusable scripts; search_execution_logs finds past "   \
    "runs."

/*  Registers the tools with SERVER (cg_tools_register.c): tools/list and tools/call (with
    their steps: another provider's tools first, then 2026-07-28's input retry), how their
    calls end, which may run as tasks, and the instructions. Before cg_tasks_register. */
void cg_tools_register (cg_server_t *server);

/*  Seed 001's tool (the seed001 tool profile); its default timeout is in cg_limits.h. */
#define CG_SEED001_TOOL "code_execution_sandbox.execute_code"

/*  One row of the tool table (cg_tools.c). Handlers are grouped by family in their own
    files: cg_tools_run.c (running code), cg_tools_session.c (sessions), cg_tools_files.c
    (files); scripts, logs and packages get theirs. A handler answers REQ now
    (cg_request_result) or registers a call that is answered later. ARGUMENTS (borrowed)
    is an object (possibly empty) whose keys the table has checked against the schema. */
typedef void (cg_tool_fn) (const cg_request_t *req, json_t *arguments);

/*  A tool whose run (an EXEC) is answered in its own terms rather than as a run result:
    returns the tools/call result of CALL from OUTCOME (borrowed); SESSION is the call's
    session, or NULL. */
typedef json_t *(cg_tool_finish_fn)(cg_server_t *server, cg_call_t *call,
                                    cg_registry_session_t *session, const cg_outcome_t *outcome);

enum {
    CG_TOOL_RUNS = 1,           /* its results are run results (seed 001's status names
                                   for seed 001's tool) */
    CG_TOOL_READ_ONLY = 2,      /* annotations: readOnlyHint, else destructiveHint */
    CG_TOOL_DESTRUCTIVE = 4,    /* annotations: destructiveHint */
    CG_TOOL_SEED001 = 8,        /* seed 001's: listed under the seed001 profile only, its
                                   status names and its default timeout */
    CG_TOOL_NOT_SEED001 = 16,   /* not listed under the seed001 profile */
    CG_TOOL_LANGUAGE = 32,      /* a running tool that takes a language argument */
    CG_TOOL_SESSION_GIVEN = 64, /* runs in an existing session only (its language) */
    CG_TOOL_SESSION_MADE = 128, /* makes a session when none is given, and a run id */
};

/*  Where a running tool's default timeout comes from: the seed that defines the tool. */
typedef enum {
    CG_TOOL_TIMEOUT_DEFAULT,    /* --default-timeout: seeds 000 and 002 (30 s) */
    CG_TOOL_TIMEOUT_RUN_PYTHON, /* --run-python-timeout: seed 004 (60 s) */
    CG_TOOL_TIMEOUT_SEED001,    /* CG_SEED001_TIMEOUT_MS, fixed: seed 001 */
} cg_tool_timeout_t;

struct cg_tool_t {
    const char *name;
    const char *title; /* a display name, or NULL: the name says it */
    const char *description;
    const char *input_schema; /* JSON text with ' for ", and ${name} values (cg_tools.c) */
    const char *output_schema;
    cg_tool_fn *handler;
    unsigned flags;
    cg_tool_finish_fn *finish; /* NULL: a run result (cg_run_result) */
    cg_tool_timeout_t timeout; /* a running tool's default timeout */
};

/*  Returns the default timeout of TOOL (NULL: --default-timeout's) in seconds, as CONFIG
    sets it: what a run without a timeout argument gets and what its schema states. */
double cg_tools_default_timeout (const cg_config_t *config, const cg_tool_t *tool);

/*  Returns the tools/list "tools" array of CONFIG's tool profile (the conformance
    profile adds its fixtures). Caller owns it. */
json_t *cg_tools_list (const cg_config_t *config);

/*  Returns the row of tool NAME, or NULL when this server has no such tool. */
const cg_tool_t *cg_tools_find (const char *name);

/*  tools/call: checks PARAMS (borrowed) — the name, the arguments against the tool's
    schema (unknown keys are refused) — and runs the tool's handler. */
void cg_tools_call (const cg_request_t *req, json_t *params);

/*  True when tool NAME has every flag in FLAGS. */
bool cg_tools_is (const char *name, unsigned flags);

/*  Returns the result refusing a call of TOOL with ERROR (seed 004's code, lower case)
    and MESSAGE: a run result for a running tool (in seed 001's terms for seed 001's),
    else an error object. Caller owns it. */
json_t *cg_tools_refusal (const char *tool, const char *language, const char *session_id,
                          const char *error, const char *message);

/*  The refusal (cg_tools_refusal) of REQ's tool when --max-sessions sandboxes exist. */
json_t *cg_tools_max_sessions (const cg_request_t *req, const char *language,
                               const char *session_id);

/*  What a call into a session that is running another gets. */
#define CG_TOOLS_BUSY_MESSAGE \
    "A run is already in progress for this session. Wait for it to complete."

/*  Hands CALL's run (dispatched, with everything the records keep set: request, run_id,
    script) to the registry (cg_registry_run_begin): when its RESULT comes, the registry
    ends it and calls the tools' answer, which answers CALL and ends it. NULL: nothing. */
void cg_tools_begin (cg_server_t *server, cg_call_t *call);

/*  A runner's EVENT (cg_runner_msg.h) for CALL (NULL: unknown, ignored), whose session is
    SESSION (NULL for a one-shot sandbox or a session gone): PROGRESS, STARTED. */
void cg_tools_progress (cg_call_t *call, const cg_runner_event_t *event);
void cg_tools_started (cg_server_t *server, cg_call_t *call, cg_registry_session_t *session,
                       const cg_runner_event_t *event);

/*  Ends CALL, which got no answer and will get none in time (the server stops), with WHY:
    a run is ended now through the registry (cg_registry_run_end_now), so it is answered
    as cancelled and its execution logged as a finished run's;
    any other call gets a JSON-RPC error. CALL is gone after. */
void cg_tools_abandon (cg_server_t *server, cg_call_t *call, const char *why);

/*  A running cell asks for a line of input (the runner's INPUT EVENT): asks CALL's client
    with elicitation/create, or answers EOF at once when it cannot be asked (no call, no
    session runner, the client gone). */
void cg_tools_input_ask (cg_server_t *server, cg_call_t *call, cg_registry_session_t *session,
                         const cg_runner_event_t *event);

/*  The client's answer MESSAGE (a JSON-RPC response) to CALL's elicitation: the line
    accepted goes to the cell; a decline, a cancel or an error is EOF. */
void cg_tools_input_answer (cg_server_t *server, cg_call_t *call, json_t *message);

/*  2026-07-28: a tools/call REQ with PARAMS retried after an input_required answer
    (params.requestState, inputResponses): the waiting call takes the answer and answers
    REQ from now on. Returns false when PARAMS has no requestState (not a retry). */
bool cg_tools_input_resume (const cg_request_t *req, json_t *params);

/*  The handlers, by family. */
cg_tool_fn cg_tools_run, cg_tools_start_session, cg_tools_list_sessions, cg_tools_close_session,
    cg_tools_upload_file, cg_tools_read_artifact, cg_tools_list_artifacts, cg_tools_install_package,
    cg_tools_export_notebook;
cg_tool_finish_fn cg_tools_install_finish;

/*  Sends REQUEST (a validated run request: language, code, timeout, execution_id, ...;
    borrowed) as EXEC to SESSION's runner (marked busy) or to ONESHOT (taken over by the
    call), registering a call for REQ in SESSION_ID (may be NULL). Returns the call. */
cg_call_t *cg_tools_dispatch (const cg_request_t *req, json_t *request,
                              cg_registry_session_t *session, zactor_t *oneshot);

/*  A tool's disk work off the event loop, on the server's store worker (cg_tools_jobs.c).
    A job type embeds this first; its fields are the worker's alone while RUN runs. */
typedef struct cg_tool_job_t cg_tool_job_t;
struct cg_tool_job_t {
    cg_work_t work;                   /* the worker's */
    cg_server_t *server;              /* set by cg_tools_job_start */
    char key[32];                     /* its call's key */
    void (*run) (cg_tool_job_t *job); /* on the worker: sets RESULT; touches nothing else */
    json_t *result;                   /* the tools/call result RUN made, or NULL */
    /* On the loop, when the work is done: the call's result (caller owns) from the job's
       fields; NULL: RESULT is the answer. */
    json_t *(*answer) (cg_tool_job_t *job, cg_call_t *call);
    /* On the loop, when the work is done, instead of an answer: takes CALL over (answers
       and ends it, or hands its request on: cg_tools_job_request, cg_tools_job_hand_on). */
    void (*resume) (cg_tool_job_t *job, cg_call_t *call);
    void (*free) (cg_tool_job_t *job); /* frees the job's own fields (not JOB), or NULL */
};

/*  Registers a call for REQ and queues JOB (taken over; allocated with malloc, its RUN and
    its other hooks set) on the server's store worker; the call is answered when the work
    is back. Returns true, or false after answering REQ server_busy (naming the queue's
    limit) and freeing JOB. */
bool cg_tools_job_start (const cg_request_t *req, cg_tool_job_t *job);

/*  The same on WORKER (borrowed), which the job's RUN needs: the execution log's tools
    queue on the thread that calls its reader (cg_server_log_reads). */
bool cg_tools_job_start_on (const cg_request_t *req, cg_tool_job_t *job, cg_worker_t *worker);

/*  The execution log's reader holds at most this many searches and reads waiting or
    running. */
#define CG_TOOLS_LOG_JOBS_MAX 16

/*  The request CALL (a job's) was made for, rebuilt to be handled again (as a tool's
    handler would): everything borrowed from CALL; a 2026-07-28 request's modern_elicit
    and modern_tasks are the caller's to set. */
cg_request_t cg_tools_job_request (cg_server_t *server, cg_call_t *call);

/*  Forgets CALL, whose request was handed on (a new call or an answer through
    cg_tools_job_request's request took its task and its log record). */
void cg_tools_job_hand_on (cg_server_t *server, cg_call_t *call);

/*  The worker's queue: works waiting or running at once. */
#define CG_TOOLS_JOBS_MAX 64

/*  The execution log's tools (cg_tools_logs.c) and what feeds it. */
cg_tool_fn cg_tools_search_execution_logs, cg_tools_get_execution_log;

/*  Validates the ARGUMENTS (borrowed, may be NULL; keys already checked) of TOOL, one of
    the running tools. On success returns a new request object (language canonical, code,
    stdin, timeout in seconds, session_id, execution_id, tool) and sets *error_result to
    NULL. On bad input returns NULL and sets *error_result to a complete tools/call result
    (isError, status setup_error, error_code INVALID_PARAMS or UNSUPPORTED_LANGUAGE) the
    caller owns. */
json_t *cg_tools_execute_request (const cg_config_t *config, const char *tool, json_t *arguments,
                                  json_t **error_result);

/*  Runs the validated REQUEST (stolen; from cg_tools_execute_request) for REQ: in its
    session (found, or created on first use) or a one-shot sandbox, as execute_code does.
    Returns the call registered for it, its run dispatched but not yet begun (the caller
    sets what the records keep, then cg_tools_begin), or NULL when the run was refused and
    REQ already answered. */
cg_call_t *cg_tools_run_request (const cg_request_t *req, json_t **request_p);

/*  calculate (cg_tools_calc.c, seed 003): an expression of at most
    CG_CALC_EXPRESSION_MAX characters, evaluated with SymPy in a one-shot sandbox within
    CG_CALC_TIMEOUT_S seconds; its finish answers {expression, result, steps?}. */
#define CG_CALC_EXPRESSION_MAX 1000
#define CG_CALC_TIMEOUT_S 10
cg_tool_fn cg_tools_calculate;
/*  Checks EXPRESSION (untrusted: the client's argument) before a sandbox starts: a string
    of 1 to CG_CALC_EXPRESSION_MAX characters, ASCII letters, digits and the operators
    only, no "__", a '.' only beside a digit. Returns NULL when it may go to the
    evaluator, else why not (caller frees) and sets *ERROR to its code. */
char *cg_tools_calc_refusal (const json_t *expression, const char **error);
cg_tool_finish_fn cg_tools_calculate_finish;

/*  The script library's handlers (cg_tools_scripts.c); a run_script run's end counts in
    the library through the registry's run observers (bridge/cg_run_record). */
cg_tool_fn cg_tools_save_script, cg_tools_get_script, cg_tools_list_scripts,
    cg_tools_search_scripts, cg_tools_run_script;

/*  Returns true when NAME is one of the table's tools. */
bool cg_tools_known (const char *name);

/*  Checks ARGUMENTS' keys against TOOL's input schema. Returns NULL when every key is a
    property of it, else a tools/call error result (invalid_params naming the unknown key
    and the known ones) the caller owns. */
json_t *cg_tools_check_arguments (const cg_tool_t *tool, json_t *arguments);

/*  Returns the canonical name of language NAME or an alias, or NULL if unsupported. */
const char *cg_tools_canonical_language (const char *name);

/*  Returns the supported languages with their aliases, for messages (static string). */
const char *cg_tools_supported_languages (void);

/*  The catalogue's language names as words: "python, javascript, r or bash". */
const char *cg_tools_language_list (void);

/*  What the languages have preinstalled, as their kernel specs say ("Python has numpy
    and pandas. R has dplyr."), for the instructions and execute_code's description. */
const char *cg_tools_sandbox_note (void);

/*  Returns the refusal (cg_tools_refusal) of a call of TOOL whose language LANGUAGE is not
    supported: error unsupported_language (a run's error_code UNSUPPORTED_LANGUAGE) and the
    one message every tool gives, naming LANGUAGE and the supported ones. Caller owns it. */
json_t *cg_tools_unsupported_language (const char *tool, const char *language,
                                       const char *session_id);

/*  Reads LANGUAGE, a language argument of REQ's tool (may be NULL or not a string: the
    caller says what it requires): sets *CANONICAL to its canonical name, or NULL when it
    is absent or not a string. Returns false after answering REQ with
    cg_tools_unsupported_language when it is a string no kernel serves. */
bool cg_tools_language_arg (const cg_request_t *req, const json_t *language,
                            const char **canonical);

/*  What a well-formed session id is, for error messages. */
#define CG_SESSION_ID_RULE                                                                        \
    "'session_id' must be 1 to " CG_STR (                                                         \
        CG_SESSION_ID_MAX) " characters: letters, digits, '_', '.', '-', starting with a letter " \
                           "or digit"

/*  Returns true when ID is a well-formed session id. */
bool cg_tools_valid_session_id (const char *id);

/*  Returns a tools/call result of STRUCTURED (stolen) with one text block TEXT. Caller
    owns the result. */
json_t *cg_tools_object_result (json_t *structured, const char *text, bool is_error);

/*  Returns a tools/call result for an error object {error, message} (seed 002/004
    style) plus the given session_id (may be NULL). Caller owns the result. */
json_t *cg_tools_error_object (const char *error, const char *message, const char *session_id);

/*  Sets STRUCTURED's "kernel_id" to the id under which the Jupyter gateway lists
    SESSION's LANGUAGE kernel (GET /api/kernels), when that kernel runs, and with the
    gateway on SERVER's listener "gateway_url", the listener's base URL (where that
    kernel is reached: `--gateway-url=`, GET <gateway_url>/api/kernels). */
void cg_tools_kernel_id (json_t *structured, cg_server_t *server, cg_registry_session_t *session,
                         const char *language);

/*  Checks SPEC, an install_package package: for pip (PYTHON) "name" or "name==version",
    for npm "name", "@scope/name", either with "@version". Only characters that need no
    quoting in a shell pass, never a leading '-', a path, a URL or "..". Returns true and
    sets *NAME and *VERSION (NULL when none; caller frees both), or false. */
bool cg_tools_package_spec (bool python, const char *spec, char **name, char **version);

#endif
