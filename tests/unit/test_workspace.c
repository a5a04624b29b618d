/*  test_workspace — host-side workspace access against a hostile workspace: planted
    symlinks (to /etc/passwd, to /, to .., to another directory), a FIFO, an oversized file,
    bad names; path rules, uploads, listings, snapshots and MIME types. */
#define _GNU_SOURCE
#include "artifacts/cg_workspace.h"
#include "base/cg_util.h"
#include "base/cg_fs.h"
#include "cg_test.h"

#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

//  Checks that ERR carries CODE (and, when not NULL, a message containing NEEDLE), then
//  frees it.
static bool
s_error_is (cg_error_t **err, int code, const char *needle)
{
    bool ok = *err && (*err)->code == code && (!needle || strstr ((*err)->message, needle));
    if (!ok)
        fprintf (stderr, "  got %s (code %d), want code %d%s%s\n", cg_error_message (*err),
                 *err ? (*err)->code : 0, code, needle ? " with " : "", needle ? needle : "");
    cg_error_destroy (err);
    return ok;
}

static void
s_put (const char *dir, const char *rel, const char *content)
{
    cleanup_free char *path = cg_strdupf ("%s/%s", dir, rel);
    cg_error_t *err = NULL;
    if (cg_write_file (path, content, strlen (content), 0644, &err) < 0) {
        fprintf (stderr, "fixture %s: %s\n", path, cg_error_message (err));
        exit (2);
    }
}

static void
s_run (const char *command)
{
    if (system (command) != 0) {
        fprintf (stderr, "fixture command failed: %s\n", command);
        exit (2);
    }
}

static char *
s_slurp (const char *path)
{
    cg_error_t *err = NULL;
    char *text = cg_read_file (path, 1 << 20, NULL, &err);
    cg_error_destroy (&err);
    return text;
}

//  ---------------------------------------------------------------------------------------

static void
s_test_paths (void)
{
    static const char *rejected[] = {
        "../x",
        "/etc/passwd",
        "a/../../b",
        "",
        "/mnt/data",
        "/mnt/data/",
        "/mnt/datax/y",
        "a\nb",
        "a\x01"
        "b",
        "a\x7f"
        "b",
        ".",
        "./",
        "x/..",
        "\xff\xfe",
        "/mnt/data/..",
    };
    for (size_t i = 0; i < sizeof rejected / sizeof rejected[0]; i++) {
        cg_error_t *err = NULL;
        char *out = cg_workspace_normalize (rejected[i], &err);
        EXPECT (out == NULL && s_error_is (&err, EINVAL, NULL), "normalize accepted rejected[%zu]",
                i);
        free (out);
        out = cg_workspace_sanitize_filename (rejected[i], &err);
        EXPECT (out == NULL && s_error_is (&err, EINVAL, NULL), "sanitize accepted rejected[%zu]",
                i);
        free (out);
    }
    char long_name[301];
    memset (long_name, 'a', 300);
    long_name[300] = '\0';
    cleanup_free char *long_component = cg_strdupf ("dir/%s.csv", long_name);
    cg_error_t *err = NULL;
    char *out = cg_workspace_normalize (long_component, &err);
    EXPECT (out == NULL && s_error_is (&err, EINVAL, "255"), "300-byte component accepted");
    free (out);

    //  Many short components: each is fine, the whole is over 1024 bytes.
    char total[1100 * 2 + 1];
    for (int i = 0; i < 1100; i++)
        total[2 * i] = 'a', total[2 * i + 1] = '/';
    total[sizeof total - 2] = 'b';
    total[sizeof total - 1] = '\0';
    out = cg_workspace_normalize (total, &err);
    EXPECT (out == NULL && s_error_is (&err, EINVAL, "1024"), "path over 1024 bytes accepted");
    free (out);

    out = cg_workspace_normalize_len ("a\0b", 3, &err);
    EXPECT (out == NULL && s_error_is (&err, EINVAL, "NUL"), "embedded NUL accepted");
    free (out);
    out = cg_workspace_normalize ("../x", &err);
    EXPECT (out == NULL && s_error_is (&err, EINVAL, ".."), "message for .. does not say why");
    free (out);
    out = cg_workspace_normalize ("/etc/passwd", &err);
    EXPECT (out == NULL && s_error_is (&err, EINVAL, "outside /mnt/data"),
            "message for /etc/passwd does not say why");
    free (out);

    static const char *accepted[][2] = {
        {"/mnt/data/x.csv", "x.csv"},
        {"./a//b", "a/b"},
        {"x.csv", "x.csv"},
        {"/mnt/data//a/./b/", "a/b"},
        {"in/sales.csv", "in/sales.csv"},
        {"données/é.txt", "données/é.txt"},
        {"a/", "a"},
    };
    for (size_t i = 0; i < sizeof accepted / sizeof accepted[0]; i++) {
        out = cg_workspace_normalize (accepted[i][0], &err);
        EXPECT (out && strcmp (out, accepted[i][1]) == 0, "normalize \"%s\" gave \"%s\" (%s)",
                accepted[i][0], out ? out : "NULL", cg_error_message (err));
        cg_error_destroy (&err);
        free (out);
    }
    out = cg_workspace_sanitize_filename ("in/sales.csv", &err);
    EXPECT (out && strcmp (out, "in/sales.csv") == 0, "sanitize in/sales.csv: %s",
            cg_error_message (err));
    cg_error_destroy (&err);
    free (out);
    out = cg_workspace_sanitize_filename ("/mnt/data/x.csv", &err);
    EXPECT (out && strcmp (out, "x.csv") == 0, "sanitize /mnt/data/x.csv: %s",
            cg_error_message (err));
    cg_error_destroy (&err);
    free (out);
    static const char *directories[] = {"a/", "in/sub/", "in/."};
    for (size_t i = 0; i < sizeof directories / sizeof directories[0]; i++) {
        out = cg_workspace_sanitize_filename (directories[i], &err);
        EXPECT (out == NULL && s_error_is (&err, EINVAL, "directory"), "sanitize accepted \"%s\"",
                directories[i]);
        free (out);
    }
}

