/*  The workspace's before/after cost in instructions (issue 29, point 1), for callgrind
    (stable on a shared machine where seconds are not):

        valgrind --tool=callgrind --toggle-collect='s_old_way' --toggle-collect='s_new_way' \
            build/tests/bench_wstrack [FILES=20000]

    On a loop-mounted ext4 workspace of its own (root) holding FILES files, in 100
    directories, it does what a run that changes nothing costs: the old way, two full
    snapshots and their diff; the new way, cg_workspace_mark and cg_workspace_changes
    against the index that fanotify keeps (made once, beforehand). Each is run ROUNDS (10)
    times; callgrind's totals per function (callgrind_annotate --inclusive=yes) divided by
    10 are the cost per run. Without valgrind it prints wall times. Not part of the tests. */
#define _GNU_SOURCE
#include "artifacts/cg_workspace.h"
#include "artifacts/cg_wsfs.h"
#include "base/cg_fs.h"
#include "base/cg_util.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define ROUNDS 10

static double
s_now (void)
{
    struct timespec t;
    clock_gettime (CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

__attribute__ ((noinline)) static void
s_old_way (cg_workspace_t *ws)
{
    json_t *before = cg_workspace_snapshot (ws, NULL);
    json_t *after = cg_workspace_snapshot (ws, NULL);
    json_t *diff = cg_workspace_diff (before, after);
    json_decref (diff);
    json_decref (after);
    json_decref (before);
}

__attribute__ ((noinline)) static void
s_new_way (cg_workspace_t *ws)
{
    cg_workspace_mark (ws, NULL);
    json_t *after = NULL;
    char *notice = NULL;
    json_t *diff = cg_workspace_changes (ws, &after, &notice, NULL);
    json_decref (diff);
    json_decref (after);
    free (notice);
}

int
main (int argc, char **argv)
{
    int files = argc > 1 ? atoi (argv[1]) : 20000;
    if (geteuid () != 0) {
        fprintf (stderr, "bench_wstrack: needs root (a loop-mounted workspace)\n");
        return 77;
    }
    char template[] = "/tmp/cg-bench-wstrack-XXXXXX";
    char *base = mkdtemp (template);
    cg_wsfs_limits_t limits = {.size_mb = 512, .inodes = files + 10000};
    cg_error_t *err = NULL;
    if (!base || cg_wsfs_create (base, &limits, &err) < 0) {
        fprintf (stderr, "bench_wstrack: %s\n", cg_error_message (err));
        return 1;
    }
    cleanup_free char *dir = cg_strdupf ("%s/" CG_WSFS_WORKSPACE, base);
    for (int i = 0; i < files; i++) {
        char path[4200];
        snprintf (path, sizeof path, "%s/d%02d", dir, i % 100);
        if (i < 100)
            cg_mkdir_p (path, 0755, NULL);
        snprintf (path, sizeof path, "%s/d%02d/%06d.dat", dir, i % 100, i);
        close (open (path, O_CREAT | O_WRONLY, 0644));
    }
    cg_workspace_t *ws = cg_workspace_open (dir, NULL);
    cg_workspace_mark (ws, NULL); /* the index, made once */
    double t0 = s_now ();
    for (int i = 0; i < ROUNDS; i++)
        s_old_way (ws);
    double t1 = s_now ();
    for (int i = 0; i < ROUNDS; i++)
        s_new_way (ws);
    double t2 = s_now ();
    printf ("%d files (fanotify: %s): old way %.3f ms, new way %.3f ms per run\n", files,
            cg_workspace_tracked (ws) ? "yes" : "no", (t1 - t0) * 1000 / ROUNDS,
            (t2 - t1) * 1000 / ROUNDS);
    cg_workspace_destroy (&ws);
    cg_wsfs_remove (base, NULL);
    cg_rm_rf (base, NULL);
    return 0;
}
