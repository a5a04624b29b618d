/*  Unit tests for cg_loop: fd and ZeroMQ socket watches fire for their events only; timers
    fire earliest first (equal times in the order set) and again as their fn says; a watch,
    timer or hook removed during a round is not called after; one added during a round
    waits for the next; before-wait hooks run in order before each wait, bound it, and may
    stop the loop. cg_zpoll answers as zmq_poll does: a socket with a message waiting is
    ready even when its ZMQ_FD was already read (the second of two queued messages), one
    that gets a message while it waits wakes it, an fd item too, and the timeout ends it.
    A watch given a when-function takes part in a wait only while it answers true.
    A callback that holds the loop over 20 ms is logged (debug) with its place in the binary,
    and cg_loop_longest gives the longest since it was last asked. */
#include "base/cg_log.h"
#include "base/cg_loop.h"
#include "cg_test.h"

#include <czmq.h>
#include <string.h>
#include <unistd.h>

static char s_trace[256]; /* what was called, one letter each */

static void
s_mark (char c)
{
    size_t len = strlen (s_trace);
    if (len + 1 < sizeof s_trace)
        s_trace[len] = c, s_trace[len + 1] = '\0';
}

typedef struct {
    char letter;
    int fd;                 /* read one byte from it when set */
    cg_loop_watch_t **peer; /* unwatch this one when called */
    int again;              /* a timer's return */
    int times;              /* a timer: how many more times it says again */
    cg_loop_timer_t **victim;
    cg_loop_t *loop;
    cg_loop_watch_t **added; /* a watch fn adds a watch on ADD_FD here */
    int add_fd;
    short revents;
} s_arg_t;

static void
s_watch_cb (cg_loop_t *loop, short revents, void *arg)
{
    s_arg_t *self = arg;
    s_mark (self->letter);
    self->revents = revents;
    char byte;
    if (self->fd >= 0 && read (self->fd, &byte, 1) != 1)
        s_mark ('!');
    if (self->peer)
        cg_loop_unwatch (loop, self->peer);
    static s_arg_t s_added = {.letter = 'z', .fd = -1};
    if (self->added)
        *self->added = cg_loop_watch_fd (loop, self->add_fd, ZMQ_POLLIN, s_watch_cb, &s_added);
}

static int
s_timer_cb (cg_loop_t *loop, void *arg)
{
    s_arg_t *self = arg;
    s_mark (self->letter);
    if (self->victim)
        cg_loop_timer_end (loop, self->victim);
    return self->times-- > 0 ? self->again : -1;
}

static int
s_hook_cb (cg_loop_t *loop, void *arg)
{
    s_arg_t *self = arg;
    s_mark (self->letter);
    if (self->peer) /* (a hook's peer is a hook here, cast) */
        cg_loop_hook_end (loop, (cg_loop_hook_t **)self->peer);
    if (self->times-- == 0)
        cg_loop_stop (loop);
    return self->again;
}

