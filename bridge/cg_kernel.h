/*  cg_kernel — a Jupyter kernel process in a sandbox and its channels: start, handshake,
    execute (its messages go to cg_run, input requests are answered), interrupt,
    heartbeat, shutdown. */
#ifndef CG_KERNEL_H
#define CG_KERNEL_H

#include "containers/cg_container.h"
#include "base/cg_config.h"
#include "base/cg_error.h"
#include "bridge/cg_kernelspec.h"
#include "bridge/cg_run.h"
#include "bridge/cg_wire.h"

#include <czmq.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct cg_kernel_t cg_kernel_t;

/*  How an execution ended. */
typedef enum {
    CG_EXEC_DONE,    /* execute_reply and status idle arrived */
    CG_EXEC_STUCK,   /* interrupted (timeout or cancel) but did not finish in the grace */
    CG_EXEC_DIED,    /* the kernel process exited or stopped answering heartbeats */
    CG_EXEC_ABORTED, /* the control callback asked to stop (server shutdown) */
    CG_EXEC_FAILED,  /* the request could not be sent */
} cg_exec_end_t;

/*  What the control callback asks for when CONTROL is readable. INPUT: the line the user
    gave for the running cell's pending input request (RUN's ask) is in *INPUT (the caller
    frees it; "\x04" for EOF). */
typedef enum {
    CG_CONTROL_NONE,
    CG_CONTROL_CANCEL,
    CG_CONTROL_ABORT,
    CG_CONTROL_INPUT
} cg_control_t;
typedef cg_control_t (cg_control_cb) (zsock_t *control, void *arg, char **input);

/*  Starts a kernel of SPEC inside the running SANDBOX and waits for its kernel_info
    reply. All pointers are borrowed and must outlive the kernel. Returns a new kernel
    the caller owns, or NULL with *err set (the process is killed). */
cg_kernel_t *cg_kernel_start (cg_backend_t *backend, const cg_sandbox_t *sandbox,
                              const cg_kernel_spec_t *spec, const cg_config_t *config,
                              cg_error_t **err);

/*  Takes over the kernel of SPEC a previous server left running in SANDBOX (cg_keep): its
    key from the host-only copy cg_kernel_start wrote in the bundle dir, its pid from the
    host's pid file (still a process of SANDBOX's container), its channels connected as
    cg_kernel_start connects them (never following anything the sandbox planted), and a
    kernel_info reply within the start timeout. Returns the kernel (its output log is
    not read: the old server held that pipe), or NULL with *err set (nothing is killed). */
cg_kernel_t *cg_kernel_adopt (cg_backend_t *backend, const cg_sandbox_t *sandbox,
                              const cg_kernel_spec_t *spec, const cg_config_t *config,
                              cg_error_t **err);

/*  As cg_kernel_destroy, but the kernel process and its key are left for the next
    server (cg_kernel_adopt): only this server's sockets and descriptors are closed. */
void cg_kernel_keep (cg_kernel_t **self_p);

/*  Stops the kernel (shutdown_request, then SIGKILL after a short wait), closes its
    sockets, reaps its process and sets *self_p to NULL. */
void cg_kernel_destroy (cg_kernel_t **self_p);

/*  Runs CODE, answering input requests from STDIN_TEXT line by line (when exhausted the
    kernel gets EOF; NULL: the request says allow_stdin false, so input() fails at once),
    until DEADLINE_US (cg_now_us clock), then interrupts and waits the configured grace.
    While it runs, CONTROL (may be NULL) is polled and CONTROL_CB decides what its messages
    mean. Fills RUN. */
cg_exec_end_t cg_kernel_execute (cg_kernel_t *self, const char *code, const char *stdin_text,
                                 int64_t deadline_us, zsock_t *control, cg_control_cb *control_cb,
                                 void *arg, cg_run_t *run);

/*  Reaps the kernel's exited child processes (zombies left when a cell's children were
    killed: only their parent, the kernel, can reap them, and they hold the sandbox's
    pid slots). Call it only after every other process in the sandbox was killed: it
    waits for all of the kernel's children (at most 5 s). Runs silently in a throwaway
    namespace; the user's state is untouched. Python kernels only. Returns 0, or -1 when the kernel did not complete it. */
int cg_kernel_reap_children (cg_kernel_t *self);

/*  Runs CODE silently (no history, so the execution count does not move; no
    execute_input or execute_result; no input()), waiting at most TIMEOUT_MS; whatever
    it prints is dropped. Returns 0 when it ran and replied "ok", else -1. */
int cg_kernel_run_silent (cg_kernel_t *self, const char *code, int timeout_ms);

/*  As cg_kernel_run_silent, CONTROL (may be NULL) polled while it runs as cg_kernel_execute
    polls it: CONTROL_CB's CG_CONTROL_ABORT stops waiting at once (returns -1; the code may
    still run: the caller ends the kernel). */
int cg_kernel_run_silent_ctl (cg_kernel_t *self, const char *code, int timeout_ms, zsock_t *control,
                              cg_control_cb *control_cb, void *arg);

/*  Interrupts the running cell per the spec's interrupt_mode. Returns 0 or -1. */
int cg_kernel_interrupt (cg_kernel_t *self);

/*  Returns the host pid of the kernel process, or 0 when unknown. */
pid_t cg_kernel_pid (cg_kernel_t *self);

/*  Returns true when the kernel process has exited (or its runtime's exec process has),
    for instance killed between two cells; false while it runs, even when it is too busy
    to answer. Costs a few system calls, no message. */
bool cg_kernel_exited (cg_kernel_t *self);

/*  Reads pending kernel process output (kept as a short tail for error messages).
    Returns the fd to poll for it, or -1. */
int cg_kernel_log_fd (cg_kernel_t *self);
void cg_kernel_drain_log (cg_kernel_t *self);

/*  Between cells. Fills ITEMS (room for MAX, at least 6) with what to poll while no cell
    runs: the kernel's process output, its channels but the heartbeat, and (room allowing)
    their monitors' fds, which stay meaningful only if every wake on them is followed by
    cg_kernel_discard. Returns how many were written. */
int cg_kernel_idle_items (cg_kernel_t *self, zmq_pollitem_t *items, int max);

/*  Between cells: reads and drops what the kernel sent since its last cell (at most a few
    hundred messages per call), so nothing it sends then is held by the server. Returns
    how many messages were dropped. */
size_t cg_kernel_discard (cg_kernel_t *self);

/*  Returns how many kernel messages failed verification and were dropped. */
size_t cg_kernel_rejected (cg_kernel_t *self);

/*  Returns what the kernel's connection file says (ip as seen inside the sandbox, ports,
    key). Borrowed; lives as long as the kernel. */
const json_t *cg_kernel_connection_info (cg_kernel_t *self);

/*  Returns the O_PATH fd of the kernel's bound ipc socket for PORT (1 shell, 2 iopub,
    3 stdin, 4 control, 5 hb, as in the connection file), or -1. Borrowed: it lives as
    long as the kernel. /proc/<this pid>/fd/<fd> reaches that socket and nothing else. */
int cg_kernel_endpoint_fd (cg_kernel_t *self, int port);

#endif
