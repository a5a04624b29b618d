/*  Unit tests for cg_scripts: names, saving in seed 002's layout, versions, the index and
    its rebuild, run records, search ranking, and symbolic links that are never followed. */
#include "artifacts/cg_scripts.h"
#include "base/cg_util.h"
#include "base/cg_fs.h"
#include "cg_test.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>

static char s_root[] = "/tmp/cg-test-scripts-XXXXXX";
static const cg_scripts_limits_t s_limits = {.versions = 50, .scripts = 1000, .bytes = 1 << 30};

static json_t *
s_fields (const char *language, const char *description)
{
    return json_pack ("{s:s, s:s, s:[s, s], s:[s]}", "language", language, "description",
                      description, "tags", "excel", "finance", "packages", "pandas");
}

static char *
s_path (const char *rel)
{
    return cg_strdupf ("%s/lib/%s", s_root, rel);
}

static bool
s_exists (const char *rel)
{
    cleanup_free char *path = s_path (rel);
    struct stat st;
    return lstat (path, &st) == 0;
}

static void
s_test_names (void)
{
    const char *good[] = {"a", "parse-excel-report", "x_1.2", "9lives", NULL};
    const char *bad[] = {"",      ".",    "..",  "../x",  "a/b", "/abs", ".hidden",
                         "-dash", "a..b", "a b", "tab\t", "é",   NULL};
    for (int i = 0; good[i]; i++)
        EXPECT (cg_scripts_valid_name (good[i]), "'%s' is a name", good[i]);
    for (int i = 0; bad[i]; i++)
        EXPECT (!cg_scripts_valid_name (bad[i]), "'%s' is not a name", bad[i]);
    char long_name[66];
    memset (long_name, 'a', 65);
    long_name[65] = '\0';
    EXPECT (!cg_scripts_valid_name (long_name), "65 characters is too long");
    long_name[64] = '\0';
    EXPECT (cg_scripts_valid_name (long_name), "64 characters is fine");
    EXPECT (!cg_scripts_valid_name (NULL), "NULL is not a name");
}

static void
s_test_save_get (const char *dir)
{
    const char *name = "save_get";
    cg_error_t *err = NULL;
    json_t *fields = s_fields ("python", "Parses monthly Excel reports");
    json_t *saved =
        cg_scripts_save (dir, "parse-excel-report", fields, "print(1)\n", &s_limits, &err);
    CHECK (saved, "save: %s", cg_error_message (err));
    cleanup_free char *expected = s_path ("parse-excel-report/script.py");
    EXPECT (strcmp (json_string_value (json_object_get (saved, "path")), expected) == 0, "path");
    EXPECT (strncmp (json_string_value (json_object_get (saved, "script_id")), "script_", 7) == 0,
            "script_id");
    EXPECT (s_exists ("parse-excel-report/metadata.json") && s_exists ("index.json"),
            "metadata.json and index.json written");
    cleanup_free char *code = NULL;
    json_t *got = cg_scripts_get (dir, "parse-excel-report", &code, &err);
    CHECK (got, "get: %s", cg_error_message (err));
    EXPECT (code && strcmp (code, "print(1)\n") == 0, "code");
    EXPECT (json_integer_value (json_object_get (got, "run_count")) == 0
                && json_is_null (json_object_get (got, "last_run_at"))
                && json_is_null (json_object_get (got, "last_run_success")),
            "no runs yet");
    EXPECT (json_equal (json_object_get (got, "tags"), json_object_get (fields, "tags")), "tags");
    json_decref (got);
    json_decref (saved);
    json_decref (fields);

    char *missing = NULL;
    EXPECT (!cg_scripts_get (dir, "nothing-here", &missing, &err) && err && err->code == ENOENT,
            "a missing script is ENOENT");
    cg_error_destroy (&err);
    fields = s_fields ("cobol", "x");
    EXPECT (!cg_scripts_save (dir, "bad-language", fields, "x", &s_limits, &err) && err
                && err->code == EINVAL,
            "an unknown language is refused");
    cg_error_destroy (&err);
    json_decref (fields);
    fields = s_fields ("bash", "x");
    const char *bad[] = {"../escape", "..", "a/b", NULL};
    for (int i = 0; bad[i]; i++) {
        EXPECT (!cg_scripts_save (dir, bad[i], fields, "x", &s_limits, &err) && err
                    && err->code == EINVAL,
                "save '%s' refused", bad[i]);
        cg_error_destroy (&err);
        EXPECT (!cg_scripts_get (dir, bad[i], &missing, &err) && err && err->code == EINVAL,
                "get '%s' refused", bad[i]);
        cg_error_destroy (&err);
    }
    cleanup_free char *escape = cg_strdupf ("%s/escape", s_root);
    struct stat st;
    EXPECT (lstat (escape, &st) < 0, "nothing written outside the library");
    json_decref (fields);
}

