/*  cg_tools_wait — a run that arrives while its session's run was cancelled and is still
    stopping waits for the stop (at most CG_TOOLS_WAIT_MAX_MS, without holding up the
    event loop) instead of being refused session_busy. A session busy with a run nobody
    cancelled still refuses at once. */
#ifndef CG_TOOLS_WAIT_H
#define CG_TOOLS_WAIT_H

#include "mcp/cg_server.h"

#include <stdbool.h>

#define CG_TOOLS_WAIT_MAX_MS 5000

/*  When the validated *REQUEST_P (cg_tools_execute_request) names a session of REQ's
    client whose call in flight was cancelled, and no other call waits for that session
    already, registers a waiting call for REQ, takes *REQUEST_P (sets it to NULL) and
    returns true; else returns false and leaves *REQUEST_P alone. */
bool cg_tools_wait_defer (const cg_request_t *req, json_t **request_p);

/*  Runs the waiting calls whose session is free (its cancelled run stopped or it was
    closed), refuses session_busy those whose wait is over, and drops those cancelled
    themselves. Returns WAIT_MS (the loop's next wait, -1: none), lowered to the ms until
    the next wait is over. Called by the event loop before every wait. */
int cg_tools_wait_tick (cg_server_t *server, int wait_ms);

/*  Has SERVER's loop run cg_tools_wait_tick before every wait. */
void cg_tools_wait_on_loop (cg_server_t *server);

#endif
