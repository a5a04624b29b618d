/*  cg_gateway — a kernel's channels over a WebSocket: each connection is one Jupyter
    client of the kernel (its own shell, control and stdin DEALERs under one identity, its
    own iopub SUB), relaying messages both ways and re-signing the front end's. */
#include "gateway/cg_gateway_int.h"
#include "gateway/cg_gateway_cells.h"
#include "gateway/cg_ws.h"
#include "base/cg_fault.h"
#include "base/cg_log.h"
#include "base/cg_util.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

//  The channels a connection opens, in cg_registry_kernel_t's fds order (hb is not
//  relayed: the front end's heartbeat is the WebSocket itself).
enum { CH_SHELL, CH_IOPUB, CH_STDIN, CH_CONTROL, CH_COUNT };
static const char *const s_channel_names[CH_COUNT] = {"shell", "iopub", "stdin", "control"};

//  A front end's output that piles up unread past this closes its connection: bytes, or
//  messages (the pongs a front end that pings without reading makes are small).
#define S_QUEUED_MAX (64 * 1024 * 1024)
#define S_QUEUED_COUNT_MAX 65536
//  Kernel messages, and bytes, relayed per channel per round, so one busy kernel never
//  starves the rest of the loop (a megabyte costs a few ms to check and re-encode).
#define S_BATCH 64
#define S_BATCH_BYTES (1024 * 1024)
//  The kernel_info requests a connection remembers (to drop their answers).
#define S_NUDGES_MAX 1024
//  Until its iopub subscription works (a SUB misses what is published before it joins),
//  a connection asks the kernel for its info this often and holds the front end's
//  messages (at most S_HELD_MAX), as Jupyter Server's "nudge" does.
#define S_NUDGE_INTERVAL_MS 200
#define S_HELD_MAX 256
#define S_HELD_BYTES_MAX (64 * 1024 * 1024)
//  A connection's kernel messages waiting to be relayed, per channel (a message may be up
//  to --max-message-bytes). Past it the kernel's own queue keeps them (then drops them), in
//  the sandbox's memory, not the server's: a loop slower than a flooding kernel, times 64
//  connections, never grows the server.
#define S_RELAY_HWM 8
//  How long an ended connection may take to send what it has queued (its close frame)
//  to a peer that still reads; a peer that does not is dropped after that.
#define S_CLOSE_GRACE_MS 2000
/*  How often a connection with cells in flight checks that its kernel's process still runs. */
#define S_ALIVE_CHECK_MS 1000
/*  A kernel message this large (all its frames) is checked (HMAC) and parsed on the
    gateway's decoder, not the loop: 8 MB (--max-message-mb) take 150 ms or more. */
#define S_DECODE_AWAY (64 * 1024)

typedef struct s_socket_t s_socket_t;

//  A large kernel message being decoded on the decoder; the connection reads no more of its
//  kernel's messages until it is relayed (their order is kept).
typedef struct {
    cg_work_t work;
    s_socket_t *socket;  /* NULL once the connection is freed */
    int c;               /* its channel */
    unsigned generation; /* of the kernel process it came from */
    cg_wire_t *wire;     /* the work's own, with the kernel's key */
    zmsg_t *zmsg;
    cg_wire_raw_t *raw; /* decoded; NULL when it was dropped */
} s_decode_t;

//  A channel's watch on the loop, and what it calls back with.
typedef struct {
    s_socket_t *socket;
    int c;
    cg_loop_watch_t *watch;
} s_channel_t;

