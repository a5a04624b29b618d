/*  cg_egress_netns — a listening socket inside a sandbox's network namespace. */
#ifndef CG_EGRESS_NETNS_H
#define CG_EGRESS_NETNS_H

#include "base/cg_error.h"

#include <sys/types.h>

/*  Makes a TCP socket listening on 127.0.0.1:PORT inside the network namespace of host
    process INIT_PID (a sandbox's init), from a short-lived child that enters it (and its
    user namespace first when that is what setns needs: the rootless backend), so this
    process never changes namespace. The socket keeps working from here: what the
    sandbox connects to is accepted by whoever holds it. Returns the socket (non-blocking,
    close-on-exec), or -1 with *err set. */
int cg_egress_netns_listen (pid_t init_pid, int port, cg_error_t **err);

#endif
