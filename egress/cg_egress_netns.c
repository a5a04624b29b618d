/*  cg_egress_netns — a listening socket inside a sandbox's network namespace. */
#define _GNU_SOURCE
#include "egress/cg_egress_netns.h"
#include "base/cg_util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

//  The child's steps, as its exit status says which failed.
enum { S_OK, S_NET, S_USER, S_SOCKET, S_BIND, S_LISTEN, S_SEND };

static const char *
s_step (int step)
{
    switch (step) {
        case S_NET:
            return "enter its network namespace";
        case S_USER:
            return "enter its user namespace";
        case S_SOCKET:
            return "make a socket";
        case S_BIND:
            return "bind 127.0.0.1 (is lo up?)";
        case S_LISTEN:
            return "listen";
        case S_SEND:
            return "hand the socket over";
        default:
            return "make the listener";
    }
}

//  Sends FD over SOCK. Returns 0 or -1.
static int
s_send_fd (int sock, int fd)
{
    char byte = 0;
    struct iovec iov = {.iov_base = &byte, .iov_len = 1};
    union {
        char buf[CMSG_SPACE (sizeof (int))];
        struct cmsghdr align;
    } control;
    memset (&control, 0, sizeof control);
    struct msghdr msg = {.msg_iov = &iov,
                         .msg_iovlen = 1,
                         .msg_control = control.buf,
                         .msg_controllen = sizeof control.buf};
    struct cmsghdr *cmsg = CMSG_FIRSTHDR (&msg);
    cmsg->cmsg_level = SOL_SOCKET;
    cmsg->cmsg_type = SCM_RIGHTS;
    cmsg->cmsg_len = CMSG_LEN (sizeof (int));
    memcpy (CMSG_DATA (cmsg), &fd, sizeof fd);
    return sendmsg (sock, &msg, MSG_NOSIGNAL) == 1 ? 0 : -1;
}

//  Receives one fd from SOCK within 10 s. Returns it, or -1.
static int
s_recv_fd (int sock)
{
    struct pollfd pfd = {.fd = sock, .events = POLLIN};
    if (poll (&pfd, 1, 10000) != 1)
        return -1;
    char byte;
    struct iovec iov = {.iov_base = &byte, .iov_len = 1};
    union {
        char buf[CMSG_SPACE (sizeof (int))];
        struct cmsghdr align;
    } control;
    struct msghdr msg = {.msg_iov = &iov,
                         .msg_iovlen = 1,
                         .msg_control = control.buf,
                         .msg_controllen = sizeof control.buf};
    if (recvmsg (sock, &msg, MSG_CMSG_CLOEXEC) != 1)
        return -1;
    struct cmsghdr *cmsg = CMSG_FIRSTHDR (&msg);
    if (!cmsg || cmsg->cmsg_level != SOL_SOCKET || cmsg->cmsg_type != SCM_RIGHTS
        || cmsg->cmsg_len != CMSG_LEN (sizeof (int)))
        return -1;
    int fd;
    memcpy (&fd, CMSG_DATA (cmsg), sizeof fd);
    return fd;
}

//  The child: only system calls (the server has threads). Never returns.
static void
s_child (int sock, int net_fd, int user_fd, int port)
{
    //  Root (the oci backend) enters the network namespace directly; a normal user (the
    //  rootless backend) first enters the sandbox's user namespace, which it owns, where it
    //  has the capability setns asks for. A forked child is single-threaded, as entering a
    //  user namespace requires.
    if (setns (net_fd, CLONE_NEWNET) < 0) {
        if (errno != EPERM || user_fd < 0)
            _exit (S_NET);
        if (setns (user_fd, CLONE_NEWUSER) < 0)
            _exit (S_USER);
        if (setns (net_fd, CLONE_NEWNET) < 0)
            _exit (S_NET);
    }
    int fd = socket (AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        _exit (S_SOCKET);
    int one = 1;
    setsockopt (fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons ((uint16_t)port)};
    addr.sin_addr.s_addr = htonl (INADDR_LOOPBACK);
    if (bind (fd, (struct sockaddr *)&addr, sizeof addr) < 0)
        _exit (S_BIND);
    if (listen (fd, 128) < 0)
        _exit (S_LISTEN);
    _exit (s_send_fd (sock, fd) == 0 ? S_OK : S_SEND);
}

int
cg_egress_netns_listen (pid_t init_pid, int port, cg_error_t **err)
{
    char path[64];
    snprintf (path, sizeof path, "/proc/%d/ns/net", (int)init_pid);
    int net_fd = open (path, O_RDONLY | O_CLOEXEC);
    if (net_fd < 0)
        return cg_error_set (err, errno, "the sandbox's network namespace (%s): %s", path,
                             strerror (errno));
    snprintf (path, sizeof path, "/proc/%d/ns/user", (int)init_pid);
    int user_fd = open (path, O_RDONLY | O_CLOEXEC);
    int pair[2];
    if (socketpair (AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, pair) < 0) {
        int e = errno;
        close (net_fd);
        if (user_fd >= 0)
            close (user_fd);
        return cg_error_set (err, e, "socketpair: %s", strerror (e));
    }
    pid_t pid = fork ();
    if (pid == 0) {
        close (pair[0]);
        s_child (pair[1], net_fd, user_fd, port);
    }
    int fork_errno = errno;
    close (pair[1]);
    close (net_fd);
    if (user_fd >= 0)
        close (user_fd);
    if (pid < 0) {
        close (pair[0]);
        return cg_error_set (err, fork_errno, "fork: %s", strerror (fork_errno));
    }
    int fd = s_recv_fd (pair[0]);
    close (pair[0]);
    if (fd < 0)
        kill (pid, SIGKILL);
    int status = 0;
    while (waitpid (pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (fd >= 0)
        return fd;
    int step = WIFEXITED (status) ? WEXITSTATUS (status) : -1;
    return cg_error_set (err, EIO, "proxy listener in the sandbox of pid %d: could not %s",
                         (int)init_pid, s_step (step));
}
