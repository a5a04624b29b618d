/*  cg_runner — an actor that owns one session and runs its cells one at a time, so a
    long cell never blocks the server or other sessions. */
#ifndef CG_RUNNER_H
#define CG_RUNNER_H

#include "containers/cg_container.h"
#include "base/cg_config.h"
#include "egress/cg_egress.h"

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
    char client_session[CG_SESSION_ID_MAX + 1]; /* the client's session id, or "" (a
                                                   one-shot's, a pool's) */
    bool oneshot;                               /* destroy the sandbox after the first run */
    bool shared_installer; /* a one-shot whose sandbox writes the shared package
                                     layer (cg_session_new_shared_installer) */
    bool pooled;           /* a warm pool's: warms up first (see WARM below) */
    const char *preload;   /* Python code a pooled kernel runs silently, or NULL */
    bool adopt;            /* re-adopt the sandbox a previous server kept in the slot */
    char note[512];        /* said by the first run's result when set (state lost) */
    cg_egress_t *egress;   /* --egress proxy's service, or NULL */
    json_t *egress_allow;  /* the session's own list (taken over), or NULL */
} cg_runner_args_t;

/*  The actor (zactor_fn). Its pipe's commands (EXEC, START, CANCEL, INPUT, INTERRUPT,
    RESTART, CLAIM, KEEP, $TERM), a pooled runner's first word (READY, FAILED) and the
    events it sends to results_endpoint (RESULT, PROGRESS, STARTED, RESTARTED, INPUT, LOG,
    REPORT, KERNELS) are the one contract written in cg_runner_msg.h, whose typed senders
    and decoder the rest of the server uses. */
void cg_runner_actor (zsock_t *pipe, void *args);

#endif
