/*  Unit tests for the workspace's change tracker (artifacts/cg_wstrack.c): on a session's
    own ext4 file system (cg_wsfs, loop-mounted: needs root), cg_workspace_changes and
    cg_workspace_list, served from the index that fanotify keeps up to date, must say
    exactly what a diff of two full walks and a fresh walk say — after creates, writes,
    deletes, renames of files and directories, planted links and FIFOs, bad names, deep
    trees, hard links, moves across the package layer, random mixes of all of these, and
    an overflow of the event queue (which walks in full and says so). */
#define _GNU_SOURCE
#include "artifacts/cg_workspace.h"
#include "artifacts/cg_wsfs.h"
#include "base/cg_fs.h"
#include "base/cg_util.h"
#include "cg_test.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

static char *s_ws_dir;   /* the workspace on the host */
static char *s_site_dir; /* the package layer beside it, on the same file system */

//  Writes TEXT to the workspace file REL (appending when APPEND).
static void
s_write (const char *rel, const char *text, bool append)
{
    cleanup_free char *path = cg_strdupf ("%s/%s", s_ws_dir, rel);
    int fd = open (
        path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK | (append ? O_APPEND : O_TRUNC), 0644);
    if (fd >= 0) {
        cg_write_all (fd, text, strlen (text));
        close (fd);
    }
}

//  The host path of workspace path REL in one of four rotating buffers.
static const char *
s_in (const char *dir, const char *rel)
{
    static char paths[4][4096];
    static int next;
    char *path = paths[next++ % 4];
    snprintf (path, sizeof paths[0], "%s/%s", dir, rel);
    return path;
}

static const char *
s_p (const char *rel)
{
    return s_in (s_ws_dir, rel);
}

static const char *
s_site (const char *rel)
{
    return s_in (s_site_dir, rel);
}

//  Compares what WS's tracker says changed since BEFORE (a snapshot taken at the mark)
//  and what it lists with a full walk's diff and REF's listing (REF walks at each call).
//  WANT_NOTICE: whether the overflow notice must be there. Returns the new snapshot.
static json_t *
s_compare (cg_workspace_t *ws, cg_workspace_t *ref, json_t *before, const char *step,
           bool want_notice)
{
    cg_error_t *err = NULL;
    json_t *snapshot = cg_workspace_snapshot (ref, &err);
    json_t *want = cg_workspace_diff (before, snapshot);
    json_t *after = NULL;
    char *notice = NULL;
    json_t *got = cg_workspace_changes (ws, &after, &notice, &err);
    EXPECT (got && json_equal (got, want), "%s: changes differ from a full walk's diff", step);
    if (!got || !json_equal (got, want)) {
        cleanup_free char *a = json_dumps (got, JSON_COMPACT);
        cleanup_free char *b = json_dumps (want, JSON_COMPACT);
        fprintf (stderr, "  got  %.2000s\n  want %.2000s\n", a ? a : "NULL", b);
    }
    EXPECT (!notice == !want_notice, "%s: notice %s", step, notice ? notice : "(none)");
    const char *lists[] = {"created", "modified"};
    for (int k = 0; k < 2; k++) {
        size_t i;
        json_t *name;
        json_array_foreach (json_object_get (want, lists[k]), i, name)
        {
            const char *rel = json_string_value (name);
            EXPECT (json_equal (json_object_get (after, rel), json_object_get (snapshot, rel)),
                    "%s: size and time of %s", step, rel);
        }
    }
    json_t *listed = cg_workspace_list (ws, &err);
    json_t *walked = cg_workspace_list (ref, &err);
    EXPECT (listed && json_equal (listed, walked), "%s: listing differs from a walk's", step);
    if (!listed || !json_equal (listed, walked)) {
        cleanup_free char *a = json_dumps (listed, JSON_COMPACT);
        cleanup_free char *b = json_dumps (walked, JSON_COMPACT);
        fprintf (stderr, "  listed %.2000s\n  walked %.2000s\n", a ? a : "NULL", b);
    }
    cg_error_destroy (&err);
    json_decref (listed);
    json_decref (walked);
    json_decref (got);
    json_decref (want);
    json_decref (after);
    free (notice);
    json_decref (before);
    EXPECT (cg_workspace_mark (ws, NULL) == 0, "%s: mark", step);
    return snapshot;
}

