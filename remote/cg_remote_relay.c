/*  cg_remote_relay — the relay's loop: the link and the processes (the kernels' channels:
    cg_remote_relay_kernel.c). */
#define _GNU_SOURCE
#include "remote/cg_remote_relay.h"
#include "remote/cg_remote_relay_int.h"
#include "remote/cg_remote_link.h"
#include "remote/cg_remote_msg.h"
#include "remote/cg_remote_seccomp.h"
#include "base/cg_fs.h"
#include "base/cg_log.h"
#include "base/cg_util.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <grp.h>
#include <jansson.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

//  A process's output read at once (one OUT), and its stdin's bytes the relay holds while
//  the process does not read them.
#define S_OUT_CHUNK 65536
#define S_IN_MAX (1 << 20)

void
cg_relay_send (cg_relay_t *self, const cg_remote_msg_t *msg)
{
    zmsg_t *zmsg = cg_remote_encode (msg);
    if (zmsg_send (&zmsg, self->link) < 0)
        zmsg_destroy (&zmsg);
}

cg_remote_bytes_t
cg_relay_text (const char *text)
{
    return (cg_remote_bytes_t){text, strlen (text)};
}

cg_relay_exec_t *
cg_relay_find (cg_relay_t *self, const cg_remote_bytes_t *id)
{
    for (size_t i = 0; i < CG_REMOTE_EXECS_MAX; i++)
        if (self->execs[i] && strlen (self->execs[i]->id) == id->size
            && memcmp (self->execs[i]->id, id->data, id->size) == 0)
            return self->execs[i];
    return NULL;
}

static void
s_exec_free (cg_relay_t *self, cg_relay_exec_t *exec)
{
    for (size_t i = 0; i < CG_REMOTE_EXECS_MAX; i++)
        if (self->execs[i] == exec)
            self->execs[i] = NULL;
    cg_relay_kernel_free (exec);
    for (int i = 0; i < 2; i++)
        if (exec->out_fds[i] >= 0)
            close (exec->out_fds[i]);
    if (exec->in_fd >= 0)
        close (exec->in_fd);
    free (exec->in_buf);
    free (exec);
}

