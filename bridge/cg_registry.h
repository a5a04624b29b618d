/*  cg_registry — the one owner of sandbox sessions: which exist and whose they are, the
    limit on sandboxes at once (one-shot ones included), busy flags, the idle TTL, the
    download tokens, and the on-disk layout (<sessions dir>/<slot>/{workspace,bundle,...}).
    Each session has a runner actor (cg_runner) that owns its sandbox; the registry starts
    it, stops it and waits for it. Front ends (MCP today, a Jupyter gateway later) name
    sessions by (owner, id): an owner never sees another's sessions. Single-threaded: the
    server's main loop calls everything here. */
#ifndef CG_REGISTRY_H
#define CG_REGISTRY_H

#include "artifacts/cg_metrics.h"
#include "artifacts/cg_workspace.h"
#include "artifacts/cg_wsfs.h"
#include "containers/cg_container.h"
#include "base/cg_config.h"
#include "base/cg_loop.h"
#include "bridge/cg_instance.h"
#include "bridge/cg_runner_msg.h"
#include "bridge/cg_kept.h"
#include "bridge/cg_outcome.h"

#include "egress/cg_egress.h"

#include <czmq.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct cg_registry_t cg_registry_t;

/*  A kernel of a session, as its runner reported it (KERNELS, cg_registry_runner_report) and the
    Jupyter gateway sees it. */
#define CG_REGISTRY_KERNELS 4
typedef struct {
    char language[16];   /* "" for an unused entry */
    char id[37];         /* its kernel id (a UUID): stable while the session lives, across
                          restarts; the gateway's /api/kernels/{id} and results' kernel_id */
    long pid;            /* its host pid; 0: not running, -1: running, pid unknown */
    unsigned generation; /* +1 each time a new process of it is reported */
    char *key;           /* its HMAC key, NULL when not running */
    int fds[5];          /* copies of its channels' endpoint fds (shell, iopub, stdin,
                            control, hb; O_PATH), -1 when not running */
    /*  The gateway's view, kept here so that MCP calls see it too. */
    bool frontend_busy;       /* a cell a Jupyter front end sent runs in it */
    int connections;          /* WebSockets attached */
    char execution_state[16]; /* "starting", "idle", "busy", "dead" */
    int64_t last_activity_us; /* wall clock (µs since the epoch) of its last message */
} cg_registry_kernel_t;

/*  One session, as the registry keeps it. Front ends read the fields; only the registry
    changes them (through the functions below). */
typedef struct {
    char *id;    /* the front end's session id */
    char *owner; /* the front end's client ("stdio", an Mcp-Session-Id) */
    char *language;
    char *name;          /* may be NULL */
    zactor_t *runner;    /* its runner (cg_runner_actor) */
    char *busy;          /* the key of the call in flight, NULL when idle */
    char slot[13];       /* its directory and container name */
    char *dir;           /* its host directory */
    cg_workspace_t *ws;  /* its workspace, NULL when it could not be made */
    char token[33];      /* download token: 128 random bits, hex */
    char started_at[32]; /* ISO 8601, UTC */
    char last_activity_at[32];
    int64_t started_us; /* monotonic */
    int64_t last_activity_us;
    int executions;
    long pid;             /* the kernel's host pid as its runner last reported, or 0 */
    double memory_mb;     /* the sandbox's memory as its runner last reported; < 0: unknown */
    zlistx_t *packages;   /* names install_package installed in it (strings), or NULL */
    zlistx_t *languages;  /* the languages its runs used, first use first (strings), or NULL */
    json_t *egress_allow; /* its own --egress proxy list, or NULL: the server's */
    char *notice;         /* for its first result: its id had been closed before, or NULL */
    bool kept;            /* left running at stop for the next server (cg_keep) */
    cg_registry_kernel_t kernels[CG_REGISTRY_KERNELS];
    cg_loop_watch_t *closing_watch; /* retired: its runner's pipe on the loop until it ends */
} cg_registry_session_t;

