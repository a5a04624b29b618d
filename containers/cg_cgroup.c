/*  cg_cgroup — removing the sandbox cgroups a half-made container left behind. */
#define _GNU_SOURCE
#include "cg_cgroup.h"
#include "../bridge/cg_util.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define S_CGROUP_ROOT "/sys/fs/cgroup"
#define S_EMPTY_TRIES 50 /* 20 ms apart: a killed process leaves its cgroup within a second */

//  Writes TEXT to DIR/NAME when that file exists (a freezer's state, say).
static void
s_write_if_present (const char *dir, const char *name, const char *text)
{
    cleanup_free char *path = cg_strdupf ("%s/%s", dir, name);
    if (access (path, F_OK) == 0)
        cg_write_file (path, text, strlen (text), 0644, NULL);
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
    s_write_if_present (dir, "freezer.state", "THAWED");
    s_write_if_present (dir, "cgroup.freeze", "0");
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