static void
s_test_versions (const char *dir)
{
    const char *name = "versions";
    cg_error_t *err = NULL;
    json_t *fields = s_fields ("python", "first");
    json_t *first = cg_scripts_save (dir, "versioned", fields, "v1", &s_limits, &err);
    json_decref (fields);
    CHECK (first, "save 1: %s", cg_error_message (err));
    CHECK (cg_scripts_record_run (dir, "versioned", true, &err) == 0, "run: %s",
           cg_error_message (err));
    fields = s_fields ("bash", "second");
    json_t *second = cg_scripts_save (dir, "versioned", fields, "v2", &s_limits, &err);
    json_decref (fields);
    CHECK (second, "save 2: %s", cg_error_message (err));
    EXPECT (json_equal (json_object_get (first, "script_id"), json_object_get (second, "script_id"))
                && json_equal (json_object_get (first, "created_at"),
                               json_object_get (second, "created_at")),
            "script_id and created_at carry over");
    EXPECT (s_exists ("versioned/versions/1/script.py")
                && s_exists ("versioned/versions/1/metadata.json")
                && s_exists ("versioned/script.sh") && !s_exists ("versioned/script.py"),
            "version 1 kept in versions/1, the new one in place");
    fields = s_fields ("bash", "third");
    json_t *third = cg_scripts_save (dir, "versioned", fields, "v3", &s_limits, &err);
    json_decref (fields);
    CHECK (third, "save 3: %s", cg_error_message (err));
    json_t *versions = json_object_get (third, "versions");
    EXPECT (json_array_size (versions) == 2
                && json_integer_value (json_object_get (json_array_get (versions, 1), "version"))
                       == 2,
            "versions lists 1 and 2");
    EXPECT (json_integer_value (json_object_get (third, "run_count")) == 0,
            "a new version's run count starts again");
    cleanup_free char *code = NULL;
    json_t *old = cg_scripts_get (dir, "versioned", &code, &err);
    EXPECT (old && code && strcmp (code, "v3") == 0, "the newest code is served");
    json_decref (old);
    json_decref (first);
    json_decref (second);
    json_decref (third);
}

static void
s_test_index (const char *dir)
{
    const char *name = "index";
    cg_error_t *err = NULL;
    cleanup_free char *index = s_path ("index.json");
    json_t *before = cg_scripts_list (dir, &err);
    CHECK (before && json_array_size (before) >= 2, "list: %s", cg_error_message (err));
    const char *damage[] = {"{not json", "{\"scripts\": [{\"name\": \"../x\"}]}", "[]", NULL};
    for (int i = 0; damage[i]; i++) {
        CHECK (cg_write_file (index, damage[i], strlen (damage[i]), 0644, &err) == 0, "write");
        json_t *after = cg_scripts_list (dir, &err);
        EXPECT (after && json_equal (before, after), "index rebuilt from '%s'", damage[i]);
        json_decref (after);
    }
    unlink (index);
    json_t *after = cg_scripts_list (dir, &err);
    EXPECT (after && json_equal (before, after) && s_exists ("index.json"),
            "a missing index is rebuilt and written");
    json_decref (after);
    json_decref (before);
    json_t *empty = cg_scripts_list ("/nonexistent/cg-scripts", &err);
    EXPECT (empty && json_array_size (empty) == 0, "a library not made yet is empty");
    json_decref (empty);
}

static void
s_test_runs (const char *dir)
{
    const char *name = "runs";
    cg_error_t *err = NULL;
    CHECK (cg_scripts_record_run (dir, "parse-excel-report", true, &err) == 0, "run: %s",
           cg_error_message (err));
    CHECK (cg_scripts_record_run (dir, "parse-excel-report", false, &err) == 0, "run: %s",
           cg_error_message (err));
    cleanup_free char *code = NULL;
    json_t *got = cg_scripts_get (dir, "parse-excel-report", &code, &err);
    CHECK (got, "get: %s", cg_error_message (err));
    EXPECT (json_integer_value (json_object_get (got, "run_count")) == 2
                && json_is_false (json_object_get (got, "last_run_success"))
                && json_is_string (json_object_get (got, "last_run_at")),
            "run_count 2, last run failed");
    json_decref (got);
    json_t *list = cg_scripts_list (dir, &err);
    size_t i;
    json_t *script;
    json_array_foreach (list, i,
                        script) if (strcmp (json_string_value (json_object_get (script, "name")),
                                            "parse-excel-report")
                                    == 0)
        EXPECT (json_integer_value (json_object_get (script, "run_count")) == 2,
                "the index has the run count");
    json_decref (list);
    EXPECT (cg_scripts_record_run (dir, "gone", true, &err) < 0 && err->code == ENOENT,
            "a run of a missing script is ENOENT");
    cg_error_destroy (&err);
}

