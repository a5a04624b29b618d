/*  cg_session — one sandbox (container + workspace) with its kernels started lazily, and
    the execution of one cell into one outcome (cg_outcome_t). */
#ifndef CG_SESSION_H
#define CG_SESSION_H

#include "containers/cg_container.h"
#include "base/cg_config.h"
#include "base/cg_error.h"
#include "bridge/cg_kernel.h"
#include "bridge/cg_outcome.h"
#include "egress/cg_egress.h"
#include "artifacts/cg_workspace.h"

#include <czmq.h>
#include <jansson.h>

typedef struct cg_session_t cg_session_t;

/*  One execute_code call, validated. */
typedef struct {
    const char *language; /* canonical: "python" */
    const char *code;
    const char *stdin_text; /* may be NULL */
    double timeout_s;
    const char *execution_id; /* exec_<12 hex> */
    const char *session_id;   /* the client's id, or NULL for a one-shot sandbox */
    json_t *files;            /* seed 003: [{path, base64}] written first, or NULL (borrowed) */
    cg_output_fn *on_output;  /* live output while it runs, or NULL */
    void *on_output_arg;
    void (*ask) (void *arg, const char *prompt, bool password); /* cg_run_t's ask, or NULL */
    void *ask_arg;
} cg_exec_request_t;

/*  Creates the session's directories SESSIONS_DIR/SLOT (its package layer site/ among
    them, mounted at CG_SITE_MOUNT) and starts its container named
    CONTAINER_PREFIX + SLOT (SLOT: 12 hex digits; NULL picks a random one). BACKEND and
    CONFIG are borrowed. Returns a new session the caller owns, or NULL with *err set
    (nothing is left behind). */
cg_session_t *cg_session_new (cg_backend_t *backend, const cg_config_t *config,
                              const char *sessions_dir, const char *container_prefix,
                              const char *slot, cg_error_t **err);

/*  As cg_session_new, labelled KIND (the sandbox's org.cellgate.kind annotation;
    cg_session_new labels a session with a SLOT "session" and one without "oneshot"). Its
    org.cellgate.instance is the name in CONTAINER_PREFIX (cg_instance_prefix: "cg-<name>-")
    and its org.cellgate.session the slot; CLIENT_SESSION (or NULL) is the client's session
    id it is made for (cg_sandbox_t.client_session: the docker backend's label session_id). */
cg_session_t *cg_session_new_as (cg_backend_t *backend, const cg_config_t *config,
                                 const char *sessions_dir, const char *container_prefix,
                                 const char *slot, cg_sandbox_kind_t kind,
                                 const char *client_session, cg_error_t **err);

/*  As cg_session_new with a random slot, for a one-shot install into the shared package
    layer: the sandbox's own layer (CG_SITE_MOUNT, read-write) is the backend's shared one
    (cg_backend_shared_site) instead of a directory of the session's. */
cg_session_t *cg_session_new_shared_installer (cg_backend_t *backend, const cg_config_t *config,
                                               const char *sessions_dir,
                                               const char *container_prefix, cg_error_t **err);

/*  Takes over the sandbox a previous server kept in SESSIONS_DIR/SLOT (cg_keep): its
    container, when still running, and each kernel it had (cg_kernel_adopt). A sandbox
    that cannot be taken over (container or a kernel gone) is removed, the directory and
    workspace kept, and NOTE (NOTE_SIZE bytes) says so for the next run's result; its
    kernels start afresh on use. Returns the session, or NULL when the slot never had a
    sandbox (make it with cg_session_new). */
cg_session_t *cg_session_adopt (cg_backend_t *backend, const cg_config_t *config,
                                const char *sessions_dir, const char *container_prefix,
                                const char *slot, char *note, size_t note_size);

/*  Gives the session's sandbox --egress proxy's way out (egress/cg_egress): a listener in
    its network namespace, now when its container runs and again each time it restarts,
    and the proxy settings in every process it starts. EGRESS_ALLOW is the session's own
    list (a JSON array within the server's; copied; NULL: the server's list). Returns 0,
    or -1 with *err set (the caller ends the session: it must not run without its list). */
int cg_session_egress (cg_session_t *self, cg_egress_t *egress, json_t *egress_allow,
                       cg_error_t **err);

/*  The sandbox's proxy requests since the last take (cg_egress_take), or NULL when it has
    no way out. Caller owns the result. */
json_t *cg_session_egress_take (cg_session_t *self);

/*  Frees *SELF_P (sets it to NULL), leaving its container, kernels and directories
    running for the next server (cg_session_adopt). Safe on NULL. */
