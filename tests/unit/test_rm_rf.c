/*  Unit tests: cg_rm_rf on trees hostile code can leave in a workspace — any depth with a
    few fds, many entries, links never followed, mounts never crossed, "/" refused. Each
    case works in its own directory made with mkdtemp; nothing else is ever removed.
    The sizes come from the environment: CG_RM_RF_LEVELS (default 1,000) and CG_RM_RF_FILES
    (default 10,000); ctest's unit_rm_rf_full runs 5,000 levels and 100,000 files. */
#define _GNU_SOURCE
#include "base/cg_util.h"
#include "base/cg_fs.h"
#include "cg_test.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <stdbool.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>

#define MAX_DIRS 16

static char s_dirs[MAX_DIRS][256]; /* every directory made by s_fresh, for the final sweep */
static int s_ndirs = 0;
static int s_skips = 0;
static int s_levels = 1000; /* the deep case's depth (CG_RM_RF_LEVELS) */
static int s_files = 10000; /* the wide case's files in one directory (CG_RM_RF_FILES) */

/*  Reads VAR as a count between LOW and HIGH into *VALUE; leaves it when unset or bad. */
static void
s_size_from_env (const char *var, int low, int high, int *value)
{
    const char *text = getenv (var);
    char *end = NULL;
    long n = text ? strtol (text, &end, 10) : 0;
    if (text && end != text && *end == '\0' && n >= low && n <= high)
        *value = (int)n;
    else if (text)
        fprintf (stderr, "%s=%s ignored (a count from %d to %d)\n", var, text, low, high);
}

/*  Makes a new empty directory with mkdtemp under $TMPDIR (or /tmp) and copies its path
    to DIR. Returns false on failure. */
static bool
s_fresh (char *dir)
{
    const char *tmp = getenv ("TMPDIR");
    if (!tmp || tmp[0] != '/' || strlen (tmp) > 200)
        tmp = "/tmp";
    if (s_ndirs == MAX_DIRS)
        return false;
    char *slot = s_dirs[s_ndirs];
    snprintf (slot, sizeof s_dirs[0], "%s/cg-test-rm-rf-XXXXXX", tmp);
    if (!mkdtemp (slot))
        return false;
    s_ndirs++;
    strcpy (dir, slot);
    return true;
}

static bool
s_gone (const char *path)
{
    struct stat st;
    return lstat (path, &st) < 0 && errno == ENOENT;
}

static bool
s_exists (const char *path)
{
    struct stat st;
    return lstat (path, &st) == 0;
}

static bool
s_make_file_at (int dir_fd, const char *name)
{
    int fd = openat (dir_fd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0)
        return false;
    close (fd);
    return true;
}

/*  Makes a chain of DEPTH directories named "d" under TOP, with a file every 1,000 levels,
    holding one fd at a time. */
