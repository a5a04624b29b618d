/*  cg_cgroup — removing the sandbox cgroups a half-made container left behind. */
#define _GNU_SOURCE
#include "containers/cg_cgroup.h"
#include "base/cg_log.h"
#include "base/cg_util.h"
#include "base/cg_fs.h"

#include <dirent.h>
#include <fcntl.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define S_CGROUP_ROOT "/sys/fs/cgroup"
#define S_EMPTY_TRIES 50 /* 20 ms apart: a killed process leaves its cgroup within a second */

//  Writes TEXT into the cgroup file DIR/NAME in place (a cgroup file takes no rename), when
//  it exists: a freezer's state, a CPU weight.
static void
s_write_in_place (const char *dir, const char *name, const char *text)
{
    cleanup_free char *path = cg_strdupf ("%s/%s", dir, name);
    cleanup_close int fd = open (path, O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd >= 0 && write (fd, text, strlen (text)) < 0)
        cg_log (2, "cgroup: write %s: %s", path, strerror (errno));
}

//  SIGKILLs every process in the cgroup DIR. Returns how many were listed.
static int
s_kill_members (const char *dir)
{
    cleanup_free char *path = cg_strdupf ("%s/cgroup.procs", dir);
    cleanup_free char *text = cg_read_file (path, 1 << 20, NULL, NULL);
    int count = 0;
    for (char *line = text; line && *line;) {
        long pid = strtol (line, &line, 10);
        if (pid > 1 && kill ((pid_t)pid, SIGKILL) == 0)
            count++;
        while (*line == '\n')
            line++;
    }
    return count;
}

//  Empties and removes the cgroup DIR. Returns 0, or -1 (logged).
static int
s_remove_one (const char *dir)
{
    //  A frozen task dies of SIGKILL only once thawed.
    s_write_in_place (dir, "freezer.state", "THAWED");
    s_write_in_place (dir, "cgroup.freeze", "0");
    for (int i = 0; i < S_EMPTY_TRIES; i++) {
        if (rmdir (dir) == 0 || errno == ENOENT)
            return 0;
        if (errno != EBUSY)
            break;
        s_kill_members (dir);
        nanosleep (&(struct timespec){0, 20 * 1000 * 1000}, NULL);
    }
    cg_log (1, "remove cgroup %s: %s", dir, strerror (errno));
    return -1;
}

//  Removes the cgroups PREFIX* in PARENT (one hierarchy's CG_CGROUP_PARENT). Returns how many.
static int
s_remove_in (const char *parent, const char *prefix)
{
    DIR *dir = opendir (parent);
    if (!dir)
        return 0;
    int removed = 0;
    size_t prefix_len = strlen (prefix);
    struct dirent *entry;
    while ((entry = readdir (dir)))
        if (strncmp (entry->d_name, prefix, prefix_len) == 0) {
            cleanup_free char *path = cg_strdupf ("%s/%s", parent, entry->d_name);
            struct stat st;
            if (lstat (path, &st) == 0 && S_ISDIR (st.st_mode) && s_remove_one (path) == 0)
                removed++;
        }
    closedir (dir);
    return removed;
}

int
cg_cgroup_remove_prefix (const char *prefix)
{
    //  The unified hierarchy is mounted at the root; a v1 or hybrid host mounts one
    //  hierarchy per directory below it.
    int removed = s_remove_in (S_CGROUP_ROOT "/" CG_CGROUP_PARENT, prefix);
    DIR *root = opendir (S_CGROUP_ROOT);
    if (!root)
        return removed;
    struct dirent *entry;
    while ((entry = readdir (root)))
        if (entry->d_name[0] != '.' && strcmp (entry->d_name, CG_CGROUP_PARENT) != 0) {
            cleanup_free char *parent =
                cg_strdupf ("%s/%s/%s", S_CGROUP_ROOT, entry->d_name, CG_CGROUP_PARENT);
            removed += s_remove_in (parent, prefix);
        }
    closedir (root);
    return removed;
}

static long
s_read_long (const char *path)
{
    cleanup_free char *text = cg_read_file (path, 4096, NULL, NULL);
    return text ? atol (text) : -1;
}

static long
s_read_key (const char *path, const char *key)
{
    cleanup_free char *text = cg_read_file (path, 65536, NULL, NULL);
    if (!text)
        return -1;
    size_t key_len = strlen (key);
    for (char *line = text; line && *line;
         line = strchr (line, '\n') ? strchr (line, '\n') + 1 : NULL)
        if (strncmp (line, key, key_len) == 0 && line[key_len] == ' ')
            return atol (line + key_len + 1);
    return -1;
}

char *
cg_cgroup_memory_dir_of (pid_t pid, bool v2)
{
    cleanup_free char *path = cg_strdupf ("/proc/%ld/cgroup", (long)pid);
    cleanup_free char *text = cg_read_file (path, 65536, NULL, NULL);
    const char *want = v2 ? "0::" : ":memory:";
    for (char *line = text; line && *line;) {
        char *next = strchr (line, '\n');
        if (next)
            *next++ = '\0';
        //  Lines are "ID:CONTROLLERS:PATH"; the unified one is "0::PATH".
        char *at = v2 ? (strncmp (line, want, 3) == 0 ? line : NULL) : strstr (line, want);
        if (at) {
            const char *rel = at + strlen (want);
            if (*rel == '/' && !strstr (rel, "/../"))
                return v2 ? cg_strdupf (S_CGROUP_ROOT "%s", rel)
                          : cg_strdupf (S_CGROUP_ROOT "/memory%s", rel);
        }
        line = next;
    }
    return NULL;
}