struct s_socket_t {
    cg_gateway_t *gateway;
    char kernel_id[37];
    unsigned generation; /* of the kernel process the sockets reach */
    cg_jmsg_protocol_t protocol;
    int fd;
    cg_http_upgraded_t *upgraded;
    cg_ws_t *ws;
    cg_wire_t *wire;
    zsock_t *sockets[CH_COUNT];
    int fds[CH_COUNT];         /* this connection's copies of the endpoint fds */
    cg_gateway_cells_t *cells; /* the cells it sent (to tell them from the agent's), followed
                                  to their end (cg_gateway_cells) */
    bool ready;                /* an iopub message came: the subscription works */
    bool running;              /* a cell it sent runs (its kernel's frontend_busy is its) */
    int64_t next_alive_check;  /* when to check its kernel's process again (zclock_mono) */
    zhashx_t *nudges;   /* msg_ids of its own kernel_info_requests (their answers are dropped) */
    int64_t next_nudge; /* when to nudge again (zclock_mono) */
    zlistx_t *held;     /* zframe_t: the front end's messages until ready (more: binary) */
    size_t held_bytes;
    bool over;                      /* ended: nothing more is relayed (s_set_over) */
    int64_t over_at;                /* when it ended (zclock_mono), for S_CLOSE_GRACE_MS */
    bool released;                  /* its kernel sockets and busy state given back (s_release) */
    bool counted;                   /* in its kernel's connections */
    void *handle;                   /* its place in the gateway's list */
    cg_loop_watch_t *fd_watch;      /* the WebSocket's fd on the loop */
    s_channel_t channels[CH_COUNT]; /* the kernel sockets' watches */
    s_decode_t *decoding;           /* its large kernel message on the decoder, or NULL */
};

static void s_channel_cb (cg_loop_t *loop, short revents, void *arg);
static void s_fd_cb (cg_loop_t *loop, short revents, void *arg);

//  Closes the connection's kernel sockets (a restart reconnects them).
static void
s_disconnect (s_socket_t *self)
{
    for (int c = 0; c < CH_COUNT; c++) {
        cg_loop_unwatch (self->gateway->loop, &self->channels[c].watch);
        zsock_destroy (&self->sockets[c]);
        if (self->fds[c] >= 0)
            close (self->fds[c]);
        self->fds[c] = -1;
    }
    cg_wire_destroy (&self->wire);
}

//  Connects the sockets to KERNEL's current process. Returns 0, or -1 (logged).
static int
s_connect (s_socket_t *self, const cg_registry_kernel_t *kernel)
{
    s_disconnect (self);
    self->generation = kernel->generation;
    if (self->decoding) /* a message of the old process: dropped when it comes back */
        self->decoding->socket = NULL;
    self->decoding = NULL;
    self->ready = false;
    self->next_nudge = 0;
    //  A new kernel process: none of its cells run.
    cg_registry_session_t *session = NULL;
    cg_registry_kernel_find (self->gateway->registry, self->kernel_id, &session);
    cg_gateway_cells_end_all (self->cells, self->gateway->registry, session,
                              "the kernel restarted before the cell ended");
    self->running = false;
    if (kernel->pid == 0 || !kernel->key)
        return -1;
    self->wire =
        cg_wire_new (kernel->key, strlen (kernel->key), self->gateway->config->max_message_bytes);
    char identity[33];
    cg_random_hex (identity, 16);
    static const int types[CH_COUNT] = {ZMQ_DEALER, ZMQ_SUB, ZMQ_DEALER, ZMQ_DEALER};
    for (int c = 0; c < CH_COUNT; c++) {
        self->fds[c] = kernel->fds[c] >= 0 ? fcntl (kernel->fds[c], F_DUPFD_CLOEXEC, 3) : -1;
        self->sockets[c] = zsock_new (types[c]);
        if (!self->sockets[c] || self->fds[c] < 0) {
            cg_log (1, "gateway: cannot reach the %s channel of kernel %s", s_channel_names[c],
                    kernel->id);
            s_disconnect (self);
            return -1;
        }
        zsock_set_linger (self->sockets[c], 0);
        zsock_set_sndtimeo (self->sockets[c], 0); /* a full queue never blocks the loop */
        zsock_set_rcvhwm (self->sockets[c], S_RELAY_HWM);
        zsock_set_maxmsgsize (self->sockets[c], (int64_t)self->gateway->config->max_message_bytes);
        //  The kernel answers stdin requests to the identity of the shell request.
        if (c != CH_IOPUB)
            zsock_set_identity (self->sockets[c], identity);
        else
            zsock_set_subscribe (self->sockets[c], "");
        zsock_connect (self->sockets[c], "ipc:///proc/self/fd/%d", self->fds[c]);
    }
    for (int c = 0; c < CH_COUNT; c++) {
        self->channels[c] = (s_channel_t){self, c, NULL};
        self->channels[c].watch = cg_loop_watch_socket (
            self->gateway->loop, self->sockets[c], ZMQ_POLLIN, s_channel_cb, &self->channels[c]);
    }
    return 0;
}

