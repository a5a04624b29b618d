/*  cg_worker — a bounded background worker (redis bio.c, libuv uv_queue_work): one thread,
    a czmq actor, that runs slow work (the script library, notebook exports, uploads, the
    execution log, large messages' parsing; one worker each) in the order it was queued, so
    the event loop only hands work over and takes it back. The
    owner polls cg_worker_sock and calls cg_worker_collect on its own thread, where each
    work's after_cb runs; a work belongs to the worker from cg_worker_queue until then. */
#ifndef CG_WORKER_H
#define CG_WORKER_H

#include "base/cg_error.h"
#include "base/cg_loop.h"

#include <czmq.h>
#include <stdbool.h>
#include <stddef.h>

typedef struct cg_worker_t cg_worker_t;
typedef struct cg_work_t cg_work_t;

/*  Runs on the worker's thread: WORK's data is the worker's alone until it returns. */
typedef void (cg_work_fn) (cg_work_t *work);

/*  Runs on the owner's thread once WORK is back: RAN is false when the worker ended before
    it ran (cg_worker_destroy). Frees WORK. */
typedef void (cg_after_work_fn) (cg_work_t *work, bool ran);

/*  One piece of work; embed it first in a struct of its own data. */
struct cg_work_t {
    cg_work_fn *work_cb;
    cg_after_work_fn *after_cb;
};

/*  Starts a worker thread named NAME (for the log) that holds at most QUEUE_MAX works
    waiting or running. Returns it; the caller owns it. */
cg_worker_t *cg_worker_new (const char *name, size_t queue_max);

/*  As cg_worker_new, the thread's nice value raised by NICE (capped at 19) as it starts:
    heavy work on a client's behalf (a search, an export, a decode) then yields the CPU to
    the event loop and to the runs' answers, on a busy machine. */
#define CG_WORKER_NICE 10
cg_worker_t *cg_worker_new_nice (const char *name, size_t queue_max, int nice);

/*  Stops the worker once the works queued have run (a client's last requests are done
    and answered), or, after cg_worker_cancel_waiting, once the one running has: every work
    still out comes back through its after_cb (RAN false for those that did not run) before
    this returns. Sets *SELF_P to NULL; safe on NULL. */
void cg_worker_destroy (cg_worker_t **self_p);

/*  Waits until every work queued so far, and every one their after_cb queue, has run (or
    been skipped) and calls their after_cb, on the caller's thread; the worker goes on
    taking works. For an owner of works that ends before the worker does. Callable from the
    owner's thread only. */
void cg_worker_flush (cg_worker_t *self);

/*  From now on works still waiting come back without running (RAN false): for a server
    told to stop now (a signal), not to finish its work. Callable from the owner's thread
    only. */
void cg_worker_cancel_waiting (cg_worker_t *self);

/*  Queues WORK (its work_cb and after_cb set). FORCE queues it past QUEUE_MAX (for work
    whose number something else bounds, such as a finished run's record). Returns 0, or -1
    with *err set to EAGAIN and a message naming the limit when QUEUE_MAX works are out
    already: WORK stays the caller's then. */
int cg_worker_queue (cg_worker_t *self, cg_work_t *work, bool force, cg_error_t **err);

/*  The socket that is readable when finished works wait to be collected (for zmq_poll). */
zsock_t *cg_worker_sock (cg_worker_t *self);

/*  Watches SELF's socket on LOOP (the owner's) for finished works, calling FN with ARG, in
    the rounds that begin with works out only: an idle worker costs the loop's waits
    nothing. Returns the watch (the loop's): cg_loop_unwatch, or cg_loop_forget of ARG,
    ends it, and must before SELF is destroyed. */
cg_loop_watch_t *cg_worker_watch (cg_worker_t *self, cg_loop_t *loop, cg_loop_watch_fn *fn,
                                  void *arg);

/*  Calls the after_cb of every finished work waiting, on the caller's thread. */
void cg_worker_collect (cg_worker_t *self);

/*  The works queued and not yet collected. */
size_t cg_worker_pending (cg_worker_t *self);

#endif