static void
s_test_search (const char *dir)
{
    const char *name = "search";
    cg_error_t *err = NULL;
    json_t *fields = json_pack ("{s:s, s:s, s:[s]}", "language", "javascript", "description",
                                "Cleans data", "tags", "csv");
    json_t *saved = cg_scripts_save (dir, "clean-csv", fields, "const excel = 1;", &s_limits, &err);
    json_decref (fields);
    json_decref (saved);
    json_t *results = cg_scripts_search (dir, "excel parsing", NULL, 20, &err);
    CHECK (results && json_array_size (results) == 3, "three results: %s", cg_error_message (err));
    json_t *best = json_array_get (results, 0), *last = json_array_get (results, 2);
    EXPECT (strcmp (json_string_value (json_object_get (best, "name")), "parse-excel-report") == 0
                && strcmp (json_string_value (json_object_get (best, "relevance")), "name_match")
                       == 0,
            "parse-excel-report first, by its name");
    EXPECT (strcmp (json_string_value (json_object_get (json_array_get (results, 1), "relevance")),
                    "tag_match")
                == 0,
            "versioned by its tag");
    EXPECT (strcmp (json_string_value (json_object_get (last, "relevance")), "code_match") == 0,
            "clean-csv by its code");
    json_decref (results);
    results = cg_scripts_search (dir, "EXCEL", "javascript", 20, &err);
    EXPECT (json_array_size (results) == 1, "language filter, any case");
    json_decref (results);
    results = cg_scripts_search (dir, "monthly", NULL, 20, &err);
    EXPECT (json_array_size (results) == 1
                && strcmp (json_string_value (
                               json_object_get (json_array_get (results, 0), "relevance")),
                           "description_match")
                       == 0,
            "description_match");
    json_decref (results);
    results = cg_scripts_search (dir, "excel", NULL, 1, &err);
    EXPECT (json_array_size (results) == 1, "limit");
    json_decref (results);
}

static void
s_test_symlinks (const char *dir)
{
    const char *name = "symlinks";
    cg_error_t *err = NULL;
    cleanup_free char *outside = cg_strdupf ("%s/outside", s_root);
    cleanup_free char *link = s_path ("linked");
    CHECK (mkdir (outside, 0755) == 0 && symlink (outside, link) == 0, "make the link");
    json_t *fields = s_fields ("python", "x");
    EXPECT (!cg_scripts_save (dir, "linked", fields, "print(2)", &s_limits, &err) && err
                && err->code == ELOOP,
            "save through a link refused");
    cg_error_destroy (&err);
    json_decref (fields);
    char *code = NULL;
    EXPECT (!cg_scripts_get (dir, "linked", &code, &err) && err && err->code == ELOOP,
            "get through a link refused");
    cg_error_destroy (&err);
    cleanup_free char *planted = cg_strdupf ("%s/script.py", outside);
    struct stat st;
    EXPECT (lstat (planted, &st) < 0, "nothing written through the link");
    //  A link planted as a script's file is not read either.
    cleanup_free char *file = s_path ("parse-excel-report/script.py");
    unlink (file);
    CHECK (symlink ("/etc/passwd", file) == 0, "plant a file link");
    EXPECT (!cg_scripts_get (dir, "parse-excel-report", &code, &err) && err, "file link refused");
    cg_error_destroy (&err);
    json_t *list = cg_scripts_list (dir, &err);
    size_t i;
    json_t *script;
    json_array_foreach (list, i, script)
        EXPECT (strcmp (json_string_value (json_object_get (script, "name")), "linked") != 0,
                "a linked directory is not indexed");
    json_decref (list);
    unlink (link);
}

