/*  cg_remote_relay_int — what the relay's two files share (cg_remote_relay.c: the loop, the
    link and the processes; cg_remote_relay_kernel.c: the kernels' channels). Internal. */
#ifndef CG_REMOTE_RELAY_INT_H
#define CG_REMOTE_RELAY_INT_H

#include "remote/cg_remote_msg.h"
#include "remote/cg_remote_relay.h"

#include <czmq.h>
#include <stdbool.h>
#include <sys/types.h>

//  How long an ATTACH looks for the kernel's sockets by default (--attach-ms), and the
//  server's messages for a kernel held until they are found.
#define CG_RELAY_ATTACH_MS 60000
#define CG_RELAY_PENDING_MAX 64

typedef struct {
    zframe_t *peer; /* the server's client socket, as the hub's ROUTER named it */
    zsock_t *sock;  /* a DEALER to the kernel's socket, under the peer's routing id */
} cg_relay_peer_t;

//  One process started by EXEC; a kernel once ATTACHed.
typedef struct {
    char id[CG_REMOTE_ID_MAX + 1];
    pid_t pid;
    bool attached;           /* ATTACH came: look for its sockets */
    bool connected;          /* every socket found */
    int64_t attach_deadline; /* zclock_mono */
    char *base;              /* the sockets' names: BASE, '-' or ':', the port */
    int ports[CG_REMOTE_CHANNELS];
    int fds[CG_REMOTE_CHANNELS]; /* O_PATH of each socket once found, else -1 */
    zsock_t *iopub;              /* SUB */
    cg_relay_peer_t peers[CG_REMOTE_CHANNELS][CG_REMOTE_PEERS_MAX];
    size_t peer_count[CG_REMOTE_CHANNELS];
    zlist_t *pending; /* zmsg_t: TO messages before the sockets were found */
    int out_fds[2];   /* its stdout's and stderr's read ends (OUT), or -1 */
    int in_fd;        /* its stdin's write end (IN), or -1 */
    char *in_buf;     /* IN's bytes not written yet */
    size_t in_len;
    bool in_eof;   /* close its stdin once IN_BUF is written */
    int exit_code; /* -1 while it runs; then EXITED waits for its output to be sent */
} cg_relay_exec_t;

typedef struct {
    const char *server, *server_key, *keys_file, *sandbox, *ipc_dir;
    int uid, gid; /* -1: as the relay */
    bool isolate_net;
    size_t max_message_bytes;
    int attach_ms; /* how long an ATTACH looks for the kernel's sockets */
    zsock_t *link;
    zsock_t *link_monitor; /* the link's handshakes: HELLO again after each reconnection */
    int ipc_fd;
    int signal_fd;
    cg_relay_exec_t *execs[CG_REMOTE_EXECS_MAX];
    bool done;
} cg_relay_t;

/*  Sends MSG over the link; a full queue drops it (the server is not reading). */
void cg_relay_send (cg_relay_t *self, const cg_remote_msg_t *msg);

/*  TEXT as message bytes (borrowed). */
cg_remote_bytes_t cg_relay_text (const char *text);

/*  The exec of id ID, or NULL. */
cg_relay_exec_t *cg_relay_find (cg_relay_t *self, const cg_remote_bytes_t *id);

/*  ATTACH: look for the kernel's sockets (cg_relay_kernel_connect, each round). */
void cg_relay_kernel_attach (cg_relay_t *self, const cg_remote_msg_t *msg);

/*  TO: the parts to the kernel, or held until its sockets are found (*RAW, the message as
    it came, taken then). */
void cg_relay_kernel_to (cg_relay_t *self, const cg_remote_msg_t *msg, zmsg_t **raw);

/*  Connects to every socket EXEC's kernel has bound by now; once all are there, delivers
    what waited. FAILED once --attach-ms passed without them. */
void cg_relay_kernel_connect (cg_relay_t *self, cg_relay_exec_t *exec);

/*  FROM: what the kernel sent on SOCK (channel C, to PEER, NULL on iopub). */
void cg_relay_kernel_forward (cg_relay_t *self, cg_relay_exec_t *exec, int c, zsock_t *sock,
                              zframe_t *peer);

/*  Frees EXEC's kernel side (sockets, names, what waited); EXEC stays. */
void cg_relay_kernel_free (cg_relay_exec_t *exec);

#endif
