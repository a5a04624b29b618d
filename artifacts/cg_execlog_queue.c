/*  cg_execlog_queue — the execution log's writes, on its worker. */
#include "artifacts/cg_execlog_queue.h"
#include "base/cg_fault.h"
#include "base/cg_log.h"
#include "base/cg_util.h"

#include <time.h>

typedef enum { S_RECORD, S_SESSION_EVENT, S_SWEEP, S_THEN } s_kind_t;

typedef struct {
    cg_work_t work;
    s_kind_t kind;
    cg_execlog_t *log;
    json_t *entry;            /* the worker's own copy; NULL for a sweep */
    cg_execlog_then_fn *then; /* S_THEN's, with its argument */
    void *then_arg;
} s_write_t;

//  On the worker's thread.
static void
s_write_work (cg_work_t *work)
{
    s_write_t *self = (s_write_t *)work;
    cg_error_t *err = NULL;
    if (self->kind == S_THEN)
        return;
    if (self->kind != S_SWEEP)
        cg_fault_hold ("log_write"); /* a test's write in flight */
    if (self->kind == S_SWEEP) {
        int removed = cg_execlog_sweep (self->log, time (NULL), &err);
        if (removed < 0)
            cg_log (1, "execution log retention: %s", cg_error_message (err));
        else if (removed > 0)
            cg_log (2, "execution log retention: %d entries and files removed", removed);
    }
    else if ((self->kind == S_RECORD ? cg_execlog_record (self->log, self->entry, &err)
                                     : cg_execlog_session_event (self->log, self->entry, &err))
             < 0)
        cg_log (1, "execution log: %s", cg_error_message (err));
    cg_error_destroy (&err);
    json_decref (self->entry);
    self->entry = NULL;
}

//  Back on the owner's thread (or never run: the server is ending at a signal).
static void
s_write_after (cg_work_t *work, bool ran)
{
    s_write_t *self = (s_write_t *)work;
    if (self->then)
        self->then (self->then_arg, ran);
    json_decref (self->entry);
    free (self);
}

static void
s_queue (cg_worker_t *worker, cg_execlog_t *log, s_kind_t kind, json_t **entry_p)
{
    json_t *entry = entry_p ? *entry_p : NULL;
    if (entry_p)
        *entry_p = NULL;
    if (!log) {
        json_decref (entry);
        return;
    }
    s_write_t *self = cg_xcalloc (1, sizeof *self);
    *self = (s_write_t){.work = {.work_cb = s_write_work, .after_cb = s_write_after},
                        .kind = kind,
                        .log = log,
                        .entry = entry ? json_deep_copy (entry) : NULL};
    json_decref (entry);
    cg_error_t *err = NULL;
    if (cg_worker_queue (worker, &self->work, true, &err) < 0) {
        cg_log (1, "execution log: %s", cg_error_message (err));
        cg_error_destroy (&err);
        s_write_after (&self->work, false);
    }
}

void
cg_execlog_queue_record (cg_worker_t *worker, cg_execlog_t *log, json_t **entry_p)
{
    s_queue (worker, log, S_RECORD, entry_p);
}

void
cg_execlog_queue_session_event (cg_worker_t *worker, cg_execlog_t *log, json_t **entry_p)
{
    s_queue (worker, log, S_SESSION_EVENT, entry_p);
}

void
cg_execlog_queue_sweep (cg_worker_t *worker, cg_execlog_t *log)
{
    s_queue (worker, log, S_SWEEP, NULL);
}

void
cg_execlog_queue_then (cg_worker_t *worker, cg_execlog_t *log, cg_execlog_then_fn *then, void *arg)
{
    if (!log) {
        then (arg, true);
        return;
    }
    s_write_t *self = cg_xcalloc (1, sizeof *self);
    *self = (s_write_t){.work = {.work_cb = s_write_work, .after_cb = s_write_after},
                        .kind = S_THEN,
                        .log = log,
                        .then = then,
                        .then_arg = arg};
    cg_error_t *err = NULL;
    if (cg_worker_queue (worker, &self->work, true, &err) < 0) {
        cg_log (1, "execution log: %s", cg_error_message (err));
        cg_error_destroy (&err);
        s_write_after (&self->work, false);
    }
}
