/*  cg_gateway_cells — the cells one WebSocket's front end runs, followed from its
    execute_request to its kernel's idle status for it: what the execution log and the
    notebook record keep of each (code, streams, the error, the execution count), held
    within caps. Each cell that ends, ends through the registry (cg_registry_run_ended,
    tool "gateway") like any MCP run. Internal to gateway/; single-threaded (the loop's). */
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

/*  Returns a new, empty table. Caller owns it. */
cg_gateway_cells_t *cg_gateway_cells_new (void);

/*  Frees the table and its cells, none of them ended (the server stops). Safe on NULL. */
void cg_gateway_cells_destroy (cg_gateway_cells_t **self_p);

/*  The front end sent MSG (checked; an execute_request) to KERNEL of SESSION: follows it.
    Returns false when it is not followed (the table is full). */
bool cg_gateway_cells_sent (cg_gateway_cells_t *self, const cg_jmsg_t *msg,
                            const cg_registry_session_t *session,
                            const cg_registry_kernel_t *kernel);

/*  True when the cell of the execute_request MSG_ID (NULL: none) is followed. */
bool cg_gateway_cells_has (cg_gateway_cells_t *self, const char *msg_id);

/*  A kernel's iopub message MSG (verified; untrusted) whose parent is a followed cell:
    its stream output, error, execution count, or status (busy: it started). Returns true
    when MSG is the cell's idle status: the cell is over, and waits for cg_gateway_cells_end
    (the caller relays the status to its front end first, which need not wait for the
    records). */
bool cg_gateway_cells_iopub (cg_gateway_cells_t *self, const cg_msg_t *msg);

/*  Ends the followed cell of the execute_request MSG_ID (nothing when there is none)
    through REGISTRY (SESSION: its session, NULL when gone) and forgets it. */
void cg_gateway_cells_end (cg_gateway_cells_t *self, cg_registry_t *registry,
                           cg_registry_session_t *session, const char *msg_id);

/*  Ends every followed cell as failed with WHY (the kernel restarted, the connection
    closed: no one will see them end) through REGISTRY (SESSION: theirs, NULL when gone). */
void cg_gateway_cells_end_all (cg_gateway_cells_t *self, cg_registry_t *registry,
                               cg_registry_session_t *session, const char *why);

#endif
