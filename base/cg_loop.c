/*  cg_loop — the process's event loop over zmq_poll: watches, timers, before-wait hooks. */
#define _GNU_SOURCE /* dladdr */
#include "base/cg_loop.h"
#include "base/cg_log.h"
#include "base/cg_util.h"

#include <czmq.h>
#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

struct cg_loop_watch_t {
    void *socket; /* a libzmq socket, or NULL for an fd */
    int fd;
    short events;
    cg_loop_watch_fn *fn;
    void *arg;
    cg_loop_when_fn *when; /* NULL, or asked before each wait whether to take part */
    void *when_arg;
    bool dead; /* removed: freed at the end of the round */
};

struct cg_loop_timer_t {
    int64_t due_ms; /* zclock_mono */
    uint64_t seq;   /* set order, for equal due times */
    cg_loop_timer_fn *fn;
    void *arg;
    bool dead;
};

struct cg_loop_hook_t {
    cg_loop_hook_fn *fn;
    void *arg;
    bool dead;
};

//  A growable array of pointers; dead entries are compacted away outside rounds.
typedef struct {
    void **items;
    size_t size, room;
} s_vec_t;

struct cg_loop_t {
    s_vec_t watches, timers, hooks;
    uint64_t next_seq;
    bool stopped;
    bool in_round;            /* between the first hook and the last timer of a round */
    zmq_pollitem_t *items;    /* the round's poll items, */
    cg_loop_watch_t **polled; /* and the watch of each */
    size_t items_room;
    int64_t longest_us; /* the longest callback since cg_loop_longest last read it */
};

//  A callback that holds the loop this long is logged (debug): everything else waits.
#define S_SLOW_US 20000

//  When a callback starts: the loop's clock, and (when the debug log is on) the thread's CPU
//  time, which tells the loop's own work from a wait for the CPU.
typedef struct {
    int64_t wall_us, cpu_us; /* cpu_us: -1 when not measured */
} s_start_t;

