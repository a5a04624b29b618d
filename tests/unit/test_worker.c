/*  Unit tests for cg_worker: works run in order on another thread and come back to the
    owner's thread; the queue is bounded (EAGAIN naming the limit; force goes past it);
    destroy runs what is queued and hands every work back; flush does that and the worker
    goes on; cancelled, the waiting ones come back unrun; a niced worker's thread runs at
    the nice value asked, the owner's thread at its own. */
#include "base/cg_worker.h"
#include "base/cg_util.h"
#include "cg_test.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

typedef struct {
    cg_work_t work;
    int number;
    pthread_t ran_on; /* set by the work */
    int nice;         /* the worker thread's nice value, set by the work */
    bool slow;        /* sleeps a little, so that others wait behind it */
} s_work_t;

static int s_order[64], s_nice[64], s_done, s_not_run;
static pthread_t s_owner;
static atomic_int s_slow_started; /* slow works that began running */

static void
s_work_cb (cg_work_t *work)
{
    s_work_t *self = (s_work_t *)work;
    self->ran_on = pthread_self ();
    self->nice = getpriority (PRIO_PROCESS, 0);
    if (self->slow) {
        atomic_fetch_add (&s_slow_started, 1);
        usleep (200 * 1000);
    }
}

static void
s_after_cb (cg_work_t *work, bool ran)
{
    s_work_t *self = (s_work_t *)work;
    EXPECT (pthread_equal (pthread_self (), s_owner), "after_cb runs on the owner's thread");
    if (ran) {
        EXPECT (!pthread_equal (self->ran_on, s_owner), "work %d ran on the worker's thread",
                self->number);
        s_order[s_done] = self->number;
        s_nice[s_done++] = self->nice;
    }
    else
        s_not_run++;
    free (self);
}

static s_work_t *
s_new (int number, bool slow)
{
    s_work_t *self = cg_xcalloc (1, sizeof *self);
    self->work = (cg_work_t){.work_cb = s_work_cb, .after_cb = s_after_cb};
    self->number = number;
    self->slow = slow;
    return self;
}

//  Waits (bounded by count) until N works are back.
static void
s_collect (cg_worker_t *worker, int n)
{
    for (int i = 0; i < 500 && s_done < n; i++) {
        zmq_pollitem_t item = {zsock_resolve (cg_worker_sock (worker)), 0, ZMQ_POLLIN, 0};
        zmq_poll (&item, 1, 100);
        cg_worker_collect (worker);
    }
}

static cg_worker_t *s_watched;
static int s_watched_fired;

static void
s_watched_cb (cg_loop_t *loop, short revents, void *arg)
{
    (void)loop, (void)revents;
    (*(int *)arg)++;
    cg_worker_collect (s_watched);
}

static int
s_queue_timer_cb (cg_loop_t *loop, void *arg)
{
    (void)loop;
    cg_error_t *err = NULL;
    EXPECT (cg_worker_queue (arg, &s_new (50, false)->work, false, &err) == 0, "50 queued");
    return -1;
}

//  Ends every round within 100 ms, so that a watch never asked cannot hang the test.
static int
s_tick_cb (cg_loop_t *loop, void *arg)
{
    (void)loop, (void)arg;
    return 100;
}

