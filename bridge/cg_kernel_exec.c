/*  cg_kernel_exec — a cell's run in a kernel: execute_request, then its replies and outputs
    (to cg_run) until its idle status, with the heartbeat, the deadline, a cancel and input
    requests looked at in one loop; and the silent runs the runner makes itself. */
#include "bridge/cg_kernel.h"
#include "bridge/cg_kernel_int.h"
#include "base/cg_fs.h"
#include "base/cg_loop.h"
#include "base/cg_util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define HB_INTERVAL_US 1000000
#define HB_MAX_MISSES 5
//  iopub messages taken in one turn of a run's loop before the heartbeat, the deadline and
//  a cancel are looked at.
#define S_IOPUB_BURST 32
//  After the execute_reply, how long iopub may stay silent before the run ends without its
//  idle: short once libzmq refused an oversized message (the idle went with it), else long
//  (ipykernel's IOPub thread lags its shell reply by seconds on a loaded machine).
#define S_IDLE_WAIT_US 2000000
#define S_IDLE_WAIT_LONG_US 15000000
//  How many times a request the kernel aborted without starting it is sent, and the pause
//  before each resend, times the attempt: IRkernel aborts whatever reaches it while it
//  drains its queue after a failed cell, so a resend at once can be aborted too.
#define S_ABORTED_TRIES 5
#define S_ABORTED_PAUSE_US 100000

#define HB_INTERVAL_US 1000000
#define HB_MAX_MISSES 5

//  Reads every heartbeat reply waiting; the latest one resets the misses.
static void
s_read_pongs (cg_kernel_t *self, unsigned *misses)
{
    while (zsock_events (self->sockets[CH_HB]) & ZMQ_POLLIN) {
        //  The echo of [delimiter, ping] (a REP's reply, or an echoing ROUTER's): the last
        //  frame is the ping.
        zmsg_t *reply = zmsg_recv (self->sockets[CH_HB]);
        zframe_t *last = reply ? zmsg_last (reply) : NULL;
        char *pong = last ? zframe_strdup (last) : NULL;
        if (pong && (unsigned)atol (pong) == self->hb_sent) {
            self->hb_received = self->hb_sent;
            *misses = 0;
        }
        zstr_free (&pong);
        zmsg_destroy (&reply);
    }
}

//  A run's heartbeat: reads the replies (here, so an iopub backlog is no miss), sends the
//  next ping; true when the kernel exited. Missed beats alone end no run: tslab beats on the
//  event loop a busy cell blocks, and a busy kernel runs on to its deadline, as Jupyter's.
static bool
s_heartbeat (cg_kernel_t *self, unsigned *misses)
{
    s_read_pongs (self, misses);
    if (self->hb_sent != self->hb_received && ++*misses >= HB_MAX_MISSES) {
        if (cg_kernel_exited (self))
            return true;
        *misses = 0;
    }
    char ping[16];
    snprintf (ping, sizeof ping, "%u", ++self->hb_sent);
    //  As a REQ sends it: an empty delimiter, then the ping. A REP heartbeat (IRkernel's, as
    //  Jupyter's protocol has it) drops a request without the delimiter, and IRkernel then
    //  ends ("Execution halted") on the next idle turn; ipykernel's echoing ROUTER returns
    //  both frames.
    zstr_sendm (self->sockets[CH_HB], "");
    zstr_send (self->sockets[CH_HB], ping);
    return false;
}

//  A run's poll items: each channel's socket (at its channel's index), then these, then
//  each channel's monitor.
enum { S_RUN_HELPER = CH_COUNT, S_RUN_CANCEL, S_RUN_LOG, S_RUN_ITEMS };

//  Fills ITEMS (room for S_RUN_ITEMS + CH_COUNT) with what a run waits on; returns how many
//  monitors follow the fixed items. An item with nothing to watch (no CONTROL, no log)
//  polls the helper's pidfd for no events. The control and heartbeat channels are not
//  waited on: each ZeroMQ socket in zmq_poll costs two system calls per turn, and nothing
//  on them ends a turn early: the heartbeat's replies are read when the next ping goes,
//  the control channel's (an interrupt's) are dropped between cells by cg_kernel_discard.
static int
s_run_items (cg_kernel_t *self, zsock_t *control, zmq_pollitem_t *items)
{
    for (int i = 0; i < CH_COUNT; i++)
        items[i] = i == CH_CONTROL || i == CH_HB
                       ? (zmq_pollitem_t){NULL, self->helper_pidfd, 0, 0}
                       : (zmq_pollitem_t){zsock_resolve (self->sockets[i]), 0, ZMQ_POLLIN, 0};
    items[S_RUN_HELPER] = (zmq_pollitem_t){NULL, self->helper_pidfd, ZMQ_POLLIN, 0};
    items[S_RUN_CANCEL] = control ? (zmq_pollitem_t){zsock_resolve (control), 0, ZMQ_POLLIN, 0}
                                  : (zmq_pollitem_t){NULL, self->helper_pidfd, 0, 0};
    items[S_RUN_LOG] = self->log_fd >= 0 ? (zmq_pollitem_t){NULL, self->log_fd, ZMQ_POLLIN, 0}
                                         : (zmq_pollitem_t){NULL, self->helper_pidfd, 0, 0};
    return cg_kernel_monitor_items (self, items + S_RUN_ITEMS);
}

