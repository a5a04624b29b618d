/*  Unit tests for cg_cgroup's removal of left-behind sandbox cgroups: a frozen one (a v1
    freezer FROZEN, or cgroup.freeze on v2) is thawed first, since a frozen task dies of
    SIGKILL only once thawed, so its processes end and the cgroup goes. Needs root and a
    freezer (exit 77 otherwise). */
#define _GNU_SOURCE
#include "containers/cg_cgroup.h"
#include "base/cg_util.h"
#include "base/cg_log.h"

#include "cg_test.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define S_FREEZER "/sys/fs/cgroup/freezer"
#define S_UNIFIED "/sys/fs/cgroup"

static bool
s_write (const char *path, const char *text)
{
    int fd = open (path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    bool ok = write (fd, text, strlen (text)) == (ssize_t)strlen (text);
    close (fd);
    return ok;
}

static bool
s_read_has (const char *path, const char *text)
{
    char buf[256] = "";
    int fd = open (path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    ssize_t n = read (fd, buf, sizeof buf - 1);
    close (fd);
    return n > 0 && strstr (buf, text) != NULL;
}

//  A frozen cgroup named PREFIX… below CG_CGROUP_PARENT, with a sleeping child in it, is
//  removed by cg_cgroup_remove_prefix and its child ends.
static void
test_frozen_removed (const char *root, bool v2)
{
    const char *name = "frozen cgroup removed";
    char prefix[64], parent[256], dir[384], path[512];
    snprintf (prefix, sizeof prefix, "cg-unit-thaw-%d-", (int)getpid ());
    snprintf (parent, sizeof parent, "%s/%s", root, CG_CGROUP_PARENT);
    snprintf (dir, sizeof dir, "%s/%sa", parent, prefix);
    mkdir (parent, 0755);
    CHECK (mkdir (dir, 0755) == 0, "mkdir %s: %s", dir, strerror (errno));
    pid_t child = fork ();
    if (child == 0) {
        pause ();
        _exit (0);
    }
    CHECK (child > 0, "fork");
    char pid_text[32];
    snprintf (pid_text, sizeof pid_text, "%d", (int)child);
    snprintf (path, sizeof path, "%s/cgroup.procs", dir);
    bool moved = s_write (path, pid_text);
    snprintf (path, sizeof path, "%s/%s", dir, v2 ? "cgroup.freeze" : "freezer.state");
    bool frozen = moved && s_write (path, v2 ? "1" : "FROZEN");
    for (int i = 0; frozen && i < 100; i++) {
        snprintf (path, sizeof path, "%s/%s", dir, v2 ? "cgroup.events" : "freezer.state");
        if (s_read_has (path, v2 ? "frozen 1" : "FROZEN"))
            break;
        nanosleep (&(struct timespec){0, 10 * 1000 * 1000}, NULL);
    }
    int removed = moved && frozen ? cg_cgroup_remove_prefix (prefix) : -1;
    struct stat st;
    bool gone = stat (dir, &st) < 0 && errno == ENOENT;
    //  Whatever happened, leave nothing behind: thaw, kill, reap, remove.
    if (!gone) {
        snprintf (path, sizeof path, "%s/%s", dir, v2 ? "cgroup.freeze" : "freezer.state");
        s_write (path, v2 ? "0" : "THAWED");
    }
    kill (child, SIGKILL);
    waitpid (child, NULL, 0);
    for (int i = 0; !gone && i < 100 && rmdir (dir) < 0; i++)
        nanosleep (&(struct timespec){0, 10 * 1000 * 1000}, NULL);
    CHECK (moved && frozen, "the child could not be moved into %s and frozen", dir);
    CHECK (removed >= 1 && gone, "the frozen cgroup %s is still there (%d removed)", dir, removed);
    s_passes++;
}

int
main (void)
{
    cg_log_set_level (0);
    if (geteuid () != 0) {
        fprintf (stderr, "test_cgroup: needs root, skipped\n");
        return 77;
    }
    struct stat st;
    if (stat (S_FREEZER "/freezer.state", &st) == 0 || stat (S_FREEZER, &st) == 0)
        test_frozen_removed (S_FREEZER, false);
    else if (stat (S_UNIFIED "/cgroup.controllers", &st) == 0)
        test_frozen_removed (S_UNIFIED, true);
    else {
        fprintf (stderr, "test_cgroup: no freezer, skipped\n");
        return 77;
    }
    printf ("test_cgroup: %d passed, %d failed\n", s_passes, s_failures);
    return s_failures ? 1 : 0;
}