int
main (void)
{
    s_owner = pthread_self ();
    cg_worker_t *worker = cg_worker_new ("test", 4);
    cg_error_t *err = NULL;
    for (int i = 0; i < 4; i++)
        EXPECT (cg_worker_queue (worker, &s_new (i, i == 0)->work, false, &err) == 0, "queue %d",
                i);
    s_work_t *extra = s_new (4, false);
    EXPECT (cg_worker_queue (worker, &extra->work, false, &err) < 0 && err && err->code == EAGAIN
                && strstr (cg_error_message (err), "4 operations waiting"),
            "a fifth is refused naming the limit: %s", cg_error_message (err));
    cg_error_destroy (&err);
    EXPECT (cg_worker_queue (worker, &extra->work, true, &err) == 0, "forced past the limit");
    EXPECT (cg_worker_pending (worker) == 5, "5 pending");
    s_collect (worker, 5);
    EXPECT (s_done == 5, "all 5 back: %d", s_done);
    for (int i = 0; i < s_done; i++)
        EXPECT (s_order[i] == i, "in order: %d at %d", s_order[i], i);
    EXPECT (cg_worker_pending (worker) == 0, "none pending");
    //  Destroy with works waiting behind a slow one: they run, and every one comes back.
    s_done = 0;
    EXPECT (cg_worker_queue (worker, &s_new (10, true)->work, false, &err) == 0, "slow queued");
    for (int i = 11; i < 14; i++)
        EXPECT (cg_worker_queue (worker, &s_new (i, false)->work, false, &err) == 0, "queued %d",
                i);
    cg_worker_destroy (&worker);
    EXPECT (!worker, "destroy sets NULL");
    EXPECT (s_done == 4 && s_not_run == 0, "every queued work ran: %d ran, %d not", s_done,
            s_not_run);
    //  Flushed: what is queued runs and comes back, and the worker takes works after it.
    s_done = 0;
    worker = cg_worker_new ("test", 4);
    EXPECT (cg_worker_queue (worker, &s_new (30, true)->work, false, &err) == 0, "slow queued");
    EXPECT (cg_worker_queue (worker, &s_new (31, false)->work, false, &err) == 0, "31 queued");
    cg_worker_flush (worker);
    EXPECT (s_done == 2 && s_order[0] == 30 && s_order[1] == 31 && cg_worker_pending (worker) == 0,
            "flush ran and collected both in order: %d back", s_done);
    EXPECT (cg_worker_queue (worker, &s_new (32, false)->work, false, &err) == 0, "32 queued");
    s_collect (worker, 3);
    EXPECT (s_done == 3 && s_order[2] == 32, "the worker runs works after a flush");
    cg_worker_destroy (&worker);
    //  Watched on a loop (cg_worker_watch): idle, the loop's wait leaves it out; a work
    //  queued from a callback opens it for the next round, and it comes back there.
    s_done = 0;
    worker = cg_worker_new ("test", 4);
    cg_loop_t *loop = cg_loop_new ();
    s_watched = worker;
    cg_worker_watch (worker, loop, s_watched_cb, &s_watched_fired);
    cg_loop_timer (loop, 0, s_queue_timer_cb, worker);
    cg_loop_timer (loop, 100, s_tick_cb, &s_watched_fired);
    for (int i = 0; i < 100 && s_done < 1; i++)
        cg_loop_run_once (loop);
    EXPECT (s_done == 1 && s_order[0] == 50 && s_watched_fired >= 1
                && cg_worker_pending (worker) == 0,
            "queued from a timer, the work came back through the loop: %d back, %d fired", s_done,
            s_watched_fired);
    cg_loop_forget (loop, &s_watched_fired);
    cg_worker_destroy (&worker);
    cg_loop_destroy (&loop);
    //  Cancelled: the one running finishes, the waiting ones come back unrun.
    s_done = 0;
    worker = cg_worker_new ("test", 4);
    EXPECT (cg_worker_queue (worker, &s_new (20, true)->work, false, &err) == 0, "slow queued");
    for (int i = 21; i < 24; i++)
        EXPECT (cg_worker_queue (worker, &s_new (i, false)->work, false, &err) == 0, "queued %d",
                i);
    //  Until the slow one runs (bounded by count).
    for (int i = 0; i < 5000 && atomic_load (&s_slow_started) < 4; i++)
        usleep (1000);
    cg_worker_cancel_waiting (worker);
    cg_worker_destroy (&worker);
    EXPECT (s_done == 1 && s_not_run == 3, "the running one finished, 3 not run: %d ran, %d not",
            s_done, s_not_run);
    //  Niced: its thread runs at the owner's nice value plus 3, the owner's is unchanged.
    s_done = 0;
    int own = getpriority (PRIO_PROCESS, 0);
    worker = cg_worker_new_nice ("test", 4, 3);
    EXPECT (cg_worker_queue (worker, &s_new (40, false)->work, false, &err) == 0, "40 queued");
    s_collect (worker, 1);
    EXPECT (s_done == 1 && s_nice[0] == (own + 3 > 19 ? 19 : own + 3),
            "the work ran at nice %d, the owner is at %d", s_nice[0], own);
    EXPECT (getpriority (PRIO_PROCESS, 0) == own, "the owner's nice value is unchanged");
    cg_worker_destroy (&worker);
    printf ("%d passed, %d failed\n", s_passes, s_failures);
    return s_failures ? 1 : 0;
}