/*  What the registry tells its listener: SESSION was created (REASON NULL), or is being
    retired for REASON: "closed" (cg_registry_retire), "idle_timeout" (the idle TTL) or
    "shutdown" (cg_registry_stop). SESSION is borrowed for the call. */
typedef void (cg_registry_event_fn) (void *arg, const cg_registry_session_t *session,
                                     const char *reason);

/*  Sets the listener FN (with ARG; NULL: none). */
void cg_registry_set_listener (cg_registry_t *self, cg_registry_event_fn *fn, void *arg);

/*  The backend the registry's sandboxes run on (borrowed). */
cg_backend_t *cg_registry_backend (cg_registry_t *self);

/*  The one-shot runs' kept files (borrowed). */
cg_kept_t *cg_registry_kept (cg_registry_t *self);

/*  Creates the registry. All arguments are borrowed and must outlive it. Without an
    INSTANCE (and BACKEND) it has no warm pool and must not create sessions: the unit
    tests' registry, for what runs no sandbox (cg_registry_run_ended). */
cg_registry_t *cg_registry_new (const cg_config_t *config, cg_backend_t *backend,
                                cg_instance_t *instance, cg_egress_t *egress);

/*  --egress proxy's service the sandboxes get their way out from (borrowed), or NULL. */
cg_egress_t *cg_registry_egress (cg_registry_t *self);

/*  Asks every session's runner to stop (their sandboxes are destroyed in parallel);
    cg_registry_destroy then waits for them. */
void cg_registry_stop (cg_registry_t *self);

/*  Stops every runner and waits for each, frees what they sent that was not read (an
    outcome included) and frees the registry. Safe on NULL. */
void cg_registry_destroy (cg_registry_t **self_p);

/*  Returns OWNER's session ID, or NULL. */
cg_registry_session_t *cg_registry_find (cg_registry_t *self, const char *owner, const char *id);

/*  Registers OWNER's new session ID (LANGUAGE canonical, NAME may be NULL), makes its
    directory and workspace (files can be uploaded before its sandbox runs) and starts its
    runner. EGRESS_ALLOW: its own --egress proxy list (a JSON array already within the
    server's, cg_egress_narrow; copied; its sandbox is made cold, never the pool's), or NULL.
    Returns it, or NULL when --max-sessions sandboxes exist already. A workspace
    that cannot be made is logged and leaves ws NULL. */
cg_registry_session_t *cg_registry_create (cg_registry_t *self, const char *owner, const char *id,
                                           const char *language, const char *name,
                                           json_t *egress_allow);

/*  Registers a session the previous server kept (cg_keep): FIELDS (as cg_keep_restore
    fills them; their strings are taken over and FIELDS is zeroed) in directory SLOT of
    this instance, whose runner re-adopts the sandbox there; or, when SLOT is NULL, in a
    new directory whose first run starts afresh and says NOTE (its state was lost).
    Returns it, or NULL when it cannot be registered (its id is taken, or --max-sessions
    sandboxes exist: then its sandbox, if any, is removed). */
cg_registry_session_t *cg_registry_restore (cg_registry_t *self, cg_registry_session_t *fields,
                                            const char *slot, const char *note);

/*  Saves SESSION's record for the next server when it is kept across restarts
    (cg_registry_keeps); call it when its count, name or activity changed. */
void cg_registry_save (cg_registry_t *self, cg_registry_session_t *session);

/*  Returns true when no session more may start (--max-sessions sandboxes exist). */
bool cg_registry_full (cg_registry_t *self);

/*  Returns true when no one-shot sandbox more may start: --max-sessions sandboxes exist
    and the one-shot ones already fill --oneshot-reserve (the slots past the limit that
    only one-shot runs may take, so that idle sessions never starve them). */
bool cg_registry_oneshot_full (cg_registry_t *self);

/*  Says what holds the sandboxes, for OWNER's max_sessions error: OWNER's sessions by id
    with their idle times, other owners' sessions as a count with idle times (never their
    ids), one-shot runs and sandboxes still closing. Caller owns the result. */
char *cg_registry_holders (cg_registry_t *self, const char *owner);