//  The child's side of EXEC: STDIO[i] (or /dev/null for stdin, the relay's own for the
//  others, where it is -1) as fd i, its own session, the sandbox user, no new privileges,
//  no network, then the program. Never returns; an errno that stopped it goes up ERR_FD.
static void
s_child (cg_relay_t *self, const cg_remote_spec_t *spec, int err_fd, const int stdio[3],
         scmp_filter_ctx filter)
{
    int null_fd = open ("/dev/null", O_RDWR);
    for (int i = 0; i < 3; i++) {
        int fd = stdio[i] >= 0 ? stdio[i] : i == 0 ? null_fd : -1;
        if (fd >= 0)
            dup2 (fd, i); /* dup2 clears O_CLOEXEC on the copy */
    }
    sigset_t none;
    sigemptyset (&none);
    sigprocmask (SIG_SETMASK, &none, NULL);
    signal (SIGPIPE, SIG_DFL); /* the relay ignores it; an ignored signal stays so past exec */
    setsid ();
    int failed = 0;
    if (self->isolate_net && unshare (CLONE_NEWNET) < 0)
        failed = errno;
    if (!failed && self->gid >= 0 && (setgroups (0, NULL) < 0 || setgid ((gid_t)self->gid) < 0))
        failed = errno;
    if (!failed && self->uid >= 0 && setuid ((uid_t)self->uid) < 0)
        failed = errno;
    if (!failed && prctl (PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
        failed = errno;
    if (!failed && chdir (spec->cwd) < 0)
        failed = errno;
    //  Last: the filter may deny what the steps above needed.
    int rc;
    if (!failed && filter && (rc = seccomp_load (filter)) < 0)
        failed = -rc;
    if (!failed) {
        execvpe (spec->argv[0], spec->argv, spec->env);
        failed = errno;
    }
    if (write (err_fd, &failed, sizeof failed) < 0)
        _exit (127);
    _exit (127);
}

static void
s_on_exec (cg_relay_t *self, const cg_remote_msg_t *msg)
{
    char id[CG_REMOTE_ID_MAX + 1];
    snprintf (id, sizeof id, "%.*s", (int)msg->id.size, (const char *)msg->id.data);
    cg_remote_spec_t spec;
    cg_error_t *err = NULL;
    const char *why = NULL;
    size_t slot = 0;
    while (slot < CG_REMOTE_EXECS_MAX && self->execs[slot])
        slot++;
    if (cg_relay_find (self, &msg->id))
        why = "an exec of that id runs already";
    else if (slot == CG_REMOTE_EXECS_MAX)
        why = "the relay runs 64 processes already, its limit";
    else if (cg_remote_spec_parse (msg->text.data, msg->text.size, &spec, &err) < 0)
        why = cg_error_message (err);
    scmp_filter_ctx filter = NULL;
    if (!why && spec.seccomp && !(filter = cg_remote_seccomp_compile (spec.seccomp, &err))) {
        why = cg_error_message (err);
        cg_remote_spec_free (&spec);
    }
    if (why) {
        cg_relay_send (self, &(cg_remote_msg_t){.verb = CG_REMOTE_FAILED,
                                                .id = msg->id,
                                                .text = cg_relay_text (why)});
        cg_error_destroy (&err);
        return;
    }
    int pipe_fds[2];
    //  The process's ends (stdin's read end, stdout's and stderr's write ends) and the
    //  relay's (stdin's write end, the others' read ends), when the spec asks for them.
    int child_io[3] = {-1, -1, -1}, relay_io[3] = {-1, -1, -1};
    pid_t pid = -1;
    int failed = 0;
    for (int i = 0; i < 3 && !failed; i++) {
        int io[2];
        if (!(i == 0 ? spec.stdin : spec.output))
            continue;
        if (pipe2 (io, O_CLOEXEC) < 0) {
            failed = errno;
            break;
        }
        child_io[i] = io[i == 0 ? 0 : 1];
        relay_io[i] = io[i == 0 ? 1 : 0];
        fcntl (relay_io[i], F_SETFL, O_NONBLOCK);
    }
    if (failed || pipe2 (pipe_fds, O_CLOEXEC) < 0)
        failed = failed ? failed : errno;
    else if ((pid = fork ()) == 0) {
        close (pipe_fds[0]);
        s_child (self, &spec, pipe_fds[1], child_io, filter);
    }
    else {
        failed = pid < 0 ? errno : 0;
        close (pipe_fds[1]);
        //  The exec closed the pipe (it worked), or the child wrote why it failed.
        int child_errno = 0;
        if (pid > 0 && read (pipe_fds[0], &child_errno, sizeof child_errno) == sizeof child_errno)
            failed = child_errno;
        close (pipe_fds[0]);
    }
    cg_remote_spec_free (&spec);
    if (filter)
        seccomp_release (filter);
    for (int i = 0; i < 3; i++)
        if (child_io[i] >= 0)
            close (child_io[i]);
    if (failed) {
        for (int i = 0; i < 3; i++)
            if (relay_io[i] >= 0)
                close (relay_io[i]);
        if (pid > 0)
            waitpid (pid, NULL, 0);
        cleanup_free char *text = cg_strdupf ("start %s: %s", id, strerror (failed));
        cg_relay_send (self, &(cg_remote_msg_t){.verb = CG_REMOTE_FAILED,
                                                .id = msg->id,
                                                .text = cg_relay_text (text)});
        return;
    }
    cg_relay_exec_t *exec = cg_xcalloc (1, sizeof *exec);
    snprintf (exec->id, sizeof exec->id, "%s", id);
    exec->pid = pid;
    for (int c = 0; c < CG_REMOTE_CHANNELS; c++)
        exec->fds[c] = -1;
    exec->exit_code = -1;
    exec->in_fd = relay_io[0];
    exec->out_fds[0] = relay_io[1];
    exec->out_fds[1] = relay_io[2];
    self->execs[slot] = exec;
    cg_relay_send (self,
                   &(cg_remote_msg_t){.verb = CG_REMOTE_STARTED, .id = msg->id, .number = {pid}});
}

static void
s_on_signal (cg_relay_t *self, const cg_remote_msg_t *msg)
{
    int signal = (int)msg->number[0];
    if (msg->id.size == 1 && ((const char *)msg->id.data)[0] == '*') {
        //  Every process this relay may signal, but itself (and, as PID 1, init).
        kill (-1, signal);
        return;
    }
    cg_relay_exec_t *exec = cg_relay_find (self, &msg->id);
    if (exec && exec->pid > 0)
        kill (exec->pid, signal);
}

static void
s_on_put (cg_relay_t *self, const cg_remote_msg_t *msg)
{
    char name[160];
    snprintf (name, sizeof name, "%.*s", (int)msg->id.size, (const char *)msg->id.data);
    //  Written beside and renamed over the name: nothing the sandbox's code planted there
    //  is followed or opened.
    cg_error_t *err = NULL;
    if (cg_write_file_at (self->ipc_fd, name, msg->text.data, msg->text.size, 0400,
                          self->uid >= 0 ? (uid_t)self->uid : (uid_t)-1,
                          self->gid >= 0 ? (gid_t)self->gid : (gid_t)-1, &err)
        < 0) {
        cg_log (1, "relay: PUT %s: %s", name, cg_error_message (err));
        cg_error_destroy (&err);
    }
}

static void
s_stats (cg_relay_t *self)
{
    //  cgroup v2 inside the sandbox (its own, as a container sees it).
    long long current = -1, peak = -1, oom = -1;
    FILE *f;
    if ((f = fopen ("/sys/fs/cgroup/memory.current", "r"))) {
        if (fscanf (f, "%lld", &current) != 1)
            current = -1;
        fclose (f);
    }
    if ((f = fopen ("/sys/fs/cgroup/memory.peak", "r"))) {
        if (fscanf (f, "%lld", &peak) != 1)
            peak = -1;
        fclose (f);
    }
    if ((f = fopen ("/sys/fs/cgroup/memory.events", "r"))) {
        char key[32];
        long long value;
        while (fscanf (f, "%31s %lld", key, &value) == 2)
            if (strcmp (key, "oom_kill") == 0)
                oom = value;
        fclose (f);
    }
    cg_relay_send (
        self, &(cg_remote_msg_t){.verb = CG_REMOTE_STATS,
                                 .number = {current < 0 ? 0 : current,
                                            peak < 0 ? (current < 0 ? 0 : current) : peak, oom}});
}

//  Writes what IN left for EXEC's stdin, as far as the pipe takes it, and closes it once
//  everything is written and IN said the end. A process that closed its stdin loses what
//  waited.
static void
s_write_in (cg_relay_exec_t *exec)
{
    while (exec->in_fd >= 0 && exec->in_len > 0) {
        ssize_t n = write (exec->in_fd, exec->in_buf, exec->in_len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN)
            return;
        if (n < 0) {
            exec->in_len = 0;
            exec->in_eof = true;
            break;
        }
        memmove (exec->in_buf, exec->in_buf + n, exec->in_len - (size_t)n);
        exec->in_len -= (size_t)n;
    }
    if (exec->in_fd >= 0 && exec->in_eof && exec->in_len == 0) {
        close (exec->in_fd);
        exec->in_fd = -1;
    }
}

static void
s_on_in (cg_relay_t *self, const cg_remote_msg_t *msg)
{
    cg_relay_exec_t *exec = cg_relay_find (self, &msg->id);
    if (!exec || exec->in_fd < 0 || exec->in_eof)
        return;
    if (msg->text.size == 0)
        exec->in_eof = true;
    else if (exec->in_len + msg->text.size > S_IN_MAX) {
        cg_log (1, "relay: %s does not read its stdin: %d bytes wait, the limit; IN dropped",
                exec->id, S_IN_MAX);
        return;
    }
    else {
        exec->in_buf = cg_xrealloc (exec->in_buf, exec->in_len + msg->text.size);
        memcpy (exec->in_buf + exec->in_len, msg->text.data, msg->text.size);
        exec->in_len += msg->text.size;
    }
    s_write_in (exec);
}

static bool
s_link_writable (cg_relay_t *self)
{
    return (zsock_events (self->link) & ZMQ_POLLOUT) != 0;
}

//  Sends what EXEC's stdout (I 0) or stderr (1) has to read as OUT messages, a few chunks,
//  and only while the link takes them: a server that does not read slows the process down
//  (its pipe fills) instead of losing its output. Closes the pipe at its end, or, once the
//  process has ended (its EXITED waits for this), when nothing more is there now.
static void
s_read_out (cg_relay_t *self, cg_relay_exec_t *exec, int i)
{
    static char buf[S_OUT_CHUNK];
    for (int chunks = 0; exec->out_fds[i] >= 0 && chunks < 16 && s_link_writable (self); chunks++) {
        ssize_t n = read (exec->out_fds[i], buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN && exec->exit_code < 0)
            return;
        if (n <= 0) {
            close (exec->out_fds[i]);
            exec->out_fds[i] = -1;
            return;
        }
        cg_relay_send (self, &(cg_remote_msg_t){.verb = CG_REMOTE_OUT,
                                                .id = cg_relay_text (exec->id),
                                                .number = {i + 1},
                                                .text = {buf, (size_t)n}});
    }
}

//  EXITED for an ended process once all its output is sent; then it is forgotten.
static void
s_finish (cg_relay_t *self, cg_relay_exec_t *exec)
{
    for (int i = 0; i < 2; i++)
        s_read_out (self, exec, i);
    if (exec->out_fds[0] >= 0 || exec->out_fds[1] >= 0)
        return;
    cg_relay_send (self, &(cg_remote_msg_t){.verb = CG_REMOTE_EXITED,
                                            .id = cg_relay_text (exec->id),
                                            .number = {exec->exit_code}});
    s_exec_free (self, exec);
}

//  One message from the server.
static void
s_on_link (cg_relay_t *self)
{
    while (zsock_events (self->link) & ZMQ_POLLIN) {
        zmsg_t *raw = zmsg_recv (self->link);
        if (!raw)
            return;
        cg_remote_bytes_t frames[CG_REMOTE_FRAMES_MAX];
        int count = cg_remote_frames_of (raw, frames, CG_REMOTE_FRAMES_MAX);
        cg_remote_msg_t msg;
        cg_error_t *err = NULL;
        if (count < 0 || cg_remote_decode (frames, (size_t)count, CG_REMOTE_DOWN, &msg, &err) < 0) {
            cg_log (1, "relay: %s", err ? cg_error_message (err) : "a message of too many frames");
            cg_error_destroy (&err);
            zmsg_destroy (&raw);
            continue;
        }
        switch (msg.verb) {
            case CG_REMOTE_EXEC:
                s_on_exec (self, &msg);
                break;
            case CG_REMOTE_IN:
                s_on_in (self, &msg);
                break;
            case CG_REMOTE_SIGNAL:
                s_on_signal (self, &msg);
                break;
            case CG_REMOTE_STATS_ASK:
                s_stats (self);
                break;
            case CG_REMOTE_PUT:
                s_on_put (self, &msg);
                break;
            case CG_REMOTE_ATTACH:
                cg_relay_kernel_attach (self, &msg);
                break;
            case CG_REMOTE_TO:
                cg_relay_kernel_to (self, &msg, &raw);
                break;
            case CG_REMOTE_BYE:
                self->done = true;
                break;
            default:
                break;
        }
        zmsg_destroy (&raw);
    }
}

//  Reaps every child that ended and reports the ones the server started.
static void
s_reap (cg_relay_t *self)
{
    struct signalfd_siginfo info;
    while (read (self->signal_fd, &info, sizeof info) == sizeof info)
        ;
    int status;
    pid_t pid;
    while ((pid = waitpid (-1, &status, WNOHANG)) > 0) {
        for (size_t i = 0; i < CG_REMOTE_EXECS_MAX; i++) {
            cg_relay_exec_t *exec = self->execs[i];
            if (!exec || exec->pid != pid)
                continue;
            //  Its EXITED comes after what it wrote (s_finish).
            exec->exit_code = WIFEXITED (status) ? WEXITSTATUS (status) : 128 + WTERMSIG (status);
            exec->pid = 0;
        }
    }
}

//  TEXT as a decimal number from MIN to MAX into *OUT; false for anything else (atoi would
//  take "abc" for 0, and a --uid of 0 is root).
static bool
s_number_arg (const char *text, long min, long max, int *out)
{
    char *end = NULL;
    errno = 0;
    long value = strtol (text, &end, 10);
    if (errno || end == text || *end || value < min || value > max)
        return false;
    *out = (int)value;
    return true;
}

static bool
s_args (cg_relay_t *self, int argc, char **argv)
{
    static const struct option options[] = {{"server", required_argument, NULL, 's'},
                                            {"server-key", required_argument, NULL, 'k'},
                                            {"keys", required_argument, NULL, 'f'},
                                            {"sandbox", required_argument, NULL, 'i'},
                                            {"ipc-dir", required_argument, NULL, 'd'},
                                            {"uid", required_argument, NULL, 'u'},
                                            {"gid", required_argument, NULL, 'g'},
                                            {"isolate-net", no_argument, NULL, 'n'},
                                            {"max-message-mb", required_argument, NULL, 'm'},
                                            {"attach-ms", required_argument, NULL, 'a'},
                                            {NULL, 0, NULL, 0}};
    self->uid = self->gid = -1;
    self->attach_ms = CG_RELAY_ATTACH_MS;
    int opt, mb = 8;
    bool numbers_ok = true;
    optind = 1;
    while ((opt = getopt_long (argc, argv, "", options, NULL)) != -1) {
        switch (opt) {
            case 's':
                self->server = optarg;
                break;
            case 'k':
                self->server_key = optarg;
                break;
            case 'f':
                self->keys_file = optarg;
                break;
            case 'i':
                self->sandbox = optarg;
                break;
            case 'd':
                self->ipc_dir = optarg;
                break;
            case 'u':
                numbers_ok = numbers_ok && s_number_arg (optarg, 0, INT32_MAX, &self->uid);
                break;
            case 'g':
                numbers_ok = numbers_ok && s_number_arg (optarg, 0, INT32_MAX, &self->gid);
                break;
            case 'n':
                self->isolate_net = true;
                break;
            case 'm':
                numbers_ok = numbers_ok && s_number_arg (optarg, 1, 4096, &mb);
                break;
            case 'a':
                numbers_ok = numbers_ok && s_number_arg (optarg, 1, INT32_MAX, &self->attach_ms);
                break;
            default:
                return false;
        }
    }
    self->max_message_bytes = (size_t)mb << 20;
    return numbers_ok && self->server && self->server_key && self->keys_file && self->sandbox
           && self->ipc_dir;
}

//  The relay's own keys from FILE: two lines, public then secret.
static bool
s_read_keys (const char *file, cg_remote_keys_t *keys)
{
    cg_error_t *err = NULL;
    size_t len = 0;
    cleanup_free char *text = cg_read_file (file, 4096, &len, &err);
    cg_error_destroy (&err);
    if (!text)
        return false;
    bool ok = sscanf (text, "%40s %40s", keys->public_key, keys->secret_key) == 2
              && strlen (keys->public_key) == 40 && strlen (keys->secret_key) == 40;
    explicit_bzero (text, len);
    return ok;
}

static void
s_hello (cg_relay_t *self)
{
    cg_relay_send (self, &(cg_remote_msg_t){.verb = CG_REMOTE_HELLO,
                                            .version = CG_REMOTE_VERSION,
                                            .id = cg_relay_text (self->sandbox)});
}

//  What one poll item is for.
typedef struct {
    cg_relay_exec_t *exec;
    enum { S_KERNEL, S_OUT, S_IN } kind;
    int c; /* S_KERNEL: the channel; S_OUT: the stream (0, 1) */
    zsock_t *sock;
    zframe_t *peer;
} s_owner_t;

#define S_ITEMS_MAX (3 + CG_REMOTE_EXECS_MAX * (1 + 4 * CG_REMOTE_PEERS_MAX + 3))

//  The poll items of one exec into ITEMS and OWNERS from COUNT on; returns the new count.
//  Its output is waited on only while the link is WRITABLE (else *WANT_LINK: the round
//  waits for the link to take more).
static int
s_exec_items (cg_relay_exec_t *exec, zmq_pollitem_t *items, s_owner_t *owners, int count,
              bool writable, bool *want_link)
{
    for (int i = 0; i < 2; i++)
        if (exec->out_fds[i] >= 0 && !writable)
            *want_link = true;
        else if (exec->out_fds[i] >= 0) {
            owners[count] = (s_owner_t){exec, S_OUT, i, NULL, NULL};
            items[count++] = (zmq_pollitem_t){NULL, exec->out_fds[i], ZMQ_POLLIN, 0};
        }
    if (exec->in_fd >= 0 && exec->in_len > 0) {
        owners[count] = (s_owner_t){exec, S_IN, 0, NULL, NULL};
        items[count++] = (zmq_pollitem_t){NULL, exec->in_fd, ZMQ_POLLOUT, 0};
    }
    if (!exec->connected)
        return count;
    owners[count] = (s_owner_t){exec, S_KERNEL, CG_REMOTE_IOPUB, exec->iopub, NULL};
    items[count++] = (zmq_pollitem_t){zsock_resolve (exec->iopub), 0, ZMQ_POLLIN, 0};
    for (int c = 0; c < CG_REMOTE_CHANNELS; c++)
        for (size_t p = 0; p < exec->peer_count[c]; p++) {
            cg_relay_peer_t *peer = &exec->peers[c][p];
            owners[count] = (s_owner_t){exec, S_KERNEL, c, peer->sock, peer->peer};
            items[count++] = (zmq_pollitem_t){zsock_resolve (peer->sock), 0, ZMQ_POLLIN, 0};
        }
    return count;
}

//  One round: wait for the link, a child's end, a process's output or a kernel's message;
//  then handle them: the processes' and kernels' first (the items point to their execs,
//  which a child's end or the link's messages may free), then the ends, then the link.
static void
s_round (cg_relay_t *self)
{
    static zmq_pollitem_t items[S_ITEMS_MAX];
    static s_owner_t owners[S_ITEMS_MAX];
    int count = 0;
    items[count++] = (zmq_pollitem_t){zsock_resolve (self->link), 0, ZMQ_POLLIN, 0};
    items[count++] = (zmq_pollitem_t){NULL, self->signal_fd, ZMQ_POLLIN, 0};
    items[count++] = (zmq_pollitem_t){zsock_resolve (self->link_monitor), 0,
                                      (short)(self->link_monitor ? ZMQ_POLLIN : 0), 0};
    bool looking = false, writable = s_link_writable (self), want_link = false;
    for (size_t i = 0; i < CG_REMOTE_EXECS_MAX; i++)
        if (self->execs[i]) {
            looking = looking || (self->execs[i]->attached && !self->execs[i]->connected);
            count = s_exec_items (self->execs[i], items, owners, count, writable, &want_link);
        }
    if (want_link)
        items[0].events |= ZMQ_POLLOUT;
    if (zmq_poll (items, count, looking ? 20 : 1000) < 0 && errno != EINTR) {
        self->done = true;
        return;
    }
    for (int i = 3; i < count; i++) {
        if (!items[i].revents)
            continue;
        s_owner_t *owner = &owners[i];
        if (owner->kind == S_KERNEL)
            cg_relay_kernel_forward (self, owner->exec, owner->c, owner->sock, owner->peer);
        else if (owner->kind == S_OUT)
            s_read_out (self, owner->exec, owner->c);
        else
            s_write_in (owner->exec);
    }
    if (items[1].revents)
        s_reap (self);
    bool handshake = false;
    while (items[2].revents && (zsock_events (self->link_monitor) & ZMQ_POLLIN)) {
        zmsg_t *event = zmsg_recv (self->link_monitor);
        handshake = handshake || event;
        zmsg_destroy (&event);
    }
    if (handshake)
        s_hello (self);
    if (items[0].revents)
        s_on_link (self);
    for (size_t i = 0; i < CG_REMOTE_EXECS_MAX; i++) {
        if (self->execs[i] && self->execs[i]->exit_code >= 0)
            s_finish (self, self->execs[i]);
        if (self->execs[i] && self->execs[i]->attached && !self->execs[i]->connected)
            cg_relay_kernel_connect (self, self->execs[i]);
    }
}

int
cg_remote_relay_main (int argc, char **argv)
{
    cg_relay_t self = {.ipc_fd = -1, .signal_fd = -1};
    cg_remote_keys_t keys;
    if (!s_args (&self, argc, argv)) {
        fprintf (stderr, "usage: cellgate relay --server tcp://HOST:PORT --server-key Z85 "
                         "--keys FILE --sandbox ID --ipc-dir DIR [--uid N --gid N] "
                         "[--isolate-net] [--max-message-mb N] [--attach-ms N]\n"
                         "  (each N a decimal number; --max-message-mb from 1 to 4096)\n");
        return 2;
    }
    if (!s_read_keys (self.keys_file, &keys)) {
        fprintf (stderr, "cellgate relay: %s: not two CURVE keys (public, secret)\n",
                 self.keys_file);
        return 2;
    }
    self.ipc_fd = open (self.ipc_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (self.ipc_fd < 0) {
        fprintf (stderr, "cellgate relay: %s: %s\n", self.ipc_dir, strerror (errno));
        return 2;
    }
    //  The kernels bind their sockets there, as the sandbox user: the dir is theirs (a
    //  tmpfs the engine made is root's).
    if (self.uid >= 0 && geteuid () == 0
        && (fchown (self.ipc_fd, (uid_t)self.uid, (gid_t)(self.gid >= 0 ? self.gid : self.uid)) < 0
            || fchmod (self.ipc_fd, 0700) < 0)) {
        fprintf (stderr, "cellgate relay: %s: %s\n", self.ipc_dir, strerror (errno));
        return 2;
    }
    //  A process that closed its stdin must not end the relay.
    signal (SIGPIPE, SIG_IGN);
    sigset_t mask;
    sigemptyset (&mask);
    sigaddset (&mask, SIGCHLD);
    sigprocmask (SIG_BLOCK, &mask, NULL);
    self.signal_fd = signalfd (-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
    zsys_init ();
    zsys_set_logstream (NULL);
    cg_error_t *err = NULL;
    self.link = cg_remote_dial (self.server, self.server_key, &keys, self.max_message_bytes, &err);
    explicit_bzero (&keys, sizeof keys);
    if (!self.link) {
        fprintf (stderr, "cellgate relay: %s\n", cg_error_message (err));
        cg_error_destroy (&err);
        return 2;
    }
    zsock_set_sndtimeo (self.link, 1000);
    //  HELLO now, and again at every handshake (a server restarted, a network back): a server
    //  learns a relay's way back from its messages, and an idle relay would send none.
    //  A repeated HELLO is the same relay's.
    if (zmq_socket_monitor (zsock_resolve (self.link), "inproc://cg-relay-link",
                            ZMQ_EVENT_HANDSHAKE_SUCCEEDED)
        == 0)
        self.link_monitor = zsock_new_pair (">inproc://cg-relay-link");
    s_hello (&self);
    while (!self.done && !zsys_interrupted)
        s_round (&self);
    cg_relay_send (
        &self, &(cg_remote_msg_t){.verb = CG_REMOTE_BYE, .text = cg_relay_text ("relay ending")});
    for (size_t i = 0; i < CG_REMOTE_EXECS_MAX; i++)
        if (self.execs[i]) {
            if (self.execs[i]->pid > 0)
                kill (self.execs[i]->pid, SIGKILL);
            s_exec_free (&self, self.execs[i]);
        }
    zsock_destroy (&self.link_monitor);
    zsock_destroy (&self.link);
    close (self.ipc_fd);
    close (self.signal_fd);
    return 0;
}