//  Stops (EVENTS 0) or resumes (ZMQ_POLLIN) reading the kernel's channels.
static void
s_channels_watch (s_socket_t *self, short events)
{
    for (int c = 0; c < CH_COUNT; c++)
        if (self->channels[c].watch)
            cg_loop_watch_events (self->channels[c].watch, events);
}

static void
s_socket_free (s_socket_t **self_p)
{
    s_socket_t *self = *self_p;
    if (!self)
        return;
    if (self->decoding) /* it comes back to no one */
        self->decoding->socket = NULL;
    s_disconnect (self);
    cg_loop_unwatch (self->gateway->loop, &self->fd_watch);
    cg_ws_destroy (&self->ws);
    cg_http_upgraded_close (self->upgraded);
    cg_gateway_cells_destroy (&self->cells);
    zhashx_destroy (&self->nudges);
    zlistx_destroy (&self->held);
    free (self);
    *self_p = NULL;
}

//  Marks the connection ended: the before-wait hook releases what it holds of the kernel and
//  frees it once its queue went out, its peer is gone, or S_CLOSE_GRACE_MS passed.
static void
s_set_over (s_socket_t *self)
{
    if (self->over)
        return;
    self->over = true;
    self->over_at = zclock_mono ();
}

//  Ends the connection with CODE and REASON (the peer is told when it still listens).
static void
s_end (s_socket_t *self, uint16_t code, const char *reason)
{
    if (self->over)
        return;
    cg_log (2, "gateway: a WebSocket of kernel %s closes: %s", self->kernel_id, reason);
    cg_ws_close (self->ws, code, reason);
    s_set_over (self);
}

//  Ends the connection when what it queued for its front end passed a cap.
static void
s_check_queue (s_socket_t *self)
{
    if (cg_ws_queued (self->ws) > S_QUEUED_MAX
        || cg_ws_queued_count (self->ws) > S_QUEUED_COUNT_MAX)
        s_end (self, 1008, "the front end does not read its messages");
}

//  The kernel this connection is attached to, with its session; NULL when it is gone.
static cg_registry_kernel_t *
s_kernel (s_socket_t *self, cg_registry_session_t **session_p)
{
    return cg_registry_kernel_find (self->gateway->registry, self->kernel_id, session_p);
}

//  A message from the front end: checked, re-signed, sent on its channel.
static void
s_forward (s_socket_t *self, bool binary, const uint8_t *data, size_t len)
{
    cg_jmsg_t msg;
    const char *why = NULL;
    if (cg_jmsg_decode (self->protocol, binary, data, len, &msg, &why) < 0) {
        cleanup_free char *reason = cg_strdupf ("refused a message: %.100s", why);
        s_end (self, 1008, reason);
        return;
    }
    cg_registry_session_t *session = NULL;
    cg_registry_kernel_t *kernel = s_kernel (self, &session);
    int c = strcmp (msg.channel, "shell") == 0   ? CH_SHELL
            : strcmp (msg.channel, "stdin") == 0 ? CH_STDIN
                                                 : CH_CONTROL;
    if (kernel && self->sockets[c]) {
        if (c == CH_SHELL && strcmp (msg.msg_type, "execute_request") == 0)
            cg_gateway_cells_sent (self->cells, &msg, session, kernel);
        cg_frame_t parts[4];
        for (int i = 0; i < 4; i++)
            parts[i] = (cg_frame_t){msg.parts[i], msg.part_len[i]};
        if (cg_wire_send_raw (self->wire, self->sockets[c], parts, msg.buffers, msg.buffer_count)
            < 0)
            cg_log (1, "gateway: a %s message to kernel %s was not sent", msg.msg_type,
                    self->kernel_id);
        kernel->last_activity_us = zclock_time () * 1000;
        cg_registry_touch (session);
    }
    cg_jmsg_clear (&msg);
}