static void
test_fds (void)
{
    const char *name = "fds";
    cg_loop_t *loop = cg_loop_new ();
    int fds[2];
    CHECK (pipe (fds) == 0, "pipe");
    s_arg_t a = {.letter = 'a', .fd = fds[0]}, b = {.letter = 'b', .fd = -1};
    cg_loop_watch_t *wa = cg_loop_watch_fd (loop, fds[0], ZMQ_POLLIN, s_watch_cb, &a);
    cg_loop_watch_t *wb = cg_loop_watch_fd (loop, fds[1], 0, s_watch_cb, &b); /* waits for none */
    cg_loop_timer (loop, 0, s_timer_cb, &(s_arg_t){.letter = 't'}); /* so the round ends */
    s_trace[0] = '\0';
    CHECK (cg_loop_run_once (loop) == 1, "a round");
    EXPECT (strcmp (s_trace, "t") == 0, "nothing to read, the write end unwatched: %s", s_trace);
    CHECK (write (fds[1], "x", 1) == 1, "write");
    s_trace[0] = '\0';
    CHECK (cg_loop_run_once (loop) == 1, "a round");
    EXPECT (strcmp (s_trace, "a") == 0 && (a.revents & ZMQ_POLLIN), "the read end fired: %s",
            s_trace);
    cg_loop_watch_events (wb, ZMQ_POLLOUT);
    cg_loop_unwatch (loop, &wa);
    EXPECT (wa == NULL, "unwatch sets NULL");
    CHECK (write (fds[1], "x", 1) == 1, "write");
    s_trace[0] = '\0';
    CHECK (cg_loop_run_once (loop) == 1, "a round");
    EXPECT (strcmp (s_trace, "b") == 0 && (b.revents & ZMQ_POLLOUT),
            "the write end, now watched for POLLOUT, fired; the unwatched read end not: %s",
            s_trace);
    cg_loop_unwatch (loop, &wb);
    //  A ZeroMQ socket (a zsock_t) and an actor-like pair.
    zsock_t *pull = zsock_new_pull ("inproc://test-loop"),
            *push = zsock_new_push (">inproc://test-loop");
    s_arg_t s = {.letter = 's', .fd = -1};
    cg_loop_watch_t *ws = cg_loop_watch_socket (loop, pull, ZMQ_POLLIN, s_watch_cb, &s);
    zstr_send (push, "hello");
    s_trace[0] = '\0';
    CHECK (cg_loop_run_once (loop) == 1, "a round");
    EXPECT (strcmp (s_trace, "s") == 0, "the socket fired: %s", s_trace);
    char *text = zstr_recv (pull);
    EXPECT (text && strcmp (text, "hello") == 0, "its message is there");
    zstr_free (&text);
    cg_loop_unwatch (loop, &ws);
    zsock_destroy (&push);
    zsock_destroy (&pull);
    close (fds[0]);
    close (fds[1]);
    cg_loop_destroy (&loop);
    EXPECT (loop == NULL, "destroy sets NULL");
}

static bool
s_when (void *arg)
{
    return *(bool *)arg;
}

static void
test_when (void)
{
    const char *name = "when";
    cg_loop_t *loop = cg_loop_new ();
    zsock_t *pull = zsock_new_pull ("inproc://test-loop-when"),
            *push = zsock_new_push (">inproc://test-loop-when");
    bool busy = false;
    s_arg_t s = {.letter = 's', .fd = -1};
    cg_loop_watch_t *ws = cg_loop_watch_socket (loop, pull, ZMQ_POLLIN, s_watch_cb, &s);
    cg_loop_watch_when (ws, s_when, &busy);
    zstr_send (push, "hello");
    cg_loop_timer (loop, 50, s_timer_cb, &(s_arg_t){.letter = 't'});
    s_trace[0] = '\0';
    CHECK (cg_loop_run_once (loop) == 1, "a round");
    EXPECT (strcmp (s_trace, "t") == 0, "a message waits, but the watch is not asked: %s", s_trace);
    busy = true;
    cg_loop_timer (loop, 50, s_timer_cb, &(s_arg_t){.letter = 't'});
    s_trace[0] = '\0';
    CHECK (cg_loop_run_once (loop) == 1, "a round");
    EXPECT (strcmp (s_trace, "s") == 0, "asked, the watch fires: %s", s_trace);
    char *text = zstr_recv (pull);
    EXPECT (text && strcmp (text, "hello") == 0, "its message is there");
    zstr_free (&text);
    cg_loop_watch_when (ws, NULL, NULL);
    busy = false;
    zstr_send (push, "again");
    s_trace[0] = '\0';
    CHECK (cg_loop_run_once (loop) == 1, "a round");
    EXPECT (strncmp (s_trace, "s", 1) == 0, "without a when-function, every round: %s", s_trace);
    zstr_free (&(char *){zstr_recv (pull)});
    cg_loop_unwatch (loop, &ws);
    zsock_destroy (&push);
    zsock_destroy (&pull);
    cg_loop_destroy (&loop);
}

