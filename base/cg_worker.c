/*  cg_worker — a bounded background worker: a czmq actor running works in order. */
#include "base/cg_worker.h"
#include "base/cg_util.h"

#include <errno.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/resource.h>

struct cg_worker_t {
    zactor_t *actor;
    char *name;
    size_t queue_max;
    int nice;             /* added to the thread's nice value as it starts */
    size_t pending;       /* queued, not collected: the owner's thread alone */
    atomic_bool stopping; /* set by cg_worker_destroy: waiting works are not run */
};

//  The actor: "WORK" <work> runs it and answers "DONE" <work> ("SKIP" when stopping);
//  "STOP" answers "STOPPED" (after every work sent before it); "$TERM" ends it.
static void
s_actor (zsock_t *pipe, void *arg)
{
    cg_worker_t *self = arg;
    if (self->nice > 0) {
        //  Linux: PRIO_PROCESS 0 is this thread alone. Lowering one's own priority needs no
        //  privilege; a failure leaves it as it was.
        errno = 0;
        int now = getpriority (PRIO_PROCESS, 0);
        if (errno == 0)
            setpriority (PRIO_PROCESS, 0, now + self->nice > 19 ? 19 : now + self->nice);
    }
    zsock_signal (pipe, 0);
    while (true) {
        char *command = NULL;
        void *pointer = NULL;
        if (zsock_recv (pipe, "sp", &command, &pointer) < 0)
            break;
        bool term = command && strcmp (command, "$TERM") == 0;
        if (command && strcmp (command, "WORK") == 0 && pointer) {
            cg_work_t *work = pointer;
            bool run = !atomic_load (&self->stopping);
            if (run)
                work->work_cb (work);
            zsock_send (pipe, "sp", run ? "DONE" : "SKIP", work);
        }
        else if (command && strcmp (command, "STOP") == 0)
            zsock_send (pipe, "sp", "STOPPED", NULL);
        zstr_free (&command);
        if (term)
            break;
    }
}

cg_worker_t *
cg_worker_new (const char *name, size_t queue_max)
{
    return cg_worker_new_nice (name, queue_max, 0);
}

cg_worker_t *
cg_worker_new_nice (const char *name, size_t queue_max, int nice)
{
    cg_worker_t *self = cg_xcalloc (1, sizeof *self);
    self->name = cg_xstrdup (name);
    self->queue_max = queue_max;
    self->nice = nice;
    atomic_init (&self->stopping, false);
    self->actor = zactor_new (s_actor, self);
    return self;
}

//  Receives one answer from the actor and hands its work back. Returns false at STOPPED
//  or when nothing could be read.
static bool
s_take_one (cg_worker_t *self)
{
    char *command = NULL;
    void *pointer = NULL;
    if (zsock_recv (self->actor, "sp", &command, &pointer) < 0)
        return false;
    bool more = command && strcmp (command, "STOPPED") != 0;
    if (more && pointer) {
        cg_work_t *work = pointer;
        self->pending--;
        work->after_cb (work, strcmp (command, "DONE") == 0);
    }
    zstr_free (&command);
    return more;
}

void
cg_worker_flush (cg_worker_t *self)
{
    //  STOP comes after every work queued: each one's answer arrives before STOPPED. Works
    //  an after_cb queued meanwhile come after that STOP: another round waits for them.
    do {
        if (zstr_send (self->actor, "STOP") != 0)
            return;
        while (s_take_one (self))
            ;
    } while (self->pending > 0);
}

void
cg_worker_destroy (cg_worker_t **self_p)
{
    cg_worker_t *self = *self_p;
    if (!self)
        return;
    *self_p = NULL;
    cg_worker_flush (self);
    zactor_destroy (&self->actor);
    free (self->name);
    free (self);
}

void
cg_worker_cancel_waiting (cg_worker_t *self)
{
    atomic_store (&self->stopping, true);
}

int
cg_worker_queue (cg_worker_t *self, cg_work_t *work, bool force, cg_error_t **err)
{
    if (!force && self->pending >= self->queue_max)
        return cg_error_set (err, EAGAIN,
                             "the server's %s worker has %zu operations waiting, its limit: try "
                             "again when they are done",
                             self->name, self->queue_max);
    if (zsock_send (self->actor, "sp", "WORK", work) < 0)
        return cg_error_set (err, EAGAIN, "the server's %s worker is not running", self->name);
    self->pending++;
    return 0;
}

zsock_t *
cg_worker_sock (cg_worker_t *self)
{
    return zactor_sock (self->actor);
}

//  cg_loop_when_fn: a worker's socket is read only while works are out.
static bool
s_busy (void *arg)
{
    return ((cg_worker_t *)arg)->pending > 0;
}

cg_loop_watch_t *
cg_worker_watch (cg_worker_t *self, cg_loop_t *loop, cg_loop_watch_fn *fn, void *arg)
{
    cg_loop_watch_t *watch =
        cg_loop_watch_socket (loop, zactor_sock (self->actor), ZMQ_POLLIN, fn, arg);
    cg_loop_watch_when (watch, s_busy, self);
    return watch;
}

void
cg_worker_collect (cg_worker_t *self)
{
    while (self->pending > 0 && (zsock_events (zactor_sock (self->actor)) & ZMQ_POLLIN))
        if (!s_take_one (self))
            break;
}

size_t
cg_worker_pending (cg_worker_t *self)
{
    return self->pending;
}
