/*  cg_session_int — what the files of cg_session share and nothing else includes: the
    session's struct and the helpers that make and free one without touching its sandbox.
    cg_session.c creates, runs and destroys sessions; cg_session_keep.c keeps them across a
    server's restart (--keep-sessions). */
#ifndef CG_SESSION_INT_H
#define CG_SESSION_INT_H

#include "bridge/cg_command.h"
#include "bridge/cg_kernelspec.h"
#include "bridge/cg_session.h"
#include "artifacts/cg_workspace.h"
#include "egress/cg_egress.h"

#define MAX_KERNELS 4
#define S_STATE_LOST \
    "variables and imports from earlier calls are gone; files in " CG_WORKSPACE_MOUNT " remain."

struct cg_session_t {
    cg_backend_t *backend;     /* borrowed */
    const cg_config_t *config; /* borrowed */
    char *dir;                 /* host dir holding bundle/, workspace/, run/ */
    char *bundle_dir;
    char *workspace;
    char *run_dir;
    char *ipc_dir;
    char *site_dir; /* its package layer: its own, or the backend's shared one */
    char *container_id;
    char *instance;       /* the server instance's name, from the container prefix */
    char *client_session; /* the client's session id it was made for, or NULL */
    char slot[13];
    cg_workspace_t *ws;   /* host-side access to the workspace */
    cg_sandbox_t sandbox; /* points into the strings above */
    bool container_running;
    long oom_kills; /* OOM kills counted so far, -1 when unknown */
    double ran_mb;  /* memory in use as the last run ended, for the report after it; -1 */
    cg_kernel_spec_t *specs[MAX_KERNELS];
    cg_kernel_t *kernels[MAX_KERNELS];
    cg_command_waiter_t *waiter; /* a bash waiting for the first command, or NULL */
    cg_egress_t *egress;         /* --egress proxy's service, or NULL: no way out */
    json_t *egress_allow;        /* the session's own list, or NULL: the server's */
    bool egress_attached;        /* its sandbox has its listener now */
};

/*  Gives the running sandbox its way out (cg_session_egress), when the session has one.
    Returns 0, or -1 with *err set. */
int cg_session_egress_attach_ (cg_session_t *self, cg_error_t **err);

/*  Takes the sandbox's way out away (its connections close). */
void cg_session_egress_detach_ (cg_session_t *self);

/*  A session's paths in SESSIONS_DIR/SLOT (NULL: a new random slot) and its sandbox's
    labels (instance, slot, KIND), nothing made yet. */
cg_session_t *cg_session_alloc_ (cg_backend_t *backend, const cg_config_t *config,
                                 const char *sessions_dir, const char *container_prefix,
                                 const char *slot_or_null, cg_sandbox_kind_t kind,
                                 bool shared_site);

/*  The kernel slot of LANGUAGE: its index, or with CREATE a free one; -1 when none. */
int cg_session_kernel_index_ (cg_session_t *self, const char *language, bool create);

/*  Loads LANGUAGE's kernel spec into slot INDEX. Returns 0, or -1 with *err set. */
int cg_session_load_spec_ (cg_session_t *self, int index, const char *language, cg_error_t **err);

/*  Frees *SELF_P, leaving its kernels, container and directories as they are. */
void cg_session_free_ (cg_session_t **self_p);

#endif