static void
test_timers (void)
{
    const char *name = "timers";
    cg_loop_t *loop = cg_loop_new ();
    //  Set in the order c, a, b: c is due later, a and b at once (a before b, as set).
    s_arg_t c = {.letter = 'c'}, a = {.letter = 'a'}, b = {.letter = 'b', .again = 0, .times = 2};
    cg_loop_timer (loop, 20, s_timer_cb, &c);
    cg_loop_timer (loop, 0, s_timer_cb, &a);
    cg_loop_timer (loop, 0, s_timer_cb, &b);
    s_trace[0] = '\0';
    //  Bounded by rounds, not time: c fires in a later round than a and b.
    for (int round = 0; round < 1000 && !strchr (s_trace, 'c'); round++)
        CHECK (cg_loop_run_once (loop) == 1, "a round");
    EXPECT (strncmp (s_trace, "ab", 2) == 0, "a then b first: %s", s_trace);
    for (int round = 0; round < 10; round++)
        cg_loop_timer (loop, 0, s_timer_cb, &(s_arg_t){.letter = 'x'}), cg_loop_run_once (loop);
    size_t bs = 0;
    for (const char *p = s_trace; *p; p++)
        bs += *p == 'b';
    EXPECT (bs == 3 && strchr (s_trace, 'c') == strrchr (s_trace, 'c'),
            "b three times (it asked for two more), c once, then no more: %s", s_trace);
    //  A timer ended before it is due never fires.
    s_arg_t d = {.letter = 'd'};
    cg_loop_timer_t *td = cg_loop_timer (loop, 0, s_timer_cb, &d);
    cg_loop_timer_end (loop, &td);
    EXPECT (td == NULL, "timer_end sets NULL");
    s_trace[0] = '\0';
    cg_loop_timer (loop, 0, s_timer_cb, &(s_arg_t){.letter = 'e'});
    cg_loop_run_once (loop);
    EXPECT (strcmp (s_trace, "e") == 0, "the ended timer did not fire: %s", s_trace);
    cg_loop_destroy (&loop);
}

static void
test_removal (void)
{
    const char *name = "removal";
    cg_loop_t *loop = cg_loop_new ();
    int fds[2];
    CHECK (pipe (fds) == 0, "pipe");
    //  Two watches on one readable fd: the first ends the second, in the same round.
    cg_loop_watch_t *second = NULL;
    s_arg_t a = {.letter = 'a', .fd = -1, .peer = &second}, b = {.letter = 'b', .fd = -1};
    cg_loop_watch_t *first = cg_loop_watch_fd (loop, fds[0], ZMQ_POLLIN, s_watch_cb, &a);
    second = cg_loop_watch_fd (loop, fds[0], ZMQ_POLLIN, s_watch_cb, &b);
    CHECK (write (fds[1], "x", 1) == 1, "write");
    s_trace[0] = '\0';
    CHECK (cg_loop_run_once (loop) == 1, "a round");
    EXPECT (strcmp (s_trace, "a") == 0 && second == NULL, "the second was not called: %s", s_trace);
    //  A watch that ends itself, and one added during a round (not called until the next).
    cg_loop_unwatch (loop, &first);
    cg_loop_watch_t *self_ending = NULL, *added = NULL;
    s_arg_t c = {.letter = 'c', .fd = -1, .peer = &self_ending, .added = &added, .add_fd = fds[0]};
    self_ending = cg_loop_watch_fd (loop, fds[0], ZMQ_POLLIN, s_watch_cb, &c);
    s_trace[0] = '\0';
    CHECK (cg_loop_run_once (loop) == 1, "a round");
    EXPECT (strcmp (s_trace, "c") == 0 && added, "the added watch waited: %s", s_trace);
    s_trace[0] = '\0';
    CHECK (cg_loop_run_once (loop) == 1, "a round");
    EXPECT (strcmp (s_trace, "z") == 0, "the ended one is gone, the added one fired: %s", s_trace);
    cg_loop_unwatch (loop, &added);
    //  Two timers due at once: the first ends the second.
    cg_loop_timer_t *victim = NULL;
    s_arg_t t1 = {.letter = '1', .victim = &victim}, t2 = {.letter = '2'};
    cg_loop_timer (loop, 0, s_timer_cb, &t1);
    victim = cg_loop_timer (loop, 0, s_timer_cb, &t2);
    s_trace[0] = '\0';
    char byte;
    CHECK (read (fds[0], &byte, 1) == 1, "drain");
    CHECK (cg_loop_run_once (loop) == 1, "a round");
    EXPECT (strcmp (s_trace, "1") == 0 && victim == NULL, "the ended timer did not fire: %s",
            s_trace);
    //  A hook that ends the next one.
    cg_loop_hook_t *h2 = NULL;
    s_arg_t h1a = {.letter = 'h', .peer = (cg_loop_watch_t **)&h2, .again = 0, .times = -1};
    s_arg_t h2a = {.letter = 'i', .again = 0, .times = -1};
    cg_loop_hook_t *h1 = cg_loop_before_wait (loop, s_hook_cb, &h1a);
    h2 = cg_loop_before_wait (loop, s_hook_cb, &h2a);
    s_trace[0] = '\0';
    CHECK (cg_loop_run_once (loop) == 1, "a round");
    CHECK (cg_loop_run_once (loop) == 1, "a round");
    EXPECT (strcmp (s_trace, "hh") == 0 && h2 == NULL, "the ended hook never ran: %s", s_trace);
    cg_loop_hook_end (loop, &h1);
    //  A module leaving: everything with its arg goes, the rest stays.
    s_arg_t mine = {.letter = 'm', .fd = -1, .again = 0, .times = -1},
            other = {.letter = 'o', .again = -1, .times = -1};
    cg_loop_watch_fd (loop, fds[1], ZMQ_POLLOUT, s_watch_cb, &mine);
    cg_loop_timer (loop, 0, s_timer_cb, &mine);
    cg_loop_before_wait (loop, s_hook_cb, &mine);
    cg_loop_timer (loop, 0, s_timer_cb, &other);
    cg_loop_forget (loop, &mine);
    s_trace[0] = '\0';
    CHECK (cg_loop_run_once (loop) == 1, "a round");
    EXPECT (strcmp (s_trace, "o") == 0, "only the other's timer ran: %s", s_trace);
    close (fds[0]);
    close (fds[1]);
    cg_loop_destroy (&loop);
}