//  cg_ws_message_fn: forwarded now, or held until the connection is ready.
static void
s_on_message (void *arg, bool binary, const uint8_t *data, size_t len)
{
    s_socket_t *self = arg;
    if (self->over)
        return;
    if (self->ready) {
        s_forward (self, binary, data, len);
        return;
    }
    if (zlistx_size (self->held) >= S_HELD_MAX || self->held_bytes + len > S_HELD_BYTES_MAX) {
        s_end (self, 1008, "too many messages before the kernel answered");
        return;
    }
    zframe_t *frame = zframe_new (data, len);
    zframe_set_more (frame, binary);
    zlistx_add_end (self->held, frame);
    self->held_bytes += len;
}

//  The connection works: what the front end sent meanwhile goes to the kernel.
static void
s_ready (s_socket_t *self)
{
    self->ready = true;
    self->held_bytes = 0;
    zframe_t *frame;
    while (!self->over && (frame = zlistx_detach (self->held, NULL))) {
        s_forward (self, zframe_more (frame), zframe_data (frame), zframe_size (frame));
        zframe_destroy (&frame);
    }
}

//  Asks the kernel for its info (its iopub status tells that the subscription works).
static void
s_nudge (s_socket_t *self)
{
    char msg_id[33];
    if (self->sockets[CH_SHELL] && zhashx_size (self->nudges) < S_NUDGES_MAX
        && cg_wire_send (self->wire, self->sockets[CH_SHELL], "kernel_info_request", NULL, NULL,
                         msg_id)
               == 0)
        zhashx_insert (self->nudges, msg_id, (void *)1);
    self->next_nudge = zclock_mono () + S_NUDGE_INTERVAL_MS;
}

//  Tracks the kernel's state from an iopub message (MSG): a status's execution_state, and
//  whether a cell of this connection runs (frontend_busy, which MCP calls see). Returns
//  true when MSG is the idle status of a cell of this connection (cg_gateway_cells), which
//  s_cell_end then ends (once its execute_reply came too).
static bool
s_track_iopub (s_socket_t *self, cg_registry_kernel_t *kernel, const cg_msg_t *msg)
{
    bool status = strcmp (msg->msg_type, "status") == 0;
    const char *state = json_string_value (json_object_get (msg->content, "execution_state"));
    if (status && state)
        snprintf (kernel->execution_state, sizeof kernel->execution_state, "%s", state);
    if (!cg_gateway_cells_has (self->cells, msg->parent_msg_id) || (status && !state))
        return false;
    if (status && strcmp (state, "busy") == 0)
        kernel->frontend_busy = self->running = true;
    if (!cg_gateway_cells_iopub (self->cells, msg))
        return false;
    kernel->frontend_busy = self->running = false;
    return true;
}

//  Ends the cell of this connection whose execute_request was MSG_ID when both its reply
//  and its idle status came: its run ends through the registry (the execution log, the
//  metrics, the session's count).
static void
s_cell_end (s_socket_t *self, const char *msg_id)
{
    cg_registry_session_t *session = NULL;
    s_kernel (self, &session);
    cg_gateway_cells_end (self->cells, self->gateway->registry, session, msg_id);
}

