/*  cg_remote_mirror — a remote kernel's sockets, bound on the server's side. */
#define _GNU_SOURCE
#include "remote/cg_remote_mirror.h"
#include "base/cg_log.h"
#include "base/cg_util.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <string.h>
#include <unistd.h>

//  What waits for a client that does not read, per socket (as cg_kernel's own queues).
#define S_QUEUE_MAX 1000

struct cg_remote_mirror_t {
    char *kernel;
    int dir_fd;                         /* the ipc dir, O_PATH */
    char *names[CG_REMOTE_CHANNELS][2]; /* BASE-PORT, BASE:PORT */
    zsock_t *socks[CG_REMOTE_CHANNELS];
};

cg_remote_mirror_t *
cg_remote_mirror_new (const char *ipc_dir, const char *connection_name, const char *kernel,
                      size_t max_frame_bytes, cg_error_t **err)
{
    cg_remote_mirror_t *self = cg_xcalloc (1, sizeof *self);
    self->kernel = cg_xstrdup (kernel);
    self->dir_fd = open (ipc_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    int ports[CG_REMOTE_CHANNELS];
    cleanup_free char *base =
        self->dir_fd >= 0 ? cg_remote_connection_read (self->dir_fd, connection_name, ports) : NULL;
    if (!base) {
        cg_error_set (err, self->dir_fd < 0 ? errno : EINVAL,
                      "kernel %s: %s/%s is not an ipc kernel's connection file", kernel, ipc_dir,
                      connection_name);
        cg_remote_mirror_destroy (&self);
        return NULL;
    }
    for (int c = 0; c < CG_REMOTE_CHANNELS; c++) {
        self->names[c][0] = cg_strdupf ("%s-%d", base, ports[c]);
        self->names[c][1] = cg_strdupf ("%s:%d", base, ports[c]);
        for (int form = 0; form < 2; form++)
            unlinkat (self->dir_fd, self->names[c][form], 0);
        zsock_t *sock = zsock_new (c == CG_REMOTE_IOPUB ? ZMQ_PUB : ZMQ_ROUTER);
        self->socks[c] = sock;
        zsock_set_linger (sock, 0);
        zsock_set_maxmsgsize (sock, (int64_t)max_frame_bytes);
        zsock_set_sndhwm (sock, S_QUEUE_MAX);
        zsock_set_rcvhwm (sock, S_QUEUE_MAX);
        zsock_set_sndtimeo (sock, 0);
        //  Through the dir's fd: a host ipc dir's path may be longer than a socket's.
        if (zsock_bind (sock, "ipc:///proc/self/fd/%d/%s", self->dir_fd, self->names[c][0]) < 0
            || linkat (self->dir_fd, self->names[c][0], self->dir_fd, self->names[c][1], 0) < 0) {
            cg_error_set (err, errno, "kernel %s: bind %s in %s: %s", kernel, self->names[c][0],
                          ipc_dir, strerror (errno));
            cg_remote_mirror_destroy (&self);
            return NULL;
        }
    }
    return self;
}

void
cg_remote_mirror_destroy (cg_remote_mirror_t **self_p)
{
    cg_remote_mirror_t *self = *self_p;
    if (!self)
        return;
    *self_p = NULL;
    for (int c = 0; c < CG_REMOTE_CHANNELS; c++) {
        zsock_destroy (&self->socks[c]);
        for (int form = 0; form < 2; form++) {
            if (self->names[c][form] && self->dir_fd >= 0)
                unlinkat (self->dir_fd, self->names[c][form], 0);
            free (self->names[c][form]);
        }
    }
    if (self->dir_fd >= 0)
        close (self->dir_fd);
    free (self->kernel);
    free (self);
}

const char *
cg_remote_mirror_kernel (cg_remote_mirror_t *self)
{
    return self->kernel;
}

zsock_t *
cg_remote_mirror_sock (cg_remote_mirror_t *self, int c)
{
    return self->socks[c];
}

zmsg_t *
cg_remote_mirror_take (cg_remote_mirror_t *self, int c)
{
    while (c != CG_REMOTE_IOPUB && (zsock_events (self->socks[c]) & ZMQ_POLLIN)) {
        zmsg_t *in = zmsg_recv (self->socks[c]);
        if (!in)
            return NULL;
        zframe_t *peer = zmsg_pop (in);
        cg_remote_bytes_t parts[CG_REMOTE_PARTS_MAX];
        int count = cg_remote_frames_of (in, parts, CG_REMOTE_PARTS_MAX);
        zmsg_t *to = NULL;
        if (peer && count > 0 && zframe_size (peer) <= CG_REMOTE_PEER_MAX && zframe_size (peer) > 0)
            to = cg_remote_encode (
                &(cg_remote_msg_t){.verb = CG_REMOTE_TO,
                                   .id = {self->kernel, strlen (self->kernel)},
                                   .channel = c,
                                   .peer = {zframe_data (peer), zframe_size (peer)},
                                   .parts = parts,
                                   .part_count = (size_t)count});
        else
            cg_log (1, "kernel %s: a client's message of %d parts dropped (TO carries 1 to %d)",
                    self->kernel, count, CG_REMOTE_PARTS_MAX);
        zframe_destroy (&peer);
        zmsg_destroy (&in);
        if (to)
            return to;
    }
    return NULL;
}

void
cg_remote_mirror_put (cg_remote_mirror_t *self, const cg_remote_msg_t *from)
{
    zmsg_t *out = zmsg_new ();
    if (from->channel != CG_REMOTE_IOPUB)
        zmsg_addmem (out, from->peer.data, from->peer.size);
    for (size_t i = 0; i < from->part_count; i++)
        zmsg_addmem (out, from->parts[i].data, from->parts[i].size);
    if (zmsg_send (&out, self->socks[from->channel]) < 0)
        zmsg_destroy (&out);
}