//  Every way of reaching host content through a planted link fails with ELOOP and returns
//  nothing.
static void
s_test_links (cg_workspace_t *ws, const char *ws_name, const char *mode)
{
    cleanup_free char *through_parent = cg_strdupf ("d/%s/hello.csv", ws_name);
    const char *links[][2] = {
        {"leak", "leak"},
        {"rootlink/etc/passwd", "rootlink"},
        {"rootlink/etc/shadow", "rootlink"},
        {"linkdir/inner.txt", "linkdir"},
        {through_parent, "d"},
        {"planted", "planted"},
        {"real/innerlink", "real/innerlink"},
    };
    for (size_t i = 0; i < sizeof links / sizeof links[0]; i++) {
        cg_error_t *err = NULL;
        struct stat st;
        size_t len = 0;
        char *content = cg_workspace_read (ws, links[i][0], 1 << 20, &len, &st, &err);
        cleanup_free char *needle = cg_strdupf (
            "/mnt/data/%s is a symbolic link; cellgate does not follow links", links[i][1]);
        EXPECT (content == NULL && s_error_is (&err, ELOOP, needle),
                "%s: read %s did not fail with ELOOP", mode, links[i][0]);
        free (content);
        int fd = cg_workspace_open_file (ws, links[i][0], O_RDONLY, &st, &err);
        EXPECT (fd < 0 && s_error_is (&err, ELOOP, NULL), "%s: open %s did not fail with ELOOP",
                mode, links[i][0]);
        if (fd >= 0)
            close (fd);
        fd = cg_workspace_open_file (ws, links[i][0], O_WRONLY | O_TRUNC, NULL, &err);
        EXPECT (fd < 0 && s_error_is (&err, ELOOP, NULL),
                "%s: open %s for writing did not fail with ELOOP", mode, links[i][0]);
        if (fd >= 0)
            close (fd);
    }
}

