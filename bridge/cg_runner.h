/*  cg_runner — an actor that owns one session and runs its cells one at a time, so a
    long cell never blocks the server or other sessions. */
#ifndef CG_RUNNER_H
#define CG_RUNNER_H

#include "containers/cg_container.h"
#include "base/cg_config.h"

#include <czmq.h>
#include <stdbool.h>

/*  What a runner actor needs; all borrowed except the struct itself, which the actor
    takes over and frees. */
typedef struct {
    cg_backend_t *backend;
    const cg_config_t *config;
    const char *sessions_dir;
    const char *container_prefix;
    const char *results_endpoint; /* inproc PULL socket the results go to */
    char slot[13];                /* the session's slot (dir and container name) */
    char language[16];            /* the session's language: its kernel's pid is reported */
    bool oneshot;                 /* destroy the sandbox after the first run */
    bool shared_installer;        /* a one-shot whose sandbox writes the shared package
                                     layer (cg_session_new_shared_installer) */
    bool pooled;                  /* a warm pool's: warms up first (see WARM below) */
    const char *preload;          /* Python code a pooled kernel runs silently, or NULL */
    bool adopt;                   /* re-adopt the sandbox a previous server kept in the slot */
    char note[512];               /* said by the first run's result when set (state lost) */
} cg_runner_args_t;

/*  The actor (zactor_fn). Pipe commands (C values, no JSON text):
      EXEC <key> <request>        run a request, a json_t pointer the runner takes over
                                  (see cg_exec_request_t; fields language, code, stdin,
                                  timeout, execution_id, session_id, files, progress);
                                  its outcome goes to results_endpoint as
                                  RESULT <key> <outcome> (a cg_outcome_t pointer the
                                  receiver owns and destroys with cg_outcome_destroy);
                                  a runner stopped ($TERM) while it runs sends nothing
      START <key> <language> [<env>]  start the sandbox and LANGUAGE's kernel now (ENV:
                                  a JSON object of strings added to the kernel's
                                  environment, the gateway's KERNEL_*); answered
                                  with STARTED <key> <why it failed, or "">
      CANCEL                      interrupt the running cell, if any
      INTERRUPT <language>        interrupt LANGUAGE's kernel (the Jupyter gateway's; a
                                  running cell of this runner's ends interrupted)
      RESTART <key> <language>    replace LANGUAGE's kernel with a fresh one; answered
                                  with RESTARTED <key> <why it failed, or ""> (refused
                                  while a call runs)
      CLAIM <oneshot>             a pooled runner is handed over ("1": to a one-shot
                                  run, destroyed after its first run): its priority is
                                  raised to normal
      KEEP                        at the next $TERM, leave the sandbox and its kernels
                                  running for the next server (cg_keep)
      $TERM                       stop: the session's sandbox is destroyed
    A pooled runner first warms up at a low priority (nice 10): it creates the sandbox,
    starts LANGUAGE's kernel (bash has none) and runs PRELOAD silently, then answers on
    the pipe READY <memory in KiB> or FAILED <why>, before any command.
    Also sent to results_endpoint:
      PROGRESS <key> <stream> <text>   live output of a request that asked for progress
      LOG <level> <text>               every cg_log line of the runner's thread
      REPORT <slot> <pid> <KiB>        after each START and EXEC of a session: its
                                       kernel's host pid and the sandbox's memory
                                       (0 and -1 when unknown)
      KERNELS <slot> <report>          after a REPORT when a kernel of the session
                                       started, restarted or went: a json_t pointer the
                                       receiver owns, an array of {language, pid, key,
                                       shell, iopub, stdin, control, hb}, the last five
                                       copies of the channels' endpoint fds (O_PATH) that
                                       the receiver closes (cg_registry_kernels) */
void cg_runner_actor (zsock_t *pipe, void *args);

#endif
