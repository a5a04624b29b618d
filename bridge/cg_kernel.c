/*  cg_kernel — a Jupyter kernel process in a sandbox and its channels: start, handshake,
    execute (its messages go to cg_run, input requests are answered), interrupt,
    heartbeat, shutdown. */
#define _GNU_SOURCE
#include "bridge/cg_kernel.h"
#include "bridge/cg_kernel_int.h"
#include "base/cg_fault.h"
#include "base/cg_util.h"
#include "base/cg_fs.h"
#include "bridge/cg_wire.h"
#include "containers/cg_sandbox_env.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sodium.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define SHUTDOWN_WAIT_MS 1000

const char *const cg_kernel_channel_names[CH_COUNT] = {"shell", "iopub", "stdin", "control", "hb"};
//  Messages queued per socket, whatever the kernel sends: past it libzmq stops reading; on
//  iopub, a subscriber, it drops what does not fit: only when the kernel outruns the
//  server, in the middle of a flood whose middle the cut output leaves out anyway (a lost
//  idle status is covered by cg_kernel_exec.c's wait).
#define S_QUEUE_MAX 2
//  Messages discarded per wake between cells, so the runner stays responsive.
#define S_DISCARD_BURST 256
//  kernel_info_request during the handshake: every S_REQUEST_US until the first reply,
//  then (iopub still silent) again after S_RESEND_FIRST_US, doubling up to S_RESEND_MAX_US.
#define S_REQUEST_US 500000
#define S_RESEND_FIRST_US 1000
#define S_RESEND_MAX_US 100000

//  --------------------------------------------------------------------------
//  Start and stop

//  Connects channel I again after libzmq dropped its connection: the same socket inode,
//  through the same O_PATH fd. What the kernel sent in between is lost.
static void
s_reconnect (cg_kernel_t *self, int i)
{
    if (self->endpoint_fds[i] < 0)
        return;
    char endpoint[48];
    snprintf (endpoint, sizeof endpoint, "ipc:///proc/self/fd/%d", self->endpoint_fds[i]);
    void *sock = zsock_resolve (self->sockets[i]);
    zmq_disconnect (sock, endpoint);
    if (zmq_connect (sock, endpoint) < 0)
        cg_log (1, "reconnect %s socket: %s", cg_kernel_channel_names[i], zmq_strerror (errno));
}

//  Reads every channel's monitor and reconnects what was dropped. Returns how many times
//  iopub was dropped (a dying kernel's sockets too: the caller tells them apart).
size_t
cg_kernel_service_monitors (cg_kernel_t *self)
{
    size_t iopub_drops = 0;
    for (int i = 0; i < CH_COUNT; i++) {
        size_t drops = cg_wire_monitor_events (self->monitors[i], ZMQ_EVENT_DISCONNECTED);
        if (!drops)
            continue;
        if (i == CH_IOPUB)
            iopub_drops = drops;
        cg_log (2,
                "the %s connection to the kernel was dropped (a message over %zu bytes, or "
                "the kernel went away); reconnecting",
                cg_kernel_channel_names[i], self->config->max_message_bytes);
        s_reconnect (self, i);
    }
    return iopub_drops;
}

//  Adds a poll item for each channel's monitor to ITEMS (room for CH_COUNT); returns how many.
//  Each is the monitor's ZMQ_FD, a plain fd: a ZeroMQ socket in zmq_poll costs two system
//  calls per socket and turn (before and after the wait), which five monitors paid on every
//  message of every cell for events that come almost never. The fd turns readable when the
//  monitor has something to look at, once its reader has found it empty: whoever polls it
//  calls cg_kernel_service_monitors after every wake on it, which reads them all empty.
int
cg_kernel_monitor_items (cg_kernel_t *self, zmq_pollitem_t *items)
{
    int count = 0;
    for (int i = 0; i < CH_COUNT; i++)
        if (self->monitors[i])
            items[count++] = (zmq_pollitem_t){NULL, zsock_fd (self->monitors[i]), ZMQ_POLLIN, 0};
    return count;
}

