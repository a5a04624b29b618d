/*  cg_egress_relay — the egress relay (docs/design/egress.md, "The relay"): one helper process
    per server, `cellgate egress-relay`, that accepts the sandboxes' proxy connections on the
    listeners the server hands it and copies their bytes to squid behind a PROXY v1 line, with
    per-session limits; and the server's side of its control socket. */
#ifndef CG_EGRESS_RELAY_H
#define CG_EGRESS_RELAY_H

#include "base/cg_error.h"

#include <jansson.h>
#include <stdint.h>
#include <sys/types.h>

/*  What the relay holds at most: sessions (listeners) and relayed connections in all. An add
    past the first, or a connection past the second, is refused. */
#define CG_EGRESS_MAX_SESSIONS 4096
#define CG_EGRESS_MAX_CONNS 16384

/*  One session's limits, each enforced by the relay without harming other sessions. */
typedef struct {
    int max_conns;    /* connections at once (1 to CG_EGRESS_MAX_CONNS) */
    int64_t max_up;   /* bytes sandbox -> proxy in the session's life (0 and up) */
    int64_t max_down; /* bytes proxy -> sandbox in the session's life (0 and up) */
    int per_minute;   /* new connections a minute, a token bucket that starts full (1 and up) */
} cg_egress_limits_t;

/*  The relay process: `cellgate egress-relay --control-fd N --upstream-port P`. N is a
    SOCK_SEQPACKET unix socket to the server, P squid's port on 127.0.0.1. It dies with its
    parent (PR_SET_PDEATHSIG SIGKILL), ignores SIGINT and SIGPIPE, logs to stderr, and returns
    0 when the control socket closes (every connection closed), 2 on bad arguments, 1 when it
    cannot run. */
int cg_egress_relay_main (int argc, char **argv);

/*  Starts EXE (the cellgate binary) as `EXE egress-relay --control-fd 3 --upstream-port
    UPSTREAM_PORT`, the child's fd 3 one end of a new SOCK_SEQPACKET socket pair, its stdin
    /dev/null, its stdout and stderr this process's, no other fd and an empty signal mask.
    Sets *CONTROL_FD to the other end (CLOEXEC; the caller owns it: closing it ends the relay).
    The relay dies with the thread that spawned it (PR_SET_PDEATHSIG): spawn it from the
    thread that lives as long as the server. Returns the child's pid (the caller reaps it), or
    -1 with *err set. */
pid_t cg_egress_relay_spawn (const char *exe, int upstream_port, int *control_fd, cg_error_t **err);

/*  Hands the relay session SESSION (12 lowercase hex characters) with its PROXY source address
    SRC (dotted IPv4 in 127.64.0.0/10), its LIMITS and LISTEN_FD, a TCP socket bound and
    listening in the sandbox's network namespace (sent, not taken: the caller closes its copy,
    which shares the file description and so its O_NONBLOCK). Does not wait for the relay:
    a refusal comes back as an "error" event (cg_egress_relay_read). Returns 0, or -1 with
    *err set (EINVAL for an argument out of range; EAGAIN when the control socket is full,
    the relay not reading; EPIPE when it is gone). */
int cg_egress_relay_add (int control_fd, const char *session, const char *src,
                         const cg_egress_limits_t *limits, int listen_fd, cg_error_t **err);

/*  Asks the relay to close SESSION's listener and every connection of it; it answers a
    "removed" event with the session's byte totals (or an "error" event when it has no such
    session). Returns 0, or -1 with *err set as cg_egress_relay_add does. */
int cg_egress_relay_remove (int control_fd, const char *session, cg_error_t **err);

/*  Returns the relay's next event without waiting, NULL when there is none; caller owns it.
    Events: {"event":"denied","session","reason"} (a connection refused with a 403, or a
    session's byte limit reached: its connections closed), {"event":"removed","session","up",
    "down"}, {"event":"error","session","message"} (an add refused, a remove of an unknown
    session, the proxy unreachable for 5 s), {"event":"busy"|"idle","session"} when the
    session's first connection opens and its last one closes; and {"event":"closed"} when
    the relay closed its
    end (it exited; every later call returns it again). */
json_t *cg_egress_relay_read (int control_fd);

#endif