static void
test_before_wait (void)
{
    const char *name = "before_wait";
    cg_loop_t *loop = cg_loop_new ();
    int fds[2];
    CHECK (pipe (fds) == 0, "pipe");
    s_arg_t w = {.letter = 'w', .fd = fds[0]};
    cg_loop_watch_fd (loop, fds[0], ZMQ_POLLIN, s_watch_cb, &w);
    //  Hooks run in the order added, before the wait; a wish of 0 ms means no wait (this
    //  round ends with nothing to read); -1 is no wish. The third stops the loop on its
    //  third run.
    s_arg_t p = {.letter = 'p', .again = -1, .times = -1},
            q = {.letter = 'q', .again = 0, .times = -1};
    s_arg_t r = {.letter = 'r', .again = -1, .times = 2};
    cg_loop_before_wait (loop, s_hook_cb, &p);
    cg_loop_before_wait (loop, s_hook_cb, &q);
    cg_loop_before_wait (loop, s_hook_cb, &r);
    s_trace[0] = '\0';
    CHECK (cg_loop_run_once (loop) == 1, "a round that did not wait");
    EXPECT (strcmp (s_trace, "pqr") == 0, "the hooks in order: %s", s_trace);
    CHECK (write (fds[1], "x", 1) == 1, "write");
    s_trace[0] = '\0';
    CHECK (cg_loop_run_once (loop) == 1, "a round");
    EXPECT (strcmp (s_trace, "pqrw") == 0, "the hooks before the watch: %s", s_trace);
    CHECK (write (fds[1], "x", 1) == 1, "write");
    s_trace[0] = '\0';
    EXPECT (cg_loop_run (loop) == 0, "run returns 0 once stopped");
    EXPECT (strcmp (s_trace, "pqr") == 0 && cg_loop_stopped (loop),
            "stopped by a hook: no wait, the readable fd not dispatched: %s", s_trace);
    EXPECT (cg_loop_run_once (loop) == 0, "a stopped loop does not wait");
    close (fds[0]);
    close (fds[1]);
    cg_loop_destroy (&loop);
}

//  An actor that sends "late" on ARG (a PUSH socket) once it has started and slept a little.
static void
s_send_later (zsock_t *pipe, void *arg)
{
    zsock_signal (pipe, 0);
    zclock_sleep (50);
    zstr_send ((zsock_t *)arg, "late");
    char *term = zstr_recv (pipe); /* until destroyed ($TERM) */
    zstr_free (&term);
}