static int
s_pidfd_open (pid_t pid)
{
    return (int)syscall (SYS_pidfd_open, pid, 0);
}

static void
s_close_sockets (cg_kernel_t *self)
{
    for (int i = 0; i < CH_COUNT; i++)
        zsock_destroy (&self->sockets[i]);
}

//  The name of channel I's ipc socket in the ipc dir, e.g. "python-1" (kcf3a-1 for a kernel
//  cellgate does not ship: cg_kernelspec.h).
static void
s_endpoint_name (cg_kernel_t *self, int i, char *buf, size_t size)
{
    snprintf (buf, size, "%s%c%d", self->spec->ipc_name, self->spec->endpoint_colon ? ':' : '-',
              i + 1);
}

static int
s_open_sockets (cg_kernel_t *self, cg_error_t **err)
{
    static const int types[CH_COUNT] = {ZMQ_DEALER, ZMQ_SUB, ZMQ_DEALER, ZMQ_DEALER, ZMQ_DEALER};
    char identity[33];
    cg_random_hex (identity, 16);
    for (int i = 0; i < CH_COUNT; i++) {
        zsock_t *sock = zsock_new (types[i]);
        if (!sock)
            return cg_error_set (err, ENOMEM, "create %s socket", cg_kernel_channel_names[i]);
        self->sockets[i] = sock;
        zsock_set_linger (sock, 0);
        zsock_set_maxmsgsize (sock, (int64_t)self->config->max_message_bytes);
        zsock_set_rcvhwm (sock, S_QUEUE_MAX);
        //  ipykernel routes input_request to the shell socket's identity.
        if (i == CH_SHELL || i == CH_STDIN)
            zsock_set_identity (sock, identity);
        if (i == CH_IOPUB)
            zsock_set_subscribe (sock, "");
        zsock_set_reconnect_ivl (sock, 20);
        //  Every channel reports its drops; stdin its handshake too: the kernel's stdin
        //  ROUTER drops an input_request for an identity it has not seen connect, so the
        //  handshake waits until that socket is connected.
        //  A name never used before in this process (as the registry's results socket's):
        //  a kernel at a freed one's address would find the name still bound while ZeroMQ
        //  closes the old monitor in the background.
        static atomic_uint made;
        char endpoint[96];
        snprintf (endpoint, sizeof endpoint, "inproc://cg-%s-monitor-%p-%u",
                  cg_kernel_channel_names[i], (void *)self, atomic_fetch_add (&made, 1));
        int events = ZMQ_EVENT_DISCONNECTED | (i == CH_STDIN ? ZMQ_EVENT_HANDSHAKE_SUCCEEDED : 0);
        if (zmq_socket_monitor (zsock_resolve (sock), endpoint, events) < 0)
            return cg_error_set (err, errno, "monitor %s socket: %s", cg_kernel_channel_names[i],
                                 zmq_strerror (errno));
        if (!(self->monitors[i] = zsock_new_pair (endpoint)))
            return cg_error_set (err, EIO, "monitor %s socket", cg_kernel_channel_names[i]);
        //  Read empty once, so its ZMQ_FD (cg_kernel_monitor_items) signals the first event.
        cg_wire_monitor_events (self->monitors[i], 0);
    }
    return 0;
}

