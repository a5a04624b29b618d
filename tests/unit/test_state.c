/*  Unit tests: the state dir's format (cg_state_open) — a new dir gets the file, a dir of
    0.1.0 (no file) is migrated and keeps what it holds, a newer format and a file that is not
    one are refused with the dir left as it was. */
#define _GNU_SOURCE
#include "bridge/cg_state.h"
#include "base/cg_fs.h"
#include "base/cg_util.h"
#include "cg_test.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char s_root[] = "/tmp/cg-test-state-XXXXXX";

//  Makes a fresh dir NAME below the test's root; returns its path (the caller frees it).
static char *
s_dir (const char *name)
{
    char *dir = cg_strdupf ("%s/%s", s_root, name);
    cg_mkdir_p (dir, 0700, NULL);
    return dir;
}

//  The format file's "format" in DIR, or -1 when it is missing or not one.
static int
s_format_in (const char *dir)
{
    cleanup_free char *path = cg_strdupf ("%s/format", dir);
    json_t *json = cg_read_json_object (path, 4096);
    int format = json_is_integer (json_object_get (json, "format"))
                     ? (int)json_integer_value (json_object_get (json, "format"))
                     : -1;
    json_decref (json);
    return format;
}

static void
s_new_dir (void)
{
    const char *name = "new";
    cleanup_free char *dir = cg_strdupf ("%s/new/below", s_root); /* not there yet */
    int had = 0;
    cg_error_t *err = NULL;
    CHECK (cg_state_open (dir, &had, &err) == 0, "%s", cg_error_message (err));
    CHECK (had == -1, "a new dir had format %d", had);
    CHECK (s_format_in (dir) == CG_STATE_FORMAT, "format file: %d", s_format_in (dir));
    struct stat st;
    CHECK (stat (dir, &st) == 0 && (st.st_mode & 0777) == 0755, "mode %o", st.st_mode & 0777);
    CHECK (cg_state_open (dir, &had, &err) == 0 && had == CG_STATE_FORMAT, "again: %d", had);
    s_passes++;
}

static void
s_release_0_1_0 (void)
{
    const char *name = "0.1.0";
    cleanup_free char *dir = s_dir ("old");
    cleanup_free char *logs = cg_strdupf ("%s/logs", dir);
    cg_mkdir_p (logs, 0700, NULL);
    cleanup_free char *token = cg_strdupf ("%s/admin-token", dir);
    cg_write_file (token, "0123456789abcdef", 16, 0600, NULL);
    int had = 7;
    cg_error_t *err = NULL;
    CHECK (cg_state_open (dir, &had, &err) == 0, "%s", cg_error_message (err));
    CHECK (had == 0, "0.1.0's dir had format %d", had);
    CHECK (s_format_in (dir) == CG_STATE_FORMAT, "format file: %d", s_format_in (dir));
    size_t len = 0;
    cleanup_free char *kept = cg_read_file (token, 64, &len, NULL);
    CHECK (kept && len == 16 && memcmp (kept, "0123456789abcdef", 16) == 0, "the token changed");
    s_passes++;
}

//  A dir whose format file holds TEXT is refused, with WANT in the message, and left as it was.
static void
s_refused (const char *label, const char *text, const char *want)
{
    const char *name = label;
    cleanup_free char *dir = s_dir (label);
    cleanup_free char *path = cg_strdupf ("%s/format", dir);
    cg_write_file (path, text, strlen (text), 0600, NULL);
    cg_error_t *err = NULL;
    CHECK (cg_state_open (dir, NULL, &err) == -1, "accepted");
    CHECK (strstr (cg_error_message (err), want), "message: %s", cg_error_message (err));
    cg_error_destroy (&err);
    size_t len = 0;
    cleanup_free char *after = cg_read_file (path, 4096, &len, NULL);
    CHECK (after && len == strlen (text) && memcmp (after, text, len) == 0, "the file changed");
    s_passes++;
}

static void
s_link_refused (void)
{
    const char *name = "link";
    cleanup_free char *dir = s_dir ("link");
    cleanup_free char *target = cg_strdupf ("%s/elsewhere", s_root);
    cg_write_file (target, "{\"format\": 1}", 13, 0600, NULL);
    cleanup_free char *path = cg_strdupf ("%s/format", dir);
    CHECK (symlink (target, path) == 0, "symlink: %s", strerror (errno));
    cg_error_t *err = NULL;
    CHECK (cg_state_open (dir, NULL, &err) == -1, "a link was followed");
    CHECK (strstr (cg_error_message (err), "not a cellgate format file"), "message: %s",
           cg_error_message (err));
    cg_error_destroy (&err);
    s_passes++;
}

int
main (void)
{
    if (!mkdtemp (s_root))
        return 1;
    s_new_dir ();
    s_release_0_1_0 ();
    s_refused ("newer", "{\"format\": 2, \"written_by\": \"9.9.9\"}",
               "has format 2, written by cellgate 9.9.9");
    s_refused ("garbled", "format=1\n", "not a cellgate format file");
    s_refused ("zero", "{\"format\": 0}", "not a cellgate format file");
    s_refused ("string", "{\"format\": \"1\"}", "not a cellgate format file");
    s_link_refused ();
    cg_rm_rf (s_root, NULL);
    printf ("state: %d passed, %d failed\n", s_passes, s_failures);
    return s_failures ? 1 : 0;
}
