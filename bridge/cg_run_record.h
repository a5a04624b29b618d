/*  cg_run_record — what a run leaves behind once it ended, whichever front end started it:
    its execution-log entry (artifacts/cg_execlog, seed 002's layout), its session's
    notebook cell (artifacts/cg_notebook), the run metrics (cellgate_runs_total) and its
    script's counters (artifacts/cg_scripts). These are the registry's run observers
    (cg_registry_observe_runs): the code that ends a run names none of them. */
#ifndef CG_RUN_RECORD_H
#define CG_RUN_RECORD_H

#include "artifacts/cg_execlog.h"
#include "base/cg_config.h"
#include "base/cg_worker.h"
#include "bridge/cg_registry.h"

typedef struct cg_run_record_t cg_run_record_t;

/*  Registers the run observers on REGISTRY, once, at the process's start: before the
    front end's answer the notebook cell, the execution-log entry (LOG; NULL: it could not
    be opened, nothing is logged; queued to LOG_WORKER, the one thread that writes LOG,
    which an answer can wait for: cg_execlog_queue_then) and the script's counters
    (recorded on STORE, the worker for slow disk work); after it the metrics. All
    arguments are borrowed and must outlive the registry. Returns the observers' state,
    which the caller destroys after the registry. */
cg_run_record_t *cg_run_record_new (cg_registry_t *registry, const cg_config_t *config,
                                    cg_execlog_t *log, cg_worker_t *log_worker, cg_worker_t *store);

/*  Frees the observers' state; sets *self_p to NULL. Safe on NULL. */
void cg_run_record_destroy (cg_run_record_t **self_p);

/*  The execution-log entry of RUN in SESSION (NULL for a one-shot sandbox), in seed 002's
    layout, under CONFIG's --execution-log mode; NULL when RUN is not logged (no outcome or
    no request). Caller owns the result. */
json_t *cg_run_record_log_entry (const cg_config_t *config, const cg_registry_session_t *session,
                                 const cg_run_report_t *run);

#endif
