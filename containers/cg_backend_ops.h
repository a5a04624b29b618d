/*  cg_backend_ops — what each sandbox backend implements behind cg_container.h: one table
    of functions per backend (OCI through runc or crun, the Docker Engine API), which
    cg_backend.c dispatches to. Backends only; the rest of cellgate uses cg_container.h. */
#ifndef CG_BACKEND_OPS_H
#define CG_BACKEND_OPS_H

#include "containers/cg_container.h"

#include <jansson.h>

/*  One backend. Every function takes the backend's own state (IMPL, from NEW) and keeps
    the contract of the cg_container_* function of the same name. */
typedef struct {
    const char *kind;  /* --backend's value: "oci", "rootless", "docker" */
    bool fixed_labels; /* a container's labels, the client's session id among them, are
                            set when it is made (cg_backend_pools_sessions) */
    /*  Makes the backend's state for LIMITS (copied; strings borrowed) with SHARED_SITE,
        where the shared package layer's host dir (or NULL) will be once the backend is made
        (borrowed; read when sandboxes are made). NULL with *err set when the
        backend cannot run here. */
    void *(*new) (const cg_sandbox_limits_t *limits, const char *const *shared_site,
                  cg_error_t **err);
    void (*destroy) (void **impl_p);
    const char *(*name) (void *impl);
    int (*create) (void *impl, const cg_sandbox_t *sandbox, cg_error_t **err);
    pid_t (*exec) (void *impl, const cg_sandbox_t *sandbox, const cg_exec_spec_t *spec,
                   cg_error_t **err);
    bool (*owns_pid) (void *impl, const cg_sandbox_t *sandbox, pid_t pid);
    int (*signal_others) (void *impl, const cg_sandbox_t *sandbox, int signal, const pid_t *keep,
                          size_t keep_count, cg_error_t **err);
    int (*renice) (void *impl, const cg_sandbox_t *sandbox, int nice);
    int (*stats) (void *impl, const cg_sandbox_t *sandbox, cg_container_stats_t *stats,
                  cg_error_t **err);
    void (*peak_begin) (void *impl, const cg_sandbox_t *sandbox, cg_container_peak_t *peak);
    double (*peak_end) (void *impl, const cg_sandbox_t *sandbox, cg_container_peak_t *peak);
    int (*destroy_container) (void *impl, const cg_sandbox_t *sandbox, cg_error_t **err);
    int (*remove_orphans) (void *impl, const char *prefix, cg_error_t **err);
    int (*remove_unowned) (void *impl, cg_container_owned_fn *owned, void *arg, cg_error_t **err);
} cg_backend_ops_t;

/*  What backends share (cg_backend.c). */

/*  Spawns PATH with ARGV (the environment this process has), with SPEC's stdin, stdout and
    stderr as fds 0 to 2 and EXTRA_FD as fd 3 when it is not -1, in a process group of its
    own (a terminal's ^C to the server must not reach it) with no signal blocked. Returns
    its pid, or -1 with *err set naming sandbox ID. */
pid_t cg_backend_spawn (const char *path, char *const argv[], const cg_exec_spec_t *spec,
                        int extra_fd, const char *id, cg_error_t **err);

/*  Removes the containers of every server instance named by a key of INSTANCES (a JSON
    object, 12 hex keys; a value is the state dir its containers name, else true: this
    server's) for which OWNED (ARG) answers false, with REMOVE_ORPHANS (IMPL,
    "cg-<instance>-"), logging each. Returns how many were removed, or -1 with *err set. */
int cg_backend_remove_instances (
    json_t *instances, cg_container_owned_fn *owned, void *arg, void *impl,
    int (*remove_orphans) (void *impl, const char *prefix, cg_error_t **err), cg_error_t **err);

/*  cg_container_owns_pid for runc's layout (the oci and rootless backends): PID's cgroup is
    named for SANDBOX's container id. */
bool cg_backend_runc_owns_pid (void *impl, const cg_sandbox_t *sandbox, pid_t pid);

/*  A backend of OPS for LIMITS, as cg_backend_new makes one of the kind --backend names:
    for a test's own table (production code names its backend by kind). NULL with *err
    set when OPS's NEW fails. */
cg_backend_t *cg_backend_of (const cg_backend_ops_t *ops, const cg_sandbox_limits_t *limits,
                             cg_error_t **err);

extern const cg_backend_ops_t cg_oci_ops;
extern const cg_backend_ops_t cg_rootless_ops;
extern const cg_backend_ops_t cg_docker_ops;

#endif
