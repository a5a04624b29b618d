/*  pidfd_shim — lets bench_bridge.py run cellgate under valgrind 3.19 (Debian 12), which has
    no wrapper for pidfd_open (syscall 434) and fails it with ENOSYS. LD_PRELOADed into the
    server only (it drops LD_PRELOAD from the environment once loaded into it, so no child inherits it), it
    answers syscall (SYS_pidfd_open, pid, 0) with the read end of a pipe that becomes readable
    when the process exits, as a pidfd polls: a thread waits for it (waitid WNOWAIT for a
    child, which leaves the reaping to the server; kill (pid, 0) once a second otherwise).
    Every other syscall goes to libc's. A benchmark tool, never part of the product.

        cc -shared -fPIC -O2 -o pidfd_shim.so pidfd_shim.c -ldl -lpthread           */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

__attribute__ ((constructor)) static void
s_init (void)
{
    const char *preload = getenv ("LD_PRELOAD");
    if (preload && strstr (preload, "vgpreload")) /* valgrind's guest, not its launcher script */
        unsetenv ("LD_PRELOAD");
}

typedef struct {
    pid_t pid;
    int write_fd;
} watch_t;

static void *
s_watch (void *arg)
{
    watch_t *w = arg;
    siginfo_t info;
    if (waitid (P_PID, (id_t)w->pid, &info, WEXITED | WNOWAIT) < 0)
        while (kill (w->pid, 0) == 0 || errno == EPERM)
            sleep (1);
    (void)!write (w->write_fd, "x", 1);
    close (w->write_fd);
    free (w);
    return NULL;
}

static long
s_pidfd_open (pid_t pid)
{
    if (kill (pid, 0) < 0 && errno == ESRCH)
        return -1;
    int fds[2];
    if (pipe2 (fds, O_CLOEXEC) < 0)
        return -1;
    watch_t *w = malloc (sizeof *w);
    w->pid = pid;
    w->write_fd = fds[1];
    pthread_t thread;
    pthread_attr_t attr;
    pthread_attr_init (&attr);
    pthread_attr_setdetachstate (&attr, PTHREAD_CREATE_DETACHED);
    if (pthread_create (&thread, &attr, s_watch, w) != 0) {
        close (fds[0]);
        close (fds[1]);
        free (w);
        errno = EAGAIN;
        return -1;
    }
    return fds[0];
}

long
syscall (long number, ...)
{
    va_list ap;
    va_start (ap, number);
    long a[6];
    for (int i = 0; i < 6; i++)
        a[i] = va_arg (ap, long);
    va_end (ap);
    if (number == SYS_pidfd_open)
        return s_pidfd_open ((pid_t)a[0]);
    static long (*real) (long, ...);
    if (!real)
        real = (long (*) (long, ...))dlsym (RTLD_NEXT, "syscall");
    return real (number, a[0], a[1], a[2], a[3], a[4], a[5]);
}
