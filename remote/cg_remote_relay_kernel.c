/*  cg_remote_relay_kernel — the relay's side of an ATTACHed kernel: its sockets found in
    the ipc dir, a DEALER per server client and a SUB for iopub, frames forwarded both ways
    (TO, FROM). */
#define _GNU_SOURCE
#include "remote/cg_remote_relay_int.h"
#include "base/cg_log.h"
#include "base/cg_util.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void
cg_relay_kernel_free (cg_relay_exec_t *exec)
{
    for (int c = 0; c < CG_REMOTE_CHANNELS; c++) {
        for (size_t p = 0; p < exec->peer_count[c]; p++) {
            zframe_destroy (&exec->peers[c][p].peer);
            zsock_destroy (&exec->peers[c][p].sock);
        }
        if (exec->fds[c] >= 0)
            close (exec->fds[c]);
        exec->fds[c] = -1;
        exec->peer_count[c] = 0;
    }
    zsock_destroy (&exec->iopub);
    if (exec->pending) {
        for (zmsg_t *m = zlist_pop (exec->pending); m; m = zlist_pop (exec->pending))
            zmsg_destroy (&m);
        zlist_destroy (&exec->pending);
    }
    free (exec->base);
    exec->base = NULL;
}

void
cg_relay_kernel_attach (cg_relay_t *self, const cg_remote_msg_t *msg)
{
    cg_relay_exec_t *exec = cg_relay_find (self, &msg->id);
    char name[160];
    snprintf (name, sizeof name, "%.*s", (int)msg->text.size, (const char *)msg->text.data);
    //  An earlier ATTACH whose sockets never came left its name, sockets and queue.
    if (exec && !exec->attached)
        cg_relay_kernel_free (exec);
    const char *why = !exec            ? "no such exec"
                      : exec->attached ? "attached already"
                      : !(exec->base = cg_remote_connection_read (self->ipc_fd, name, exec->ports))
                          ? "its connection file is not an ipc kernel's"
                          : NULL;
    if (why) {
        cleanup_free char *text = cg_strdupf ("attach %s: %s", name, why);
        cg_relay_send (self, &(cg_remote_msg_t){.verb = CG_REMOTE_FAILED,
                                                .id = msg->id,
                                                .text = cg_relay_text (text)});
        return;
    }
    exec->attached = true;
    exec->attach_deadline = zclock_mono () + self->attach_ms;
    exec->pending = zlist_new ();
}

//  A DEALER to EXEC's channel C under PEER's routing id (the shell's and stdin's must be
//  the same: the kernel sends input_request to the shell request's identity).
static zsock_t *
s_peer_sock (cg_relay_t *self, cg_relay_exec_t *exec, int c, const cg_remote_bytes_t *peer)
{
    for (size_t p = 0; p < exec->peer_count[c]; p++)
        if (zframe_size (exec->peers[c][p].peer) == peer->size
            && memcmp (zframe_data (exec->peers[c][p].peer), peer->data, peer->size) == 0)
            return exec->peers[c][p].sock;
    if (exec->peer_count[c] == CG_REMOTE_PEERS_MAX) {
        cg_log (1, "relay: kernel %s: %d clients on a channel already; a message dropped", exec->id,
                CG_REMOTE_PEERS_MAX);
        return NULL;
    }
    zsock_t *sock = zsock_new (ZMQ_DEALER);
    zsock_set_linger (sock, 0);
    zsock_set_maxmsgsize (sock, (int64_t)self->max_message_bytes);
    //  A routing id may not start with a zero byte (libzmq's own are made so).
    if (peer->size > 0 && ((const uint8_t *)peer->data)[0] != 0)
        zmq_setsockopt (zsock_resolve (sock), ZMQ_ROUTING_ID, peer->data, peer->size);
    zsock_connect (sock, "ipc:///proc/self/fd/%d", exec->fds[c]);
    cg_relay_peer_t *slot = &exec->peers[c][exec->peer_count[c]++];
    slot->peer = zframe_new (peer->data, peer->size);
    slot->sock = sock;
    return sock;
}

//  Sends a TO message's parts to the kernel.
static void
s_deliver (cg_relay_t *self, cg_relay_exec_t *exec, const cg_remote_msg_t *msg)
{
    if (msg->channel == CG_REMOTE_IOPUB)
        return; /* a subscription: the relay takes every iopub message anyway */
    zsock_t *sock = s_peer_sock (self, exec, msg->channel, &msg->peer);
    if (!sock)
        return;
    zmsg_t *out = zmsg_new ();
    for (size_t i = 0; i < msg->part_count; i++)
        zmsg_addmem (out, msg->parts[i].data, msg->parts[i].size);
    zsock_set_sndtimeo (sock, 0);
    if (zmsg_send (&out, sock) < 0)
        zmsg_destroy (&out);
}

