/*  cg_execlog_queue — the execution log's writes handed to its own worker (base/cg_worker),
    the one thread that calls artifacts/cg_execlog once the process runs: a run's entry, a
    session's lifecycle line and the retention sweep are queued from the loop and done in
    the order they were queued (each taking a ticket: cg_execlog_ticket_take);
    cg_execlog_queue_then follows what was queued before it. The
    searches and reads run on another thread with a reader (cg_execlog_open_reader), so a
    long search never holds a write, nor an answer that waits for one (mcp/tools). */
#ifndef CG_EXECLOG_QUEUE_H
#define CG_EXECLOG_QUEUE_H

#include "artifacts/cg_execlog.h"
#include "base/cg_worker.h"

#include <jansson.h>

/*  Queues ENTRY (taken; *ENTRY_P set to NULL; copied deep, so that nothing of it is shared
    with the caller's thread) to be recorded in LOG on WORKER (cg_execlog_record), past the
    worker's limit: what bounds them is the runs that end. A failure is logged. Nothing
    when LOG is NULL. */
void cg_execlog_queue_record (cg_worker_t *worker, cg_execlog_t *log, json_t **entry_p);

/*  The same for a session's lifecycle line (cg_execlog_session_event). */
void cg_execlog_queue_session_event (cg_worker_t *worker, cg_execlog_t *log, json_t **entry_p);

/*  Queues LOG's retention sweep (cg_execlog_sweep at the time it runs) on WORKER; what it
    removed or why it failed is logged. */
void cg_execlog_queue_sweep (cg_worker_t *worker, cg_execlog_t *log);

/*  Called on the owner's thread with ARG; WRITTEN is false when the worker ended before it
    got there (a server stopped by a signal): what was queued before may be unwritten. */
typedef void (cg_execlog_then_fn) (void *arg, bool written);

/*  Calls THEN with ARG once every write queued on WORKER before this call is done (at once,
    WRITTEN true, when LOG is NULL: nothing is written): an answer that must not reach its
    client before the log's lines about it are in their files. A record's index row is
    written after its line, by a work of its own queued once the line is: THEN waits for the
    lines, not for their rows (a reader waits for those: cg_execlog_ticket_wait). */
void cg_execlog_queue_then (cg_worker_t *worker, cg_execlog_t *log, cg_execlog_then_fn *then,
                            void *arg);

#endif
