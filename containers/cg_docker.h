/*  cg_docker — the Docker Engine API backend's exec: starting a process in a sandbox
    container and the helper process (`cellgate docker-exec`) that carries its standard
    streams and exit status, as `runc exec` does for the OCI backend. */
#ifndef CG_DOCKER_H
#define CG_DOCKER_H

#include "containers/cg_container.h"
#include "containers/cg_docker_api.h"

/*  Creates an exec of SPEC in SANDBOX's container through API (as LIMITS' sandbox user)
    and starts the helper that attaches to it with SPEC's fds as its stdin, stdout and
    stderr. Returns the helper's pid (the caller's child; its exit status is the process's
    exit code, 125 when the attach failed), or -1 with *err set when the engine refused the
    exec or the helper could not start. SPEC->pid_file, when set, receives the process's
    host pid once it runs. */
pid_t cg_docker_exec_start (cg_docker_api_t *api, const cg_sandbox_limits_t *limits,
                            const cg_sandbox_t *sandbox, const cg_exec_spec_t *spec,
                            cg_error_t **err);

/*  The helper's main: `cellgate docker-exec HOST unix|tcp EXEC_ID PID_FILE|-`. Attaches to
    the started exec, copies fd 0 to its stdin (closing it at EOF) and its stdout and
    stderr to fds 1 and 2, and exits with its exit code. Returns the exit status. */
int cg_docker_exec_main (int argc, char **argv);

#endif
