/*  cg_remote_mirror — a remote kernel's five sockets on the server's side (issue 31). In
    the sandbox's host ipc dir, at the names its connection file gives (BASE-PORT, and
    BASE:PORT for the kernels that name them so), the server binds a ROUTER for shell,
    stdin, control and heartbeat and a PUB for iopub: the bridge (cg_kernel) and the
    gateway connect to them as to a local kernel's. What their sockets send becomes the
    relay's TO messages (cg_remote_mirror_take), and the relay's FROM messages come out of
    them to the socket they name (cg_remote_mirror_put). Frames pass byte for byte: the
    kernel's HMAC key signs them end to end, and the mirror never needs it. */
#ifndef CG_REMOTE_MIRROR_H
#define CG_REMOTE_MIRROR_H

#include "remote/cg_remote_msg.h"
#include "base/cg_error.h"

#include <czmq.h>

typedef struct cg_remote_mirror_t cg_remote_mirror_t;

/*  Binds kernel KERNEL's sockets in IPC_DIR (the host's, which only the server writes) as
    connection file CONNECTION_NAME there says (transport ipc; the base name of its "ip"),
    refusing frames over MAX_FRAME_BYTES. Returns the mirror (the caller owns it), or NULL
    with *err set. */
cg_remote_mirror_t *cg_remote_mirror_new (const char *ipc_dir, const char *connection_name,
                                          const char *kernel, size_t max_frame_bytes,
                                          cg_error_t **err);

/*  Closes the sockets and removes their names. Sets *SELF_P to NULL; safe on NULL. */
void cg_remote_mirror_destroy (cg_remote_mirror_t **self_p);

/*  The kernel's id (its EXEC's). Borrowed. */
const char *cg_remote_mirror_kernel (cg_remote_mirror_t *self);

/*  Channel C's socket (0 to 4), to poll for ZMQ_POLLIN (iopub's never is). */
zsock_t *cg_remote_mirror_sock (cg_remote_mirror_t *self, int c);

/*  Takes one message a client sent on channel C, if one waits, as the relay's TO message
    (the caller owns it; send it with cg_remote_hub_send). NULL when none waits, or the
    message had more parts than TO carries (dropped, logged). */
zmsg_t *cg_remote_mirror_take (cg_remote_mirror_t *self, int c);

/*  Sends FROM (a decoded FROM message of this kernel) to the client it names on its
    channel, or to every subscriber on iopub. A client gone, or not reading, loses it. */
void cg_remote_mirror_put (cg_remote_mirror_t *self, const cg_remote_msg_t *from);

#endif
