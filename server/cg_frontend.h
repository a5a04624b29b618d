/*  cg_frontend — the contract each front end (mcp/, gateway/) keeps with the process
    (cg_server): what it is called, which runner events are its own, what it does with
    them, what it does when someone else (an operator) closes a session, and its end. The
    front ends are siblings: neither names the other, and the process names both. */
#ifndef CG_FRONTEND_H
#define CG_FRONTEND_H

#include "bridge/cg_registry.h"
#include "bridge/cg_runner_msg.h"

#include <stdbool.h>

typedef struct {
    const char *name; /* "mcp", "gateway" */
    /*  True when KEY (a runner event's) names one of its requests in flight. */
    bool (*owns_key) (void *self, const char *key);
    /*  A runner event with its key (owns_key said yes), or one without a key (LOG: every
        front end sees it). May take what the event holds (cg_runner_msg.h). */
    void (*runner_event) (void *self, cg_runner_event_t *event);
    /*  SESSION is being closed by someone else, for WHY: its request in flight, if it is
        this front end's, is answered. The process retires SESSION afterwards. May be NULL. */
    void (*session_closing) (void *self, cg_registry_session_t *session, const char *why);
    /*  Ends the front end (before the registry and the loop). Sets *SELF_P to NULL. */
    void (*destroy) (void **self_p);
} cg_frontend_ops_t;

/*  The two front ends, for the process. Their SELF is the cg_server_t of cg_mcp_new and
    the cg_gateway_t of cg_gateway_new. */
extern const cg_frontend_ops_t cg_frontend_mcp;
extern const cg_frontend_ops_t cg_frontend_gateway;

#endif