static void
test_zpoll (void)
{
    const char *name = "zpoll";
    zsock_t *pull = zsock_new_pull ("inproc://test-zpoll"),
            *push = zsock_new_push (">inproc://test-zpoll");
    int fds[2];
    CHECK (pull && push && pipe (fds) == 0, "sockets and a pipe");
    zmq_pollitem_t items[] = {{zsock_resolve (pull), 0, ZMQ_POLLIN, 0},
                              {NULL, fds[0], ZMQ_POLLIN, 0}};
    EXPECT (cg_zpoll (items, 2, 0) == 0 && !items[0].revents && !items[1].revents,
            "nothing yet, no wait");
    EXPECT (cg_zpoll (items, 2, 20) == 0, "nothing within the timeout");
    zstr_send (push, "one");
    zstr_send (push, "two");
    EXPECT (cg_zpoll (items, 2, -1) == 1 && (items[0].revents & ZMQ_POLLIN) && !items[1].revents,
            "the socket is ready");
    char *text = zstr_recv (pull);
    zstr_free (&text);
    //  Its ZMQ_FD was read with the first message: the second is there all the same.
    EXPECT (cg_zpoll (items, 2, -1) == 1 && (items[0].revents & ZMQ_POLLIN),
            "the second message is seen without a new signal");
    text = zstr_recv (pull);
    EXPECT (text && strcmp (text, "two") == 0, "it is the second");
    zstr_free (&text);
    EXPECT (cg_zpoll (items, 2, 0) == 0, "drained");
    CHECK (write (fds[1], "x", 1) == 1, "write");
    EXPECT (cg_zpoll (items, 2, -1) == 1 && !items[0].revents && (items[1].revents & ZMQ_POLLIN),
            "the fd item is ready");
    char byte;
    CHECK (read (fds[0], &byte, 1) == 1, "read");
    //  A message sent by another thread while it waits wakes it.
    zsock_t *sender = zsock_new_push (">inproc://test-zpoll");
    zactor_t *later = zactor_new (s_send_later, sender);
    EXPECT (cg_zpoll (items, 2, 10000) == 1 && (items[0].revents & ZMQ_POLLIN),
            "a message that comes during the wait wakes it");
    text = zstr_recv (pull);
    EXPECT (text && strcmp (text, "late") == 0, "the late message");
    zstr_free (&text);
    zactor_destroy (&later);
    zsock_destroy (&sender);
    zsock_destroy (&push);
    zsock_destroy (&pull);
    close (fds[0]);
    close (fds[1]);
}

static char s_logged[512];

static void
s_log_hook (void *arg, int level, const char *message)
{
    (void)arg;
    if (level == 3 && strstr (message, "event loop:"))
        snprintf (s_logged, sizeof s_logged, "%s", message);
}

static int
s_slow_timer_cb (cg_loop_t *loop, void *arg)
{
    (void)loop;
    (void)arg;
    usleep (30000); /* at least 30 ms: what a slow callback does to everyone */
    return -1;
}

static void
test_slow (void)
{
    const char *name = "slow";
    cg_loop_t *loop = cg_loop_new ();
    cg_log_set_level (3);
    cg_log_set_hook (s_log_hook, NULL);
    cg_loop_longest (loop);
    cg_loop_timer (loop, 0, s_slow_timer_cb, NULL);
    CHECK (cg_loop_run_once (loop) == 1, "a round");
    int64_t longest = cg_loop_longest (loop);
    EXPECT (longest >= 30000, "the timer's 30 ms are the longest: %lld us", (long long)longest);
    EXPECT (strstr (s_logged, "a timer callback held the loop") && strstr (s_logged, "on the CPU")
                && strstr (s_logged, "+0x"),
            "the slow callback is logged with its offset: %s", s_logged);
    EXPECT (cg_loop_longest (loop) == 0, "counting starts again once read");
    cg_log_set_hook (NULL, NULL);
    cg_log_set_level (2);
    cg_loop_destroy (&loop);
}

int
main (void)
{
    test_fds ();
    test_when ();
    test_timers ();
    test_removal ();
    test_before_wait ();
    test_zpoll ();
    test_slow ();
    printf ("%d passed, %d failed\n", s_passes, s_failures);
    return s_failures ? 1 : 0;
}