//  Relays RAW (taken), a checked message of KERNEL from channel C, to the front end.
//  Returns the bytes sent.
static size_t
s_relay_one (s_socket_t *self, int c, cg_registry_kernel_t *kernel, cg_wire_raw_t *raw)
{
    if (c == CH_IOPUB && !self->ready)
        s_ready (self);
    //  A followed cell's idle status (iopub) or execute_reply (shell): either may come
    //  first; the cell ends after the second.
    bool cell_over = c == CH_IOPUB   ? s_track_iopub (self, kernel, raw->msg)
                     : c == CH_SHELL ? cg_gateway_cells_shell (self->cells, raw->msg)
                                     : false;
    if (raw->msg->parent_msg_id && zhashx_lookup (self->nudges, raw->msg->parent_msg_id)) {
        if (c == CH_SHELL)
            zhashx_delete (self->nudges, raw->msg->parent_msg_id);
        cg_wire_raw_destroy (&raw);
        return 0;
    }
    kernel->last_activity_us = zclock_time () * 1000;
    size_t len = 0;
    bool binary = false;
    char *out = cg_jmsg_encode (self->protocol, s_channel_names[c], raw, &len, &binary);
    if (cg_ws_send (self->ws, binary, out, len) < 0)
        s_set_over (self);
    free (out);
    //  After the idle status or the reply went out: the front end never waits for the
    //  records.
    if (cell_over)
        s_cell_end (self, raw->msg->parent_msg_id);
    cg_wire_raw_destroy (&raw);
    //  Checked per message: a batch of large ones would pile up far past the cap.
    s_check_queue (self);
    return len;
}

//  On the decoder's thread: the large message checked and parsed with the work's own wire.
static void
s_decode_work (cg_work_t *work)
{
    s_decode_t *self = (s_decode_t *)work;
    cg_fault_hold ("gateway_decode"); /* a test's large kernel message in flight */
    self->raw = cg_wire_decode_raw (self->wire, &self->zmsg);
}

//  Back on the loop: the message relayed (when its connection and kernel process are still
//  there), and the connection reads its kernel's channels again.
static void
s_decode_after (cg_work_t *work, bool ran)
{
    s_decode_t *self = (s_decode_t *)work;
    s_socket_t *socket = self->socket;
    if (socket) {
        socket->decoding = NULL;
        cg_registry_session_t *session = NULL;
        cg_registry_kernel_t *kernel = s_kernel (socket, &session);
        if (ran && self->raw && kernel && !socket->over && kernel->generation == self->generation
            && socket->sockets[self->c]) {
            s_relay_one (socket, self->c, kernel, self->raw);
            self->raw = NULL;
        }
        s_channels_watch (socket, ZMQ_POLLIN);
    }
    cg_wire_raw_destroy (&self->raw);
    zmsg_destroy (&self->zmsg);
    cg_wire_destroy (&self->wire);
    free (self);
}

void
cg_gateway_ws_decoded (cg_loop_t *loop, short revents, void *arg)
{
    (void)loop;
    (void)revents;
    cg_worker_collect (((cg_gateway_t *)arg)->decoder);
}

//  Hands ZMSG (taken), a large message of KERNEL from channel C, to the decoder; the
//  connection stops reading its kernel until it is back. Returns false (ZMSG given back)
//  when the decoder is full.
static bool
s_decode_away (s_socket_t *self, int c, const cg_registry_kernel_t *kernel, zmsg_t **zmsg_p)
{
    s_decode_t *work = cg_xcalloc (1, sizeof *work);
    *work = (s_decode_t){.work = {.work_cb = s_decode_work, .after_cb = s_decode_after},
                         .socket = self,
                         .c = c,
                         .generation = self->generation,
                         .wire = cg_wire_new (kernel->key, strlen (kernel->key),
                                              self->gateway->config->max_message_bytes),
                         .zmsg = *zmsg_p};
    if (cg_worker_queue (self->gateway->decoder, &work->work, false, NULL) < 0) {
        cg_wire_destroy (&work->wire);
        free (work);
        return false;
    }
    *zmsg_p = NULL;
    self->decoding = work;
    s_channels_watch (self, 0);
    return true;
}

//  Relays what channel C has for the front end (at most S_BATCH messages, and the first
//  that reaches S_BATCH_BYTES; the rest waits for the next round). A large message goes to
//  the decoder, and the rest waits for it.
static void
s_relay (s_socket_t *self, int c, cg_registry_kernel_t *kernel)
{
    size_t relayed = 0;
    for (int n = 0; n < S_BATCH && relayed < S_BATCH_BYTES && !self->over && !self->decoding
                    && self->sockets[c] && (zsock_events (self->sockets[c]) & ZMQ_POLLIN);
         n++) {
        zmsg_t *zmsg = zmsg_recv (self->sockets[c]);
        if (!zmsg)
            continue;
        if (zmsg_content_size (zmsg) >= S_DECODE_AWAY && kernel->key
            && s_decode_away (self, c, kernel, &zmsg))
            break;
        cg_wire_raw_t *raw = cg_wire_decode_raw (self->wire, &zmsg);
        if (raw)
            relayed += s_relay_one (self, c, kernel, raw);
    }
}