//  Weighs the cgroup whose memory directory is DIR as the scheduler weighs one task at
//  NICE (v1 cpu.shares: 1024 at 0, 110 at 10; v2 cpu.weight.nice takes NICE itself), where
//  the cpu controller has it: a sandbox's cgroup competes with the other sandboxes' as a
//  whole, so its tasks' own nice counts only among themselves.
static void
s_cpu_weight (const char *dir, bool v2, int nice)
{
    cleanup_free char *text = NULL;
    if (v2) {
        text = cg_strdupf ("%d", nice);
        s_write_in_place (dir, "cpu.weight.nice", text);
        return;
    }
    const char *memory = S_CGROUP_ROOT "/memory/";
    if (strncmp (dir, memory, strlen (memory)) != 0)
        return;
    double shares = 1024;
    for (int i = 0; i < nice; i++)
        shares /= 1.25;
    for (int i = 0; i > nice; i--)
        shares *= 1.25;
    cleanup_free char *cpu = cg_strdupf (S_CGROUP_ROOT "/cpu/%s", dir + strlen (memory));
    text = cg_strdupf ("%ld", shares < 2 ? 2L : (long)(shares + 0.5));
    s_write_in_place (cpu, "cpu.shares", text);
}

int
cg_cgroup_renice (const char *dir, bool v2, int nice)
{
    s_cpu_weight (dir, v2, nice);
    cleanup_free char *path = cg_strdupf ("%s/%s", dir, v2 ? "cgroup.threads" : "tasks");
    cleanup_free char *text = cg_read_file (path, 1 << 20, NULL, NULL);
    int count = 0;
    for (char *line = text; line && *line;
         line = strchr (line, '\n') ? strchr (line, '\n') + 1 : NULL)
        if (atol (line) > 0 && setpriority (PRIO_PROCESS, (id_t)atol (line), nice) == 0)
            count++;
    return count;
}

int
cg_cgroup_stats (const char *dir, bool v2, const char *id, cg_container_stats_t *stats,
                 cg_error_t **err)
{
    cleanup_free char *usage =
        cg_strdupf ("%s/%s", dir, v2 ? "memory.current" : "memory.usage_in_bytes");
    cleanup_free char *peak =
        cg_strdupf ("%s/%s", dir, v2 ? "memory.peak" : "memory.max_usage_in_bytes");
    cleanup_free char *events =
        cg_strdupf ("%s/%s", dir, v2 ? "memory.events" : "memory.oom_control");
    long current = s_read_long (usage);
    if (current < 0)
        return cg_error_set (err, ENOENT, "stats %s: no memory cgroup at %s", id, dir);
    long high = s_read_long (peak);
    stats->memory_mb = (double)current / (1024.0 * 1024.0);
    stats->memory_peak_mb = (double)(high > current ? high : current) / (1024.0 * 1024.0);
    stats->oom_kills = s_read_key (events, "oom_kill");
    return 0;
}

void
cg_cgroup_peak_begin (const char *dir, bool v2, cg_container_peak_t *peak)
{
    *peak = (cg_container_peak_t){.fd = -1};
    cleanup_free char *path =
        cg_strdupf ("%s/%s", dir, v2 ? "memory.peak" : "memory.max_usage_in_bytes");
    int fd = open (path, O_RDWR | O_CLOEXEC);
    if (fd < 0)
        return;
    //  v1: "0" resets the cgroup's high-water mark; v2: any text resets this fd's.
    const char *reset = v2 ? "reset\n" : "0\n";
    peak->reset = write (fd, reset, strlen (reset)) > 0;
    if (v2 && peak->reset)
        peak->fd = fd;
    else
        close (fd);
}

double
cg_cgroup_peak_end (const char *dir, bool v2, cg_container_peak_t *peak)
{
    double mb = -1;
    char text[32];
    ssize_t got = peak->fd >= 0 ? pread (peak->fd, text, sizeof text - 1, 0) : -1;
    if (got > 0) {
        text[got] = '\0';
        mb = (double)atol (text) / (1024.0 * 1024.0);
        //  What is in use now too, so that a report right after the run needs no stats.
        cleanup_free char *usage = dir ? cg_strdupf ("%s/memory.current", dir) : NULL;
        long current = usage ? s_read_long (usage) : -1;
        if (current >= 0)
            peak->current_mb = (double)current / (1024.0 * 1024.0);
    }
    else {
        cg_container_stats_t stats = {.oom_kills = -1};
        if (dir && cg_cgroup_stats (dir, v2, "", &stats, NULL) == 0) {
            mb = stats.memory_peak_mb;
            peak->current_mb = stats.memory_mb;
        }
        else
            peak->reset = false;
    }
    if (peak->fd >= 0)
        close (peak->fd);
    peak->fd = -1;
    return mb;
}

int
cg_cgroup_signal_members (const char *dir, pid_t init, int signal, const pid_t *keep,
                          size_t keep_count)
{
    cleanup_free char *path = cg_strdupf ("%s/cgroup.procs", dir);
    cleanup_free char *text = cg_read_file (path, 1 << 20, NULL, NULL);
    int count = 0;
    for (char *line = text; line && *line;) {
        pid_t pid = (pid_t)strtol (line, &line, 10);
        bool skip = pid <= 1 || pid == init;
        for (size_t k = 0; k < keep_count && !skip; k++)
            skip = keep[k] == pid;
        if (!skip && kill (pid, signal) == 0)
            count++;
        while (*line == '\n')
            line++;
    }
    return count;
}

bool
cg_cgroup_holds_pid (pid_t pid, const char *container_id)
{
    cleanup_free char *path = cg_strdupf ("/proc/%ld/cgroup", (long)pid);
    cleanup_free char *text = cg_read_file (path, 64 * 1024, NULL, NULL);
    cleanup_free char *tail = cg_strdupf ("/%s\n", container_id);
    return pid > 0 && text && strstr (text, tail);
}
