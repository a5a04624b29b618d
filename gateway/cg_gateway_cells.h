/*  cg_gateway_cells — the cells one WebSocket's front end runs, followed from its
    execute_request to its kernel's execute_reply (shell) and idle status (iopub) for it:
    what the execution log and the notebook record keep of each (code, streams, the
    text/plain of its displays and result, the error, the execution count, how the reply
    ended it: an aborted cell did not run), held within caps. Each cell that ends, ends
    through the registry (cg_registry_run_ended, tool "gateway") like any MCP run, once.
    Internal to gateway/; single-threaded (the loop's). */
#ifndef CG_GATEWAY_CELLS_H
#define CG_GATEWAY_CELLS_H

#include "bridge/cg_registry.h"
#include "bridge/cg_wire.h"
#include "gateway/cg_jmsg.h"

typedef struct cg_gateway_cells_t cg_gateway_cells_t;

/*  Cells one connection follows at once; past it a cell runs unfollowed (not recorded). */
#define CG_GATEWAY_CELLS_MAX 1024
/*  Bytes of code and output a connection holds for its cells at once (a cell's code, and
    each of its streams, is kept up to CG_LOG_STREAM_MAX, and cut past this). */
#define CG_GATEWAY_CELLS_BYTES_MAX (16 * 1024 * 1024)
/*  A cell that had its reply or its idle status (they come on two sockets, in either order)
    waits this long after its last message for the other, then ends with what it has: the
    server's iopub subscription drops what a flooding kernel sends past its queue. */
#define CG_GATEWAY_CELLS_WAIT_US (2 * 1000 * 1000)

/*  Returns a new, empty table. Caller owns it. */
cg_gateway_cells_t *cg_gateway_cells_new (void);

/*  Frees the table and its cells, none of them ended (the server stops). Safe on NULL. */
void cg_gateway_cells_destroy (cg_gateway_cells_t **self_p);

/*  The front end sent MSG (checked; an execute_request) to KERNEL of SESSION: follows it.
    Returns false when it is not followed (the table is full). */
bool cg_gateway_cells_sent (cg_gateway_cells_t *self, const cg_jmsg_t *msg,
                            const cg_registry_session_t *session,
                            const cg_registry_kernel_t *kernel);

/*  How many cells are followed (sent, not ended). */
size_t cg_gateway_cells_count (cg_gateway_cells_t *self);

/*  True when the cell of the execute_request MSG_ID (NULL: none) is followed. */
bool cg_gateway_cells_has (cg_gateway_cells_t *self, const char *msg_id);

/*  A kernel's iopub message MSG (verified; untrusted) whose parent is a followed cell:
    its stream output, the text/plain of an execute_result or display_data (nothing else of
    them is kept or decoded: untrusted media), error, execution count, or status (busy: it
    started). Returns true when MSG is the cell's idle status (the kernel is done with it):
    the caller relays it, then calls cg_gateway_cells_end. */
bool cg_gateway_cells_iopub (cg_gateway_cells_t *self, const cg_msg_t *msg);

/*  A kernel's shell message MSG (verified; untrusted) whose parent is a followed cell:
    returns true when it is the cell's execute_reply (its status: ok, error, aborted; its
    error; its execution count): the caller relays it, then calls cg_gateway_cells_end. */
bool cg_gateway_cells_shell (cg_gateway_cells_t *self, const cg_msg_t *msg);

/*  Ends the followed cell of the execute_request MSG_ID through REGISTRY (SESSION: its
    session, NULL when gone) and forgets it, when both its execute_reply and its idle status
    came; else nothing. Returns true when it ended it. */
bool cg_gateway_cells_end (cg_gateway_cells_t *self, cg_registry_t *registry,
                           cg_registry_session_t *session, const char *msg_id);

/*  When (cg_now_us) the first cell that had only one of its reply and idle status gives
    up waiting for the other (cg_gateway_cells_expire); 0 when no cell waits so. */
int64_t cg_gateway_cells_due (cg_gateway_cells_t *self);

/*  Ends, with what they have, the cells that had one of their reply and idle status and
    nothing for CG_GATEWAY_CELLS_WAIT_US before NOW_US, through REGISTRY (SESSION: theirs,
    NULL when gone). Returns true when one of them never had its idle status (the kernel,
    done with it, is not busy for it any more). */
bool cg_gateway_cells_expire (cg_gateway_cells_t *self, cg_registry_t *registry,
                              cg_registry_session_t *session, int64_t now_us);

/*  Ends every followed cell as failed with WHY (the kernel restarted, the connection
    closed: no one will see them end) through REGISTRY (SESSION: theirs, NULL when gone). */
void cg_gateway_cells_end_all (cg_gateway_cells_t *self, cg_registry_t *registry,
                               cg_registry_session_t *session, const char *why);

#endif