static void
s_test_reads (cg_workspace_t *ws, const char *mode)
{
    cg_error_t *err = NULL;
    struct stat st;
    size_t len = 0;
    char *content = cg_workspace_read (ws, "hello.csv", 4096, &len, &st, &err);
    EXPECT (content && len == 8 && strcmp (content, "a,b\n1,2\n") == 0 && st.st_size == 8,
            "%s: read hello.csv: %s", mode, cg_error_message (err));
    cg_error_destroy (&err);
    free (content);
    content = cg_workspace_read (ws, "nested/a/b/c/deep.txt", 4096, &len, NULL, &err);
    EXPECT (content && strcmp (content, "deep") == 0, "%s: read nested file: %s", mode,
            cg_error_message (err));
    cg_error_destroy (&err);
    free (content);

    //  A FIFO must not block, for reading or writing.
    alarm (10);
    int64_t started = cg_now_us ();
    int fd = cg_workspace_open_file (ws, "fifo", O_RDONLY, NULL, &err);
    EXPECT (fd < 0 && s_error_is (&err, EINVAL, "not a regular file"),
            "%s: FIFO opened for reading", mode);
    fd = cg_workspace_open_file (ws, "fifo", O_WRONLY, NULL, &err);
    EXPECT (fd < 0 && s_error_is (&err, EINVAL, "not a regular file"),
            "%s: FIFO opened for writing", mode);
    content = cg_workspace_read (ws, "fifo", 4096, &len, NULL, &err);
    EXPECT (content == NULL && s_error_is (&err, EINVAL, NULL), "%s: FIFO read", mode);
    alarm (0);
    EXPECT (cg_now_us () - started < 2000000, "%s: FIFO opens took %lld us", mode,
            (long long)(cg_now_us () - started));

    memset (&st, 0, sizeof st);
    content = cg_workspace_read (ws, "big.bin", 4096, &len, &st, &err);
    EXPECT (content == NULL && st.st_size == 5000 && s_error_is (&err, EFBIG, "5000"),
            "%s: big.bin not EFBIG", mode);
    content = cg_workspace_read (ws, "big.bin", 5000, &len, &st, &err);
    EXPECT (content && len == 5000, "%s: big.bin at its exact size: %s", mode,
            cg_error_message (err));
    cg_error_destroy (&err);
    free (content);

    content = cg_workspace_read (ws, "real", 4096, &len, NULL, &err);
    EXPECT (content == NULL && s_error_is (&err, EISDIR, "is a directory"), "%s: directory read",
            mode);
    content = cg_workspace_read (ws, "missing.txt", 4096, &len, NULL, &err);
    EXPECT (content == NULL && s_error_is (&err, ENOENT, "does not exist"), "%s: missing file",
            mode);
    content = cg_workspace_read (ws, "hello.csv/x", 4096, &len, NULL, &err);
    EXPECT (content == NULL && s_error_is (&err, ENOTDIR, NULL), "%s: file used as a directory",
            mode);
    content = cg_workspace_read (ws, "../etc/passwd", 4096, &len, NULL, &err);
    EXPECT (content == NULL && s_error_is (&err, EINVAL, NULL), "%s: non-canonical path read",
            mode);
    content = cg_workspace_read (ws, "/etc/passwd", 4096, &len, NULL, &err);
    EXPECT (content == NULL && s_error_is (&err, EINVAL, NULL), "%s: absolute path read", mode);
}