//  Called by the HTTP listener once the 101 answer went out.
static void
s_upgraded (void *arg, int fd, const char *extra, size_t extra_len, cg_http_upgraded_t *upgraded)
{
    s_socket_t *self = arg;
    self->fd = fd;
    self->upgraded = upgraded;
    int one = 1;
    setsockopt (fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one); /* a cell is a small message */
    self->ws = cg_ws_new (fd, extra, extra_len, self->gateway->config->max_message_bytes,
                          s_on_message, self);
    self->fd_watch =
        cg_loop_watch_fd (self->gateway->loop, fd, cg_ws_events (self->ws), s_fd_cb, self);
    cg_registry_session_t *session = NULL;
    cg_registry_kernel_t *kernel = s_kernel (self, &session);
    if (!kernel || s_connect (self, kernel) < 0)
        s_end (self, 1011, "the kernel is gone");
    else {
        kernel->connections++;
        self->counted = true;
    }
    self->handle = zlistx_add_end (self->gateway->sockets, self);
    cg_log (2, "gateway: a WebSocket attached to kernel %s (%s)", self->kernel_id,
            self->protocol == CG_JMSG_V1 ? CG_JMSG_PROTOCOL_V1 : "legacy JSON");
}

//  True when the comma-separated LIST (a Sec-WebSocket-Protocol header) names WANTED.
static bool
s_offers (const char *list, const char *wanted)
{
    size_t len = strlen (wanted);
    for (const char *p = list; p && *p;) {
        p += strspn (p, " \t,");
        size_t n = strcspn (p, " \t,");
        if (n == len && strncmp (p, wanted, len) == 0)
            return true;
        p += n;
    }
    return false;
}

void
cg_gateway_ws_attach (cg_gateway_t *self, cg_http_exchange_t *exchange,
                      cg_registry_kernel_t *kernel)
{
    const char *upgrade = cg_http_exchange_header (exchange, "Upgrade");
    const char *version = cg_http_exchange_header (exchange, "Sec-WebSocket-Version");
    char accept[29];
    if (!upgrade || strcasecmp (upgrade, "websocket") != 0 || !version
        || strcmp (version, "13") != 0
        || cg_ws_accept_key (cg_http_exchange_header (exchange, "Sec-WebSocket-Key"), accept) < 0)
        return cg_http_respond_error (exchange, 400, "bad_request",
                                      "the channels are a WebSocket (version 13): send Upgrade: "
                                      "websocket with a Sec-WebSocket-Key");
    if (zlistx_size (self->sockets) >= CG_GATEWAY_SOCKETS_MAX)
        return cg_http_respond_error (exchange, 503, "too_many_websockets",
                                      "64 WebSockets are attached already; close one first");
    s_socket_t *socket = cg_xcalloc (1, sizeof *socket);
    socket->gateway = self;
    snprintf (socket->kernel_id, sizeof socket->kernel_id, "%s", kernel->id);
    socket->fd = -1;
    for (int c = 0; c < CH_COUNT; c++)
        socket->fds[c] = -1;
    socket->cells = cg_gateway_cells_new ();
    socket->nudges = zhashx_new ();
    socket->held = zlistx_new ();
    zlistx_set_destructor (socket->held, (zlistx_destructor_fn *)zframe_destroy);
    const char *offered = cg_http_exchange_header (exchange, "Sec-WebSocket-Protocol");
    socket->protocol = s_offers (offered, CG_JMSG_PROTOCOL_V1) ? CG_JMSG_V1 : CG_JMSG_LEGACY;
    const char *headers[] = {"Upgrade",
                             "websocket",
                             "Sec-WebSocket-Accept",
                             accept,
                             socket->protocol == CG_JMSG_V1 ? "Sec-WebSocket-Protocol" : NULL,
                             CG_JMSG_PROTOCOL_V1,
                             NULL};
    cg_http_respond_upgrade (exchange, headers, s_upgraded, socket);
}