/*  Starts a runner for a one-shot sandbox (destroyed after its first run), counted
    against the limit. Returns it, or NULL when cg_registry_oneshot_full. End it with
    cg_registry_oneshot_end, which stops it: its sandbox is destroyed in the background
    (it counts as closing meanwhile), a shared installer's before it returns. */
zactor_t *cg_registry_oneshot_start (cg_registry_t *self);

/*  As cg_registry_oneshot_start, for a run in LANGUAGE: a ready sandbox of the warm pool
    when there is one (its kernel already started), else a cold one; always a cold one
    with EGRESS_ALLOW (its own list, as cg_registry_create takes it; copied), else NULL. */
zactor_t *cg_registry_oneshot_claim (cg_registry_t *self, const char *language,
                                     json_t *egress_allow);
void cg_registry_oneshot_end (cg_registry_t *self, zactor_t **runner_p);

/*  Starts a one-shot runner (as cg_registry_oneshot_start) whose sandbox installs into
    the shared package layer (cg_session_new_shared_installer). NULL when
    cg_registry_oneshot_full. At most
    one runs at a time: the caller checks cg_registry_installing first. */
zactor_t *cg_registry_installer_start (cg_registry_t *self);

/*  Returns true while a shared installer runs (from cg_registry_installer_start until
    cg_registry_oneshot_end has stopped it and waited for its sandbox). */
bool cg_registry_installing (cg_registry_t *self);

/*  Records that PACKAGE (a name, copied) was installed in SESSION; a name already there
    is not added twice. */
void cg_registry_add_package (cg_registry_session_t *session, const char *package);

/*  Records that a run in LANGUAGE (copied) used SESSION; a language already there is not
    added twice. */
void cg_registry_add_language (cg_registry_session_t *session, const char *language);

/*  A run, as the front end that started it tells the registry: when it starts
    (cg_registry_run_begin, which copies it) or when it ended (cg_registry_run_ended).
    Everything is borrowed for the call. */
typedef struct cg_run_report_t cg_run_report_t;
struct cg_run_report_t {
    const char *front_end; /* "mcp", "gateway" */
    const char *tool;      /* the MCP tool that ran it, or "gateway" */
    /*  Whose run it is (the execution log's owner): an MCP client's id; a gateway cell's
        is its session's owner. */
    const char *client_id;
    /*  The front end's name for its client (an MCP clientInfo name, a Jupyter message
        header's username), or NULL. */
    const char *client_name;
    const char *key; /* the call that ran it (its session's busy key), or NULL */
    /*  What the records keep of it, {code, stdin?, language, script?}; NULL: neither the
        execution log nor the notebook records it. */
    json_t *request;
    const char *run_id;    /* run_python's run id, or NULL */
    const char *script;    /* run_script's script name, or NULL */
    bool silent;           /* a Jupyter silent execute_request: not a notebook cell */
    cg_outcome_t *outcome; /* how it ended, or NULL when the runner gave none */
    /*  The front end's answer to its client (NULL: none), called with ANSWER_ARG once the
        bookkeeping is done and before the observers, which the client does not wait for;
        RUN is this report, its outcome filled in. ANSWER_ARG must outlive the registry
        (a front end's own object: the answer finds its call by RUN's key). */
    void (*answer) (void *answer_arg, cg_registry_session_t *session, const cg_run_report_t *run);
    void *answer_arg;
};

/*  Told of every run that ended (cg_registry_run_ended), with ARG as registered, after
    the front end's answer. SESSION is NULL for a one-shot sandbox's run. Both are borrowed
    for the call; an observer reads the outcome and never takes anything out of it (nor
    does the answer take out what observers read: outputs, streams, message, diff). */
typedef void (cg_run_observer_fn) (void *arg, const cg_registry_session_t *session,
                                   const cg_run_report_t *run);

/*  At most this many run observers. */
#define CG_REGISTRY_RUN_OBSERVERS 8

/*  Adds FN (with ARG, borrowed: it must outlive the registry) to the run observers, told
    in the order they were added. At most CG_REGISTRY_RUN_OBSERVERS (a programmer's
    limit, asserted). */