//  Takes one message from channel CH: the message when it answers PARENT_ID, else NULL
//  (what is not for this run, or did not decode, is dropped).
static cg_msg_t *
s_recv_reply_to (cg_kernel_t *self, int ch, const char *parent_id)
{
    cg_msg_t *msg = cg_wire_recv (self->wire, self->sockets[ch]);
    if (msg && (!msg->parent_msg_id || strcmp (msg->parent_msg_id, parent_id) != 0))
        cg_msg_destroy (&msg);
    return msg;
}

//  Takes one message from channel CH and applies it to RUN when it answers PARENT_ID
//  (what is not for this run, or did not decode, is dropped); answers an input request.
static void
s_take (cg_kernel_t *self, int ch, const char *parent_id, cg_run_t *run, cg_feed_t *feed)
{
    cg_msg_t *msg = s_recv_reply_to (self, ch, parent_id);
    cleanup_free char *value =
        msg ? cg_run_feed (run, feed, cg_kernel_channel_names[ch], msg) : NULL;
    if (value)
        cg_wire_send (self->wire, self->sockets[CH_STDIN], "input_reply",
                      json_pack ("{s:s}", "value", value), msg->header, NULL);
    cg_msg_destroy (&msg);
}

//  Runs CODE as cg_kernel_execute does; SILENT runs it without history, without
//  execute_input/execute_result and without input().
static cg_exec_end_t
s_execute (cg_kernel_t *self, const char *code, bool silent, const char *stdin_text,
           int64_t deadline_us, zsock_t *control, cg_control_cb *control_cb, void *arg,
           cg_run_t *run)
{
    char parent_id[33];
    run->started_us = cg_now_us ();
    //  stop_on_error off: no cell is queued behind a call, and with it ipykernel aborted a
    //  call that came a few ms after an error. Marked as an MCP tool's (agent behaviour).
    json_t *content = json_pack ("{s:s, s:b, s:b, s:{}, s:b, s:b}", "code", code, "silent", silent,
                                 "store_history", !silent, "user_expressions", "allow_stdin",
                                 !silent && (stdin_text || run->ask), "stop_on_error", 0);
    if (cg_wire_send_with_metadata (self->wire, self->sockets[CH_SHELL], "execute_request", content,
                                    NULL, CG_WIRE_AGENT_METADATA, parent_id)
        < 0) {
        run->ended_us = cg_now_us ();
        return CG_EXEC_FAILED;
    }
    //  Read the monitors empty, so their fds wake this run's loop on a drop (and count one
    //  that came since the last cell, as a first turn used to).
    run->messages_refused += cg_kernel_service_monitors (self);
    cg_feed_t feed = {.stdin_next = stdin_text};
    int64_t grace_end = 0; /* set once interrupted */
    int64_t next_hb = run->started_us + HB_INTERVAL_US;
    unsigned hb_misses = 0;
    cg_exec_end_t end = CG_EXEC_DONE;

    int64_t last_iopub = run->started_us;
    while (!(feed.idle && feed.replied)) {
        int64_t now = cg_now_us ();
        //  Replied: its outputs and idle may still come, until the wait or the deadline.
        int64_t idle_wait = run->messages_refused ? S_IDLE_WAIT_US : S_IDLE_WAIT_LONG_US;
        if (feed.replied
            && ((now - last_iopub > idle_wait && now - feed.replied_us > idle_wait)
                || now >= deadline_us))
            break;
        if (!grace_end && now >= deadline_us) {
            run->timed_out = true;
            cg_kernel_interrupt (self);
            grace_end = now + (int64_t)self->config->interrupt_grace_ms * 1000;
        }
        if (grace_end && now >= grace_end) {
            end = CG_EXEC_STUCK;
            break;
        }
        if (now >= next_hb) {
            if (s_heartbeat (self, &hb_misses)) {
                end = CG_EXEC_DIED;
                break;
            }
            next_hb = now + HB_INTERVAL_US;
        }
        int64_t wake = grace_end ? grace_end : deadline_us;
        if (next_hb < wake)
            wake = next_hb;
        zmq_pollitem_t items[S_RUN_ITEMS + CH_COUNT];
        int monitors = s_run_items (self, control, items);
        long wait_ms = (long)((wake - now) / 1000) + 1;
        if (cg_zpoll (items, S_RUN_ITEMS + monitors, wait_ms) < 0 && errno != EINTR)
            break;
        //  iopub first, a bounded burst per turn: the run ends on iopub's idle, which
        //  follows every output, so nothing is lost by also reading the reply, the
        //  heartbeat and a cancel in the same turn.
        for (int burst = 0; items[CH_IOPUB].revents && burst < S_IOPUB_BURST; burst++) {
            last_iopub = cg_now_us ();
            s_take (self, CH_IOPUB, parent_id, run, &feed);
            if (!(zsock_events (self->sockets[CH_IOPUB]) & ZMQ_POLLIN))
                break;
        }
        if (items[CH_SHELL].revents)
            s_take (self, CH_SHELL, parent_id, run, &feed);
        //  Aborted before the kernel took it (IRkernel aborts every request queued behind a
        //  cell that errored or was interrupted, whatever stop_on_error says): no status
        //  will come for it, and its code never ran.
        if (feed.replied && !run->started && run->reply_status
            && strcmp (run->reply_status, "aborted") == 0)
            break;
        if (items[CH_STDIN].revents)
            s_take (self, CH_STDIN, parent_id, run, &feed);
        if (items[S_RUN_LOG].revents)
            cg_kernel_drain_log (self);
        for (int m = 0; m < monitors; m++)
            if (items[S_RUN_ITEMS + m].revents) {
                run->messages_refused += cg_kernel_service_monitors (self);
                break;
            }
        if (items[S_RUN_HELPER].revents) {
            end = CG_EXEC_DIED;
            break;
        }
        if (control && items[S_RUN_CANCEL].revents) {
            cleanup_free char *input = NULL;
            cg_control_t action = control_cb (control, arg, &input);
            if (action == CG_CONTROL_INPUT && feed.asking && input) { /* the user's line */
                run->stdin_exhausted |= strcmp (input, "\x04") == 0;
                cg_wire_send (self->wire, self->sockets[CH_STDIN], "input_reply",
                              json_pack ("{s:s}", "value", input), feed.asking, NULL);
                json_decref (feed.asking);
                feed.asking = NULL;
            }
            if (action == CG_CONTROL_ABORT) {
                end = CG_EXEC_ABORTED;
                break;
            }
            if (action == CG_CONTROL_CANCEL && !grace_end) {
                run->cancelled = true;
                cg_kernel_interrupt (self);
                grace_end = cg_now_us () + (int64_t)self->config->interrupt_grace_ms * 1000;
            }
        }
    }
    //  A dying kernel disconnects its sockets too: that is no refused message.
    if (end == CG_EXEC_DIED)
        run->messages_refused = 0;
    json_decref (feed.asking);
    run->ended_us = cg_now_us ();
    return end;
}