//  Gives back what an ended connection holds of its KERNEL (NULL: gone) and SESSION: its
//  kernel sockets (no more iopub piles up for it), its place in the kernel's connections
//  and the kernel's busy state when a cell of its runs (no one will see that cell end: the
//  agent may queue behind it).
static void
s_release (s_socket_t *self, cg_registry_kernel_t *kernel, cg_registry_session_t *session)
{
    if (self->released)
        return;
    self->released = true;
    s_disconnect (self);
    cg_gateway_cells_end_all (self->cells, self->gateway->registry, session,
                              "the front end's connection closed before the cell ended");
    if (kernel && self->counted && kernel->connections > 0)
        kernel->connections--;
    self->counted = false;
    if (kernel && self->running)
        kernel->frontend_busy = false;
    self->running = false;
    if (session) /* its idle time counts from now */
        cg_registry_touch (session);
}

//  True when the ended connection SELF may be freed: nothing it queued can go out any more
//  (sent, or the peer is gone), or the peer took longer than S_CLOSE_GRACE_MS to read it.
static bool
s_done (s_socket_t *self)
{
    return self->over
           && (!cg_ws_flushing (self->ws) || zclock_mono () - self->over_at >= S_CLOSE_GRACE_MS);
}

//  Processes the WebSocket with REVENTS (0: what it has pending, what waits to be sent);
//  marks the connection over when neither side will read or write more.
static void
s_process (s_socket_t *socket, short revents)
{
    if (cg_ws_process (socket->ws, revents) < 0 && !socket->over) {
        s_set_over (socket);
        cg_log (2, "gateway: a WebSocket of kernel %s closed", socket->kernel_id);
    }
    s_check_queue (socket); /* pongs to a peer that pings without reading */
}

static void
s_fd_cb (cg_loop_t *loop, short revents, void *arg)
{
    (void)loop;
    s_process (arg, revents);
}

static void
s_channel_cb (cg_loop_t *loop, short revents, void *arg)
{
    (void)loop;
    s_channel_t *channel = arg;
    cg_registry_session_t *session = NULL;
    cg_registry_kernel_t *kernel = s_kernel (channel->socket, &session);
    if (kernel && (revents & ZMQ_POLLIN) && !channel->socket->decoding)
        s_relay (channel->socket, channel->c, kernel);
}

//  Ends the connection's cells that waited too long for their reply or their idle status
//  (cg_gateway_cells_expire); one whose idle status never came is no longer busy.
static void
s_cells_expire (s_socket_t *self, cg_registry_kernel_t *kernel, cg_registry_session_t *session)
{
    if (cg_gateway_cells_due (self->cells) == 0
        || !cg_gateway_cells_expire (self->cells, self->gateway->registry, session, cg_now_us ()))
        return;
    if (kernel && self->running)
        kernel->frontend_busy = false;
    self->running = false;
}

//  True when process PID has ended (gone, or a zombie no one reaped yet).
static bool
s_pid_ended (long pid)
{
    char path[64], buf[512];
    snprintf (path, sizeof path, "/proc/%ld/stat", pid);
    FILE *f = fopen (path, "re");
    if (!f)
        return errno == ENOENT;
    size_t n = fread (buf, 1, sizeof buf - 1, f);
    fclose (f);
    buf[n] = '\0';
    const char *state = strrchr (buf, ')'); /* the name may hold anything */
    return state && state[1] == ' ' && (state[2] == 'Z' || state[2] == 'X');
}

//  Whether the connection waits on its kernel: cells in flight, or not ready yet (what its
//  front end sent is held until the kernel answers a nudge).
static bool
s_waits (s_socket_t *self)
{
    return self->running || cg_gateway_cells_count (self->cells) > 0
           || (!self->ready && self->wire);
}

