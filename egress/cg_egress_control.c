/*  cg_egress_control — the server's side of the egress relay: start it, hand it sessions and
    their listeners, take them back, read its events (cg_egress_relay.h). */
#define _GNU_SOURCE
#include "egress/cg_egress_relay.h"
#include "base/cg_util.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

//  The largest event the relay sends is far below this.
#define S_EVENT_MAX 8192

pid_t
cg_egress_relay_spawn (const char *exe, int upstream_port, int *control_fd, cg_error_t **err)
{
    if (upstream_port <= 0 || upstream_port > 65535)
        return cg_error_set (err, EINVAL, "egress relay: port %d out of range", upstream_port);
    int pair[2];
    if (socketpair (AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) < 0)
        return cg_error_set (err, errno, "egress relay: socketpair: %s", strerror (errno));
    //  Above 3, so that neither is overwritten by the child's dup2s whatever fds are free.
    int child_end = fcntl (pair[1], F_DUPFD_CLOEXEC, 10);
    int null_fd = open ("/dev/null", O_RDWR | O_CLOEXEC);
    int null_high = null_fd < 0 ? -1 : fcntl (null_fd, F_DUPFD_CLOEXEC, 10);
    close (pair[1]);
    if (null_fd >= 0)
        close (null_fd);
    char port[16];
    snprintf (port, sizeof port, "%d", upstream_port);
    char *argv[] = {
        CG_UNCONST (exe), "egress-relay", "--control-fd", "3", "--upstream-port", port, NULL};
    pid_t pid = child_end < 0 || null_high < 0 ? -1 : fork ();
    if (pid == 0) {
        //  Only async-signal-safe calls from here: the server has threads.
        sigset_t none;
        sigemptyset (&none);
        sigprocmask (SIG_SETMASK, &none, NULL);
        if (dup2 (null_high, 0) < 0 || dup2 (2, 1) < 0 || dup2 (child_end, 3) < 0)
            _exit (127);
        close_range (4, ~0U, 0);
        //  A process group of its own: a terminal's ^C or a signal to the server's group is
        //  the server's to handle; the relay ends when the server closes its control socket.
        setpgid (0, 0);
        execv (exe, argv);
        _exit (127);
    }
    int saved = errno;
    if (child_end >= 0)
        close (child_end);
    if (null_high >= 0)
        close (null_high);
    if (pid < 0) {
        close (pair[0]);
        return cg_error_set (err, saved, "egress relay: start %s: %s", exe, strerror (saved));
    }
    *control_fd = pair[0];
    return pid;
}

//  Sends MSG (stolen) with FD (-1: none) as one packet, without waiting.
static int
s_send (int control_fd, json_t *msg, int fd, cg_error_t **err)
{
    cleanup_free char *text = json_dumps (msg, JSON_COMPACT);
    json_decref (msg);
    struct iovec iov = {text, strlen (text)};
    union {
        struct cmsghdr align;
        char space[CMSG_SPACE (sizeof (int))];
    } cmsg;
    struct msghdr header = {.msg_iov = &iov, .msg_iovlen = 1};
    if (fd >= 0) {
        memset (&cmsg, 0, sizeof cmsg);
        header.msg_control = cmsg.space;
        header.msg_controllen = sizeof cmsg.space;
        struct cmsghdr *c = CMSG_FIRSTHDR (&header);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN (sizeof (int));
        memcpy (CMSG_DATA (c), &fd, sizeof fd);
    }
    ssize_t n;
    do
        n = sendmsg (control_fd, &header, MSG_DONTWAIT | MSG_NOSIGNAL);
    while (n < 0 && errno == EINTR);
    if (n < 0)
        return cg_error_set (err, errno, "egress relay: control socket: %s%s", strerror (errno),
                             errno == EAGAIN ? " (the relay is not reading)" : "");
    return 0;
}

int
cg_egress_relay_add (int control_fd, const char *session, const char *src,
                     const cg_egress_limits_t *limits, int listen_fd, cg_error_t **err)
{
    if (!session || !src || !limits || listen_fd < 0)
        return cg_error_set (err, EINVAL,
                             "egress relay: add: session, src, limits and a "
                             "listener expected");
    json_t *msg =
        json_pack ("{s:s, s:s, s:s, s:i, s:I, s:I, s:i}", "op", "add", "session", session, "src",
                   src, "max_conns", limits->max_conns, "max_up", (json_int_t)limits->max_up,
                   "max_down", (json_int_t)limits->max_down, "per_minute", limits->per_minute);
    return s_send (control_fd, msg, listen_fd, err);
}

int
cg_egress_relay_remove (int control_fd, const char *session, cg_error_t **err)
{
    if (!session)
        return cg_error_set (err, EINVAL, "egress relay: remove: a session expected");
    return s_send (control_fd, json_pack ("{s:s, s:s}", "op", "remove", "session", session), -1,
                   err);
}

json_t *
cg_egress_relay_read (int control_fd)
{
    for (;;) {
        char text[S_EVENT_MAX];
        ssize_t n = recv (control_fd, text, sizeof text, MSG_DONTWAIT);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return NULL;
        if (n <= 0)
            return json_pack ("{s:s}", "event", "closed");
        json_t *event = json_loadb (text, (size_t)n, 0, NULL);
        if (json_is_object (event))
            return event;
        cg_log (1, "egress relay: an event that is not a JSON object, skipped");
        json_decref (event);
    }
}
