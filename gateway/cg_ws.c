/*  cg_ws — one server-side WebSocket over libwslay's event API. */
#include "gateway/cg_ws.h"
#include "base/cg_util.h"

#include <errno.h>
#include <nettle/sha1.h>
#include <poll.h>
#include <sodium.h>
#include <string.h>
#include <sys/socket.h>
#include <wslay/wslay.h>

//  Bytes read from the peer per cg_ws_process: wslay reads until the socket is empty, and
//  each ping it reads queues a pong, so a peer that floods pings faster than a round would
//  otherwise grow the queue far past its caps before they are checked (a ping frame is 6
//  bytes: at most about 44,000 pongs a round). The rest waits for the next round.
#define S_READ_BUDGET (256 * 1024)

struct cg_ws_t {
    int fd;
    wslay_event_context_ptr ctx;
    char *extra; /* what the HTTP listener had read past the request */
    size_t extra_len, extra_off;
    bool failed;        /* the peer went away or broke the protocol */
    size_t read_budget; /* what this round may still read (S_READ_BUDGET) */
    cg_ws_message_fn *on_message;
    void *arg;
};

int
cg_ws_accept_key (const char *key, char out[29])
{
    uint8_t raw[18];
    size_t raw_len = 0;
    if (!key || strlen (key) != 24
        || sodium_base642bin (raw, sizeof raw, key, 24, NULL, &raw_len, NULL,
                              sodium_base64_VARIANT_ORIGINAL)
               != 0
        || raw_len != 16)
        return -1;
    static const char guid[] = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
    struct sha1_ctx sha;
    uint8_t digest[SHA1_DIGEST_SIZE];
    sha1_init (&sha);
    sha1_update (&sha, 24, (const uint8_t *)key);
    sha1_update (&sha, sizeof guid - 1, (const uint8_t *)guid);
    sha1_digest (&sha, sizeof digest, digest);
    sodium_bin2base64 (out, 29, digest, sizeof digest, sodium_base64_VARIANT_ORIGINAL);
    return 0;
}

static ssize_t
s_recv_cb (wslay_event_context_ptr ctx, uint8_t *buf, size_t len, int flags, void *user_data)
{
    (void)flags;
    cg_ws_t *self = user_data;
    if (self->extra_off < self->extra_len) {
        size_t n =
            self->extra_len - self->extra_off < len ? self->extra_len - self->extra_off : len;
        memcpy (buf, self->extra + self->extra_off, n);
        self->extra_off += n;
        return (ssize_t)n;
    }
    if (self->read_budget == 0) {
        wslay_event_set_error (ctx, WSLAY_ERR_WOULDBLOCK);
        return -1;
    }
    ssize_t n;
    while ((n = recv (self->fd, buf, len < self->read_budget ? len : self->read_budget, 0)) < 0
           && errno == EINTR)
        ;
    if (n > 0)
        self->read_budget -= (size_t)n;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        wslay_event_set_error (ctx, WSLAY_ERR_WOULDBLOCK);
        return -1;
    }
    if (n <= 0) {
        self->failed = true;
        wslay_event_set_error (ctx, WSLAY_ERR_CALLBACK_FAILURE);
        return -1;
    }
    return n;
}

static ssize_t
s_send_cb (wslay_event_context_ptr ctx, const uint8_t *data, size_t len, int flags, void *user_data)
{
    cg_ws_t *self = user_data;
    ssize_t n;
    while ((n = send (self->fd, data, len, MSG_NOSIGNAL | (flags & WSLAY_MSG_MORE ? MSG_MORE : 0)))
               < 0
           && errno == EINTR)
        ;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        wslay_event_set_error (ctx, WSLAY_ERR_WOULDBLOCK);
        return -1;
    }
    if (n < 0) {
        self->failed = true;
        wslay_event_set_error (ctx, WSLAY_ERR_CALLBACK_FAILURE);
        return -1;
    }
    return n;
}