void
cg_relay_kernel_to (cg_relay_t *self, const cg_remote_msg_t *msg, zmsg_t **raw)
{
    cg_relay_exec_t *exec = cg_relay_find (self, &msg->id);
    if (!exec || !exec->attached)
        return;
    if (exec->connected) {
        s_deliver (self, exec, msg);
        return;
    }
    if (zlist_size (exec->pending) >= CG_RELAY_PENDING_MAX) {
        cg_log (1, "relay: kernel %s: %d messages wait for its sockets; one dropped", exec->id,
                CG_RELAY_PENDING_MAX);
        return;
    }
    zlist_append (exec->pending, *raw);
    *raw = NULL;
}

//  Opens every socket EXEC's kernel has bound by now (a socket, not followed through a
//  link); once all are there, connects its iopub and delivers what waited.
void
cg_relay_kernel_connect (cg_relay_t *self, cg_relay_exec_t *exec)
{
    bool all = true;
    for (int c = 0; c < CG_REMOTE_CHANNELS; c++) {
        if (exec->fds[c] >= 0)
            continue;
        char name[96];
        int fd = -1;
        for (int form = 0; form < 2 && fd < 0; form++) {
            snprintf (name, sizeof name, "%s%c%d", exec->base, form ? ':' : '-', exec->ports[c]);
            fd = openat (self->ipc_fd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
            struct stat st;
            if (fd >= 0 && (fstat (fd, &st) < 0 || !S_ISSOCK (st.st_mode))) {
                close (fd);
                fd = -1;
            }
        }
        exec->fds[c] = fd;
        all = all && fd >= 0;
    }
    if (!all) {
        if (zclock_mono () > exec->attach_deadline) {
            exec->attached = false;
            cleanup_free char *text =
                cg_strdupf ("attach: the kernel bound no sockets within %d ms", self->attach_ms);
            cg_relay_send (self, &(cg_remote_msg_t){.verb = CG_REMOTE_FAILED,
                                                    .id = cg_relay_text (exec->id),
                                                    .text = cg_relay_text (text)});
        }
        return;
    }
    exec->connected = true;
    exec->iopub = zsock_new (ZMQ_SUB);
    zsock_set_linger (exec->iopub, 0);
    zsock_set_maxmsgsize (exec->iopub, (int64_t)self->max_message_bytes);
    zsock_set_subscribe (exec->iopub, "");
    zsock_connect (exec->iopub, "ipc:///proc/self/fd/%d", exec->fds[CG_REMOTE_IOPUB]);
    for (zmsg_t *raw = zlist_pop (exec->pending); raw; raw = zlist_pop (exec->pending)) {
        cg_remote_bytes_t frames[CG_REMOTE_FRAMES_MAX];
        int count = cg_remote_frames_of (raw, frames, CG_REMOTE_FRAMES_MAX);
        cg_remote_msg_t msg;
        if (count > 0 && cg_remote_decode (frames, (size_t)count, CG_REMOTE_DOWN, &msg, NULL) == 0)
            s_deliver (self, exec, &msg);
        zmsg_destroy (&raw);
    }
}

//  Forwards what the kernel sent on SOCK (channel C, to PEER) over the link.
void
cg_relay_kernel_forward (cg_relay_t *self, cg_relay_exec_t *exec, int c, zsock_t *sock,
                         zframe_t *peer)
{
    while (zsock_events (sock) & ZMQ_POLLIN) {
        zmsg_t *in = zmsg_recv (sock);
        if (!in)
            return;
        cg_remote_bytes_t parts[CG_REMOTE_PARTS_MAX];
        int count = cg_remote_frames_of (in, parts, CG_REMOTE_PARTS_MAX);
        if (count > 0)
            cg_relay_send (self,
                           &(cg_remote_msg_t){.verb = CG_REMOTE_FROM,
                                              .id = cg_relay_text (exec->id),
                                              .channel = c,
                                              .peer = peer ? (cg_remote_bytes_t){zframe_data (peer),
                                                                                 zframe_size (peer)}
                                                           : (cg_remote_bytes_t){"", 0},
                                              .parts = parts,
                                              .part_count = (size_t)count});
        else
            cg_log (1, "relay: kernel %s sent a message of over %d parts; dropped", exec->id,
                    CG_REMOTE_PARTS_MAX);
        zmsg_destroy (&in);
    }
}
