/*  cg_session_egress — a session's way out under --egress proxy: its sandbox's listener,
    made again whenever the container is, and its own narrower list. */
#include "bridge/cg_session_int.h"
#include "base/cg_util.h"

#include <errno.h>

int
cg_session_egress_attach_ (cg_session_t *self, cg_error_t **err)
{
    if (!self->egress)
        return 0;
    cg_session_egress_detach_ (self);
    pid_t init = cg_container_init_pid (&self->sandbox);
    if (init <= 0)
        return cg_error_set (err, ESRCH, "egress: the sandbox %s has no init to reach",
                             self->container_id);
    cg_egress_policy_t *narrow = NULL;
    if (self->egress_allow && !(narrow = cg_egress_narrow (self->egress, self->egress_allow, err)))
        return -1;
    if (cg_egress_attach (self->egress, self->slot, init, narrow, err) < 0)
        return -1;
    self->egress_attached = true;
    return 0;
}

void
cg_session_egress_detach_ (cg_session_t *self)
{
    if (self->egress && self->egress_attached)
        cg_egress_detach (self->egress, self->slot);
    self->egress_attached = false;
}

int
cg_session_egress (cg_session_t *self, cg_egress_t *egress, json_t *egress_allow, cg_error_t **err)
{
    self->egress = egress;
    json_decref (self->egress_allow);
    self->egress_allow = egress_allow ? json_deep_copy (egress_allow) : NULL;
    self->sandbox.env = egress ? cg_egress_env (egress) : NULL;
    return self->container_running ? cg_session_egress_attach_ (self, err) : 0;
}

json_t *
cg_session_egress_take (cg_session_t *self)
{
    return self->egress && self->egress_attached ? cg_egress_take (self->egress, self->slot) : NULL;
}