//  Connects every channel whose socket the kernel has bound by now. Untrusted: the ipc dir
//  is the sandbox's, so a name may be a link or anything. Each name is opened without
//  following a link (O_PATH|O_NOFOLLOW below a dir fd) and must be a socket; the connect
//  goes to that inode through /proc/self/fd/N (a short path), whatever the name is later.
//  Anything else counts as not bound yet (the start deadline bounds the wait). Returns 1
//  once all are connected, 0 while some are not, -1 with *err set.
static int
s_connect_ready (cg_kernel_t *self, cg_error_t **err)
{
    int rc = 1;
    for (int i = 0; i < CH_COUNT; i++) {
        if (self->endpoint_fds[i] >= 0)
            continue;
        char name[64];
        s_endpoint_name (self, i, name, sizeof name);
        int fd = openat (self->ipc_fd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
        struct stat st;
        if (fd >= 0 && (fstat (fd, &st) < 0 || !S_ISSOCK (st.st_mode))) {
            close (fd);
            fd = -1;
        }
        if (fd < 0) {
            rc = 0;
            continue;
        }
        if (zsock_connect (self->sockets[i], "ipc:///proc/self/fd/%d", fd) < 0) {
            close (fd);
            return cg_error_set (err, EIO, "connect %s socket", cg_kernel_channel_names[i]);
        }
        self->endpoint_fds[i] = fd;
    }
    return rc;
}

//  The host-only file holding the kernel's key (caller frees).
static char *
s_key_file (cg_kernel_t *self)
{
    return cg_strdupf ("%s/kernel-%s.key", self->sandbox->bundle_dir, self->spec->language);
}

//  Writes the connection file into the ipc dir, where the kernel may rewrite it
//  (ipykernel does): through the dir fd, so nothing the sandbox planted there is followed.
static int
s_write_connection_file (cg_kernel_t *self, const char *key, const char *inside_ip,
                         cg_error_t **err)
{
    self->connection =
        json_pack ("{s:s, s:s, s:i, s:i, s:i, s:i, s:i, s:s, s:s, s:s}", "transport", "ipc", "ip",
                   inside_ip, "shell_port", CH_SHELL + 1, "iopub_port", CH_IOPUB + 1, "stdin_port",
                   CH_STDIN + 1, "control_port", CH_CONTROL + 1, "hb_port", CH_HB + 1, "key", key,
                   "signature_scheme", "hmac-sha256", "kernel_name", self->spec->language);
    cleanup_free char *text = json_dumps (self->connection, JSON_INDENT (1));
    cleanup_free char *name = cg_strdupf ("kernel-%s.json", self->spec->language);
    //  The server's own copy of the key, for the next server (cg_keep): 0600 in the
    //  bundle dir, which only the host can write; never read back from the sandbox's.
    cleanup_free char *key_file = s_key_file (self);
    if (cg_write_file (key_file, key, strlen (key), 0600, err) < 0)
        return -1;
    int rc =
        cg_write_file_at (self->ipc_fd, name, text, strlen (text), 0400,
                          (uid_t)self->config->sandbox_uid, (gid_t)self->config->sandbox_gid, err);
    //  The sandbox can fill its ipc directory (a small tmpfs of its own): say where.
    if (rc < 0 && err && *err && (*err)->code == ENOSPC)
        cg_error_wrap (err,
                       CG_IPC_MOUNT " is full (its limit: %d KB, %d files); remove what "
                                    "sandboxed code wrote there",
                       CG_IPC_TMPFS_KB, CG_IPC_TMPFS_INODES);
    return rc;
}

static int
s_spawn (cg_kernel_t *self, const char *inside_connection_file, cg_error_t **err)
{
    size_t argc = cg_strv_count ((const char *const *)self->spec->argv);
    char **argv = cg_strv_new (argc);
    for (size_t i = 0; i < argc; i++)
        argv[i] = strcmp (self->spec->argv[i], "{connection_file}") == 0
                      ? cg_xstrdup (inside_connection_file)
                      : cg_xstrdup (self->spec->argv[i]);
    char **env = cg_kernelspec_env (self->spec, self->config->max_message_bytes);
    int log_pipe[2];
    int null_fd = open ("/dev/null", O_RDONLY | O_CLOEXEC);
    if (null_fd < 0 || pipe2 (log_pipe, O_CLOEXEC) < 0) {
        if (null_fd >= 0)
            close (null_fd);
        cg_strv_free (argv);
        cg_strv_free (env);
        return cg_error_set (err, errno, "pipe: %s", strerror (errno));
    }
    fcntl (log_pipe[0], F_SETFL, O_NONBLOCK);
    cleanup_free char *pid_file =
        cg_strdupf ("%s/kernel-%s.pid", self->sandbox->bundle_dir, self->spec->language);
    cg_exec_spec_t exec = {.argv = (const char *const *)argv,
                           .env = (const char *const *)env,
                           .cwd = CG_WORKSPACE_MOUNT,
                           .pid_file = pid_file,
                           .stdin_fd = null_fd,
                           .stdout_fd = log_pipe[1],
                           .stderr_fd = log_pipe[1]};
    self->helper_pid = cg_container_exec (self->backend, self->sandbox, &exec, err);
    close (null_fd);
    close (log_pipe[1]);
    cg_strv_free (argv);
    cg_strv_free (env);
    self->log_fd = log_pipe[0];
    if (self->helper_pid < 0)
        return -1;
    self->helper_pidfd = s_pidfd_open (self->helper_pid);
    if (self->helper_pidfd < 0)
        return cg_error_set (err, errno, "pidfd_open: %s", strerror (errno));
    return 0;
}

static bool
s_helper_exited (cg_kernel_t *self)
{
    struct pollfd pfd = {self->helper_pidfd, POLLIN, 0};
    return self->helper_pidfd >= 0 && poll (&pfd, 1, 0) == 1;
}

static void
s_read_kernel_pid (cg_kernel_t *self)
{
    if (self->kernel_pid > 0)
        return;
    cleanup_free char *pid_file =
        cg_strdupf ("%s/kernel-%s.pid", self->sandbox->bundle_dir, self->spec->language);
    cleanup_free char *text = cg_read_file (pid_file, 64, NULL, NULL);
    if (text)
        self->kernel_pid = (pid_t)atol (text);
}

void
cg_kernel_drain_log (cg_kernel_t *self)
{
    if (self->log_fd < 0)
        return;
    char chunk[4096];
    ssize_t n;
    while ((n = read (self->log_fd, chunk, sizeof chunk)) > 0) {
        //  Keep only the last LOG_TAIL bytes; the rest is discarded (bounded).
        size_t keep = (size_t)n > LOG_TAIL ? LOG_TAIL : (size_t)n;
        const char *src = chunk + n - keep;
        if (self->log_len + keep > LOG_TAIL) {
            size_t drop = self->log_len + keep - LOG_TAIL;
            memmove (self->log_tail, self->log_tail + drop, self->log_len - drop);
            self->log_len -= drop;
        }
        memcpy (self->log_tail + self->log_len, src, keep);
        self->log_len += keep;
        self->log_tail[self->log_len] = '\0';
    }
    if (n == 0) {
        close (self->log_fd);
        self->log_fd = -1;
    }
}

int
cg_kernel_log_fd (cg_kernel_t *self)
{
    return self->log_fd;
}

int
cg_kernel_idle_items (cg_kernel_t *self, zmq_pollitem_t *items, int max)
{
    int count = 0;
    if (self->log_fd >= 0 && count < max)
        items[count++] = (zmq_pollitem_t){NULL, self->log_fd, ZMQ_POLLIN, 0};
    for (int i = 0; i < CH_COUNT && count < max; i++)
        if (i != CH_HB)
            items[count++] = (zmq_pollitem_t){zsock_resolve (self->sockets[i]), 0, ZMQ_POLLIN, 0};
    if (max - count >= CH_COUNT)
        count += cg_kernel_monitor_items (self, items + count);
    return count;
}

size_t
cg_kernel_discard (cg_kernel_t *self)
{
    cg_kernel_drain_log (self);
    cg_kernel_service_monitors (self);
    size_t discarded = 0;
    for (int i = 0; i < CH_COUNT; i++) {
        if (i == CH_HB)
            continue;
        while (discarded < S_DISCARD_BURST && (zsock_events (self->sockets[i]) & ZMQ_POLLIN)) {
            zmsg_t *msg = zmsg_recv (self->sockets[i]);
            zmsg_destroy (&msg);
            discarded++;
        }
    }
    return discarded;
}

//  The last line of the kernel's own output, for error messages.
static const char *
s_log_last_line (cg_kernel_t *self)
{
    while (self->log_len > 0 && (self->log_tail[self->log_len - 1] == '\n'))
        self->log_tail[--self->log_len] = '\0';
    const char *last = strrchr (self->log_tail, '\n');
    return last ? last + 1 : self->log_tail;
}

//  Sends kernel_info_request until a reply and an iopub message arrive (so the iopub
//  subscription is known to be live), the kernel exits, or the start timeout passes.
static int
s_handshake (cg_kernel_t *self, cg_error_t **err)
{
    int64_t start = cg_now_us ();
    int64_t deadline = start + (int64_t)self->config->kernel_start_timeout_s * 1000000;
    int64_t next_request = 0;
    int64_t bound_at = 0, replied_at = 0, iopub_at = 0;
    int64_t resend_us = S_RESEND_FIRST_US;
    int requests = 0;
    bool replied = false, iopub_live = false, stdin_live = false, connected = false;
    while (!(replied && iopub_live && stdin_live)) {
        //  The sockets exist once the kernel has bound them: poll for them briefly.
        if (!connected) {
            int ready = s_connect_ready (self, err);
            if (ready < 0)
                return -1;
            connected = ready == 1;
            if (connected)
                bound_at = cg_now_us ();
        }
        int64_t now = cg_now_us ();
        if (zsys_interrupted)
            return cg_error_set (err, EINTR, "interrupted");
        if (now > deadline) {
            cg_kernel_drain_log (self);
            //  Up to its last 3 lines: a kernel that caught its own exception and went on
            //  (tslab prints "Uncaught exception: Error {...}") ends on the object's brace.
            const char *last = s_log_last_line (self);
            for (int more = 0; more < 2 && last >= self->log_tail + 2; more++) {
                last -= 2; /* the end of the line before */
                while (last > self->log_tail && last[-1] != '\n')
                    last--;
            }
            return cg_error_set (err, ETIMEDOUT, "no kernel_info_reply within %d s (%s; %s%s)",
                                 self->config->kernel_start_timeout_s,
                                 !connected    ? "sockets not all bound"
                                 : !replied    ? "no reply"
                                 : !iopub_live ? "iopub silent"
                                               : "stdin not connected",
                                 *last ? "its last output: " : "no output", last);
        }
        //  Until iopub is known to be live, keep asking: each request makes the kernel
        //  publish busy/idle, and the first ones are lost while SUB connects. Before the
        //  first reply the kernel is still starting (a request waits in its queue); after
        //  it, a reply without iopub means the subscription was late: ask again soon, at
        //  S_RESEND_FIRST_US doubling up to S_RESEND_MAX_US.
        if (connected && now >= next_request) {
            cg_wire_send (self->wire, self->sockets[CH_SHELL], "kernel_info_request", NULL, NULL,
                          NULL);
            requests++;
            next_request = now + (replied ? resend_us : S_REQUEST_US);
            if (replied && resend_us < S_RESEND_MAX_US)
                resend_us *= 2;
        }
        else if (!connected)
            next_request = now + 5000;
        zmq_pollitem_t items[] = {{zsock_resolve (self->sockets[CH_SHELL]), 0, ZMQ_POLLIN, 0},
                                  {zsock_resolve (self->sockets[CH_IOPUB]), 0, ZMQ_POLLIN, 0},
                                  {NULL, self->helper_pidfd, ZMQ_POLLIN, 0},
                                  {zsock_resolve (self->monitors[CH_STDIN]), 0, ZMQ_POLLIN, 0},
                                  {NULL, self->log_fd, ZMQ_POLLIN, 0}};
        int wait_ms = (int)((next_request - now) / 1000) + 1;
        if (zmq_poll (items, self->log_fd >= 0 ? 5 : 4, wait_ms) < 0 && errno != EINTR)
            return cg_error_set (err, errno, "poll: %s", zmq_strerror (errno));
        if (self->log_fd >= 0 && items[4].revents)
            cg_kernel_drain_log (self);
        if (items[3].revents
            && cg_wire_monitor_events (self->monitors[CH_STDIN], ZMQ_EVENT_HANDSHAKE_SUCCEEDED))
            stdin_live = true;
        if (items[2].revents) {
            cg_kernel_drain_log (self);
            return cg_error_set (err, ECHILD, "kernel exited during startup: %s",
                                 *s_log_last_line (self) ? s_log_last_line (self) : "no output");
        }
        if (items[0].revents) {
            cg_msg_t *msg = cg_wire_recv (self->wire, self->sockets[CH_SHELL]);
            if (msg && strcmp (msg->msg_type, "kernel_info_reply") == 0 && !replied) {
                replied = true;
                replied_at = cg_now_us ();
                if (!iopub_live)
                    next_request = replied_at + resend_us;
            }
            cg_msg_destroy (&msg);
        }
        if (items[1].revents) {
            cg_msg_t *msg = cg_wire_recv (self->wire, self->sockets[CH_IOPUB]);
            if (msg && !iopub_live) {
                iopub_live = true;
                iopub_at = cg_now_us ();
            }
            cg_msg_destroy (&msg);
        }
    }
    s_read_kernel_pid (self);
    cg_log (3,
            "start %s kernel in %s: sockets bound after %.1f ms, kernel_info_reply after %.1f "
            "ms, iopub live after %.1f ms, ready after %.1f ms (%d request%s)",
            self->spec->language, self->sandbox->id, (double)(bound_at - start) / 1000,
            (double)(replied_at - start) / 1000, (double)(iopub_at - start) / 1000,
            (double)(cg_now_us () - start) / 1000, requests, requests == 1 ? "" : "s");
    return 0;
}

//  A kernel with nothing open yet.
static cg_kernel_t *
s_alloc (cg_backend_t *backend, const cg_sandbox_t *sandbox, const cg_kernel_spec_t *spec,
         const cg_config_t *config)
{
    cg_kernel_t *self = cg_xcalloc (1, sizeof *self);
    self->backend = backend;
    self->sandbox = sandbox;
    self->spec = spec;
    self->config = config;
    self->helper_pid = -1;
    self->helper_pidfd = -1;
    self->kernel_pidfd = -1;
    self->log_fd = -1;
    self->ipc_fd = -1;
    for (int i = 0; i < CH_COUNT; i++)
        self->endpoint_fds[i] = -1;
    return self;
}

cg_kernel_t *
cg_kernel_start (cg_backend_t *backend, const cg_sandbox_t *sandbox, const cg_kernel_spec_t *spec,
                 const cg_config_t *config, cg_error_t **err)
{
    int64_t t0 = cg_now_us ();
    cg_kernel_t *self = s_alloc (backend, sandbox, spec, config);
    cleanup_free char *inside_file = cg_strdupf (CG_IPC_MOUNT "/kernel-%s.json", spec->language);
    cleanup_free char *inside_ip = cg_strdupf (CG_IPC_MOUNT "/%s", spec->ipc_name);
    //  A fresh key for every kernel start (32 random bytes as hex).
    char key[65];
    cg_random_hex (key, 32);
    self->wire = cg_wire_new (key, strlen (key), config->max_message_bytes);
    self->ipc_fd = open (sandbox->ipc_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (self->ipc_fd < 0)
        cg_error_set (err, errno, "open %s: %s", sandbox->ipc_dir, strerror (errno));
    //  Stale socket files would make the kernel pick other ports (unlinkat never follows).
    for (int i = 0; self->ipc_fd >= 0 && i < CH_COUNT; i++) {
        char name[64];
        s_endpoint_name (self, i, name, sizeof name);
        unlinkat (self->ipc_fd, name, 0);
    }
    int rc = self->ipc_fd < 0 || s_write_connection_file (self, key, inside_ip, err) < 0
                     || cg_fault_at ("connection_file", err) < 0 || s_open_sockets (self, err) < 0
                     || cg_fault_at ("kernel_sockets", err) < 0
                     || s_spawn (self, inside_file, err) < 0 || cg_fault_at ("kernel_exec", err) < 0
                 ? -1
                 : 0;
    if (rc == 0)
        cg_log (3, "start %s kernel in %s: connection file, sockets and exec %.1f ms",
                spec->language, sandbox->id, (double)(cg_now_us () - t0) / 1000);
    if (rc < 0 || s_handshake (self, err) < 0 || cg_fault_at ("handshake", err) < 0) {
        cg_error_wrap (err, "start kernel %s", spec->language);
        cg_kernel_destroy (&self);
        return NULL;
    }
    sodium_memzero (key, sizeof key);
    return self;
}

cg_kernel_t *
cg_kernel_adopt (cg_backend_t *backend, const cg_sandbox_t *sandbox, const cg_kernel_spec_t *spec,
                 const cg_config_t *config, cg_error_t **err)
{
    cg_kernel_t *self = s_alloc (backend, sandbox, spec, config);
    cleanup_free char *key_file = s_key_file (self);
    cleanup_free char *key = cg_read_file (key_file, 128, NULL, err);
    s_read_kernel_pid (self);
    //  The pid file is the host's; the pid must still be a process of this container
    //  (not one that took a dead kernel's pid since).
    if (key
        && !(self->kernel_pid > 0 && cg_container_owns_pid (backend, sandbox, self->kernel_pid)))
        cg_error_set (err, ESRCH, "the kernel process is gone");
    else if (key && (self->helper_pidfd = s_pidfd_open (self->kernel_pid)) < 0)
        cg_error_set (err, errno, "pidfd_open: %s", strerror (errno));
    else if (key)
        self->wire = cg_wire_new (key, strlen (key), config->max_message_bytes);
    if (!self->wire
        || (self->ipc_fd = open (sandbox->ipc_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC))
               < 0
        || s_open_sockets (self, err) < 0 || s_handshake (self, err) < 0) {
        if (self->wire && self->ipc_fd < 0)
            cg_error_set (err, errno, "open %s: %s", sandbox->ipc_dir, strerror (errno));
        cg_error_wrap (err, "re-adopt kernel %s", spec->language);
        self->kept = true; /* a failed adoption leaves the process to the sandbox's removal */
        cg_kernel_destroy (&self);
    }
    if (key)
        sodium_memzero (key, strlen (key));
    return self;
}

void
cg_kernel_keep (cg_kernel_t **self_p)
{
    if (*self_p)
        (*self_p)->kept = true;
    cg_kernel_destroy (self_p);
}

static void
s_reap (cg_kernel_t *self, int wait_ms)
{
    if (self->helper_pid <= 0) {
        //  Adopted (cg_kernel_adopt): no helper of ours; its pidfd is the kernel's own.
        struct pollfd pfd = {self->helper_pidfd, POLLIN, 0};
        if (self->helper_pidfd >= 0 && self->kernel_pid > 0 && poll (&pfd, 1, wait_ms) == 0)
            kill (self->kernel_pid, SIGKILL);
        return;
    }
    struct pollfd pfd = {self->helper_pidfd, POLLIN, 0};
    if (self->helper_pidfd >= 0 && poll (&pfd, 1, wait_ms) == 0) {
        //  Stopped while it starts, its pid may not be read yet: never leave it running.
        s_read_kernel_pid (self);
        if (self->kernel_pid > 0)
            kill (self->kernel_pid, SIGKILL);
        kill (self->helper_pid, SIGKILL);
    }
    while (waitpid (self->helper_pid, NULL, 0) < 0 && errno == EINTR)
        ;
    self->helper_pid = -1;
}

void
cg_kernel_destroy (cg_kernel_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    cg_kernel_t *self = *self_p;
    //  A DEALER with no peer would block the send: only a connected control socket.
    if (!self->kept && self->helper_pidfd >= 0 && !s_helper_exited (self)
        && self->endpoint_fds[CH_CONTROL] >= 0)
        cg_wire_send (self->wire, self->sockets[CH_CONTROL], "shutdown_request",
                      json_pack ("{s:b}", "restart", 0), NULL, NULL);
    if (!self->kept)
        s_reap (self, SHUTDOWN_WAIT_MS);
    //  The sockets go first: libzmq reconnects through the endpoint fds' numbers.
    for (int i = 0; i < CH_COUNT; i++) {
        if (self->sockets[i] && self->monitors[i])
            zmq_socket_monitor (zsock_resolve (self->sockets[i]), NULL, 0);
        zsock_destroy (&self->monitors[i]);
    }
    s_close_sockets (self);
    for (int i = 0; i < CH_COUNT; i++)
        if (self->endpoint_fds[i] >= 0)
            close (self->endpoint_fds[i]);
    if (self->helper_pidfd >= 0)
        close (self->helper_pidfd);
    if (self->kernel_pidfd >= 0)
        close (self->kernel_pidfd);
    if (self->log_fd >= 0)
        close (self->log_fd);
    if (self->ipc_fd >= 0 && !self->kept) {
        cleanup_free char *name = cg_strdupf ("kernel-%s.json", self->spec->language);
        unlinkat (self->ipc_fd, name, 0);
        cleanup_free char *key_file = s_key_file (self);
        unlink (key_file);
    }
    json_decref (self->connection);
    if (self->ipc_fd >= 0)
        close (self->ipc_fd);
    cg_wire_destroy (&self->wire);
    free (self);
    *self_p = NULL;
}

pid_t
cg_kernel_pid (cg_kernel_t *self)
{
    return self->kernel_pid;
}

bool
cg_kernel_exited (cg_kernel_t *self)
{
    if (s_helper_exited (self))
        return true;
    s_read_kernel_pid (self);
    if (self->kernel_pid <= 0)
        return false;
    //  The helper exits with its kernel: the pid could only have been reused in between.
    //  Opened once and kept (asked before every cell): it stays this process's.
    if (self->kernel_pidfd < 0 && (self->kernel_pidfd = s_pidfd_open (self->kernel_pid)) < 0)
        return errno == ESRCH;
    struct pollfd pfd = {self->kernel_pidfd, POLLIN, 0};
    return poll (&pfd, 1, 0) == 1;
}

size_t
cg_kernel_rejected (cg_kernel_t *self)
{
    return cg_wire_rejected (self->wire);
}

const json_t *
cg_kernel_connection_info (cg_kernel_t *self)
{
    return self->connection;
}

int
cg_kernel_endpoint_fd (cg_kernel_t *self, int port)
{
    return port >= 1 && port <= CH_COUNT ? self->endpoint_fds[port - 1] : -1;
}

int
cg_kernel_interrupt (cg_kernel_t *self)
{
    if (self->spec->interrupt_message)
        return cg_wire_send (self->wire, self->sockets[CH_CONTROL], "interrupt_request", NULL, NULL,
                             NULL);
    s_read_kernel_pid (self);
    if (self->kernel_pid <= 0)
        return -1;
    return kill (self->kernel_pid, SIGINT);
}

int
cg_kernel_reap_children (cg_kernel_t *self)
{
    //  Every other process in the sandbox was just killed, so each child of the kernel
    //  is dead or dying: wait for all of them (a dying one is not a zombie yet). Runs in
    //  a throwaway namespace so the user's variables are untouched.
    return cg_kernel_run_silent (self,
                                 "exec('import os\\n"
                                 "while True:\\n"
                                 "    try: os.waitpid(-1, 0)\\n"
                                 "    except ChildProcessError: break', {})",
                                 5000);
}
