/*  cg_rootless — the rootless OCI backend's own parts: the user namespace, rlimits in
    place of a cgroup, and the sandbox's processes found by their pid namespace. */
#define _GNU_SOURCE
#include "containers/cg_rootless.h"

#include "base/cg_util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

int
cg_rootless_probe (cg_error_t **err)
{
    //  unshare(CLONE_NEWUSER) fails in a threaded process: probe from a fork.
    pid_t pid = fork ();
    if (pid < 0)
        return cg_error_set (err, errno, "fork: %s", strerror (errno));
    if (pid == 0)
        _exit (unshare (CLONE_NEWUSER) == 0 ? 0 : errno & 0x7f);
    int status = 0;
    while (waitpid (pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (WIFEXITED (status) && WEXITSTATUS (status) == 0)
        return 0;
    int code = WIFEXITED (status) ? WEXITSTATUS (status) : EPERM;
    return cg_error_set (err, code,
                         "this user cannot make a user namespace (%s): see "
                         "/proc/sys/user/max_user_namespaces and "
                         "kernel.apparmor_restrict_unprivileged_userns",
                         strerror (code));
}

void
cg_rootless_linux (json_t *linux_obj)
{
    json_array_append_new (json_object_get (linux_obj, "namespaces"),
                           json_pack ("{s:s}", "type", "user"));
    json_object_set_new (linux_obj, "uidMappings",
                         json_pack ("[{s:i, s:I, s:i}]", "containerID", 0, "hostID",
                                    (json_int_t)getuid (), "size", 1));
    json_object_set_new (linux_obj, "gidMappings",
                         json_pack ("[{s:i, s:I, s:i}]", "containerID", 0, "hostID",
                                    (json_int_t)getgid (), "size", 1));
    json_object_del (linux_obj, "cgroupsPath");
    json_object_del (linux_obj, "resources");
}

static json_t *
s_rlimit (const char *type, json_int_t value)
{
    return json_pack ("{s:s, s:I, s:I}", "type", type, "hard", value, "soft", value);
}

void
cg_rootless_rlimits (json_t *rlimits, const cg_sandbox_limits_t *limits)
{
    json_array_append_new (rlimits,
                           s_rlimit ("RLIMIT_DATA", (json_int_t)limits->memory_mb * 1024 * 1024));
    json_array_append_new (rlimits, s_rlimit ("RLIMIT_NPROC", (json_int_t)limits->pids));
    json_array_append_new (rlimits, s_rlimit ("RLIMIT_CPU", (json_int_t)CG_ROOTLESS_CPU_SECONDS));
}

json_t *
cg_rootless_limits_report (const cg_sandbox_limits_t *limits)
{
    cleanup_free char *memory =
        cg_strdupf ("memory: %d MB of private memory per process (RLIMIT_DATA), not per sandbox",
                    limits->memory_mb);
    cleanup_free char *pids =
        cg_strdupf ("processes: %d per sandbox (RLIMIT_NPROC in its user namespace)", limits->pids);
    cleanup_free char *fsize =
        cg_strdupf ("file size: %d MB per file (RLIMIT_FSIZE)", limits->fsize_mb);
    cleanup_free char *cpu =
        cg_strdupf ("CPU time: %d s per process (RLIMIT_CPU)", CG_ROOTLESS_CPU_SECONDS);
    cleanup_free char *share =
        cg_strdupf ("CPU share: --cpus %g (no cgroup is delegated to this user)", limits->cpus);
    cleanup_free char *writable = cg_sandbox_writable (limits, "rootless");
    return json_pack (
        "{s:[s, s, s, s, s, s, s, s], s:[s, s, s, s]}", "enforced", memory, pids, fsize, cpu,
        CG_SANDBOX_NETWORK (limits), writable, "no capabilities, no_new_privs, seccomp",
        "timeouts, idle culling, max sessions", "not_enforced", share,
        "memory for the sandbox as a whole (a cgroup's limit, swap off)", CG_SANDBOX_DISK_UNLIMITED,
        "memory peaks and OOM counts in results (no cgroup to read them)");
}

//  The pid namespace of host process PID ("pid:[N]"), into OUT. Returns 0 or -1.
static int
s_pidns (pid_t pid, char *out, size_t size)
{
    char path[64];
    snprintf (path, sizeof path, "/proc/%d/ns/pid", (int)pid);
    ssize_t n = readlink (path, out, size - 1);
    if (n < 0)
        return -1;
    out[n] = '\0';
    return 0;
}

//  Calls FN (ARG) with each host pid whose pid namespace is INIT's, INIT itself left out.
//  Returns how many FN counted (its non-zero answers), or -1 with *err set.
static int
s_each (pid_t init, int (*fn) (pid_t pid, void *arg), void *arg, cg_error_t **err)
{
    char ns[64], other[64];
    if (s_pidns (init, ns, sizeof ns) < 0)
        return cg_error_set (err, errno, "pid namespace of %d: %s", (int)init, strerror (errno));
    DIR *dir = opendir ("/proc");
    if (!dir)
        return cg_error_set (err, errno, "/proc: %s", strerror (errno));
    int count = 0;
    struct dirent *entry;
    while ((entry = readdir (dir))) {
        char *end = NULL;
        long pid = strtol (entry->d_name, &end, 10);
        if (!end || *end || pid <= 1 || pid == init)
            continue;
        if (s_pidns ((pid_t)pid, other, sizeof other) == 0 && strcmp (ns, other) == 0)
            count += fn ((pid_t)pid, arg) != 0;
    }
    closedir (dir);
    return count;
}

typedef struct {
    int signal;
    const pid_t *keep;
    size_t keep_count;
} s_signal_t;

static int
s_signal_one (pid_t pid, void *arg)
{
    s_signal_t *s = arg;
    for (size_t k = 0; k < s->keep_count; k++)
        if (s->keep[k] == pid)
            return 0;
    return kill (pid, s->signal) == 0;
}

int
cg_rootless_signal_others (pid_t init, int signal, const pid_t *keep, size_t keep_count,
                           cg_error_t **err)
{
    s_signal_t s = {.signal = signal, .keep = keep, .keep_count = keep_count};
    int total = 0;
    for (int pass = 0; pass < 20; pass++) {
        int n = s_each (init, s_signal_one, &s, err);
        if (n < 0)
            return -1;
        total += n;
        if (n == 0 || signal != SIGKILL)
            break;
        usleep (20000); //  what was killed goes; a fork in flight shows up next pass
    }
    return total;
}

static int
s_renice_one (pid_t pid, void *arg)
{
    return setpriority (PRIO_PROCESS, (id_t)pid, *(int *)arg) == 0;
}

int
cg_rootless_renice (pid_t init, int nice)
{
    int count = s_each (init, s_renice_one, &nice, NULL);
    return (setpriority (PRIO_PROCESS, (id_t)init, nice) == 0) + (count > 0 ? count : 0);
}

//  Adds the Pss of PID (kB, from smaps_rollup) to *ARG.
static int
s_pss_one (pid_t pid, void *arg)
{
    char path[64];
    snprintf (path, sizeof path, "/proc/%d/smaps_rollup", (int)pid);
    FILE *f = fopen (path, "r");
    if (!f)
        return 0;
    char line[256];
    long kb = 0;
    while (fgets (line, sizeof line, f))
        if (sscanf (line, "Pss: %ld kB", &kb) == 1)
            break;
    fclose (f);
    *(long *)arg += kb;
    return 1;
}

int
cg_rootless_stats (pid_t init, cg_container_stats_t *stats, cg_error_t **err)
{
    long kb = 0;
    if (s_each (init, s_pss_one, &kb, err) < 0)
        return -1;
    s_pss_one (init, &kb);
    stats->memory_mb = (double)kb / 1024;
    stats->memory_peak_mb = stats->memory_mb;
    stats->oom_kills = -1;
    return 0;
}