//  The named steps: each changes the workspace one way.
static void
s_steps (cg_workspace_t *ws, cg_workspace_t *ref)
{
    json_t *snap = cg_workspace_snapshot (ref, NULL);
    cg_workspace_mark (ws, NULL);
    s_write ("a.txt", "alpha", false);
    cg_mkdir_p (s_p ("dir/sub"), 0755, NULL);
    s_write ("dir/b.csv", "x,y\n", false);
    s_write ("dir/sub/c.png", "png", false);
    snap = s_compare (ws, ref, snap, "create", false);
    s_write ("a.txt", "more", true);
    struct timespec times[2] = {{0, UTIME_OMIT}, {1000, 5}};
    utimensat (AT_FDCWD, s_p ("dir/b.csv"), times, AT_SYMLINK_NOFOLLOW);
    snap = s_compare (ws, ref, snap, "modify and touch", false);
    unlink (s_p ("dir/sub/c.png"));
    snap = s_compare (ws, ref, snap, "delete", false);
    rename (s_p ("a.txt"), s_p ("a2.txt"));
    snap = s_compare (ws, ref, snap, "rename a file", false);
    rename (s_p ("dir"), s_p ("dir2"));
    snap = s_compare (ws, ref, snap, "rename a directory", false);
    symlink ("/etc/passwd", s_p ("passwd"));
    symlink ("/etc", s_p ("dir2/etc"));
    mkfifo (s_p ("fifo"), 0644);
    snap = s_compare (ws, ref, snap, "links and a FIFO planted", false);
    //  A directory replaced by a link to a directory full of files: nothing below it counts.
    cg_mkdir_p (s_p ("elsewhere"), 0755, NULL);
    s_write ("elsewhere/e.txt", "e", false);
    rename (s_p ("dir2"), s_p ("elsewhere/dir2"));
    symlink ("elsewhere/dir2", s_p ("dir2"));
    snap = s_compare (ws, ref, snap, "a directory swapped for a link", false);
    s_write ("bad\x01name.txt", "b", false);
    s_write ("\xff.txt", "b", false);
    cg_mkdir_p (s_p ("bad\x02dir"), 0755, NULL);
    s_write ("bad\x02dir/inside.txt", "i", false);
    snap = s_compare (ws, ref, snap, "names that cannot be shown", false);
    cleanup_free char *deep = cg_xstrdup ("deep");
    for (int i = 0; i < CG_WORKSPACE_DEPTH_MAX + 2; i++) {
        char *next = cg_strdupf ("%s/d", deep);
        free (deep);
        deep = next;
    }
    cg_mkdir_p (s_p (deep), 0755, NULL);
    s_write ("deep/d/d/shallow.txt", "s", false);
    cleanup_free char *deep_file = cg_strdupf ("%s/x.txt", deep);
    s_write (deep_file, "x", false);
    snap = s_compare (ws, ref, snap, "a tree too deep", false);
    cg_rm_rf (s_p ("deep"), NULL);
    snap = s_compare (ws, ref, snap, "the deep tree removed", false);
    link (s_p ("a2.txt"), s_p ("hard.txt"));
    snap = s_compare (ws, ref, snap, "a hard link", false);
    s_write ("hard.txt", "through the other name", true);
    snap = s_compare (ws, ref, snap, "a write through the other link", false);
    //  Moves between the workspace and the package layer beside it (same file system).
    cleanup_free char *site_dir = cg_strdupf ("%s/pkg", s_site_dir);
    cg_mkdir_p (site_dir, 0755, NULL);
    cleanup_free char *site_file = cg_strdupf ("%s/mod.py", site_dir);
    int fd = open (site_file, O_WRONLY | O_CREAT, 0644);
    close (fd);
    rename (site_dir, s_p ("pkg"));
    rename (s_p ("elsewhere"), s_site ("gone"));
    snap = s_compare (ws, ref, snap, "moves in from and out to the package layer", false);
    //  A hard link made in the package layer to a workspace file, then written through.
    s_write ("solo.txt", "one link", false);
    snap = s_compare (ws, ref, snap, "a file of one link", false);
    link (s_p ("solo.txt"), s_site ("hard-too.txt"));
    snap = s_compare (ws, ref, snap, "a link made outside the workspace", false);
    int out = open (s_site ("hard-too.txt"), O_WRONLY | O_APPEND);
    if (out >= 0) {
        cg_write_all (out, "written outside", 15);
        close (out);
    }
    snap = s_compare (ws, ref, snap, "a write through a link outside the workspace", false);
    //  A file where a directory was, and the other way round.
    cg_rm_rf (s_p ("pkg"), NULL);
    s_write ("pkg", "now a file", false);
    unlink (s_p ("a2.txt"));
    cg_mkdir_p (s_p ("a2.txt/inner"), 0755, NULL);
    s_write ("a2.txt/inner/f.txt", "f", false);
    snap = s_compare (ws, ref, snap, "a file for a directory and back", false);
    json_decref (snap);
}

