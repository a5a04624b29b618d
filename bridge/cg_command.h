/*  cg_command — one-shot commands (bash) in a running sandbox: a new process per call,
    with stdin, a deadline, cancellation and the exit code. */
#ifndef CG_COMMAND_H
#define CG_COMMAND_H

#include "containers/cg_container.h"
#include "bridge/cg_kernel.h"

#include <czmq.h>

/*  A bash already started in a sandbox, waiting for the script to run: a one-shot run from
    the warm pool then pays a pipe write and an exec of bash instead of a runtime exec
    (a process of the runtime, namespace entry, the sandbox's set-up) per call. */
typedef struct cg_command_waiter_t cg_command_waiter_t;

/*  Starts, in the running SANDBOX, as a command would be started (the sandbox user, cwd
    /mnt/data, the kernels' environment), a bash that reads one line from its standard
    input, a script's path, and then becomes `bash <that script>` with the rest of that
    input as the script's standard input. No code of the user's runs before it is given
    one. Returns it, or NULL with *err set. */
cg_command_waiter_t *cg_command_prestart (cg_backend_t *backend, const cg_sandbox_t *sandbox,
                                          cg_error_t **err);

/*  Destroys *SELF_P when not NULL and sets it to NULL: its input closes (the waiting bash
    reads no line and exits) and its runtime process is reaped. */
void cg_command_waiter_destroy (cg_command_waiter_t **self_p);

/*  Runs CODE as a bash script inside the running SANDBOX (cwd /mnt/data, the sandbox
    user, the kernels' environment), feeding STDIN_TEXT (NULL: none) on its standard
    input. Output goes to RUN->out and RUN->err. At DEADLINE_US (cg_now_us clock), or
    when CONTROL_CB answers CG_CONTROL_CANCEL for a message on CONTROL, the command and
    everything it started are killed (RUN->timed_out or RUN->cancelled is set); the host
    pids in KEEP (KEEP_COUNT: the session's kernels) are spared. Processes the script
    left in the background keep running, but their output is no longer read once the
    script has ended. Sets *EXIT_CODE (128 + N for a signal N). Returns CG_EXEC_DONE, or
    CG_EXEC_ABORTED (the control callback asked to stop; the command was killed), or
    CG_EXEC_FAILED with *err set when the command could not be started. When *WAITER is
    not NULL (WAITER itself may be NULL), the command runs in that prestarted bash, which
    is used up: *WAITER is set to NULL. */
cg_exec_end_t cg_command_run (cg_backend_t *backend, const cg_sandbox_t *sandbox, const pid_t *keep,
                              size_t keep_count, const char *code, const char *stdin_text,
                              int64_t deadline_us, zsock_t *control, cg_control_cb *control_cb,
                              void *arg, cg_run_t *run, cg_command_waiter_t **waiter,
                              int *exit_code, cg_error_t **err);

#endif
