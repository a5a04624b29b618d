/*  cg_egress_conn — inside the relay process: its sessions and its relayed connections (accept,
    admission by the session's limits, the connect to the proxy with its retries, the PROXY line,
    the copy both ways with backpressure and half-close). The process's loop and control socket
    are cg_egress_relay.c; nothing here parses a byte the sandbox sends. */
#ifndef CG_EGRESS_CONN_H
#define CG_EGRESS_CONN_H

#include "egress/cg_egress_relay.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*  Bytes buffered per direction of a connection; a side whose buffer is full is not read. */
#define CG_EGRESS_BUFFER (64 * 1024)
/*  The proxy refused a connect: try again this often, until this long after the accept. */
#define CG_EGRESS_RETRY_US (100 * 1000)
#define CG_EGRESS_GIVE_UP_US (5 * 1000 * 1000)

typedef struct cg_relay_s cg_relay_t;
typedef struct cg_relay_session_s cg_relay_session_t;
typedef struct cg_relay_conn_s cg_relay_conn_t;

typedef enum {
    CG_WATCH_CONTROL,
    CG_WATCH_LISTENER, /* owner: a session */
    CG_WATCH_CLIENT,   /* owner: a connection, its sandbox side */
    CG_WATCH_UPSTREAM  /* owner: a connection, its proxy side */
} cg_watch_kind_t;

/*  One fd in the relay's epoll set; epoll's data points here. */
typedef struct {
    cg_watch_kind_t kind;
    void *owner;
    int fd;          /* -1 when closed */
    uint32_t events; /* what epoll watches now; 0: not in the set */
} cg_watch_t;

struct cg_relay_session_s {
    char id[13];
    char src[16]; /* the PROXY line's source address */
    cg_egress_limits_t limits;
    cg_watch_t listener;
    int64_t up, down;      /* bytes read from the sandbox / from the proxy, in all */
    int conns;             /* connections open now */
    double tokens;         /* the connection rate's bucket */
    int64_t refilled_us;   /* when the bucket was last filled */
    const char *over;      /* "up" or "down" once a byte limit is passed: every later
                              connection refused; NULL before */
    cg_relay_conn_t *head; /* its open connections */
    cg_relay_session_t *next_dead;
    bool dead; /* removed; freed after the loop's current batch */
};

struct cg_relay_s {
    int epoll_fd;
    int upstream_port;
    int spare_fd; /* /dev/null, given up for a moment to refuse a connection at EMFILE */
    int sessions, conns;
    cg_relay_session_t *table[CG_EGRESS_MAX_SESSIONS];
    cg_relay_conn_t *waiting; /* connections waiting to retry their connect */
    cg_relay_conn_t *dead_conns;
    cg_relay_session_t *dead_sessions;
    void *control; /* cg_egress_relay.c's side: the control socket and its queue */
};

/*  Sets what epoll watches on WATCH's fd to EVENTS (0: takes it out of the set; a closed fd:
    nothing). Returns 0, or -1 when epoll_ctl fails (out of memory or of watches; logged).
    (cg_egress_relay.c) */
int cg_relay_watch (cg_relay_t *relay, cg_watch_t *watch, uint32_t events);

/*  Queues EVENT (stolen) for the server. A DROPPABLE one (denied, unreachable) is dropped when
    the server lags behind by many; an answer never is. (cg_egress_relay.c) */
void cg_relay_emit (cg_relay_t *relay, json_t *event, bool droppable);

/*  Accepts what waits on SESSION's listener (a bounded number a call, for fairness): admits
    each connection within the session's limits and starts its connect to the proxy, or
    answers it the 403 that names the limit, closes it, and emits a "denied" event. */
void cg_relay_accept (cg_relay_t *relay, cg_relay_session_t *session);

/*  Returns whether CONN was closed (it is freed by the next cg_relay_reap). */
bool cg_relay_conn_dead (const cg_relay_conn_t *conn);

/*  Handles EVENTS (epoll's) on WATCH, one side of a connection that is not dead. */
void cg_relay_conn_ready (cg_relay_t *relay, cg_watch_t *watch, uint32_t events);

/*  Retries the connects that are due at NOW (cg_now_us) and gives up on those past their
    time. Returns the milliseconds until the next is due, -1 when none waits. */
int cg_relay_retry (cg_relay_t *relay, int64_t now);

/*  Closes every connection of SESSION (they are freed by cg_relay_reap). */
void cg_relay_close_all (cg_relay_t *relay, cg_relay_session_t *session);

/*  Frees the connections and sessions closed since the last call: a watch in the batch
    epoll_wait returned may still point to them until then. */
void cg_relay_reap (cg_relay_t *relay);

#endif