//  Random changes to a small tree of names, compared after every few.
static void
s_random (cg_workspace_t *ws, cg_workspace_t *ref, unsigned seed)
{
    static const char *dirs[] = {"", "r0/", "r1/", "r0/r2/", "r1/r3/r4/"};
    static const char *names[] = {"f0.txt", "f1.png", "r0", "r1", "r2", "r3", "x"};
    const size_t ndirs = sizeof dirs / sizeof *dirs, nnames = sizeof names / sizeof *names;
    srand (seed);
    json_t *snap = cg_workspace_snapshot (ref, NULL);
    cg_workspace_mark (ws, NULL);
    for (int round = 0; round < 400; round++) {
        char a[256], b[256];
        snprintf (a, sizeof a, "%s%s", dirs[rand () % ndirs], names[rand () % nnames]);
        snprintf (b, sizeof b, "%s%s", dirs[rand () % ndirs], names[rand () % nnames]);
        switch (rand () % 10) {
            case 0:
            case 1:
                s_write (a, "data", rand () % 2);
                break;
            case 2:
                unlink (s_p (a));
                break;
            case 3:
                rename (s_p (a), s_p (b));
                break;
            case 4:
                mkdir (s_p (a), 0755);
                break;
            case 5:
                if (rand () % 3 == 0)
                    cg_rm_rf (s_p (a), NULL);
                break;
            case 6:
                symlink (rand () % 2 ? "r0" : "/etc", s_p (a));
                break;
            case 7:
                if (rand () % 2)
                    mkfifo (s_p (a), 0644);
                else
                    link (s_p (a), s_p (b));
                break;
            case 8: {
                struct timespec times[2] = {{0, UTIME_OMIT}, {rand () % 100000, rand () % 1000}};
                utimensat (AT_FDCWD, s_p (a), times, AT_SYMLINK_NOFOLLOW);
                break;
            }
            default:
                truncate (s_p (a), rand () % 7);
                break;
        }
        if (rand () % 4 == 0) {
            char step[64];
            snprintf (step, sizeof step, "random seed %u round %d", seed, round);
            snap = s_compare (ws, ref, snap, step, false);
        }
    }
    snap = s_compare (ws, ref, snap, "random end", false);
    json_decref (snap);
}

//  More changes than the kernel queues: walked in full, said so, and exact still; then
//  nothing changes (no notice, nothing listed), and a file deleted while the index is cut
//  at the file cap is noticed by a walk.
static void
s_overflow (cg_workspace_t *ws, cg_workspace_t *ref)
{
    json_t *snap = cg_workspace_snapshot (ref, NULL);
    cg_workspace_mark (ws, NULL);
    cg_mkdir_p (s_p ("many"), 0755, NULL);
    for (int i = 0; i < 20000; i++) {
        char rel[64];
        snprintf (rel, sizeof rel, "many/%05d.txt", i);
        s_write (rel, "", false);
    }
    snap = s_compare (ws, ref, snap, "20000 files at once", true);
    snap = s_compare (ws, ref, snap, "nothing changed", false);
    json_t *listing = cg_workspace_list (ws, NULL);
    EXPECT (json_is_true (json_object_get (listing, "truncated")), "truncated at the file cap");
    json_t *first = json_array_get (json_object_get (listing, "artifacts"), 0);
    const char *path = json_string_value (json_object_get (first, "path"));
    unlink (s_p (path + strlen (CG_WORKSPACE_MOUNT) + 1));
    json_decref (listing);
    snap = s_compare (ws, ref, snap, "a listed file deleted past the cap", false);
    cg_rm_rf (s_p ("many"), NULL);
    snap = s_compare (ws, ref, snap, "the many removed", true);
    json_decref (snap);
}

