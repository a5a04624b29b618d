/*  Unit tests: cg_write_file_at in a directory that untrusted code can write — links and
    FIFOs planted at the final name are replaced, never followed or opened, and the file
    has its owner and mode before it has its name. */
#define _GNU_SOURCE
#include "base/cg_util.h"
#include "base/cg_fs.h"
#include "cg_test.h"

#include <fcntl.h>
#include <stdbool.h>
#include <string.h>
#include <sys/stat.h>

static char s_dir[] = "/tmp/cg-test-write-XXXXXX";
static char s_canary_dir[] = "/tmp/cg-test-canary-XXXXXX";
static char s_canary[64]; /* a host file the links point to */

static bool
s_canary_intact (void)
{
    struct stat st;
    cleanup_free char *text = cg_read_file (s_canary, 64, NULL, NULL);
    return stat (s_canary, &st) == 0 && (st.st_mode & 07777) == 0600 && st.st_uid == getuid ()
           && text && strcmp (text, "canary") == 0;
}

static void
s_link_replaced (void)
{
    const char *name = "link at the name is replaced";
    cleanup_close int dir_fd = open (s_dir, O_RDONLY | O_DIRECTORY);
    CHECK (symlinkat (s_canary, dir_fd, "target") == 0, "plant link");
    CHECK (cg_write_file_at (dir_fd, "target", "new", 3, 0400, getuid () == 0 ? 65532 : (uid_t)-1,
                             getuid () == 0 ? 65532 : (gid_t)-1, NULL)
               == 0,
           "write");
    struct stat st;
    CHECK (fstatat (dir_fd, "target", &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG (st.st_mode),
           "a regular file replaced the link");
    CHECK ((st.st_mode & 07777) == 0400, "mode 0400, got %o", st.st_mode & 07777);
    if (getuid () == 0)
        CHECK (st.st_uid == 65532 && st.st_gid == 65532, "owned by 65532, got %d", (int)st.st_uid);
    CHECK (s_canary_intact (), "the canary is untouched");
    s_passes++;
}

static void
s_fifo_replaced (void)
{
    const char *name = "FIFO at the name is replaced without blocking";
    cleanup_close int dir_fd = open (s_dir, O_RDONLY | O_DIRECTORY);
    CHECK (mkfifoat (dir_fd, "fifo", 0666) == 0, "plant FIFO");
    CHECK (cg_write_file_at (dir_fd, "fifo", "x", 1, 0644, (uid_t)-1, (gid_t)-1, NULL) == 0,
           "write");
    struct stat st;
    CHECK (fstatat (dir_fd, "fifo", &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG (st.st_mode),
           "a regular file replaced the FIFO");
    s_passes++;
}

static void
s_by_path (void)
{
    const char *name = "cg_write_file by path";
    cleanup_free char *path = cg_strdupf ("%s/plain", s_dir);
    CHECK (cg_write_file (path, "abc", 3, 0600, NULL) == 0, "write");
    cleanup_free char *text = cg_read_file (path, 16, NULL, NULL);
    CHECK (text && strcmp (text, "abc") == 0, "content");
    cg_error_t *err = NULL;
    CHECK (cg_write_file ("/nonexistent-dir/x", "a", 1, 0600, &err) < 0 && err, "error");
    CHECK (strstr (cg_error_message (err), "/nonexistent-dir"), "message names the dir: %s",
           cg_error_message (err));
    cg_error_destroy (&err);
    s_passes++;
}

int
main (void)
{
    if (!mkdtemp (s_dir) || !mkdtemp (s_canary_dir))
        return 1;
    snprintf (s_canary, sizeof s_canary, "%s/file", s_canary_dir);
    if (cg_write_file (s_canary, "canary", 6, 0600, NULL) < 0)
        return 1;
    s_link_replaced ();
    s_fifo_replaced ();
    s_by_path ();
    cg_rm_rf (s_dir, NULL);
    cg_rm_rf (s_canary_dir, NULL);
    printf ("%d passed, %d failed\n", s_passes, s_failures);
    return s_failures ? 1 : 0;
}