void cg_session_keep (cg_session_t **self_p);

/*  Makes the workspace in SESSION_DIR (an existing directory) for CONFIG's sandbox user:
    with --workspace-mb, a file system of its own of that size and --workspace-inodes
    (cg_wsfs_create); a workspace that already has one keeps it. Returns 0, or -1 with
    *err set saying why and that --workspace-mb 0 turns the limit off. */
int cg_session_workspace_create (const cg_config_t *config, const char *session_dir,
                                 cg_error_t **err);

/*  Removes SESSION_DIR: unmounts the workspace's file system, if it has one, then removes
    the tree (cg_rm_rf). Failures are logged. */
void cg_session_dir_remove (const char *session_dir);

/*  The names a session's sandbox gets, for whoever must reach it from outside (the pool
    weighing a warming one): its container id, CONTAINER_PREFIX + SLOT, and its bundle
    directory in SESSION_DIR. Caller owns the result. */
char *cg_session_container_id (const char *container_prefix, const char *slot);
char *cg_session_bundle_dir (const char *session_dir);

/*  Kills the kernels and the container, unmounts the workspace's file system and removes
    the session's directories. */
void cg_session_destroy (cg_session_t **self_p);

/*  Returns the session's host directory (holding bundle/, workspace/, run/, ipc/).
    Borrowed. */
const char *cg_session_dir (cg_session_t *self);

/*  Returns the host-side access to the session's workspace (borrowed), or NULL. */
cg_workspace_t *cg_session_workspace (cg_session_t *self);

/*  Runs REQUEST, starting its language's kernel first if needed, and escalating a
    timeout (interrupt, then kernel restart, then container restart). CONTROL and
    CONTROL_CB are passed to cg_kernel_execute. Returns how the run went (a setup
    failure when the code could not run), which the caller owns. Never returns NULL. */
cg_outcome_t *cg_session_execute (cg_session_t *self, const cg_exec_request_t *request,
                                  zsock_t *control, cg_control_cb *control_cb, void *arg);

/*  Starts the kernel for LANGUAGE if it is not running. Returns it (owned by the
    session), or NULL with *err set. */
cg_kernel_t *cg_session_kernel (cg_session_t *self, const char *language, cg_error_t **err);

/*  Starts, in SELF's running sandbox, a bash that waits for the first one-shot command
    (cg_command_prestart); that command then runs in it. Returns 0, or -1 with *err set. */
int cg_session_prestart_command (cg_session_t *self, cg_error_t **err);

/*  What the server shows of SELF: the host pid of LANGUAGE's kernel in *PID (0 when it
    does not run) and the sandbox's memory use in *MEMORY_MB (-1 when unknown). */
void cg_session_report (cg_session_t *self, const char *language, long *pid, double *memory_mb);

/*  Fills ITEMS (room for MAX) with what to poll while no cell runs (every running
    kernel's process output and channels), to be drained with cg_session_drain, which
    keeps the kernels' log tails and drops whatever they sent between cells. Returns how
    many were written. */
int cg_session_idle_items (cg_session_t *self, zmq_pollitem_t *items, int max);
void cg_session_drain (cg_session_t *self);

/*  SELF's kernel at INDEX (0 .. CG_SESSION_KERNELS - 1), NULL when none runs there;
    *LANGUAGE gets its language, NULL when the slot never had one. */
#define CG_SESSION_KERNELS 4
cg_kernel_t *cg_session_kernel_at (cg_session_t *self, int index, const char **language);

/*  Adds ENV (NULL-terminated KEY=VALUE strings, copied) to the environment of
    LANGUAGE's kernel when it starts (the Jupyter gateway's KERNEL_* variables). Returns
    0, or -1 with *err set. */
int cg_session_kernel_env (cg_session_t *self, const char *language, const char *const *env,
                           cg_error_t **err);

/*  Interrupts LANGUAGE's kernel (as a timeout does) when it runs. Returns 0, or -1 when
    there is none or it could not be signalled. */
int cg_session_interrupt (cg_session_t *self, const char *language);

/*  Replaces LANGUAGE's kernel with a fresh one (its state is gone), restarting the whole
    container when a kernel cannot start. Returns 0, or -1 with *err set. */
int cg_session_restart (cg_session_t *self, const char *language, cg_error_t **err);

/*  Sets the scheduling priority of every thread in SELF's sandbox to NICE. */
void cg_session_renice (cg_session_t *self, int nice);

#endif