//  Files made and removed by the thousand, with syncs between (listings), more in all than
//  the tracker keeps of them: what it forgets (made and removed since the mark) leaves the
//  changes exact.
static void
s_churn (cg_workspace_t *ws, cg_workspace_t *ref)
{
    json_t *snap = cg_workspace_snapshot (ref, NULL);
    cg_workspace_mark (ws, NULL);
    s_write ("a2.txt/inner/f.txt", "changed", true);
    cg_mkdir_p (s_p ("churn"), 0755, NULL);
    for (int batch = 0; batch < 45; batch++) {
        char rel[64];
        for (int i = 0; i < 1000; i++) {
            snprintf (rel, sizeof rel, "churn/%02d-%03d.txt", batch, i);
            s_write (rel, "c", false);
        }
        json_decref (cg_workspace_list (ws, NULL));
        for (int i = 0; i < 1000; i++) {
            snprintf (rel, sizeof rel, "churn/%02d-%03d.txt", batch, i);
            unlink (s_p (rel));
        }
        json_decref (cg_workspace_list (ws, NULL));
    }
    s_write ("churn/last.txt", "l", false);
    snap = s_compare (ws, ref, snap, "45000 files made and removed", false);
    json_decref (snap);
}

//  One round of every test on a fresh workspace, following events when FANOTIFY.
static void
s_run (const char *base, const char *tag, bool fanotify)
{
    const char *name = tag;
    cleanup_free char *session = cg_strdupf ("%s/%s", base, tag);
    cg_mkdir_p (session, 0700, NULL);
    cg_wsfs_limits_t limits = {.size_mb = 256, .inodes = 65536, .uid = 0, .gid = 0};
    cg_error_t *err = NULL;
    int rc = cg_wsfs_create (session, &limits, &err);
    cg_error_destroy (&err);
    CHECK (rc == 0, "cg_wsfs_create");
    free (s_ws_dir);
    free (s_site_dir);
    s_ws_dir = cg_strdupf ("%s/" CG_WSFS_WORKSPACE, session);
    s_site_dir = cg_strdupf ("%s/" CG_WSFS_SITE, session);
    cg_mkdir_p (s_site_dir, 0755, NULL);
    //  Indexes are made on first use: WS's now, with or without events; the reference's
    //  without (it walks at each call).
    cg_workspace_use_fanotify (fanotify);
    cg_workspace_t *ws = cg_workspace_open (s_ws_dir, NULL);
    cg_workspace_mark (ws, NULL);
    cg_workspace_use_fanotify (false);
    cg_workspace_t *ref = cg_workspace_open (s_ws_dir, NULL);
    json_decref (cg_workspace_list (ref, NULL));
    cg_workspace_use_fanotify (true);
    EXPECT (cg_workspace_tracked (ws) == fanotify, "%s: follows events: %d", tag,
            cg_workspace_tracked (ws));
    EXPECT (!cg_workspace_tracked (ref), "the reference walks");
    s_steps (ws, ref);
    for (unsigned seed = 1; seed <= 3; seed++)
        s_random (ws, ref, seed);
    if (fanotify) {
        s_churn (ws, ref);
        s_overflow (ws, ref);
    }
    cg_workspace_destroy (&ws);
    cg_workspace_destroy (&ref);
    cg_wsfs_remove (session, NULL);
}

int
main (void)
{
    if (geteuid () != 0 || access ("/dev/loop-control", R_OK | W_OK) < 0) {
        fprintf (stderr, "SKIP: needs root and /dev/loop-control for loop mounts\n");
        return 77;
    }
    char template[] = "/tmp/cg-wstrack-test-XXXXXX";
    char *base = mkdtemp (template);
    if (!base) {
        perror ("mkdtemp");
        return 2;
    }
    s_run (base, "events", true);
    s_run (base, "walks", false);
    if (cg_wsfs_unmount_below (base, NULL) >= 0)
        cg_rm_rf (base, NULL);
    free (s_ws_dir);
    free (s_site_dir);
    printf ("%d passed, %d failed\n", s_passes, s_failures);
    return s_failures ? 1 : 0;
}
