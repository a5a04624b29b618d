/*  cg_sweep — the periodic orphan sweep: every cleanup interval, on a thread of its own,
    removes what servers that are gone left in the state dir. */
#include "bridge/cg_sweep.h"
#include "base/cg_util.h"
#include "artifacts/cg_metrics.h"

#include <czmq.h>

struct cg_sweep_t {
    zactor_t *actor;
};

typedef struct {
    cg_instance_t *instance;
    int interval_ms;
} s_args_t;

//  The sweep's thread: waits an interval on its pipe (a $TERM ends it), then sweeps. The
//  runtime commands and file removals it makes never hold up the server's loop.
static void
s_actor (zsock_t *pipe, void *arg)
{
    s_args_t args = *(s_args_t *)arg;
    free (arg);
    zsock_signal (pipe, 0);
    zpoller_t *poller = zpoller_new (pipe, NULL);
    while (true) {
        void *which = zpoller_wait (poller, args.interval_ms);
        if (which == pipe || zpoller_terminated (poller))
            break; /* $TERM, the only message the pipe gets */
        int removed = cg_instance_sweep (args.instance);
        cg_metrics_sweep ((unsigned)removed);
        cg_log (removed > 0 ? 2 : 3, "orphan sweep: removed what %d stopped server(s) left",
                removed);
    }
    zpoller_destroy (&poller);
}

cg_sweep_t *
cg_sweep_new (cg_instance_t *instance, double interval_minutes)
{
    if (interval_minutes <= 0)
        return NULL;
    s_args_t *args = cg_xcalloc (1, sizeof *args);
    double ms = interval_minutes * 60000.0;
    args->instance = instance;
    args->interval_ms = ms < 1 ? 1 : ms > 2e9 ? 2000000000 : (int)ms;
    cg_sweep_t *self = cg_xcalloc (1, sizeof *self);
    self->actor = zactor_new (s_actor, args);
    cg_log (2, "orphan sweep every %g min", interval_minutes);
    return self;
}

void
cg_sweep_destroy (cg_sweep_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    zactor_destroy (&(*self_p)->actor);
    free (*self_p);
    *self_p = NULL;
}