static int64_t
s_cpu_us (void)
{
    struct timespec ts;
    clock_gettime (CLOCK_THREAD_CPUTIME_ID, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static s_start_t
s_start (void)
{
    return (s_start_t){zclock_usecs (), cg_log_enabled (3) ? s_cpu_us () : -1};
}

//  Notes that callback FN of KIND ran from START until now: the longest kept, a slow one
//  logged with its CPU time and its place in the binary (addr2line -e cellgate OFFSET).
static void
s_timed (cg_loop_t *self, const char *kind, void *fn, s_start_t start)
{
    int64_t took = zclock_usecs () - start.wall_us;
    if (took > self->longest_us)
        self->longest_us = took;
    if (took < S_SLOW_US)
        return;
    Dl_info info = {0};
    uintptr_t offset = dladdr (fn, &info) && info.dli_fbase
                           ? (uintptr_t)fn - (uintptr_t)info.dli_fbase
                           : (uintptr_t)fn;
    double cpu_ms = start.cpu_us < 0 ? -1 : (double)(s_cpu_us () - start.cpu_us) / 1000;
    cg_log (3,
            "event loop: a %s callback held the loop %.1f ms, %.1f ms of it on the CPU (%s+0x%lx)",
            kind, (double)took / 1000, cpu_ms, info.dli_fname ? info.dli_fname : "?",
            (unsigned long)offset);
}

int64_t
cg_loop_longest (cg_loop_t *self)
{
    int64_t longest = self->longest_us;
    self->longest_us = 0;
    return longest;
}

static void
s_vec_add (s_vec_t *vec, void *item)
{
    if (vec->size == vec->room) {
        vec->room = vec->room ? vec->room * 2 : 16;
        vec->items = cg_xrealloc (vec->items, vec->room * sizeof *vec->items);
    }
    vec->items[vec->size++] = item;
}

//  Frees the entries of VEC that DEAD_OF says are dead, keeping the others in order.
static void
s_vec_compact (s_vec_t *vec, bool (*dead_of) (const void *))
{
    size_t kept = 0;
    for (size_t i = 0; i < vec->size; i++)
        if (dead_of (vec->items[i]))
            free (vec->items[i]);
        else
            vec->items[kept++] = vec->items[i];
    vec->size = kept;
}

static bool
s_watch_dead (const void *item)
{
    return ((const cg_loop_watch_t *)item)->dead;
}

static bool
s_timer_dead (const void *item)
{
    return ((const cg_loop_timer_t *)item)->dead;
}

static bool
s_hook_dead (const void *item)
{
    return ((const cg_loop_hook_t *)item)->dead;
}

static void
s_compact (cg_loop_t *self)
{
    if (self->in_round)
        return;
    s_vec_compact (&self->watches, s_watch_dead);
    s_vec_compact (&self->timers, s_timer_dead);
    s_vec_compact (&self->hooks, s_hook_dead);
}

cg_loop_t *
cg_loop_new (void)
{
    return cg_xcalloc (1, sizeof (cg_loop_t));
}

void
cg_loop_destroy (cg_loop_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    cg_loop_t *self = *self_p;
    s_vec_t *all[] = {&self->watches, &self->timers, &self->hooks};
    for (size_t v = 0; v < 3; v++) {
        for (size_t i = 0; i < all[v]->size; i++)
            free (all[v]->items[i]);
        free (all[v]->items);
    }
    free (self->items);
    free (self->polled);
    free (self);
    *self_p = NULL;
}

cg_loop_watch_t *
cg_loop_watch_fd (cg_loop_t *self, int fd, short events, cg_loop_watch_fn *fn, void *arg)
{
    cg_loop_watch_t *watch = cg_xcalloc (1, sizeof *watch);
    *watch = (cg_loop_watch_t){.fd = fd, .events = events, .fn = fn, .arg = arg};
    s_vec_add (&self->watches, watch);
    return watch;
}

cg_loop_watch_t *
cg_loop_watch_socket (cg_loop_t *self, void *socket, short events, cg_loop_watch_fn *fn, void *arg)
{
    cg_loop_watch_t *watch = cg_loop_watch_fd (self, 0, events, fn, arg);
    watch->socket = zsock_resolve (socket);
    return watch;
}

void
cg_loop_watch_events (cg_loop_watch_t *watch, short events)
{
    watch->events = events;
}

void
cg_loop_watch_when (cg_loop_watch_t *watch, cg_loop_when_fn *when, void *when_arg)
{
    watch->when = when;
    watch->when_arg = when_arg;
}

void
cg_loop_unwatch (cg_loop_t *self, cg_loop_watch_t **watch_p)
{
    if (!watch_p || !*watch_p)
        return;
    (*watch_p)->dead = true;
    *watch_p = NULL;
    s_compact (self);
}

cg_loop_timer_t *
cg_loop_timer (cg_loop_t *self, int ms, cg_loop_timer_fn *fn, void *arg)
{
    cg_loop_timer_t *timer = cg_xcalloc (1, sizeof *timer);
    *timer = (cg_loop_timer_t){.due_ms = zclock_mono () + (ms < 0 ? 0 : ms),
                               .seq = self->next_seq++,
                               .fn = fn,
                               .arg = arg};
    s_vec_add (&self->timers, timer);
    return timer;
}

void
cg_loop_timer_end (cg_loop_t *self, cg_loop_timer_t **timer_p)
{
    if (!timer_p || !*timer_p)
        return;
    (*timer_p)->dead = true;
    *timer_p = NULL;
    s_compact (self);
}

cg_loop_hook_t *
cg_loop_before_wait (cg_loop_t *self, cg_loop_hook_fn *fn, void *arg)
{
    cg_loop_hook_t *hook = cg_xcalloc (1, sizeof *hook);
    *hook = (cg_loop_hook_t){.fn = fn, .arg = arg};
    s_vec_add (&self->hooks, hook);
    return hook;
}

void
cg_loop_hook_end (cg_loop_t *self, cg_loop_hook_t **hook_p)
{
    if (!hook_p || !*hook_p)
        return;
    (*hook_p)->dead = true;
    *hook_p = NULL;
    s_compact (self);
}

void
cg_loop_forget (cg_loop_t *self, const void *arg)
{
    for (size_t i = 0; i < self->watches.size; i++)
        if (((cg_loop_watch_t *)self->watches.items[i])->arg == arg)
            ((cg_loop_watch_t *)self->watches.items[i])->dead = true;
    for (size_t i = 0; i < self->timers.size; i++)
        if (((cg_loop_timer_t *)self->timers.items[i])->arg == arg)
            ((cg_loop_timer_t *)self->timers.items[i])->dead = true;
    for (size_t i = 0; i < self->hooks.size; i++)
        if (((cg_loop_hook_t *)self->hooks.items[i])->arg == arg)
            ((cg_loop_hook_t *)self->hooks.items[i])->dead = true;
    s_compact (self);
}

void
cg_loop_stop (cg_loop_t *self)
{
    self->stopped = true;
}

bool
cg_loop_stopped (cg_loop_t *self)
{
    return self->stopped;
}

//  WAIT_MS lowered to MS when MS is a wish (0 and up) and sooner (-1: no limit yet).
static int
s_sooner (int wait_ms, int64_t ms)
{
    if (ms < 0)
        return wait_ms;
    if (ms > INT32_MAX)
        ms = INT32_MAX;
    return wait_ms < 0 || ms < wait_ms ? (int)ms : wait_ms;
}

//  Runs the hooks there are now; returns the wait their wishes and the timers allow.
static int
s_before_wait (cg_loop_t *self)
{
    int wait_ms = -1;
    size_t count = self->hooks.size;
    for (size_t i = 0; i < count; i++) {
        cg_loop_hook_t *hook = self->hooks.items[i];
        if (hook->dead)
            continue;
        s_start_t start = s_start ();
        wait_ms = s_sooner (wait_ms, hook->fn (self, hook->arg));
        s_timed (self, "before-wait", (void *)hook->fn, start);
    }
    int64_t now = zclock_mono ();
    for (size_t i = 0; i < self->timers.size; i++) {
        cg_loop_timer_t *timer = self->timers.items[i];
        if (!timer->dead)
            wait_ms = s_sooner (wait_ms, timer->due_ms > now ? timer->due_ms - now : 0);
    }
    return wait_ms;
}

//  The poll items of the live watches that wait for something; returns how many.
static int
s_items (cg_loop_t *self)
{
    if (self->items_room < self->watches.size) {
        self->items_room = self->watches.size;
        self->items = cg_xrealloc (self->items, self->items_room * sizeof *self->items);
        self->polled = cg_xrealloc (self->polled, self->items_room * sizeof *self->polled);
    }
    int count = 0;
    for (size_t i = 0; i < self->watches.size; i++) {
        cg_loop_watch_t *watch = self->watches.items[i];
        if (watch->dead || !watch->events || (watch->when && !watch->when (watch->when_arg)))
            continue;
        self->items[count] =
            (zmq_pollitem_t){watch->socket, watch->socket ? 0 : watch->fd, watch->events, 0};
        self->polled[count++] = watch;
    }
    return count;
}

static int
s_timer_order (const void *a, const void *b)
{
    const cg_loop_timer_t *x = *(cg_loop_timer_t *const *)a, *y = *(cg_loop_timer_t *const *)b;
    if (x->due_ms != y->due_ms)
        return x->due_ms < y->due_ms ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

//  Calls the timers that are due now, earliest first (not those set while this runs).
static void
s_fire_timers (cg_loop_t *self)
{
    int64_t now = zclock_mono ();
    size_t count = 0, total = self->timers.size;
    cg_loop_timer_t **due = cg_xcalloc (total ? total : 1, sizeof *due);
    for (size_t i = 0; i < total; i++) {
        cg_loop_timer_t *timer = self->timers.items[i];
        if (!timer->dead && timer->due_ms <= now)
            due[count++] = timer;
    }
    qsort (due, count, sizeof *due, s_timer_order);
    for (size_t i = 0; i < count; i++) {
        if (due[i]->dead)
            continue;
        s_start_t start = s_start ();
        int again = due[i]->fn (self, due[i]->arg);
        s_timed (self, "timer", (void *)due[i]->fn, start);
        if (due[i]->dead)
            continue;
        if (again < 0)
            due[i]->dead = true;
        else {
            due[i]->due_ms = zclock_mono () + again;
            due[i]->seq = self->next_seq++;
        }
    }
    free (due);
}

//  Items cg_zpoll takes on the stack; past it, zmq_poll.
#define S_ZPOLL_MAX 64

//  ITEM's socket events into its revents (what it waits for). Returns 1 when some came, 0
//  when none, -1 when they could not be read.
static int
s_zpoll_socket (zmq_pollitem_t *item)
{
    uint32_t events = 0;
    size_t size = sizeof events;
    if (zmq_getsockopt (item->socket, ZMQ_EVENTS, &events, &size) < 0)
        return -1;
    item->revents = (short)(events & (uint32_t)item->events & (ZMQ_POLLIN | ZMQ_POLLOUT));
    return item->revents != 0;
}

int
cg_zpoll (zmq_pollitem_t *items, int count, long timeout_ms)
{
    if (count > S_ZPOLL_MAX || count < 0)
        return zmq_poll (items, count, timeout_ms);
    struct pollfd pfds[S_ZPOLL_MAX];
    int ready = 0;
    for (int i = 0; i < count; i++) {
        items[i].revents = 0;
        pfds[i] = (struct pollfd){items[i].fd, 0, 0};
        if (items[i].events & ZMQ_POLLIN)
            pfds[i].events |= POLLIN;
        if (items[i].events & ZMQ_POLLOUT)
            pfds[i].events |= POLLOUT;
        if (items[i].events & ZMQ_POLLPRI)
            pfds[i].events |= POLLPRI;
        if (!items[i].socket)
            continue;
        size_t size = sizeof pfds[i].fd;
        int rc = zmq_getsockopt (items[i].socket, ZMQ_FD, &pfds[i].fd, &size);
        pfds[i].events = POLLIN;
        if (rc < 0 || (rc = s_zpoll_socket (&items[i])) < 0)
            return -1;
        ready += rc;
    }
    int64_t end = timeout_ms > 0 ? zclock_mono () + timeout_ms : 0;
    while (true) {
        int64_t wait = ready || timeout_ms == 0 ? 0 : timeout_ms < 0 ? -1 : end - zclock_mono ();
        int woke = poll (pfds, (nfds_t)count,
                         wait < 0           ? -1
                         : wait > INT32_MAX ? INT32_MAX
                                            : (int)wait);
        if (woke < 0)
            return -1;
        for (int i = 0; woke > 0 && i < count; i++) {
            if (!pfds[i].revents)
                continue;
            int rc = 0;
            if (items[i].socket && !items[i].revents && (rc = s_zpoll_socket (&items[i])) < 0)
                return -1;
            if (!items[i].socket) {
                short in = pfds[i].revents;
                items[i].revents =
                    (short)((in & POLLIN ? ZMQ_POLLIN : 0) | (in & POLLOUT ? ZMQ_POLLOUT : 0)
                            | (in & POLLPRI ? ZMQ_POLLPRI : 0)
                            | (in & ~(POLLIN | POLLOUT | POLLPRI) ? ZMQ_POLLERR : 0));
                rc = items[i].revents != 0;
            }
            ready += rc;
        }
        if (ready || wait == 0 || (timeout_ms > 0 && zclock_mono () >= end))
            return ready;
    }
}

int
cg_loop_run_once (cg_loop_t *self)
{
    self->in_round = true;
    int wait_ms = s_before_wait (self);
    int rc = 0;
    if (!self->stopped) {
        int count = s_items (self);
        rc = cg_zpoll (self->items, count, wait_ms) < 0 && errno != EINTR ? -1 : 1;
        if (rc < 0)
            cg_log (0, "event loop: zmq_poll over %d items: %s", count, zmq_strerror (errno));
        for (int i = 0; rc == 1 && i < count; i++) {
            cg_loop_watch_t *watch = self->polled[i];
            if (self->items[i].revents && !watch->dead) {
                s_start_t start = s_start ();
                watch->fn (self, self->items[i].revents, watch->arg);
                s_timed (self, "watch", (void *)watch->fn, start);
            }
        }
        if (rc == 1)
            s_fire_timers (self);
    }
    self->in_round = false;
    s_compact (self);
    return rc;
}

int
cg_loop_run (cg_loop_t *self)
{
    while (!self->stopped && !zsys_interrupted) {
        int rc = cg_loop_run_once (self);
        if (rc < 0)
            return -1;
    }
    return 0;
}
