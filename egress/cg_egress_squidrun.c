/*  cg_egress_squidrun — squid as the egress service runs it: its configuration and files,
    its start as an unprivileged user that dies with the server, its end. */
#define _GNU_SOURCE
#include "egress/cg_egress_int.h"
#include "egress/cg_egress_squid.h"
#include "base/cg_fs.h"
#include "base/cg_limits.h"
#include "base/cg_log.h"
#include "base/cg_util.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <netinet/in.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

//  The prefix of every server's squid service name, "cellgate<server pid>" (squid takes
//  letters and digits only).
#define S_SERVICE_PREFIX "cellgate"

const char *
cg_egress_squid_path (void)
{
    static const char *const paths[] = {"/usr/sbin/squid", "/usr/local/sbin/squid", NULL};
    for (int i = 0; paths[i]; i++)
        if (access (paths[i], X_OK) == 0)
            return paths[i];
    return NULL;
}

//  A free TCP port on 127.0.0.1 (the kernel's pick). Returns it, or -1.
static int
s_free_port (void)
{
    int fd = socket (AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in addr = {.sin_family = AF_INET};
    addr.sin_addr.s_addr = htonl (INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    int port = -1;
    if (fd >= 0 && bind (fd, (struct sockaddr *)&addr, sizeof addr) == 0
        && getsockname (fd, (struct sockaddr *)&addr, &len) == 0)
        port = ntohs (addr.sin_port);
    if (fd >= 0)
        close (fd);
    return port;
}

//  Whether something listens on 127.0.0.1:PORT.
static bool
s_answers (int port)
{
    int fd = socket (AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons ((uint16_t)port)};
    addr.sin_addr.s_addr = htonl (INADDR_LOOPBACK);
    bool ok = fd >= 0 && connect (fd, (struct sockaddr *)&addr, sizeof addr) == 0;
    if (fd >= 0)
        close (fd);
    return ok;
}

//  The user squid runs as when root starts the server (Debian's proxy, else nobody).
static int
s_squid_user (uid_t *uid, gid_t *gid)
{
    static const char *const users[] = {"proxy", "nobody", NULL};
    for (int i = 0; users[i]; i++) {
        struct passwd *pw = getpwnam (users[i]);
        if (pw) {
            *uid = pw->pw_uid;
            *gid = pw->pw_gid;
            return 0;
        }
    }
    return -1;
}

//  Removes the shared memory segments of squid service SERVICE (what a squid that was
//  killed leaves in /dev/shm: "<service>-cf__*.shm"), or, with SERVICE NULL, those of every
//  cellgate service whose server is gone.
static void
s_remove_shm (const char *service)
{
    DIR *dir = opendir ("/dev/shm");
    struct dirent *entry;
    size_t len = service ? strlen (service) : 0;
    while (dir && (entry = readdir (dir))) {
        const char *name = entry->d_name;
        bool remove = false;
        if (service)
            remove = strncmp (name, service, len) == 0 && name[len] == '-';
        else if (strncmp (name, S_SERVICE_PREFIX, strlen (S_SERVICE_PREFIX)) == 0) {
            char *end = NULL;
            long pid = strtol (name + strlen (S_SERVICE_PREFIX), &end, 10);
            remove = pid > 0 && end && *end == '-' && kill ((pid_t)pid, 0) < 0 && errno == ESRCH;
        }
        if (remove)
            unlinkat (dirfd (dir), name, 0);
    }
    if (dir)
        closedir (dir);
}

//  Removes the directories /run/cellgate/egress-<pid> of root servers that are gone (killed:
//  a server removes its own when it ends).
static void
s_remove_stale_dirs (void)
{
    DIR *dir = opendir ("/run/cellgate");
    struct dirent *entry;
    while (dir && (entry = readdir (dir))) {
        char *end = NULL;
        long pid =
            strncmp (entry->d_name, "egress-", 7) == 0 ? strtol (entry->d_name + 7, &end, 10) : 0;
        if (pid > 0 && end && !*end && kill ((pid_t)pid, 0) < 0 && errno == ESRCH) {
            cleanup_free char *path = cg_strdupf ("/run/cellgate/%s", entry->d_name);
            cg_rm_rf (path, NULL);
        }
    }
    if (dir)
        closedir (dir);
}

int
cg_egress_squid_prepare (cg_egress_t *self, const cg_egress_test_t *test, const char *fifo,
                         cg_error_t **err)
{
    snprintf (self->service, sizeof self->service, S_SERVICE_PREFIX "%d", (int)getpid ());
    s_remove_shm (NULL);
    if (geteuid () == 0)
        s_remove_stale_dirs ();
    self->squid_port = s_free_port ();
    self->squid_uid = geteuid ();
    self->squid_gid = getegid ();
    //  As root, squid runs as proxy from the start (cg_egress_squid_start): it then keeps
    //  the signal that ends it with the server, which a change of user would clear.
    if (geteuid () == 0 && s_squid_user (&self->squid_uid, &self->squid_gid) < 0)
        return cg_error_set (err, ENOENT, "no 'proxy' or 'nobody' user for squid to run as");
    //  Its own files (pid, cache log, working directory) in run/, the only place it writes
    //  besides the log FIFO; the configuration and error pages beside it are read-only to it.
    cleanup_free char *run = cg_strdupf ("%s/run", self->dir);
    if (cg_mkdir_p (run, 0700, err) < 0)
        return -1;
    if (chown (run, self->squid_uid, self->squid_gid) < 0
        || chown (fifo, self->squid_uid, self->squid_gid) < 0)
        return cg_error_set (err, errno, "squid's files in %s: %s", self->dir, strerror (errno));
    cleanup_free char *conf_path = cg_strdupf ("%s/squid.conf", self->dir);
    cleanup_free char *cache_log = cg_strdupf ("%s/cache.log", run);
    cleanup_free char *pid_file = cg_strdupf ("%s/squid.pid", run);
    cleanup_free char *error_dir = cg_strdupf ("%s/errors", self->dir);
    cleanup_free char *sessions = cg_strdupf ("%s/sessions.conf", self->dir);
    if (cg_egress_squid_write_pages (error_dir, err) < 0)
        return -1;
    const char *networks[] = {test ? test->allow_net : NULL, NULL};
    cg_egress_squid_t conf = {
        .policy = self->policy,
        .port = self->squid_port,
        .access_log = fifo,
        .cache_log = cache_log,
        .pid_file = pid_file,
        .error_dir = error_dir,
        .coredump_dir = run,
        .sessions_file = sessions,
        .hosts_file = test ? test->hosts_file : NULL,
        //  With a test hosts file nothing is looked up elsewhere: no packet leaves.
        .dns_nameservers = test && test->hosts_file ? "127.0.0.1" : NULL,
        .test_networks = networks[0] ? networks : NULL,
    };
    cleanup_free char *text = cg_egress_squid_config (&conf, err);
    if (!text)
        return -1;
    return cg_write_file (conf_path, text, strlen (text), 0644, err);
}

//  The child: squid as its user, ended by the server's death. Never returns.
static void
s_exec_squid (cg_egress_t *self, pid_t parent, const char *conf, const char *out)
{
    int null = open ("/dev/null", O_RDONLY);
    int log = open (out, O_WRONLY | O_CREAT | O_APPEND, 0600);
    if (null < 0 || log < 0)
        _exit (1);
    dup2 (null, 0);
    dup2 (log, 1);
    dup2 (log, 2);
    setpgid (0, 0);
    if (geteuid () == 0
        && (setgroups (0, NULL) < 0
            || setresgid (self->squid_gid, self->squid_gid, self->squid_gid) < 0
            || setresuid (self->squid_uid, self->squid_uid, self->squid_uid) < 0))
        _exit (1);
    //  After the change of user, which clears it: squid ends (cleanly, its shared memory
    //  removed) when the server does, even when the server is killed.
    prctl (PR_SET_PDEATHSIG, SIGTERM);
    if (getppid () != parent)
        _exit (1);
    sigset_t none;
    sigemptyset (&none);
    sigprocmask (SIG_SETMASK, &none, NULL);
    const char *squid = cg_egress_squid_path ();
    execl (squid, squid, "-N", "-n", self->service, "-f", conf, (char *)NULL);
    _exit (127);
}

int
cg_egress_squid_start (cg_egress_t *self, bool wait, cg_error_t **err)
{
    cleanup_free char *conf = cg_strdupf ("%s/squid.conf", self->dir);
    cleanup_free char *out = cg_strdupf ("%s/squid.out", self->dir);
    pid_t parent = getpid ();
    pid_t pid = fork ();
    if (pid == 0)
        s_exec_squid (self, parent, conf, out);
    if (pid < 0)
        return cg_error_set (err, errno, "start squid: %s", strerror (errno));
    self->squid_pid = pid;
    if (self->squid_pidfd >= 0)
        close (self->squid_pidfd);
    self->squid_pidfd = pidfd_open (pid, 0);
    for (int i = 0; wait && i < 200; i++) {
        if (s_answers (self->squid_port))
            return 0;
        int status;
        if (waitpid (pid, &status, WNOHANG) == pid) {
            self->squid_pid = 0;
            cleanup_free char *tail = cg_read_file (out, 4096, NULL, NULL);
            return cg_error_set (err, EIO, "squid ended at start (see %s): %s", out,
                                 tail ? tail : "");
        }
        usleep (50 * 1000);
    }
    if (!wait)
        return 0;
    return cg_error_set (err, ETIMEDOUT, "squid did not listen on 127.0.0.1:%d within 10 s (%s)",
                         self->squid_port, out);
}

int
cg_egress_squid_fd (cg_egress_t *self)
{
    return self->squid_pidfd;
}

int
cg_egress_squid_check (cg_egress_t *self)
{
    pthread_mutex_lock (&self->lock);
    int status = 0;
    if (self->stopping || self->squid_pid <= 0
        || waitpid (self->squid_pid, &status, WNOHANG) != self->squid_pid) {
        pthread_mutex_unlock (&self->lock);
        return self->squid_pidfd;
    }
    self->squid_pid = 0;
    close (self->squid_pidfd);
    self->squid_pidfd = -1;
    s_remove_shm (self->service);
    int64_t now = cg_now_us ();
    bool room = self->restarts_us[0] == 0 || now - self->restarts_us[0] > 60 * 1000000LL;
    cg_log (0, "egress: squid ended (%s %d)%s", WIFSIGNALED (status) ? "signal" : "exit",
            WIFSIGNALED (status) ? WTERMSIG (status) : WEXITSTATUS (status),
            room ? "; restarting it"
                 : "; not restarted: " CG_STR (
                     S_SQUID_RESTARTS) " restarts within a minute "
                                       "(sandboxes reach nothing until the server restarts)");
    cg_error_t *err = NULL;
    if (room) {
        memmove (self->restarts_us, self->restarts_us + 1,
                 sizeof self->restarts_us - sizeof self->restarts_us[0]);
        self->restarts_us[S_SQUID_RESTARTS - 1] = now;
        if (cg_egress_squid_start (self, false, &err) < 0)
            cg_log (0, "egress: %s", cg_error_message (err));
    }
    cg_error_destroy (&err);
    int fd = self->squid_pidfd;
    pthread_mutex_unlock (&self->lock);
    return fd;
}

void
cg_egress_squid_stop (cg_egress_t *self)
{
    cg_egress_end_process (&self->squid_pid);
    if (self->squid_pidfd >= 0)
        close (self->squid_pidfd);
    self->squid_pidfd = -1;
    if (self->service[0])
        s_remove_shm (self->service);
}
