/*  cg_kernel_int — the kernel's fields and what its two files share: cg_kernel.c (start,
    handshake, monitors, stop) and cg_kernel_exec.c (a cell's run: its loop, heartbeat,
    replies). No other code includes it. */
#ifndef CG_KERNEL_INT_H
#define CG_KERNEL_INT_H

#include "bridge/cg_kernel.h"
#include "bridge/cg_wire.h"

#include <czmq.h>
#include <sys/types.h>

#define LOG_TAIL 4096
typedef enum { CH_SHELL, CH_IOPUB, CH_STDIN, CH_CONTROL, CH_HB, CH_COUNT } s_channel_t;

struct cg_kernel_t {
    cg_backend_t *backend;        /* borrowed */
    const cg_sandbox_t *sandbox;  /* borrowed */
    const cg_kernel_spec_t *spec; /* borrowed */
    const cg_config_t *config;    /* borrowed */
    cg_wire_t *wire;
    zsock_t *sockets[CH_COUNT];
    int ipc_fd;                 /* the sandbox's ipc dir (sandbox-writable) */
    int endpoint_fds[CH_COUNT]; /* O_PATH fds of the kernel's bound ipc sockets, -1 until
                                       connected; connects go through /proc/self/fd/N */
    json_t *connection;         /* what the connection file says, key included */
    pid_t helper_pid;           /* the runtime's exec process, our child */
    int helper_pidfd;           /* readable when it exits */
    pid_t kernel_pid;           /* host pid of the kernel itself */
    int kernel_pidfd;           /* its pidfd once cg_kernel_exited looked, or -1 */
    int log_fd;                 /* read end of the kernel's stdout+stderr */
    char log_tail[LOG_TAIL + 1];
    size_t log_len;
    unsigned hb_sent, hb_received;
    zsock_t *monitors[CH_COUNT]; /* each channel's disconnects (and stdin's handshake):
                                       libzmq drops a connection whose peer sent a message
                                       over max_message_bytes and, that being a protocol
                                       error, never reconnects it; cg_kernel_service_monitors does */
    bool stdin_file_set;         /* the stdin file holds text (spec->stdin_file) */
    bool kept;                   /* cg_kernel_keep: left running for the next server */
};

/*  The channels' names, in s_channel_t's order ("shell", "iopub", ...). */
extern const char *const cg_kernel_channel_names[CH_COUNT];

/*  Reads every channel's monitor and reconnects what was dropped. Returns how many times
    iopub was dropped (a dying kernel's sockets too: the caller tells them apart). */
size_t cg_kernel_service_monitors (cg_kernel_t *self);

/*  Adds a poll item for each channel's monitor to ITEMS (room for CH_COUNT): its ZMQ_FD, a
    plain fd, readable once something waits there. After a wake on any of them the caller
    must call cg_kernel_service_monitors (which reads them all until empty: only then does
    ZeroMQ signal the fd again). Returns how many. */
int cg_kernel_monitor_items (cg_kernel_t *self, zmq_pollitem_t *items);

#endif
