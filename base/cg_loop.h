/*  cg_loop — the process's event loop over zmq_poll, in the style of redis ae (file events,
    time events, beforeSleep) and libuv handles: a module watches its own fd or ZeroMQ
    socket, sets its own timers and adds its own before-wait hook; nobody edits a central
    poll array or chains ticks by hand. Single-threaded: everything here runs on the thread
    that calls cg_loop_run. One round: the before-wait hooks run (in the order they were
    added), the loop waits for the first of a watched event, a due timer or the earliest
    wish of a hook, then calls the watches that fired (in the order they were added) and
    the timers that are due (earliest first; equal times in the order they were set). A
    watch, timer or hook removed during a round is never called after its removal; one
    added during a round takes part from the next. */
#ifndef CG_LOOP_H
#define CG_LOOP_H

#include <stdbool.h>
#include <zmq.h>

typedef struct cg_loop_t cg_loop_t;
typedef struct cg_loop_watch_t cg_loop_watch_t;
typedef struct cg_loop_timer_t cg_loop_timer_t;
typedef struct cg_loop_hook_t cg_loop_hook_t;

/*  A watch fired: REVENTS are the ZMQ_POLLIN/ZMQ_POLLOUT/ZMQ_POLLERR it found. */
typedef void (cg_loop_watch_fn) (cg_loop_t *loop, short revents, void *arg);

/*  A timer is due. Returns the ms until it is due again (0 and up), or -1 to end it (it is
    freed then, and its handle must not be used again). */
typedef int (cg_loop_timer_fn) (cg_loop_t *loop, void *arg);

/*  Runs before each wait. Returns the ms within which it wants to run again (the wait is
    no longer than the smallest wish), or -1 when it has no wish. */
typedef int (cg_loop_hook_fn) (cg_loop_t *loop, void *arg);

/*  A new loop with nothing watched. Caller owns it. */
cg_loop_t *cg_loop_new (void);

/*  The longest any one callback (watch, timer, before-wait hook) held SELF, in µs (wall
    time), since the last call; and starts counting again. A callback over 20 ms is logged
    (debug level) with its offset in the binary. */
int64_t cg_loop_longest (cg_loop_t *self);

/*  Frees the loop and every watch, timer and hook still in it (their ARGs are borrowed and
    untouched). Sets *SELF_P to NULL; safe on NULL. */
void cg_loop_destroy (cg_loop_t **self_p);

/*  Watches FD (a file descriptor) for EVENTS (ZMQ_POLLIN, ZMQ_POLLOUT; 0: watched for none
    now) and calls FN with ARG when they come. Returns the watch (the loop's; valid until
    cg_loop_unwatch). */
cg_loop_watch_t *cg_loop_watch_fd (cg_loop_t *self, int fd, short events, cg_loop_watch_fn *fn,
                                   void *arg);

/*  As cg_loop_watch_fd, for a ZeroMQ socket: SOCKET is a zsock_t, a zactor_t (its pipe) or
    a libzmq socket, borrowed; it must outlive the watch. */
cg_loop_watch_t *cg_loop_watch_socket (cg_loop_t *self, void *socket, short events,
                                       cg_loop_watch_fn *fn, void *arg);

/*  Changes what WATCH waits for, from the next wait on. */
void cg_loop_watch_events (cg_loop_watch_t *watch, short events);

/*  Whether a watch takes part in the coming wait (cg_loop_watch_when). */
typedef bool (cg_loop_when_fn) (void *arg);

/*  Makes WATCH take part in a wait only when WHEN (WHEN_ARG, borrowed: it must outlive the
    watch) answers true just before it, asked on the loop's thread each round. For a socket
    that has something to read only while its owner has work out (a worker's): polled
    anyway, an idle socket costs every wait ZeroMQ's system calls for nothing. WHEN's answer
    must change only on the loop's thread, so that the round that follows sees it. NULL
    WHEN: every round, as before. */
void cg_loop_watch_when (cg_loop_watch_t *watch, cg_loop_when_fn *when, void *when_arg);

/*  Ends *WATCH_P (its fn is not called again, even later in this round) and sets *WATCH_P
    to NULL. Safe on NULL. */
void cg_loop_unwatch (cg_loop_t *self, cg_loop_watch_t **watch_p);

/*  Calls FN with ARG in MS ms (0 and up), then as FN's return says. Returns the timer (the
    loop's; valid until FN returns -1 or cg_loop_timer_end). */
cg_loop_timer_t *cg_loop_timer (cg_loop_t *self, int ms, cg_loop_timer_fn *fn, void *arg);

/*  Ends *TIMER_P before it is due and sets *TIMER_P to NULL. Safe on NULL. Not from its
    own fn (that returns -1). */
void cg_loop_timer_end (cg_loop_t *self, cg_loop_timer_t **timer_p);

/*  Adds FN with ARG to the hooks run before each wait, after those added before it.
    Returns the hook (the loop's; valid until cg_loop_hook_end). */
cg_loop_hook_t *cg_loop_before_wait (cg_loop_t *self, cg_loop_hook_fn *fn, void *arg);

/*  Removes *HOOK_P and sets it to NULL. Safe on NULL. */
void cg_loop_hook_end (cg_loop_t *self, cg_loop_hook_t **hook_p);

/*  Ends every watch, timer and hook whose ARG is ARG (a module leaving the loop). */
void cg_loop_forget (cg_loop_t *self, const void *arg);

/*  Runs one round. Returns 1 when it waited and dispatched (an interrupted wait counts),
    0 when cg_loop_stop was called (by a hook or before: the round then did not wait), -1
    when the wait failed (errno says why). */
int cg_loop_run_once (cg_loop_t *self);

/*  Runs rounds until cg_loop_stop, a failed wait or SIGINT/SIGTERM (czmq's
    zsys_interrupted). Returns 0, or -1 when a wait failed. */
int cg_loop_run (cg_loop_t *self);

/*  Makes cg_loop_run return before its next wait (the current round's watches and timers
    still run). */
void cg_loop_stop (cg_loop_t *self);

/*  True once cg_loop_stop was called. */
bool cg_loop_stopped (cg_loop_t *self);

/*  zmq_poll's contract (ITEMS, COUNT, TIMEOUT_MS: -1 waits for ever; each item's revents
    set; returns how many items have events, 0 on the timeout, or -1 with errno set), at
    fewer system calls: a socket item costs ZeroMQ two (its mailbox's getpid and poll)
    for each look at its events, which zmq_poll takes twice per wait for every socket,
    after a poll with no timeout first. Here every socket's events are looked at once, one
    poll waits on every socket's ZMQ_FD and item fd, and after it only the sockets whose
    ZMQ_FD woke are looked at again (a socket's events change only through its own
    mailbox, which that fd signals, or by the caller's own use of it, here none). */
int cg_zpoll (zmq_pollitem_t *items, int count, long timeout_ms);

#endif