cg_exec_end_t
cg_kernel_execute (cg_kernel_t *self, const char *code, const char *stdin_text, int64_t deadline_us,
                   zsock_t *control, cg_control_cb *control_cb, void *arg, cg_run_t *run)
{
    if (self->spec->stdin_file && (stdin_text || self->stdin_file_set)) {
        //  Written by us (a new file renamed into place, never through a link the sandbox
        //  planted); the kernel reads it as the cell's standard input.
        cleanup_free char *path =
            cg_strdupf ("%s/stdin-%s", self->sandbox->run_dir, self->spec->language);
        cg_error_t *err = NULL;
        if (cg_write_file (path, stdin_text ? stdin_text : "", stdin_text ? strlen (stdin_text) : 0,
                           0644, &err)
            < 0)
            cg_log (1, "%s", cg_error_message (err));
        cg_error_destroy (&err);
        self->stdin_file_set = stdin_text != NULL;
    }
    cg_exec_end_t end;
    for (int attempt = 1;; attempt++) {
        end = s_execute (self, code, false, stdin_text, deadline_us, control, control_cb, arg, run);
        bool aborted = end == CG_EXEC_DONE && !run->started && run->reply_status
                       && strcmp (run->reply_status, "aborted") == 0;
        int64_t pause_us = (int64_t)attempt * S_ABORTED_PAUSE_US;
        if (!aborted || attempt == S_ABORTED_TRIES || cg_now_us () + pause_us >= deadline_us)
            return end;
        zclock_sleep ((int)(pause_us / 1000));
        //  The code never ran (the kernel was still ending a cell before it): sent again.
        cg_log (1,
                "the %s kernel aborted a request it had not started (its previous cell's "
                "error or interrupt): sending it again",
                self->spec->language);
        cg_run_reset (run);
    }
}

int
cg_kernel_run_silent (cg_kernel_t *self, const char *code, int timeout_ms)
{
    return cg_kernel_run_silent_ctl (self, code, timeout_ms, NULL, NULL, NULL);
}

int
cg_kernel_run_silent_ctl (cg_kernel_t *self, const char *code, int timeout_ms, zsock_t *control,
                          cg_control_cb *control_cb, void *arg)
{
    cg_run_t run;
    cg_run_init (&run, 4096);
    cg_exec_end_t end =
        s_execute (self, code, true, NULL, cg_now_us () + (int64_t)timeout_ms * 1000, control,
                   control_cb, arg, &run);
    int rc =
        end == CG_EXEC_DONE && run.reply_status && strcmp (run.reply_status, "ok") == 0 ? 0 : -1;
    cg_run_clear (&run);
    return rc;
}
