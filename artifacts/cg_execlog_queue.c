/*  cg_execlog_queue — the execution log's writes, on its worker. */
#include "artifacts/cg_execlog_queue.h"
#include "base/cg_fault.h"
#include "base/cg_log.h"
#include "base/cg_util.h"

#include <time.h>

typedef enum { S_RECORD, S_INDEX, S_SESSION_EVENT, S_SWEEP, S_THEN } s_kind_t;

typedef struct {
    cg_work_t work;
    s_kind_t kind;
    cg_worker_t *worker;
    cg_execlog_t *log;
    uint64_t ticket;          /* its place in the writer's queue (cg_execlog_ticket_take) */
    json_t *entry;            /* the worker's own copy; NULL for a sweep */
    cg_execlog_line_t *line;  /* S_RECORD's line written, for its S_INDEX */
    cg_execlog_then_fn *then; /* S_THEN's, with its argument */
    void *then_arg;
} s_write_t;

static void s_queue_work (s_write_t *self);
static void s_write_work (cg_work_t *work);
static void s_write_after (cg_work_t *work, bool ran);

//  A write of KIND to LOG on WORKER, its other fields empty.
static s_write_t *
s_write_new (cg_worker_t *worker, cg_execlog_t *log, s_kind_t kind)
{
    s_write_t *self = cg_xcalloc (1, sizeof *self);
    *self = (s_write_t){.work = {.work_cb = s_write_work, .after_cb = s_write_after},
                        .kind = kind,
                        .worker = worker,
                        .log = log};
    return self;
}

//  On the worker's thread.
static void
s_write_work (cg_work_t *work)
{
    s_write_t *self = (s_write_t *)work;
    cg_error_t *err = NULL;
    if (self->kind == S_RECORD || self->kind == S_SESSION_EVENT)
        cg_fault_hold ("log_write"); /* a test's write in flight */
    int rc = 0;
    if (self->kind == S_SWEEP) {
        int removed = cg_execlog_sweep (self->log, time (NULL), &err);
        if (removed < 0)
            cg_log (1, "execution log retention: %s", cg_error_message (err));
        else if (removed > 0)
            cg_log (2, "execution log retention: %d entries and files removed", removed);
    }
    else if (self->kind == S_RECORD)
        rc = cg_execlog_record_line (self->log, self->entry, &self->line, &err);
    else if (self->kind == S_INDEX)
        cg_execlog_index_line (self->log, &self->line);
    else if (self->kind == S_SESSION_EVENT)
        rc = cg_execlog_session_event (self->log, self->entry, &err);
    if (rc < 0)
        cg_log (1, "execution log: %s", cg_error_message (err));
    cg_error_destroy (&err);
    json_decref (self->entry);
    self->entry = NULL;
    cg_execlog_ticket_done (self->log, self->ticket);
}

//  Back on the owner's thread (or never run: the server is ending at a signal). A record's
//  line, written, is indexed next, by a work of its own: what waits for the line (an
//  answer: cg_execlog_queue_then) does not wait for the index.
static void
s_write_after (cg_work_t *work, bool ran)
{
    s_write_t *self = (s_write_t *)work;
    if (!ran && self->log)
        cg_execlog_ticket_done (self->log, self->ticket);
    if (self->line) {
        s_write_t *index = s_write_new (self->worker, self->log, S_INDEX);
        index->line = self->line;
        self->line = NULL;
        s_queue_work (index);
    }
    if (self->then)
        self->then (self->then_arg, ran);
    json_decref (self->entry);
    free (self);
}

//  Queues SELF (its fields set but its ticket) on its worker, past the worker's limit.
static void
s_queue_work (s_write_t *self)
{
    self->ticket = cg_execlog_ticket_take (self->log);
    cg_error_t *err = NULL;
    if (cg_worker_queue (self->worker, &self->work, true, &err) < 0) {
        cg_log (1, "execution log: %s", cg_error_message (err));
        cg_error_destroy (&err);
        cg_execlog_line_destroy (&self->line);
        s_write_after (&self->work, false);
    }
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
    s_write_t *self = s_write_new (worker, log, kind);
    self->entry = entry ? json_deep_copy (entry) : NULL;
    json_decref (entry);
    s_queue_work (self);
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
    s_write_t *self = s_write_new (worker, log, S_THEN);
    self->then = then;
    self->then_arg = arg;
    s_queue_work (self);
}
