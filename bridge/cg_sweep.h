/*  cg_sweep — the periodic orphan sweep: every cleanup interval, on a thread of its own,
    removes what servers that are gone left in the state dir (cg_instance_sweep), so a
    server killed while others run on the same state dir does not leave its sandboxes,
    workspace mounts and directories until the next start-up. */
#ifndef CG_SWEEP_H
#define CG_SWEEP_H

#include "bridge/cg_instance.h"

typedef struct cg_sweep_t cg_sweep_t;

/*  Starts sweeping INSTANCE's state dir every INTERVAL_MINUTES (the first sweep one
    interval from now: start-up has just swept). INSTANCE is borrowed and must outlive
    the sweep. Returns the sweep (the caller destroys it), or NULL when INTERVAL_MINUTES
    is 0 (no periodic sweep). */
cg_sweep_t *cg_sweep_new (cg_instance_t *instance, double interval_minutes);

/*  Stops the sweep (waiting for one under way to finish), frees *self_p and sets it to
    NULL. Safe on NULL. */
void cg_sweep_destroy (cg_sweep_t **self_p);

#endif