//  A kernel process that ended while the connection waits on it (killed, out of memory, its
//  sandbox gone): nothing will answer its cells or its nudges, and no run notices it before
//  the agent's next call, which a running cell's busy state refuses. So the connection ends
//  its cells, gives the busy state back and closes (1011, saying why): its front end is told
//  instead of waiting for ever, and the agent's next call restarts the kernel.
static void
s_check_alive (s_socket_t *self, cg_registry_kernel_t *kernel, cg_registry_session_t *session)
{
    if (!kernel || kernel->pid <= 0 || !s_waits (self) || zclock_mono () < self->next_alive_check)
        return;
    self->next_alive_check = zclock_mono () + S_ALIVE_CHECK_MS;
    if (!s_pid_ended (kernel->pid))
        return;
    cg_log (1, "gateway: kernel %s (pid %ld) ended while a front end waited on it", self->kernel_id,
            kernel->pid);
    cg_gateway_cells_end_all (self->cells, self->gateway->registry, session,
                              "the kernel died before the cell ended");
    if (self->running)
        kernel->frontend_busy = false;
    self->running = false;
    snprintf (kernel->execution_state, sizeof kernel->execution_state, "%s", "dead");
    s_end (self, 1011, "the kernel died");
}

//  The ms until the connections want looking at again (-1: none).
static int
s_timeout_ms (cg_gateway_t *self)
{
    int wait_ms = -1;
    for (s_socket_t *socket = zlistx_first (self->sockets); socket;
         socket = zlistx_next (self->sockets)) {
        int64_t due = -1;
        int64_t cells_due = cg_gateway_cells_due (socket->cells);
        if (socket->over) /* to be freed then, if its peer has not read by then */
            due = socket->over_at + S_CLOSE_GRACE_MS - zclock_mono ();
        else if (!socket->ready && socket->wire)
            due = socket->next_nudge - zclock_mono ();
        else if (cells_due > 0) /* a cell waiting for its reply or idle status gives up */
            due = (cells_due - cg_now_us () + 999) / 1000;
        else if (s_waits (socket))
            due = socket->next_alive_check - zclock_mono (); /* s_check_alive */
        else
            continue;
        int ms = due < 0 ? 0 : (int)due;
        if (wait_ms < 0 || ms < wait_ms)
            wait_ms = ms;
    }
    return wait_ms;
}

int
cg_gateway_ws_before_wait (cg_loop_t *loop, void *arg)
{
    (void)loop;
    cg_gateway_t *self = arg;
    s_socket_t *socket = zlistx_first (self->sockets);
    while (socket) {
        s_socket_t *next = zlistx_next (self->sockets);
        cg_registry_session_t *session = NULL;
        cg_registry_kernel_t *kernel = s_kernel (socket, &session);
        if (!kernel && !socket->over)
            s_end (socket, 1001, "the kernel was shut down");
        else if (kernel && !socket->over && kernel->generation != socket->generation
                 && s_connect (socket, kernel) < 0)
            s_end (socket, 1011, "the kernel did not come back");
        if (!socket->over && !socket->ready && socket->wire && zclock_mono () >= socket->next_nudge)
            s_nudge (socket);
        if (!socket->over)
            s_cells_expire (socket, kernel, session);
        if (!socket->over)
            s_check_alive (socket, kernel, session);
        if (socket->over)
            s_release (socket, kernel, session);
        if (s_done (socket)) {
            zlistx_delete (self->sockets, socket->handle);
            s_socket_free (&socket);
        }
        else {
            s_process (socket, 0);
            cg_loop_watch_events (socket->fd_watch, cg_ws_events (socket->ws));
        }
        socket = next;
    }
    return s_timeout_ms (self);
}

void
cg_gateway_ws_close_all (cg_gateway_t *self)
{
    for (s_socket_t *socket = zlistx_first (self->sockets); socket;
         socket = zlistx_next (self->sockets)) {
        cg_ws_close (socket->ws, 1001, "the server stops");
        s_socket_free (&socket);
    }
    zlistx_purge (self->sockets);
}