static void
s_test_list (cg_workspace_t *ws, const char *ws_dir)
{
    cg_error_t *err = NULL;
    json_t *list = cg_workspace_list (ws, &err);
    EXPECT (list, "list: %s", cg_error_message (err));
    cg_error_destroy (&err);
    if (!list)
        return;
    static const char *expected[] = {
        "/mnt/data/big.bin",
        "/mnt/data/hello.csv",
        "/mnt/data/nested/a/b/c/deep.txt",
        "/mnt/data/real/inner.txt",
    };
    json_t *artifacts = json_object_get (list, "artifacts");
    size_t count = json_array_size (artifacts);
    EXPECT (count == 4, "list has %zu artifacts, want 4", count);
    for (size_t i = 0; i < count && i < 4; i++) {
        const char *path =
            json_string_value (json_object_get (json_array_get (artifacts, i), "path"));
        EXPECT (path && strcmp (path, expected[i]) == 0, "artifact %zu is %s, want %s", i,
                path ? path : "NULL", expected[i]);
    }
    json_t *hello = json_array_get (artifacts, 1);
    cleanup_free char *hello_path = cg_strdupf ("%s/hello.csv", ws_dir);
    struct stat st;
    stat (hello_path, &st);
    EXPECT (strcmp (json_string_value (json_object_get (hello, "filename")), "hello.csv") == 0
                && json_integer_value (json_object_get (hello, "size_bytes")) == 8
                && strcmp (json_string_value (json_object_get (hello, "mime_type")), "text/csv")
                       == 0
                && json_integer_value (json_object_get (hello, "mtime_ns"))
                       == (json_int_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec,
            "hello.csv fields differ");
    json_t *deep = json_array_get (artifacts, 2);
    EXPECT (strcmp (json_string_value (json_object_get (deep, "filename")), "deep.txt") == 0,
            "deep.txt filename");
    EXPECT (json_is_false (json_object_get (list, "truncated")), "list truncated");
    EXPECT (json_integer_value (json_object_get (list, "skipped")) == 2,
            "list skipped %lld names, want 2",
            (long long)json_integer_value (json_object_get (list, "skipped")));
    char *text = json_dumps (list, JSON_COMPACT);
    EXPECT (text && !strstr (text, "leak") && !strstr (text, "root:") && !strstr (text, "fifo")
                && !strstr (text, "linkdir") && !strstr (text, "planted")
                && !strstr (text, "/mnt/data/d/"),
            "list shows a link, a FIFO or host content: %s", text);
    free (text);
    json_decref (list);
}

static void
s_test_writes (cg_workspace_t *ws, const char *ws_dir, const char *outside, const char *mode)
{
    cg_error_t *err = NULL;
    //  Root may hand files to anyone; otherwise only to ourselves.
    uid_t uid = geteuid () == 0 ? 4242 : geteuid ();
    gid_t gid = geteuid () == 0 ? 4343 : getegid ();

    int rc = cg_workspace_write (ws, "hello.csv", "new", 3, false, uid, gid, &err);
    EXPECT (
        rc < 0
            && s_error_is (&err, EEXIST,
                           "/mnt/data/hello.csv already exists. Set overwrite=true to replace."),
        "%s: overwrite=false over an existing file", mode);
    cleanup_free char *hello_path = cg_strdupf ("%s/hello.csv", ws_dir);
    cleanup_free char *hello = s_slurp (hello_path);
    EXPECT (hello && strcmp (hello, "a,b\n1,2\n") == 0, "%s: hello.csv changed", mode);

    rc = cg_workspace_write (ws, "leak", "x", 1, false, uid, gid, &err);
    EXPECT (rc < 0 && s_error_is (&err, EEXIST, NULL), "%s: overwrite=false over a symlink", mode);

    //  The planted link is replaced; the file it points to is untouched.
    cleanup_free char *target_path = cg_strdupf ("%s/target.txt", outside);
    rc = cg_workspace_write (ws, "planted", "replaced", 8, true, uid, gid, &err);
    EXPECT (rc == 0, "%s: overwrite planted link: %s", mode, cg_error_message (err));
    cg_error_destroy (&err);
    cleanup_free char *target = s_slurp (target_path);
    EXPECT (target && strcmp (target, "ORIGINAL") == 0, "%s: link target modified: %s", mode,
            target ? target : "NULL");
    cleanup_free char *planted_path = cg_strdupf ("%s/planted", ws_dir);
    struct stat st;
    EXPECT (lstat (planted_path, &st) == 0 && S_ISREG (st.st_mode) && st.st_size == 8
                && (st.st_mode & 07777) == 0644 && st.st_uid == uid && st.st_gid == gid,
            "%s: planted is not the new regular file", mode);

    rc = cg_workspace_write (ws, "plantdir/new.txt", "x", 1, true, uid, gid, &err);
    EXPECT (rc < 0 && s_error_is (&err, ELOOP, "/mnt/data/plantdir is a symbolic link"),
            "%s: write through parent link", mode);
    rc = cg_workspace_write (ws, "plantdir/new.txt", "x", 1, false, uid, gid, &err);
    EXPECT (rc < 0 && s_error_is (&err, ELOOP, NULL), "%s: create through parent link", mode);
    rc = cg_workspace_write (ws, "linkdir/sub/new.txt", "x", 1, true, uid, gid, &err);
    EXPECT (rc < 0 && s_error_is (&err, ELOOP, "/mnt/data/linkdir is"),
            "%s: write through inner parent link", mode);
    cleanup_free char *escaped = cg_strdupf ("%s/new.txt", outside);
    cleanup_free char *escaped_inner = cg_strdupf ("%s/real/sub", ws_dir);
    EXPECT (access (escaped, F_OK) != 0 && access (escaped_inner, F_OK) != 0,
            "%s: a write escaped through a link", mode);

    rc = cg_workspace_write (ws, "real", "x", 1, true, uid, gid, &err);
    EXPECT (rc < 0 && s_error_is (&err, EISDIR, "is a directory"), "%s: overwrite a directory",
            mode);
    rc = cg_workspace_write (ws, "real", "x", 1, false, uid, gid, &err);
    EXPECT (rc < 0 && s_error_is (&err, EISDIR, "is a directory"), "%s: create over a directory",
            mode);
    rc = cg_workspace_write (ws, "hello.csv/x", "x", 1, true, uid, gid, &err);
    EXPECT (rc < 0 && s_error_is (&err, ENOTDIR, NULL), "%s: file as a parent", mode);
    rc = cg_workspace_write (ws, "../x", "x", 1, true, uid, gid, &err);
    EXPECT (rc < 0 && s_error_is (&err, EINVAL, NULL), "%s: non-canonical write", mode);

    //  New parents are made with the right mode and owner; the files too.
    cleanup_free char *rel = cg_strdupf ("up-%s/in/sales.csv", mode);
    rc = cg_workspace_write (ws, rel, "q,r\n", 4, false, uid, gid, &err);
    EXPECT (rc == 0, "%s: create with parents: %s", mode, cg_error_message (err));
    cg_error_destroy (&err);
    cleanup_free char *top = cg_strdupf ("%s/up-%s", ws_dir, mode);
    cleanup_free char *sub = cg_strdupf ("%s/up-%s/in", ws_dir, mode);
    cleanup_free char *file = cg_strdupf ("%s/%s", ws_dir, rel);
    struct stat top_st, sub_st, file_st;
    EXPECT (lstat (top, &top_st) == 0 && S_ISDIR (top_st.st_mode)
                && (top_st.st_mode & 07777) == 0755 && top_st.st_uid == uid && top_st.st_gid == gid
                && lstat (sub, &sub_st) == 0 && S_ISDIR (sub_st.st_mode)
                && (sub_st.st_mode & 07777) == 0755 && sub_st.st_uid == uid
                && lstat (file, &file_st) == 0 && S_ISREG (file_st.st_mode)
                && (file_st.st_mode & 07777) == 0644 && file_st.st_uid == uid
                && file_st.st_gid == gid && file_st.st_size == 4,
            "%s: parents or file have the wrong type, mode or owner", mode);
    rc = cg_workspace_write (ws, rel, "replaced", 8, true, uid, gid, &err);
    cleanup_free char *content = s_slurp (file);
    EXPECT (rc == 0 && content && strcmp (content, "replaced") == 0,
            "%s: overwrite=true over a file: %s", mode, cg_error_message (err));
    cg_error_destroy (&err);
    cleanup_free char *listing =
        cg_strdupf ("ls -A '%s/up-%s/in' | grep -q cg-write", ws_dir, mode);
    EXPECT (system (listing) != 0, "%s: a temporary file was left behind", mode);
    rc = cg_workspace_write (ws, "empty.txt", NULL, 0, true, (uid_t)-1, (gid_t)-1, &err);
    EXPECT (rc == 0, "%s: empty file: %s", mode, cg_error_message (err));
    cg_error_destroy (&err);
}

static void
s_test_diff (cg_workspace_t *ws, const char *ws_dir)
{
    cg_error_t *err = NULL;
    json_t *before = cg_workspace_snapshot (ws, &err);
    EXPECT (before && json_object_size (before) > 3, "snapshot: %s", cg_error_message (err));
    cg_error_destroy (&err);
    json_t *hello = json_object_get (before, "hello.csv");
    EXPECT (json_integer_value (json_array_get (hello, 0)) == 8, "snapshot size of hello.csv");
    EXPECT (!json_object_get (before, "leak") && !json_object_get (before, "fifo"),
            "snapshot has a link or FIFO");

    s_put (ws_dir, "new.txt", "new");
    s_put (ws_dir, "hello.csv", "a,b\n1,2\n3,4\n");
    cleanup_free char *big = cg_strdupf ("%s/big.bin", ws_dir);
    unlink (big);
    json_t *after = cg_workspace_snapshot (ws, &err);
    EXPECT (after, "snapshot after: %s", cg_error_message (err));
    cg_error_destroy (&err);
    json_t *diff = cg_workspace_diff (before, after);
    json_t *want = json_pack ("{s:[s], s:[s], s:[s]}", "created", "new.txt", "modified",
                              "hello.csv", "deleted", "big.bin");
    char *text = json_dumps (diff, JSON_COMPACT | JSON_SORT_KEYS);
    EXPECT (json_equal (diff, want), "diff is %s", text);
    free (text);
    json_decref (diff);
    json_decref (want);

    json_t *none = cg_workspace_diff (after, after);
    want = json_pack ("{s:[], s:[], s:[]}", "created", "modified", "deleted");
    EXPECT (json_equal (none, want), "diff of equal snapshots is not empty");
    json_decref (none);
    json_decref (want);
    json_t *all = cg_workspace_diff (NULL, after);
    EXPECT (json_array_size (json_object_get (all, "created")) == json_object_size (after),
            "diff from nothing does not create everything");
    json_t *created = json_object_get (all, "created");
    bool sorted = true;
    for (size_t i = 1; i < json_array_size (created); i++)
        if (strcmp (json_string_value (json_array_get (created, i - 1)),
                    json_string_value (json_array_get (created, i)))
            >= 0)
            sorted = false;
    EXPECT (sorted, "created is not sorted");
    json_decref (all);
    json_decref (before);
    json_decref (after);
}

//  The caps: 10000 files, 32 levels.
static void
s_test_limits (const char *base)
{
    cleanup_free char *many = cg_strdupf ("%s/many", base);
    cleanup_free char *command = cg_strdupf (
        "mkdir -p '%s' && cd '%s' && seq -f 'f%%05g' 1 10005 | xargs touch", many, many);
    s_run (command);
    cg_error_t *err = NULL;
    cg_workspace_t *ws = cg_workspace_open (many, &err);
    json_t *list = ws ? cg_workspace_list (ws, &err) : NULL;
    EXPECT (list && json_array_size (json_object_get (list, "artifacts")) == 10000
                && json_is_true (json_object_get (list, "truncated")),
            "10005 files not cut at 10000: %s", cg_error_message (err));
    cg_error_destroy (&err);
    json_decref (list);
    cg_workspace_destroy (&ws);

    cleanup_free char *deep = cg_strdupf ("%s/deep", base);
    command =
        (free (command), cg_strdupf ("mkdir '%s' && cd '%s' && p=. && for i in $(seq 1 40); do "
                                     "p=$p/d$i; mkdir $p; echo x > $p/f.txt; done",
                                     deep, deep));
    s_run (command);
    ws = cg_workspace_open (deep, &err);
    list = ws ? cg_workspace_list (ws, &err) : NULL;
    //  A file may have up to 32 path components: d1/.../d31/f.txt is the deepest listed.
    json_t *artifacts = json_object_get (list, "artifacts");
    bool deepest = false, too_deep = false;
    for (size_t i = 0; i < json_array_size (artifacts); i++) {
        const char *path =
            json_string_value (json_object_get (json_array_get (artifacts, i), "path"));
        deepest |= strstr (path, "/d31/f.txt") != NULL;
        too_deep |= strstr (path, "/d32/") != NULL;
    }
    EXPECT (list && json_array_size (artifacts) == 31
                && json_is_true (json_object_get (list, "truncated")) && deepest && !too_deep,
            "depth limit: %zu files: %s", json_array_size (artifacts), cg_error_message (err));
    cg_error_destroy (&err);
    json_decref (list);
    cg_workspace_destroy (&ws);
}

static void
s_test_mime (void)
{
    static const char *cases[][2] = {
        {"a.csv", "text/csv"},
        {"REPORT.CSV", "text/csv"},
        {"photo.JPeG", "image/jpeg"},
        {"x.jpg", "image/jpeg"},
        {"book.xlsx", "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"},
        {"t.parquet", "application/vnd.apache.parquet"},
        {"in/dir.v1/plot.svg", "image/svg+xml"},
        {"notes.md", "text/markdown"},
        {"data.tsv", "text/tab-separated-values"},
        {"archive.tar.gz", "application/octet-stream"},
        {"Makefile", "application/octet-stream"},
        {"dir.csv/file", "application/octet-stream"},
        {".csv", "application/octet-stream"},
        {"trailing.", "application/octet-stream"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        EXPECT (strcmp (cg_mime_type (cases[i][0]), cases[i][1]) == 0, "mime of %s is %s",
                cases[i][0], cg_mime_type (cases[i][0]));
}

//  Builds the hostile workspace WS_DIR, with links into OUTSIDE.
static void
s_make_fixtures (const char *ws_dir, const char *outside)
{
    s_put (outside, "target.txt", "ORIGINAL");
    cleanup_free char *command = cg_strdupf (
        "set -e; mkdir '%s'; cd '%s'; printf 'a,b\\n1,2\\n' > hello.csv; ln -s /etc/passwd leak; "
        "ln -s / rootlink; "
        "ln -s .. d; mkdir real; printf inner > real/inner.txt; ln -s ../hello.csv real/innerlink; "
        "ln -s real linkdir; "
        "mkfifo fifo; head -c 5000 /dev/zero > big.bin; mkdir -p nested/a/b/c; printf deep > "
        "nested/a/b/c/deep.txt; "
        "printf x > \"$(printf 'bad\\nname.txt')\"; printf x > \"$(printf '\\377.txt')\"; "
        "ln -s '%s/target.txt' planted; ln -s '%s' plantdir",
        ws_dir, ws_dir, outside, outside);
    s_run (command);
}

static void
s_test_open (const char *base, const char *ws_dir)
{
    cg_error_t *err = NULL;
    cleanup_free char *link = cg_strdupf ("%s/wslink", base);
    EXPECT (symlink (ws_dir, link) == 0, "symlink wslink");
    cg_workspace_t *ws = cg_workspace_open (link, &err);
    EXPECT (ws == NULL && s_error_is (&err, ELOOP, "symbolic link"),
            "workspace opened through a symlink");
    cg_workspace_destroy (&ws);
    cleanup_free char *missing = cg_strdupf ("%s/missing", base);
    ws = cg_workspace_open (missing, &err);
    EXPECT (ws == NULL && s_error_is (&err, ENOENT, NULL), "missing workspace opened");
    cleanup_free char *file = cg_strdupf ("%s/hello.csv", ws_dir);
    ws = cg_workspace_open (file, &err);
    EXPECT (ws == NULL && s_error_is (&err, ENOTDIR, NULL), "file opened as a workspace");
}

int
main (void)
{
    if (sodium_init () < 0)
        return 2;
    char base_template[] = "/tmp/cg-ws-test-XXXXXX";
    char outside_template[] = "/tmp/cg-ws-outside-XXXXXX";
    char *base = mkdtemp (base_template);
    char *outside = mkdtemp (outside_template);
    if (!base || !outside) {
        perror ("mkdtemp");
        return 2;
    }
    cleanup_free char *ws_dir = cg_strdupf ("%s/ws", base);
    s_make_fixtures (ws_dir, outside);

    s_test_paths ();
    s_test_open (base, ws_dir);
    cg_error_t *err = NULL;
    cg_workspace_t *ws = cg_workspace_open (ws_dir, &err);
    if (!ws) {
        fprintf (stderr, "open workspace: %s\n", cg_error_message (err));
        return 2;
    }
    for (int walk = 0; walk < 2; walk++) {
        const char *mode = walk ? "walk" : "openat2";
        cg_workspace_use_openat2 (!walk);
        s_test_links (ws, "ws", mode);
        s_test_reads (ws, mode);
    }
    cg_workspace_use_openat2 (true);
    s_test_list (ws, ws_dir);
    cleanup_free char *planted = cg_strdupf ("%s/planted", ws_dir);
    cleanup_free char *target = cg_strdupf ("%s/target.txt", outside);
    for (int walk = 0; walk < 2; walk++) {
        const char *mode = walk ? "walk" : "openat2";
        cg_workspace_use_openat2 (!walk);
        unlink (planted);
        EXPECT (symlink (target, planted) == 0, "plant link");
        s_test_writes (ws, ws_dir, outside, mode);
    }
    cg_workspace_use_openat2 (true);
    s_test_diff (ws, ws_dir);
    cg_workspace_destroy (&ws);
    EXPECT (ws == NULL, "destroy did not clear the pointer");
    s_test_limits (base);
    s_test_mime ();

    if (cg_rm_rf (base, &err) < 0 || cg_rm_rf (outside, &err) < 0)
        fprintf (stderr, "cleanup: %s\n", cg_error_message (err));
    cg_error_destroy (&err);
    printf ("%d passed, %d failed\n", s_passes, s_failures);
    return s_failures ? 1 : 0;
}
