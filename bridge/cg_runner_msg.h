/*  cg_runner_msg — the runner's pipe as one typed contract: the commands the main thread
    sends a runner (cg_runner_actor), and the events runners send the main thread over the
    registry's results socket, decoded once into cg_runner_event_t. This header is the one
    written contract of that protocol; cg_runner.c speaks the other side of it.

    Commands, on a runner's pipe (C values, no JSON text):
      EXEC <key> <request>        run a request, a json_t pointer the runner takes over
                                  (see cg_exec_request_t; fields language, code, stdin,
                                  timeout, execution_id, session_id, files, progress,
                                  elicit); its outcome comes as RESULT <key> <outcome>; a
                                  runner stopped ($TERM) while it runs sends nothing
      START <key> <language> [<env>]  start the sandbox and LANGUAGE's kernel now (ENV: a
                                  JSON object of strings added to the kernel's environment,
                                  the gateway's KERNEL_*); answered with STARTED
      CANCEL                      interrupt the running cell, if any (idle: nothing)
      INPUT <line>                the line a running cell asked for with an INPUT event
                                  ("\x04": end of input); ignored when no cell asks
      INTERRUPT <language>        interrupt LANGUAGE's kernel (the Jupyter gateway's; a
                                  running cell of this runner's ends interrupted)
      RESTART <key> <language>    replace LANGUAGE's kernel with a fresh one; answered with
                                  RESTARTED (refused while a call runs)
      CLAIM <oneshot>             a pooled runner is handed over ("1": to a one-shot run,
                                  destroyed after its first run): its priority is raised
      KEEP                        at the next $TERM, leave the sandbox and its kernels
                                  running for the next server (--keep-sessions)
      $TERM                       stop: the session's sandbox is destroyed
    A pooled runner first warms up at a low priority (nice 10): it creates the sandbox,
    starts LANGUAGE's kernel (bash has none) and runs the preload silently, then answers on
    its pipe READY <memory in KiB> or FAILED <why> (cg_runner_warm_recv), before any command.

    Events, on the results socket (cg_runner_event_recv):
      RESULT <key> <outcome> [<slot> <pid> <KiB>]  a request's outcome: a cg_outcome_t
                                  pointer; after a session's EXEC, with the REPORT that
                                  would come just before it (so the main thread wakes once
                                  for both; it applies the report first)
      PROGRESS <key> <stream> <text>  live output of a request that asked for progress
                                  (stream "stdout", "stderr" or "display"; text UTF-8)
      STARTED <key> <why>         START's answer: why it failed, or "" when it started
      RESTARTED <key> <why>       RESTART's answer, the same way
      INPUT <key> <prompt> <password>  the running cell of request KEY asks for a line
                                  (password "1": not to be echoed); the answer goes back
                                  with the INPUT command
      LOG <level> <text>          every cg_log line of a runner's thread
      REPORT <slot> <pid> <KiB>   after each START and EXEC of a session: its kernel's host
                                  pid and the sandbox's memory (0 and -1 when unknown); an
                                  EXEC's rides on its RESULT unless a KERNELS goes between
      KERNELS <slot> <report>     after a REPORT when a kernel of the session started,
                                  restarted or went: a json_t array of {language, pid, key,
                                  shell, iopub, stdin, control, hb}, the last five copies of
                                  the channels' endpoint fds (O_PATH, the receiver's)
    A KEY names what a front end asked (a call of MCP's, a kernel request of the gateway's);
    the server routes an event with a key to the front end that owns it. */
#ifndef CG_RUNNER_MSG_H
#define CG_RUNNER_MSG_H

#include "bridge/cg_outcome.h"

#include <czmq.h>
#include <jansson.h>
#include <stdbool.h>

typedef enum {
    CG_RUNNER_RESULT,
    CG_RUNNER_PROGRESS,
    CG_RUNNER_STARTED,
    CG_RUNNER_RESTARTED,
    CG_RUNNER_INPUT,
    CG_RUNNER_LOG,
    CG_RUNNER_REPORT,
    CG_RUNNER_KERNELS,
} cg_runner_tag_t;

/*  One event from a runner, decoded. Everything is the event's, freed with it, except what
    a handler takes (it sets the field to NULL: result.outcome, kernels.report). */
typedef struct {
    cg_runner_tag_t tag;
    const char *name; /* the tag as sent ("RESULT"), for logs */
    char *key;        /* the request's key; REPORT and KERNELS: the session's slot; LOG: NULL */
    union {
        struct {
            cg_outcome_t *outcome; /* NULL when the runner sent none */
            char *slot;            /* the REPORT carried along, or NULL: its slot, */
            long pid, kib;         /* pid and memory as in report */
        } result;
        struct {
            char *stream;
            char *text; /* TEXT_LEN bytes, NUL-terminated */
            size_t text_len;
        } progress;
        struct {
            char *why; /* "" when it succeeded; NULL when the runner sent none */
        } started;     /* STARTED and RESTARTED */
        struct {
            char *prompt;
            bool password;
        } input;
        struct {
            int level;
            char *text;
        } log;
        struct {
            long pid;
            long kib; /* -1 when unknown */
        } report;
        struct {
            json_t *report; /* its fds closed by cg_runner_event_destroy unless taken */
        } kernels;
    };
} cg_runner_event_t;

/*  Receives one event from RESULTS (the registry's results socket; call when it is
    readable). Returns it (caller destroys), or NULL when nothing came or the message was
    not a well-formed event (a runner is ours: that is a bug, logged). */
cg_runner_event_t *cg_runner_event_recv (zsock_t *results);

/*  Frees *SELF_P and what it still holds (an outcome, a KERNELS report and its fds); sets
    *SELF_P to NULL. Safe on NULL. */
void cg_runner_event_destroy (cg_runner_event_t **self_p);

/*  Closes the endpoint fds a KERNELS report's items still carry (those above 0). */
void cg_runner_kernels_close (json_t *report);

/*  The commands. RUNNER is a runner's actor (borrowed); each returns 0, or -1 when the
    message could not be queued (the runner is gone). cg_runner_exec takes *REQUEST_P (the
    runner owns it from here; freed here when it could not be sent) and sets it NULL. */
int cg_runner_exec (zactor_t *runner, const char *key, json_t **request_p);
int cg_runner_start (zactor_t *runner, const char *key, const char *language, const char *env);
int cg_runner_cancel (zactor_t *runner);
int cg_runner_input (zactor_t *runner, const char *line);
int cg_runner_interrupt (zactor_t *runner, const char *language);
int cg_runner_restart (zactor_t *runner, const char *key, const char *language);
int cg_runner_claim (zactor_t *runner, bool oneshot);
int cg_runner_keep (zactor_t *runner);
int cg_runner_term (zactor_t *runner);

/*  A warming runner's word (READY or FAILED), read from its pipe. Returns true with
    *MEMORY_KIB set (-1 unknown) when it is ready; false with *WHY (caller frees; NULL when
    the runner ended without a word) when it failed. */
bool cg_runner_warm_recv (zactor_t *runner, long *memory_kib, char **why);

#endif
