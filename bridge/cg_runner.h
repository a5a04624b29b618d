/*  cg_runner — an actor that owns one session and runs its cells one at a time, so a
    long cell never blocks the server or other sessions. */
#ifndef CG_RUNNER_H
#define CG_RUNNER_H

#include "../containers/cg_container.h"
#include "cg_config.h"

#include <czmq.h>
#include <stdbool.h>

/*  What a runner actor needs; all borrowed except the struct itself, which the actor
    takes over and frees. */
typedef struct {
    cg_backend_t *backend;
    const cg_config_t *config;
    const char *sessions_dir;
    const char *container_prefix;
    const char *results_endpoint;   /* inproc PULL socket the results go to */
    char slot[13];                  /* the session's slot (dir and container name) */
    bool oneshot;                   /* destroy the sandbox after the first run */
} cg_runner_args_t;

/*  The actor (zactor_fn). Pipe commands:
      EXEC <key> <request JSON>   run a request (see cg_exec_request_t; JSON fields
                                  language, code, stdin, timeout, execution_id,
                                  session_id); its outcome goes to results_endpoint as
                                  OUTCOME <key> <cg_outcome_t pointer> (zsock_send
                                  picture "ssp"; the receiver owns it and destroys it
                                  with cg_outcome_destroy). A runner stopped ($TERM)
                                  while it runs sends nothing.
      START <key> <JSON>          start the sandbox and the kernel for JSON's "language"
                                  now; RESULT <key> {"ok": true} or {"ok": false, "error": ...}
      CANCEL                      interrupt the running cell, if any
      $TERM                       stop: the session's sandbox is destroyed */
void cg_runner_actor (zsock_t *pipe, void *args);

#endif