static void
s_msg_cb (wslay_event_context_ptr ctx, const struct wslay_event_on_msg_recv_arg *arg,
          void *user_data)
{
    (void)ctx;
    cg_ws_t *self = user_data;
    if (arg->opcode == WSLAY_TEXT_FRAME || arg->opcode == WSLAY_BINARY_FRAME)
        self->on_message (self->arg, arg->opcode == WSLAY_BINARY_FRAME, arg->msg, arg->msg_length);
}

cg_ws_t *
cg_ws_new (int fd, const char *extra, size_t extra_len, size_t max_message,
           cg_ws_message_fn *on_message, void *arg)
{
    cg_ws_t *self = cg_xcalloc (1, sizeof *self);
    self->fd = fd;
    self->on_message = on_message;
    self->arg = arg;
    if (extra_len) {
        self->extra = cg_xcalloc (1, extra_len);
        memcpy (self->extra, extra, extra_len);
        self->extra_len = extra_len;
    }
    struct wslay_event_callbacks callbacks = {
        .recv_callback = s_recv_cb, .send_callback = s_send_cb, .on_msg_recv_callback = s_msg_cb};
    if (wslay_event_context_server_init (&self->ctx, &callbacks, self) != 0)
        abort (); /* out of memory */
    wslay_event_config_set_max_recv_msg_length (self->ctx, max_message);
    return self;
}

void
cg_ws_destroy (cg_ws_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    cg_ws_t *self = *self_p;
    wslay_event_context_free (self->ctx);
    free (self->extra);
    free (self);
    *self_p = NULL;
}

short
cg_ws_events (cg_ws_t *self)
{
    short events = 0;
    if (self->failed) /* nothing more will be read or written: poll it for nothing */
        return 0;
    if (wslay_event_want_read (self->ctx))
        events |= POLLIN;
    if (wslay_event_want_write (self->ctx))
        events |= POLLOUT;
    return events;
}

//  True once neither side will read or write more.
static bool
s_over (cg_ws_t *self)
{
    return self->failed
           || (!wslay_event_want_read (self->ctx) && !wslay_event_want_write (self->ctx));
}

int
cg_ws_process (cg_ws_t *self, short revents)
{
    bool pending = self->extra_off < self->extra_len;
    self->read_budget = S_READ_BUDGET;
    if ((revents & (POLLIN | POLLHUP | POLLERR) || pending) && wslay_event_want_read (self->ctx)
        && wslay_event_recv (self->ctx) != 0)
        self->failed = true;
    if (!self->failed && wslay_event_want_write (self->ctx) && wslay_event_send (self->ctx) != 0)
        self->failed = true;
    return s_over (self) ? -1 : 0;
}

int
cg_ws_send (cg_ws_t *self, bool binary, const void *data, size_t len)
{
    struct wslay_event_msg msg = {binary ? WSLAY_BINARY_FRAME : WSLAY_TEXT_FRAME, data, len};
    if (self->failed || wslay_event_queue_msg (self->ctx, &msg) != 0)
        return -1;
    if (wslay_event_send (self->ctx) != 0)
        self->failed = true;
    return self->failed ? -1 : 0;
}

bool
cg_ws_flushing (cg_ws_t *self)
{
    return !self->failed && wslay_event_want_write (self->ctx);
}

size_t
cg_ws_queued (cg_ws_t *self)
{
    return wslay_event_get_queued_msg_length (self->ctx);
}

size_t
cg_ws_queued_count (cg_ws_t *self)
{
    return wslay_event_get_queued_msg_count (self->ctx);
}

void
cg_ws_close (cg_ws_t *self, uint16_t code, const char *reason)
{
    wslay_event_queue_close (self->ctx, code, (const uint8_t *)reason, strlen (reason));
    if (!self->failed && wslay_event_send (self->ctx) != 0)
        self->failed = true;
}