void cg_registry_observe_runs (cg_registry_t *self, cg_run_observer_fn *fn, void *arg);

/*  As cg_registry_observe_runs, for an observer told before the answer (after the
    bookkeeping): what the client may read as soon as it has its answer (the session's
    notebook record, the script library's counters). Keep it cheap: the client waits. */
void cg_registry_observe_runs_early (cg_registry_t *self, cg_run_observer_fn *fn, void *arg);

/*  The one end of every run, whichever front end started it: SESSION's bookkeeping (NULL
    for a one-shot sandbox: none), then the early observers, then RUN's answer, then the
    other run observers, each group in the order they were added.
    The bookkeeping: SESSION is no longer busy with RUN's key, counts one execution more,
    was active now (its kernel for the run's language too), used the run's language when
    the code ran, gives its notice (cg_registry_take_notice) to the outcome when there is
    one, and has its record saved (cg_registry_save). */
void cg_registry_run_ended (cg_registry_t *self, cg_registry_session_t *session,
                            const cg_run_report_t *run);

/*  Takes RUN's report (copied; its KEY set, no outcome yet) as its run starts in SESSION
    (NULL: a one-shot sandbox). When the runner's RESULT for KEY comes, the registry ends
    the run itself (cg_registry_run_ended, with the result's outcome and the session as it
    is then), before any front end sees the event. Returns false, logged, when a run is
    begun under KEY already or as many runs as runners can exist are begun (then no RESULT
    is taken: it goes to the events' function). */
bool cg_registry_run_begin (cg_registry_t *self, const cg_registry_session_t *session,
                            const cg_run_report_t *run);

/*  Ends the run begun under KEY now, with OUTCOME (taken) in place of its runner's: for a
    front end that stops waiting (a cancelled call answered at once, a client gone). A
    RESULT that comes later for KEY goes to the events' function. Returns false when no run
    was begun under KEY (OUTCOME is freed). */
bool cg_registry_run_end_now (cg_registry_t *self, const char *key, cg_outcome_t *outcome);

/*  Whether a run is begun under KEY (and not yet ended). */
bool cg_registry_run_begun (cg_registry_t *self, const char *key);

/*  Forgets the run begun under KEY, if any, without ending it: its front end's request
    ended otherwise (answered by someone else, or its client gone), and nothing is told. */
void cg_registry_run_drop (cg_registry_t *self, const char *key);

/*  The runners' events the registry does not handle itself, each given to FN with ARG
    (the process routes them to the front end that owns their key): everything but REPORT,
    KERNELS and the RESULT of a run begun. FN may take what the event holds
    (cg_runner_msg.h); the registry frees the event after. */
typedef void (cg_registry_events_fn) (void *arg, cg_runner_event_t *event);
void cg_registry_on_events (cg_registry_t *self, cg_registry_events_fn *fn, void *arg);

/*  Marks SESSION busy with call KEY (copied), or idle when KEY is NULL (a finished call
    also counts as activity). */
void cg_registry_set_busy (cg_registry_session_t *session, const char *key);

/*  SESSION was used now: it is not idle. */
void cg_registry_touch (cg_registry_session_t *session);

/*  Takes SESSION out of the registry and tells its runner to stop. It is freed once the
    runner has destroyed the sandbox (its pipe signals on the loop), so closing never holds
    up the main loop. SESSION must not be used after this. */
void cg_registry_retire (cg_registry_t *self, cg_registry_session_t *session);

/*  Returns SESSION's notice for its first result and forgets it (caller frees), or NULL.
    A session gets one when cg_registry_create makes it under an id its owner's
    close_session closed within the idle TTL (at most 1024 closed ids are remembered):
    it is a new session, and whoever used that id should hear that the state is gone. */
char *cg_registry_take_notice (cg_registry_session_t *session);

/*  Returns OWNER's sessions (NULL: everyone's), in no set order, as a new list of
    borrowed pointers the caller destroys. */
zlistx_t *cg_registry_sessions (cg_registry_t *self, const char *owner);

/*  The strings of LIST (a session's packages or languages; NULL: none) as a new JSON
    array. */
json_t *cg_registry_names (zlistx_t *list);

