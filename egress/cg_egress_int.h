/*  cg_egress_int — the egress service's state, shared by its files (egress/ only). */
#ifndef CG_EGRESS_INT_H
#define CG_EGRESS_INT_H

#include "egress/cg_egress.h"

#include <pthread.h>

/*  Sandboxes in proxy mode at once: one source address each, 127.64.<i/256>.<i%256>. */
#define CG_EGRESS_SLOTS 4096

/*  squid restarts after it ended by itself: at most this many a minute, then no more. */
#define S_SQUID_RESTARTS 5

/*  A sandbox's own package layer's Python directory (containers/cg_container.h's
    CG_SITE_MOUNT "/python", which this floor does not include). */
#define CG_EGRESS_SITE_PYTHON "/opt/cellgate/site/python"

/*  Where sandboxes see the Node.js preload that sends fetch through the proxy. */
#define CG_EGRESS_NODE_PRELOAD "/opt/cellgate/kernels/javascript/cellgate-proxy.js"

typedef struct {
    bool used;
    char slot[13];
    char src[16];               /* its source address in squid's eyes */
    cg_egress_policy_t *narrow; /* its own list, or NULL: the server's */
    json_t *records;            /* since the last take */
    size_t omitted;             /* records past CG_EGRESS_RECORDS_MAX since then */
    bool busy;                  /* the relay has a connection of it open */
    int64_t idle_us;            /* when its last connection closed, since the last take; 0 */
} cg_egress_slot_t;

struct cg_egress_t {
    pthread_mutex_t lock;
    const cg_config_t *config;
    char *dir;     /* squid's files: <state>/egress, or as root /run/cellgate/egress-<pid> */
    bool dir_made; /* removed at the end */
    bool stopping; /* cg_egress_stop: squid and the relay are ending */
    cg_egress_policy_t *policy;
    char **env;
    int squid_port;
    pid_t squid_pid;
    char service[32]; /* squid's service name (-n): its shared memory's names */
    int squid_pidfd;  /* readable when squid ends (pidfd_open), or -1 */
    int64_t restarts_us[S_SQUID_RESTARTS]; /* when squid was restarted lately, oldest first */
    uid_t squid_uid;                       /* the user squid runs as (root starts it as proxy) */
    gid_t squid_gid;
    pid_t relay_pid;
    int relay_fd;    /* the relay's control socket */
    int log_fd;      /* squid's access log (a FIFO), read end */
    int log_hold_fd; /* its write end, held open */
    char line[8192]; /* a log line being read */
    size_t line_len;
    bool line_overlong; /* the line being read passed the buffer: dropped */
    cg_egress_slot_t slots[CG_EGRESS_SLOTS];
    size_t next_slot; /* where the search for a free one starts */
    cg_egress_totals_t totals;
};

/*  A free slot for SLOT with its source address, or NULL with *err set (all in use). */
cg_egress_slot_t *cg_egress_slot_new (cg_egress_t *self, const char *slot, cg_error_t **err);

/*  The slot of SLOT, or NULL. */
cg_egress_slot_t *cg_egress_slot_find (cg_egress_t *self, const char *slot);

/*  Frees what SLOT holds and marks it free. */
void cg_egress_slot_clear (cg_egress_slot_t *slot);

/*  squid, as the service runs it (cg_egress_squidrun.c). */

/*  The squid program, or NULL. Static. */
const char *cg_egress_squid_path (void);

/*  Picks squid's port and writes its configuration (squid.conf, its error pages; its own
    files in SELF->dir/run) for SELF's policy, logging to FIFO, with TEST's settings.
    Returns 0, or -1 with *err set. */
int cg_egress_squid_prepare (cg_egress_t *self, const cg_egress_test_t *test, const char *fifo,
                             cg_error_t **err);

/*  Starts squid on that configuration and, when WAIT, waits until it answers (at start-up;
    a restart on the loop does not wait: the relay retries a refused connection for 5 s).
    Returns 0, or -1 with *err set. */
int cg_egress_squid_start (cg_egress_t *self, bool wait, cg_error_t **err);

/*  Stops squid (cg_egress_end_process) and removes the shared memory it left. */
void cg_egress_squid_stop (cg_egress_t *self);

/*  Ends process *PID (SIGTERM, then SIGKILL after 2 s), reaps it and sets *PID to 0. */
void cg_egress_end_process (pid_t *pid);

#endif
