/*  test_wsfs — a session's own file systems: the disk (workspace and package layer)
    created, its workspace owned by the sandbox user, full at its size and at its inode
    count (ENOSPC) while the host is untouched, measured; the ipc tmpfs full at its own
    small limits; both removed without a trace, and found and detached below a dead
    server's dir. Needs root and loop devices (exit 77 otherwise). */
#define _GNU_SOURCE
#include "artifacts/cg_wsfs.h"
#include "base/cg_util.h"
#include "base/cg_fs.h"
#include "cg_test.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#define S_UID 65532
#define S_GID 65532

//  True when /proc/self/mountinfo lists a mount point at or below DIR.
static bool
s_mounted_below (const char *dir)
{
    FILE *file = fopen ("/proc/self/mountinfo", "re");
    if (!file)
        return false;
    char line[4096];
    bool found = false;
    while (!found && fgets (line, sizeof line, file)) {
        char point[4096];
        if (sscanf (line, "%*s %*s %*s %*s %4095s", point) == 1
            && strncmp (point, dir, strlen (dir)) == 0)
            found = true;
    }
    fclose (file);
    return found;
}

//  Writes 1 MiB blocks to PATH until a write fails. Returns the MiB written; *code gets
//  the failure's errno.
static int
s_fill (const char *path, int max_mb, int *code)
{
    int fd = open (path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    *code = fd < 0 ? errno : 0;
    if (fd < 0)
        return 0;
    static char block[1024 * 1024];
    int written = 0;
    for (; written < max_mb; written++)
        if (write (fd, block, sizeof block) != (ssize_t)sizeof block) {
            *code = errno;
            break;
        }
    if (!*code && fsync (fd) < 0)
        *code = errno;
    close (fd);
    return written;
}

//  The ipc directory: a tmpfs of its own, owned by the sandbox user, full at
//  CG_IPC_TMPFS_KB and at CG_IPC_TMPFS_INODES.
static void
s_test_ipc (const char *session)
{
    cleanup_free char *ipc = cg_strdupf ("%s/" CG_WSFS_IPC, session);
    struct stat st;
    EXPECT (s_mounted_below (ipc), "the ipc directory is a mount point");
    EXPECT (stat (ipc, &st) == 0 && st.st_uid == S_UID && st.st_gid == S_GID
                && (st.st_mode & 07777) == 0700,
            "ipc owned %d:%d mode %o", (int)st.st_uid, (int)st.st_gid, st.st_mode & 07777);
    int code;
    cleanup_free char *big = cg_strdupf ("%s/big", ipc);
    int written = s_fill (big, 64, &code);
    EXPECT (code == ENOSPC && written <= CG_IPC_TMPFS_KB / 1024, "ipc: filled %d MB, then %s",
            written, strerror (code));
    unlink (big);
    int files = 0;
    for (code = 0; files < 2000; files++) {
        cleanup_free char *name = cg_strdupf ("%s/f%d", ipc, files);
        int fd = open (name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd < 0) {
            code = errno;
            break;
        }
        close (fd);
    }
    EXPECT (code == ENOSPC && files < CG_IPC_TMPFS_INODES, "ipc: made %d files, then %s", files,
            strerror (code));
}

static void
s_test_limits (const char *base)
{
    cleanup_free char *session = cg_strdupf ("%s/session", base);
    cleanup_free char *disk = cg_strdupf ("%s/" CG_WSFS_DISK, session);
    cleanup_free char *workspace = cg_strdupf ("%s/" CG_WSFS_WORKSPACE, session);
    cleanup_free char *image = cg_strdupf ("%s/" CG_WSFS_IMAGE, session);
    cg_error_t *err = NULL;
    EXPECT (cg_mkdir_p (session, 0700, &err) == 0, "mkdir: %s", cg_error_message (err));
    cg_wsfs_limits_t limits = {.size_mb = 16, .inodes = 256, .uid = S_UID, .gid = S_GID};
    EXPECT (cg_wsfs_create (session, &limits, &err) == 0, "create: %s", cg_error_message (err));
    cg_error_destroy (&err);
    EXPECT (s_mounted_below (disk), "the disk is a mount point");
    struct stat st;
    EXPECT (stat (disk, &st) == 0 && st.st_uid == 0 && (st.st_mode & 07777) == 0755,
            "disk owned %d mode %o", (int)st.st_uid, st.st_mode & 07777);
    EXPECT (stat (workspace, &st) == 0 && st.st_uid == S_UID && st.st_gid == S_GID
                && (st.st_mode & 07777) == 0755,
            "workspace owned %d:%d mode %o", (int)st.st_uid, (int)st.st_gid, st.st_mode & 07777);
    cleanup_free char *lost = cg_strdupf ("%s/lost+found", disk);
    EXPECT (access (lost, F_OK) < 0, "no lost+found");
    //  A second call leaves the mounted file system alone.
    cleanup_free char *marker = cg_strdupf ("%s/marker", workspace);
    EXPECT (cg_write_file (marker, "x", 1, 0644, &err) == 0, "marker: %s", cg_error_message (err));
    EXPECT (cg_wsfs_create (session, &limits, &err) == 0 && access (marker, F_OK) == 0,
            "create again keeps the files");
    cg_error_destroy (&err);

    cg_wsfs_usage_t usage = {0};
    EXPECT (cg_wsfs_usage (session, &usage, &err) == 1, "usage: %s", cg_error_message (err));
    EXPECT (usage.size_mb > 12 && usage.size_mb <= 16, "size %.1f MB", usage.size_mb);
    EXPECT (usage.inodes >= 256 && usage.inodes < 1024, "inodes %llu",
            (unsigned long long)usage.inodes);

    struct statvfs host_before, host_after;
    statvfs (base, &host_before);
    int code;
    cleanup_free char *big = cg_strdupf ("%s/big", workspace);
    int written = s_fill (big, 64, &code);
    statvfs (base, &host_after);
    EXPECT (code == ENOSPC && written >= 12 && written < 16, "filled %d MB, then %s", written,
            strerror (code));
    double host_used_mb = ((double)host_before.f_bavail - (double)host_after.f_bavail)
                          * host_before.f_frsize / (1024 * 1024);
    EXPECT (host_used_mb < 20, "the host lost %.1f MB", host_used_mb);
    EXPECT (cg_wsfs_usage (session, &usage, NULL) == 1 && usage.used_mb > 12, "used %.1f MB",
            usage.used_mb);
    unlink (big);

    int files = 0;
    code = 0;
    for (; files < 2000; files++) {
        cleanup_free char *name = cg_strdupf ("%s/f%d", workspace, files);
        int fd = open (name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd < 0) {
            code = errno;
            break;
        }
        close (fd);
    }
    EXPECT (code == ENOSPC && files > 200 && files < 1024, "made %d files, then %s", files,
            strerror (code));
    EXPECT (cg_wsfs_usage (session, &usage, NULL) == 1 && usage.inodes_used == usage.inodes,
            "inodes used %llu of %llu", (unsigned long long)usage.inodes_used,
            (unsigned long long)usage.inodes);

    s_test_ipc (session);
    EXPECT (cg_wsfs_remove (session, &err) == 0, "remove: %s", cg_error_message (err));
    cg_error_destroy (&err);
    EXPECT (!s_mounted_below (session), "unmounted");
    EXPECT (access (image, F_OK) < 0 && errno == ENOENT, "image removed");
    EXPECT (cg_wsfs_usage (session, &usage, NULL) == 0, "a plain directory has no limit");
    EXPECT (cg_wsfs_remove (session, &err) == 0, "removing twice is fine: %s",
            cg_error_message (err));
    cg_error_destroy (&err);
}

static void
s_test_plain (const char *base)
{
    cleanup_free char *session = cg_strdupf ("%s/plain", base);
    cleanup_free char *workspace = cg_strdupf ("%s/" CG_WSFS_WORKSPACE, session);
    cleanup_free char *ipc = cg_strdupf ("%s/" CG_WSFS_IPC, session);
    cg_error_t *err = NULL;
    cg_mkdir_p (session, 0700, NULL);
    cg_wsfs_limits_t limits = {.size_mb = 0, .inodes = 256, .uid = S_UID, .gid = S_GID};
    EXPECT (cg_wsfs_create (session, &limits, &err) == 0, "create: %s", cg_error_message (err));
    cg_error_destroy (&err);
    struct stat st;
    EXPECT (stat (workspace, &st) == 0 && st.st_uid == S_UID && (st.st_mode & 07777) == 0755,
            "plain workspace");
    EXPECT (stat (ipc, &st) == 0 && st.st_uid == S_UID && (st.st_mode & 07777) == 0700,
            "plain ipc directory");
    EXPECT (!s_mounted_below (session), "not mounted");
}

static void
s_test_unmount_below (const char *base)
{
    cleanup_free char *instance = cg_strdupf ("%s/instance", base);
    cg_wsfs_limits_t limits = {.size_mb = 8, .inodes = 128, .uid = S_UID, .gid = S_GID};
    cg_error_t *err = NULL;
    for (int i = 0; i < 2; i++) {
        cleanup_free char *session = cg_strdupf ("%s/sessions/s%d", instance, i);
        cg_mkdir_p (session, 0700, NULL);
        EXPECT (cg_wsfs_create (session, &limits, &err) == 0, "create: %s", cg_error_message (err));
        cg_error_destroy (&err);
    }
    //  A mount inside a workspace: detached before the one that holds it.
    cleanup_free char *inner = cg_strdupf ("%s/sessions/s0/" CG_WSFS_WORKSPACE "/inner", instance);
    cg_mkdir_p (inner, 0755, NULL);
    EXPECT (cg_wsfs_create (inner, &limits, &err) == 0, "create inner: %s", cg_error_message (err));
    cg_error_destroy (&err);
    int detached = cg_wsfs_unmount_below (instance, &err);
    EXPECT (detached == 6, "detached %d (a disk and an ipc tmpfs each): %s", detached,
            cg_error_message (err));
    cg_error_destroy (&err);
    EXPECT (!s_mounted_below (instance), "nothing mounted below %s", instance);
    EXPECT (cg_wsfs_unmount_below (instance, NULL) == 0, "nothing left to detach");
    cleanup_free char *missing = cg_strdupf ("%s/missing", base);
    EXPECT (cg_wsfs_unmount_below (missing, NULL) == 0, "a missing dir has nothing below it");
    EXPECT (cg_wsfs_unmount_below ("/", NULL) < 0, "refuses /");
}

//  Sessions of one size get their disks from one blank image (cg_wsfs.c): each its own
//  file system, empty and with the full limits, whatever another session wrote to its own.
static void
s_test_blank_copies (const char *base)
{
    cg_wsfs_limits_t limits = {.size_mb = 16, .inodes = 256, .uid = S_UID, .gid = S_GID};
    cleanup_free char *one = cg_strdupf ("%s/one", base);
    cleanup_free char *two = cg_strdupf ("%s/two", base);
    cleanup_free char *marker = cg_strdupf ("%s/" CG_WSFS_WORKSPACE "/marker", one);
    cleanup_free char *big = cg_strdupf ("%s/" CG_WSFS_WORKSPACE "/big", one);
    cleanup_free char *seen = cg_strdupf ("%s/" CG_WSFS_WORKSPACE "/marker", two);
    cg_error_t *err = NULL;
    EXPECT (cg_mkdir_p (one, 0700, &err) == 0 && cg_mkdir_p (two, 0700, &err) == 0
                && cg_wsfs_create (one, &limits, &err) == 0,
            "first: %s", cg_error_message (err));
    cg_error_destroy (&err);
    int code;
    EXPECT (cg_write_file (marker, "x", 1, 0644, NULL) == 0 && s_fill (big, 8, &code) == 8,
            "the first session writes");
    EXPECT (cg_wsfs_create (two, &limits, &err) == 0, "second: %s", cg_error_message (err));
    cg_error_destroy (&err);
    cg_wsfs_usage_t usage = {0};
    EXPECT (access (seen, F_OK) < 0 && errno == ENOENT,
            "the second sees none of the first's files");
    EXPECT (cg_wsfs_usage (two, &usage, NULL) == 1 && usage.size_mb > 12 && usage.size_mb <= 16
                && usage.used_mb < 2 && usage.inodes >= 256 && usage.inodes_used < 16,
            "second: %.1f of %.1f MB, %llu of %llu inodes used", usage.used_mb, usage.size_mb,
            (unsigned long long)usage.inodes_used, (unsigned long long)usage.inodes);
    DIR *dir = opendir (base);
    int entries = 0;
    for (struct dirent *e; dir && (e = readdir (dir));)
        entries += e->d_name[0] != '.';
    if (dir)
        closedir (dir);
    EXPECT (entries == 2, "the sessions' directory holds the two sessions only (%d entries)",
            entries);
    EXPECT (cg_wsfs_remove (one, NULL) == 0 && cg_wsfs_remove (two, NULL) == 0, "remove");
}

int
main (void)
{
    if (geteuid () != 0 || access ("/dev/loop-control", R_OK | W_OK) < 0) {
        fprintf (stderr, "SKIP: needs root and /dev/loop-control for loop mounts\n");
        return 77;
    }
    char template[] = "/tmp/cg-wsfs-test-XXXXXX";
    char *base = mkdtemp (template);
    if (!base) {
        perror ("mkdtemp");
        return 2;
    }
    s_test_limits (base);
    cleanup_free char *sessions = cg_strdupf ("%s/sessions", base);
    cg_mkdir_p (sessions, 0700, NULL);
    s_test_blank_copies (sessions);
    s_test_plain (base);
    s_test_unmount_below (base);
    //  Remove the fixture only when nothing is mounted in it any more.
    if (cg_wsfs_unmount_below (base, NULL) >= 0 && !s_mounted_below (base))
        cg_rm_rf (base, NULL);
    else
        fprintf (stderr, "left %s: still mounted\n", base);
    printf ("%d passed, %d failed\n", s_passes, s_failures);
    return s_failures ? 1 : 0;
}
