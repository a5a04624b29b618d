/*  Unit tests for cg_egress_netns: a listener made inside another process's network
    namespace (a stand-in sandbox: a child in a new network namespace with lo up) accepts
    what is connected to 127.0.0.1:PORT in there, and nothing of the host's own 127.0.0.1
    reaches it; as a normal user, the sandbox in a user namespace of its own (the rootless
    backend's case) is entered through that user namespace. Root only (77 otherwise). */
#define _GNU_SOURCE
#include "egress/cg_egress_netns.h"
#include "base/cg_util.h"
#include "cg_test.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define S_PORT 3128

//  Brings lo up in this process's network namespace. Returns 0 or -1.
static int
s_lo_up (void)
{
    int fd = socket (AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    struct ifreq ifr = {0};
    snprintf (ifr.ifr_name, sizeof ifr.ifr_name, "lo");
    int rc = fd >= 0 && ioctl (fd, SIOCGIFFLAGS, &ifr) == 0
                     && (ifr.ifr_flags |= IFF_UP, ioctl (fd, SIOCSIFFLAGS, &ifr)) == 0
                 ? 0
                 : -1;
    if (fd >= 0)
        close (fd);
    return rc;
}

//  A stand-in sandbox: a child in new namespaces (FLAGS) with lo up, waiting to be killed.
//  Returns its pid once it is ready, or -1.
static pid_t
s_sandbox (int flags)
{
    int ready[2];
    if (pipe (ready) < 0)
        return -1;
    pid_t pid = fork ();
    if (pid == 0) {
        prctl (PR_SET_PDEATHSIG, SIGKILL);
        close (ready[0]);
        if (unshare (flags) < 0 || s_lo_up () < 0)
            _exit (1);
        if (write (ready[1], "r", 1) != 1)
            _exit (1);
        pause ();
        _exit (0);
    }
    close (ready[1]);
    char byte;
    bool ok = pid > 0 && read (ready[0], &byte, 1) == 1;
    close (ready[0]);
    if (!ok && pid > 0) {
        kill (pid, SIGKILL);
        waitpid (pid, NULL, 0);
    }
    return ok ? pid : -1;
}

static void
s_end (pid_t pid)
{
    if (pid > 0) {
        kill (pid, SIGKILL);
        waitpid (pid, NULL, 0);
    }
}

//  Connects to 127.0.0.1:S_PORT from inside the network namespace of PID (through its
//  user namespace when USERNS) and sends WORD. Returns 0 when it was sent.
static int
s_connect_inside (pid_t pid, bool userns, const char *word)
{
    pid_t child = fork ();
    if (child == 0) {
        char path[64];
        if (userns) {
            snprintf (path, sizeof path, "/proc/%d/ns/user", (int)pid);
            int user = open (path, O_RDONLY);
            if (user < 0 || setns (user, CLONE_NEWUSER) < 0)
                _exit (2);
        }
        snprintf (path, sizeof path, "/proc/%d/ns/net", (int)pid);
        int net = open (path, O_RDONLY);
        if (net < 0 || setns (net, CLONE_NEWNET) < 0)
            _exit (3);
        int fd = socket (AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons (S_PORT)};
        addr.sin_addr.s_addr = htonl (INADDR_LOOPBACK);
        if (connect (fd, (struct sockaddr *)&addr, sizeof addr) < 0)
            _exit (4);
        _exit (write (fd, word, strlen (word)) == (ssize_t)strlen (word) ? 0 : 5);
    }
    int status = -1;
    waitpid (child, &status, 0);
    return WIFEXITED (status) ? WEXITSTATUS (status) : -1;
}

//  Whether something on the host's own 127.0.0.1:S_PORT answers.
static bool
s_host_answers (void)
{
    int fd = socket (AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons (S_PORT)};
    addr.sin_addr.s_addr = htonl (INADDR_LOOPBACK);
    bool ok = connect (fd, (struct sockaddr *)&addr, sizeof addr) == 0;
    close (fd);
    return ok;
}

//  Accepts one connection on LISTEN_FD (non-blocking) within 5 s and reads what it sent.
static bool
s_accept_word (int listen_fd, char *out, size_t size)
{
    struct pollfd pfd = {.fd = listen_fd, .events = POLLIN};
    if (poll (&pfd, 1, 5000) != 1)
        return false;
    int conn = accept4 (listen_fd, NULL, NULL, SOCK_CLOEXEC);
    if (conn < 0)
        return false;
    ssize_t n = read (conn, out, size - 1);
    close (conn);
    out[n > 0 ? n : 0] = '\0';
    return n > 0;
}

static void
test_root_sandbox (void)
{
    const char *name = "a listener in a sandbox's network namespace (root)";
    pid_t sandbox = s_sandbox (CLONE_NEWNET);
    CHECK (sandbox > 0, "the stand-in sandbox did not start");
    cg_error_t *err = NULL;
    int fd = cg_egress_netns_listen (sandbox, S_PORT, &err);
    EXPECT (fd >= 0, "listen: %s", cg_error_message (err));
    cg_error_destroy (&err);
    if (fd >= 0) {
        EXPECT (fcntl (fd, F_GETFL) & O_NONBLOCK, "the listener is non-blocking");
        EXPECT (fcntl (fd, F_GETFD) & FD_CLOEXEC, "the listener is close-on-exec");
        EXPECT (!s_host_answers (), "the host's own 127.0.0.1:%d does not reach it", S_PORT);
        EXPECT (s_connect_inside (sandbox, false, "inside") == 0, "a connection from inside");
        char word[32];
        EXPECT (s_accept_word (fd, word, sizeof word) && strcmp (word, "inside") == 0,
                "accepted here, what the sandbox sent: '%s'", word);
        close (fd);
    }
    //  A pid that is no process: a clear error.
    fd = cg_egress_netns_listen (999999999, S_PORT, &err);
    EXPECT (fd < 0 && strstr (cg_error_message (err), "network namespace"),
            "a pid that is gone: %s", cg_error_message (err));
    cg_error_destroy (&err);
    s_end (sandbox);
}

//  The rootless backend's case, run by a normal user: the sandbox's network namespace
//  belongs to its user namespace, which that user owns.
static void
test_rootless_sandbox (void)
{
    const char *name = "a listener in a rootless sandbox's network namespace";
    pid_t runner = fork ();
    if (runner == 0) {
        if (setresgid (65534, 65534, 65534) < 0 || setresuid (65534, 65534, 65534) < 0)
            _exit (10);
        prctl (PR_SET_DUMPABLE, 1);
        pid_t sandbox = s_sandbox (CLONE_NEWUSER | CLONE_NEWNET);
        if (sandbox < 0)
            _exit (77); /* no unprivileged user namespaces here */
        cg_error_t *err = NULL;
        int fd = cg_egress_netns_listen (sandbox, S_PORT, &err);
        if (fd < 0) {
            fprintf (stderr, "rootless listen: %s\n", cg_error_message (err));
            _exit (11);
        }
        if (s_connect_inside (sandbox, true, "rootless") != 0)
            _exit (12);
        char word[32];
        int rc = s_accept_word (fd, word, sizeof word) && strcmp (word, "rootless") == 0 ? 0 : 13;
        s_end (sandbox);
        _exit (rc);
    }
    int status = -1;
    waitpid (runner, &status, 0);
    int rc = WIFEXITED (status) ? WEXITSTATUS (status) : -1;
    if (rc == 77) {
        printf ("skip: %s: unprivileged user namespaces are off\n", name);
        return;
    }
    EXPECT (rc == 0, "%s: step %d failed", name, rc);
}

int
main (void)
{
    if (geteuid () != 0) {
        printf ("skip: needs root (network namespaces)\n");
        return 77;
    }
    test_root_sandbox ();
    test_rootless_sandbox ();
    printf ("%d passed, %d failed\n", s_passes, s_failures);
    return s_failures ? 1 : 0;
}