static bool
s_make_deep (const char *top, int depth)
{
    int fd = open (top, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    for (int level = 0; fd >= 0 && level < depth; level++) {
        if (level % 1000 == 0 && !s_make_file_at (fd, "f")) {
            close (fd);
            return false;
        }
        int next = mkdirat (fd, "d", 0755) == 0
                       ? openat (fd, "d", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
                       : -1;
        close (fd);
        fd = next;
    }
    if (fd < 0)
        return false;
    close (fd);
    return true;
}

/*  The highest fd open in this process, from /proc/self/fd. */
static int
s_highest_fd (void)
{
    DIR *dir = opendir ("/proc/self/fd");
    if (!dir)
        return 1024;
    int highest = -1, own = dirfd (dir);
    struct dirent *entry;
    while ((entry = readdir (dir))) {
        int fd = atoi (entry->d_name);
        if (entry->d_name[0] != '.' && fd != own && fd > highest)
            highest = fd;
    }
    closedir (dir);
    return highest;
}

/*  Runs cg_rm_rf on PATH with the soft RLIMIT_NOFILE at LIMIT. Returns its result. */
static int
s_rm_rf_limited (const char *path, rlim_t limit, cg_error_t **err)
{
    struct rlimit saved, low;
    if (getrlimit (RLIMIT_NOFILE, &saved) < 0)
        return cg_error_set (err, errno, "getrlimit: %s", strerror (errno));
    low = saved;
    low.rlim_cur = limit;
    if (setrlimit (RLIMIT_NOFILE, &low) < 0)
        return cg_error_set (err, errno, "setrlimit: %s", strerror (errno));
    int rc = cg_rm_rf (path, err);
    setrlimit (RLIMIT_NOFILE, &saved);
    return rc;
}

static void
s_deep (void)
{
    char name[80];
    snprintf (name, sizeof name, "%d levels with RLIMIT_NOFILE 32", s_levels);
    char top[256];
    CHECK (s_fresh (top), "mkdtemp: %s", strerror (errno));
    CHECK (s_make_deep (top, s_levels), "make the tree: %s", strerror (errno));
    cg_error_t *err = NULL;
    int rc = s_rm_rf_limited (top, 32, &err);
    CHECK (rc == 0, "cg_rm_rf: %s", cg_error_message (err));
    CHECK (s_gone (top), "the tree is gone");
    s_passes++;

    snprintf (name, sizeof name, "%d levels with only three fds to spare", s_levels * 2 / 5);
    CHECK (s_fresh (top), "mkdtemp: %s", strerror (errno));
    CHECK (s_make_deep (top, s_levels * 2 / 5), "make the tree: %s", strerror (errno));
    rc = s_rm_rf_limited (top, (rlim_t)s_highest_fd () + 1 + 3, &err);
    CHECK (rc == 0, "cg_rm_rf: %s", cg_error_message (err));
    CHECK (s_gone (top), "the tree is gone");
    s_passes++;
}

static void
s_wide (void)
{
    char name[80];
    snprintf (name, sizeof name, "%d files in one directory, beside 100 full directories", s_files);
    char top[256];
    CHECK (s_fresh (top), "mkdtemp: %s", strerror (errno));
    int fd = open (top, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    CHECK (fd >= 0, "open %s: %s", top, strerror (errno));
    bool made = true;
    char entry[32];
    for (int i = 0; made && i < s_files; i++) {
        snprintf (entry, sizeof entry, "file-%06d", i);
        made = s_make_file_at (fd, entry);
    }
    for (int i = 0; made && i < 100; i++) {
        snprintf (entry, sizeof entry, "dir-%03d", i);
        int sub = mkdirat (fd, entry, 0755) == 0 ? openat (fd, entry, O_RDONLY | O_DIRECTORY) : -1;
        made = sub >= 0 && s_make_file_at (sub, "a") && s_make_file_at (sub, "b");
        if (sub >= 0)
            close (sub);
    }
    close (fd);
    CHECK (made, "make the tree: %s", strerror (errno));
    cg_error_t *err = NULL;
    int64_t start = cg_now_us ();
    int rc = cg_rm_rf (top, &err);
    printf ("%d files removed in %.1f s\n", s_files, (cg_now_us () - start) / 1e6);
    CHECK (rc == 0, "cg_rm_rf: %s", cg_error_message (err));
    CHECK (s_gone (top), "the tree is gone");
    s_passes++;
}

static bool
s_canary_intact (const char *canary_dir)
{
    char path[300];
    snprintf (path, sizeof path, "%s/file", canary_dir);
    struct stat st;
    cleanup_free char *text = cg_read_file (path, 64, NULL, NULL);
    return lstat (canary_dir, &st) == 0 && S_ISDIR (st.st_mode) && text
           && strcmp (text, "canary") == 0;
}

static void
s_links (void)
{
    const char *name = "links inside the tree are removed, never followed";
    char canary[256], top[256], path[512], target[300];
    CHECK (s_fresh (canary), "mkdtemp: %s", strerror (errno));
    snprintf (path, sizeof path, "%s/file", canary);
    CHECK (cg_write_file (path, "canary", 6, 0644, NULL) == 0, "write the canary");
    CHECK (s_fresh (top), "mkdtemp: %s", strerror (errno));
    snprintf (path, sizeof path, "%s/sub", top);
    CHECK (mkdir (path, 0755) == 0, "mkdir sub");
    snprintf (path, sizeof path, "%s/sub/to-dir", top);
    CHECK (symlink (canary, path) == 0, "link to the canary directory");
    snprintf (path, sizeof path, "%s/to-file", top);
    snprintf (target, sizeof target, "%s/file", canary);
    CHECK (symlink (target, path) == 0, "link to the canary file");
    snprintf (path, sizeof path, "%s/sub/to-dir-slash", top);
    snprintf (target, sizeof target, "%s/", canary);
    CHECK (symlink (target, path) == 0, "link to the canary directory with a slash");
    snprintf (path, sizeof path, "%s/dangling", top);
    CHECK (symlink ("/nonexistent-cg-test", path) == 0, "dangling link");
    cg_error_t *err = NULL;
    int rc = cg_rm_rf (top, &err);
    CHECK (rc == 0, "cg_rm_rf: %s", cg_error_message (err));
    CHECK (s_gone (top), "the tree is gone");
    CHECK (s_canary_intact (canary), "the canary and its file are untouched");
    s_passes++;

    name = "a link as the top path is removed, never followed";
    const char *slashes[] = {"", "/", "//"};
    for (int i = 0; i < 3; i++) {
        CHECK (s_fresh (top), "mkdtemp: %s", strerror (errno));
        snprintf (path, sizeof path, "%s/top-link", top);
        CHECK (symlink (canary, path) == 0, "link to the canary directory");
        char arg[600];
        snprintf (arg, sizeof arg, "%s/top-link%s", top, slashes[i]);
        rc = cg_rm_rf (arg, &err);
        CHECK (rc == 0, "cg_rm_rf %s: %s", arg, cg_error_message (err));
        CHECK (s_gone (path), "%s: the link is gone", arg);
        CHECK (s_canary_intact (canary), "%s: the canary and its file are untouched", arg);
        CHECK (cg_rm_rf (top, &err) == 0 && s_gone (top), "clean up: %s", cg_error_message (err));
    }
    s_passes++;
    CHECK (cg_rm_rf (canary, &err) == 0 && s_gone (canary), "clean up: %s", cg_error_message (err));
}

/*  The checks of s_mount, with a tmpfs at TOP/a/mnt holding a file "kept". */
static void
s_mount_checks (const char *top)
{
    const char *name = "a mount inside the tree is not crossed";
    char path[512];
    cg_error_t *err = NULL;
    int rc = cg_rm_rf (top, &err);
    CHECK (rc == -1 && err, "cg_rm_rf returned %d", rc);
    CHECK (strstr (cg_error_message (err), "a/mnt"), "the error names the mount: %s",
           cg_error_message (err));
    fprintf (stderr, "as expected: %.200s\n", cg_error_message (err));
    cg_error_destroy (&err);
    snprintf (path, sizeof path, "%s/a/mnt/kept", top);
    CHECK (s_exists (path), "the file inside the mount survives");
    const char *gone[] = {"a/b", "a/c", "a/d", "a/f", "g", "h"};
    for (size_t i = 0; i < sizeof gone / sizeof gone[0]; i++) {
        snprintf (path, sizeof path, "%s/%s", top, gone[i]);
        CHECK (s_gone (path), "%s is removed", gone[i]);
    }
    s_passes++;
}

static void
s_mount (void)
{
    const char *name = "a mount inside the tree";
    char top[256], path[600], mnt[300];
    CHECK (s_fresh (top), "mkdtemp: %s", strerror (errno));
    int fd = open (top, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    CHECK (fd >= 0, "open %s: %s", top, strerror (errno));
    bool made =
        mkdirat (fd, "a", 0755) == 0 && mkdirat (fd, "h", 0755) == 0 && s_make_file_at (fd, "g");
    close (fd);
    CHECK (made, "make the tree: %s", strerror (errno));
    /* Siblings on both sides of the mount point in any readdir order, so that the
       directory is re-read after coming back up from them. */
    const char *subs[] = {"b", "mnt", "c", "d"};
    for (int i = 0; i < 4; i++) {
        snprintf (path, sizeof path, "%s/a/%s", top, subs[i]);
        CHECK (mkdir (path, 0755) == 0, "mkdir %s", path);
        snprintf (path, sizeof path, "%s/a/%s/x", top, subs[i]);
        CHECK (cg_write_file (path, "x", 1, 0644, NULL) == 0, "write %s", path);
    }
    snprintf (path, sizeof path, "%s/a/f", top);
    CHECK (cg_write_file (path, "x", 1, 0644, NULL) == 0, "write %s", path);
    snprintf (mnt, sizeof mnt, "%s/a/mnt", top);
    if (mount ("tmpfs", mnt, "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,mode=0755") < 0) {
        CHECK (errno == EPERM, "mount tmpfs on %s: %s", mnt, strerror (errno));
        printf ("skip: %s: mount tmpfs: %s\n", name, strerror (errno));
        s_skips++;
    }
    else {
        snprintf (path, sizeof path, "%s/kept", mnt);
        if (cg_write_file (path, "kept", 4, 0644, NULL) == 0)
            s_mount_checks (top);
        else {
            fprintf (stderr, "FAIL %s: write %s\n", name, path);
            s_failures++;
        }
        CHECK (umount2 (mnt, MNT_DETACH) == 0, "umount %s: %s", mnt, strerror (errno));
    }
    cg_error_t *err = NULL;
    CHECK (cg_rm_rf (top, &err) == 0 && s_gone (top), "clean up: %s", cg_error_message (err));
}

/*  In a child process chrooted into a fresh directory holding a canary, so that a broken
    refusal can only ever reach that directory: "/" and the paths that resolve to it, "",
    and NULL must each fail and touch nothing. */
static void
s_refused (void)
{
    const char *name = "\"/\", \"//\", \"/.\", \"/..\", \"\" and NULL are refused";
    char jail[256], canary[512];
    CHECK (s_fresh (jail), "mkdtemp: %s", strerror (errno));
    snprintf (canary, sizeof canary, "%s/canary", jail);
    CHECK (cg_write_file (canary, "canary", 6, 0644, NULL) == 0, "write the canary");
    const char *paths[] = {"/", "//", "/.", "/..", "/./", "///.//", "", NULL};
    int npaths = sizeof paths / sizeof paths[0];
    fflush (NULL);
    pid_t pid = fork ();
    CHECK (pid >= 0, "fork: %s", strerror (errno));
    if (pid == 0) {
        if (chroot (jail) < 0 && (unshare (CLONE_NEWUSER) < 0 || chroot (jail) < 0))
            _exit (77);
        if (chdir ("/") < 0)
            _exit (77);
        for (int i = 0; i < npaths; i++) {
            cg_error_t *err = NULL;
            int rc = cg_rm_rf (paths[i], &err);
            if (rc != -1 || !err || !s_exists ("/canary"))
                _exit (10 + i);
            cg_error_destroy (&err);
        }
        _exit (0);
    }
    int status = 0;
    CHECK (waitpid (pid, &status, 0) == pid, "waitpid: %s", strerror (errno));
    if (WIFEXITED (status) && WEXITSTATUS (status) == 77) {
        printf ("skip: %s: cannot chroot to test it safely\n", name);
        s_skips++;
    }
    else {
        int code = WIFEXITED (status) ? WEXITSTATUS (status) : -1;
        CHECK (code == 0, "%s%s%s was not refused, or touched the tree (exit %d)",
               code >= 10 && code < 10 + npaths && paths[code - 10] ? "\"" : "",
               code >= 10 && code < 10 + npaths ? (paths[code - 10] ? paths[code - 10] : "NULL")
                                                : "a path",
               code >= 10 && code < 10 + npaths && paths[code - 10] ? "\"" : "", code);
        CHECK (s_exists (canary), "the canary is untouched");
        s_passes++;
    }
    cg_error_t *err = NULL;
    CHECK (cg_rm_rf (jail, &err) == 0 && s_gone (jail), "clean up: %s", cg_error_message (err));
}

/*  Whether DIR holds an entry after NAME in readdir order. */
static bool
s_after (const char *dir_path, const char *name)
{
    DIR *dir = opendir (dir_path);
    bool seen = false, after = false;
    struct dirent *entry;
    while (dir && !after && (entry = readdir (dir)))
        if (entry->d_name[0] != '.') {
            after = seen;
            seen = seen || strcmp (entry->d_name, name) == 0;
        }
    if (dir)
        closedir (dir);
    return after;
}

/*  As an unprivileged user, in a child: a directory that cannot be searched (mode 0600)
    has no usable "..", so the way back up is by names from the top; what cannot be
    removed in it is a failure and the rest of the tree still goes. */
static void
s_unsearchable (void)
{
    const char *name = "a directory that cannot be searched, as a user";
    char top[256], path[512];
    CHECK (s_fresh (top), "mkdtemp: %s", strerror (errno));
    const char *dirs[] = {"", "/a", "/b", "/c"};
    for (int i = 0; i < 4; i++) {
        snprintf (path, sizeof path, "%s%s", top, dirs[i]);
        CHECK (i == 0 || mkdir (path, 0755) == 0, "mkdir %s", path);
        CHECK (chown (path, 65534, 65534) == 0, "chown %s: %s", path, strerror (errno));
        if (i == 0)
            continue;
        snprintf (path, sizeof path, "%s%s/x", top, dirs[i]);
        CHECK (cg_write_file (path, "x", 1, 0644, NULL) == 0, "write %s", path);
    }
    /* Siblings until one comes after "a" in readdir order: without a way back up from
       "a", that one would stay. */
    int siblings = 0;
    while (!s_after (top, "a")) {
        CHECK (siblings < 500, "no sibling comes after a");
        snprintf (path, sizeof path, "%s/s%03d", top, siblings++);
        CHECK (mkdir (path, 0755) == 0 && chown (path, 65534, 65534) == 0, "mkdir %s", path);
    }
    snprintf (path, sizeof path, "%s/a", top);
    CHECK (chmod (path, 0600) == 0, "chmod %s", path);
    fflush (NULL);
    pid_t pid = fork ();
    CHECK (pid >= 0, "fork: %s", strerror (errno));
    if (pid == 0) {
        if (setgroups (0, NULL) < 0 || setgid (65534) < 0 || setuid (65534) < 0)
            _exit (77);
        cg_error_t *err = NULL;
        int rc = cg_rm_rf (top, &err);
        fprintf (stderr, "as expected: %.200s\n", cg_error_message (err));
        _exit (rc == -1 && err && strstr (cg_error_message (err), "a/x") ? 0 : 1);
    }
    int status = 0;
    CHECK (waitpid (pid, &status, 0) == pid, "waitpid: %s", strerror (errno));
    if (WIFEXITED (status) && WEXITSTATUS (status) == 77) {
        printf ("skip: %s: cannot become a user\n", name);
        s_skips++;
    }
    else {
        CHECK (WIFEXITED (status) && WEXITSTATUS (status) == 0,
               "cg_rm_rf did not fail naming a/x (status %d)", status);
        snprintf (path, sizeof path, "%s/a/x", top);
        CHECK (s_exists (path), "a/x stays");
        snprintf (path, sizeof path, "%s/b", top);
        CHECK (s_gone (path), "b is removed");
        snprintf (path, sizeof path, "%s/c", top);
        CHECK (s_gone (path), "c is removed");
        for (int i = 0; i < siblings; i++) {
            snprintf (path, sizeof path, "%s/s%03d", top, i);
            CHECK (s_gone (path), "s%03d is removed", i);
        }
        s_passes++;
    }
    cg_error_t *err = NULL;
    CHECK (cg_rm_rf (top, &err) == 0 && s_gone (top), "clean up: %s", cg_error_message (err));
}

static void
s_missing (void)
{
    const char *name = "a path that does not exist is already removed";
    char top[256], path[512];
    CHECK (s_fresh (top), "mkdtemp: %s", strerror (errno));
    cg_error_t *err = NULL;
    snprintf (path, sizeof path, "%s/no-such-entry", top);
    CHECK (cg_rm_rf (path, &err) == 0, "%s: %s", path, cg_error_message (err));
    snprintf (path, sizeof path, "%s/no/such/entry", top);
    CHECK (cg_rm_rf (path, &err) == 0, "%s: %s", path, cg_error_message (err));
    CHECK (cg_rm_rf (top, &err) == 0 && s_gone (top), "clean up: %s", cg_error_message (err));
    CHECK (cg_rm_rf (top, &err) == 0, "again: %s", cg_error_message (err));
    s_passes++;
}

int
main (void)
{
    int64_t start = cg_now_us ();
    s_size_from_env ("CG_RM_RF_LEVELS", 100, 100000, &s_levels);
    s_size_from_env ("CG_RM_RF_FILES", 1000, 1000000, &s_files);
    void (*cases[]) (void) = {s_refused,      s_missing, s_links, s_mount,
                              s_unsearchable, s_deep,    s_wide};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int64_t case_start = cg_now_us ();
        cases[i]();
        printf ("case %zu: %.1f s\n", i + 1, (cg_now_us () - case_start) / 1e6);
    }
    /* What a failed case left behind, for whoever reads the log. */
    for (int i = 0; i < s_ndirs; i++)
        if (s_exists (s_dirs[i]))
            fprintf (stderr, "left behind: %s\n", s_dirs[i]);
    printf ("%d passed, %d skipped, %d failed in %.1f s\n", s_passes, s_skips, s_failures,
            (cg_now_us () - start) / 1e6);
    return s_failures ? 1 : 0;
}