//  The caps: the newest LIMITS.versions earlier versions are kept (older ones removed
//  from the list and the disk), a new name past LIMITS.scripts and a save past
//  LIMITS.bytes are refused EDQUOT without a change, and every version's metadata stays
//  small (no list of versions in it: the library grows linearly).
static void
s_test_caps (void)
{
    const char *name = "caps";
    cleanup_free char *dir = cg_strdupf ("%s/capped", s_root);
    cg_scripts_limits_t limits = {.versions = 3, .scripts = 2, .bytes = 64 * 1024};
    cg_error_t *err = NULL;
    json_t *fields = s_fields ("python", "capped");
    json_t *last = NULL;
    for (int i = 1; i <= 10; i++) {
        cleanup_free char *code = cg_strdupf ("print(%d)\n", i);
        json_decref (last);
        last = cg_scripts_save (dir, "often", fields, code, &limits, &err);
        CHECK (last, "save %d: %s", i, cg_error_message (err));
        EXPECT (cg_scripts_version_of (last) == i, "save %d is version %d", i,
                cg_scripts_version_of (last));
        EXPECT (json_integer_value (json_object_get (last, "versions_pruned")) == (i > 4 ? 1 : 0),
                "save %d pruned %" JSON_INTEGER_FORMAT, i,
                json_integer_value (json_object_get (last, "versions_pruned")));
    }
    json_t *versions = json_object_get (last, "versions");
    EXPECT (json_array_size (versions) == 3
                && json_integer_value (json_object_get (json_array_get (versions, 0), "version"))
                       == 7,
            "versions 7, 8 and 9 kept");
    cleanup_free char *six = cg_strdupf ("%s/often/versions/6", dir);
    cleanup_free char *seven = cg_strdupf ("%s/often/versions/7/metadata.json", dir);
    struct stat st;
    EXPECT (lstat (six, &st) < 0 && errno == ENOENT, "version 6 removed from the disk");
    EXPECT (lstat (seven, &st) == 0 && st.st_size < 1024, "a version's metadata stays small: %ld",
            (long)st.st_size);
    json_decref (last);
    size_t before = cg_scripts_bytes (dir);
    EXPECT (before > 0 && before < limits.bytes, "the library counts %zu bytes", before);
    //  A second name fits; a third is refused, and nothing of it is left.
    last = cg_scripts_save (dir, "second", fields, "x = 2\n", &limits, &err);
    CHECK (last, "second: %s", cg_error_message (err));
    json_decref (last);
    EXPECT (!cg_scripts_save (dir, "third", fields, "x = 3\n", &limits, &err) && err
                && err->code == EDQUOT && strstr (cg_error_message (err), "--max-scripts 2"),
            "a third script is refused naming --max-scripts: %s", cg_error_message (err));
    cg_error_destroy (&err);
    cleanup_free char *third = cg_strdupf ("%s/third", dir);
    EXPECT (lstat (third, &st) < 0, "the refused script left no directory");
    //  Too many bytes: refused naming --max-scripts-mb, the old version in place.
    size_t big_len = 80 * 1024;
    cleanup_free char *big = cg_xmalloc (big_len + 1);
    memset (big, '#', big_len);
    big[big_len] = '\0';
    EXPECT (!cg_scripts_save (dir, "second", fields, big, &limits, &err) && err
                && err->code == EDQUOT && strstr (cg_error_message (err), "--max-scripts-mb"),
            "a save past the bytes is refused: %s", cg_error_message (err));
    cg_error_destroy (&err);
    cleanup_free char *code = NULL;
    json_t *kept = cg_scripts_get (dir, "second", &code, &err);
    EXPECT (kept && code && strcmp (code, "x = 2\n") == 0 && cg_scripts_version_of (kept) == 1,
            "the refused save changed nothing");
    json_decref (kept);
    EXPECT (cg_scripts_bytes (dir) < limits.bytes, "the library stays under its bytes");
    json_decref (fields);
}

int
main (void)
{
    if (!mkdtemp (s_root)) {
        perror ("mkdtemp");
        return 1;
    }
    cleanup_free char *dir = cg_strdupf ("%s/lib", s_root);
    s_test_names ();
    s_test_save_get (dir);
    s_test_versions (dir);
    s_test_index (dir);
    s_test_runs (dir);
    s_test_search (dir);
    s_test_symlinks (dir);
    s_test_caps ();
    cg_error_t *err = NULL;
    cg_rm_rf (s_root, &err);
    cg_error_destroy (&err);
    printf ("%d passed, %d failed\n", s_passes, s_failures);
    return s_failures ? 1 : 0;
}