/*  Retires the sessions idle (not busy, no Jupyter front end attached) for longer than
    the idle TTL, and tends the warm
    pool (cg_pool_tick; it refills beside running calls too). Returns the ms until it
    wants to be called again (at most 60000), or -1 when nothing is due. */
int cg_registry_reap_idle (cg_registry_t *self);

/*  Puts the registry on LOOP (borrowed; it must outlive the registry): cg_registry_reap_idle
    runs before every wait, the results socket every runner sends to is read (its events
    handled, or handed to cg_registry_on_events' function), and the pipes of the runners
    closing are watched (each is freed once its runner has destroyed its sandbox). Without
    it the closing runners are joined at cg_registry_destroy. */
void cg_registry_on_loop (cg_registry_t *self, cg_loop_t *loop);

/*  Returns the session whose sandbox is in slot SLOT (of any owner), or NULL. */
cg_registry_session_t *cg_registry_find_slot (cg_registry_t *self, const char *slot);

/*  Sets *ONESHOTS to the one-shot sandboxes running and *CLOSING to the sessions whose
    sandboxes are being destroyed (neither is in cg_registry_sessions). */
void cg_registry_counts (cg_registry_t *self, size_t *oneshots, size_t *closing);

/*  A runner's event about its session (cg_runner_msg.h): REPORT (its kernel's host pid,
    the sandbox's memory) or KERNELS (each kernel's record updated: a new one gets its id;
    the report and its fds are taken from EVENT). Unknown slots are ignored. Returns true
    when EVENT was one of these. */
bool cg_registry_runner_report (cg_registry_t *self, cg_runner_event_t *event);

/*  The kernel whose id is ID (of any owner's session), with its session in *SESSION_P;
    or NULL. */
cg_registry_kernel_t *cg_registry_kernel_find (cg_registry_t *self, const char *id,
                                               cg_registry_session_t **session_p);

/*  SESSION's kernel record for LANGUAGE, or NULL when it never had one. */
cg_registry_kernel_t *cg_registry_session_kernel (cg_registry_session_t *session,
                                                  const char *language);

/*  Fills *USAGE with SESSION's workspace file system figures. Returns 1, or 0 when the
    workspace has no file system of its own (no limit), or -1 when it cannot tell. */
int cg_registry_usage (cg_registry_session_t *session, cg_wsfs_usage_t *usage);

/*  The /files/ route's lookup (cg_downloads_lookup_fn; ARG is the registry): the workspace
    of the session ID (of any owner) whose download token is the TOKEN_LEN bytes at TOKEN
    (compared in constant time), else that of a one-shot run's kept files (cg_kept), or
    NULL. */
cg_workspace_t *cg_registry_download (void *arg, const char *id, const char *token,
                                      size_t token_len);

/*  The metrics' gauges (cg_metrics_gauges_fn; ARG is the registry): live sessions, by
    language, one-shot runners in flight, sandboxes closing and the limit. */
void cg_registry_metrics_cb (void *arg, cg_metrics_gauges_t *gauges);

/*  Kept sessions (--keep-sessions; bridge/cg_registry_keep.c). cg_registry_keeps: whether
    SESSION is kept across a restart under CONFIG (keeping is on and its owner is the stdio
    client). cg_registry_keep_save writes SESSION's record into its directory (atomically,
    0600) for the next server, its last activity as wall-clock time so the idle TTL runs on
    across a restart; failures are logged. cg_registry_keep_forget removes SESSION_DIR's
    record. cg_registry_keep_restore reads SESSION_DIR's record into SESSION (zeroed first,
    its strings new); _restore_json reads it from RECORD. Both return 0, or -1 when there is
    no valid record. */
bool cg_registry_keeps (const cg_config_t *config, const cg_registry_session_t *session);
void cg_registry_keep_save (const cg_registry_session_t *session);
void cg_registry_keep_forget (const char *session_dir);
int cg_registry_keep_restore (const char *session_dir, cg_registry_session_t *session);
int cg_registry_keep_restore_json (json_t *record, cg_registry_session_t *session);

#endif
