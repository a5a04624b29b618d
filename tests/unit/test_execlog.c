/*  Unit tests: the execution log (cg_execlog) — entries written as lines and indexed,
    search by each filter and by text, get, per-client scoping, the retention sweep, the
    index rebuilt from the lines when deleted or corrupt, caught up with the lines a crash left
    unindexed or cut short, a session file's line cut short, the metadata and off modes, and a
    reader beside the writer. */
#include "artifacts/cg_execlog.h"
#include "base/cg_util.h"
#include "base/cg_fs.h"
#include "cg_test.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static cg_execlog_options_t s_options = {CG_EXECLOG_FULL, 30, 90, 90, 0};

//  An entry run DAYS_AGO days before now (UTC), by OWNER.
static json_t *
s_entry (const char *id, const char *owner, const char *language, const char *status,
         const char *code, const char *out, const char *err, int days_ago)
{
    time_t at = time (NULL) - (time_t)days_ago * 86400;
    struct tm tm;
    gmtime_r (&at, &tm);
    char when[40];
    strftime (when, sizeof when, "%Y-%m-%dT%H:%M:%S.000Z", &tm);
    return json_pack ("{s:s, s:s, s:n, s:s, s:s, s:s, s:s, s:s, s:i, s:b, s:i, s:s, s:s, s:s}",
                      "execution_id", id, "client_id", owner, "session_id", "language", language,
                      "code", code, "stdout", out, "stderr", err, "status", status, "exit_code",
                      strcmp (status, "success") == 0 ? 0 : 1, "timed_out",
                      strcmp (status, "timeout") == 0, "duration_ms", 12, "executed_at", when,
                      "sandbox_mode", "runc", "working_dir", "/mnt/data");
}

static void
s_record (cg_execlog_t *log, json_t *entry)
{
    cg_error_t *err = NULL;
    EXPECT (cg_execlog_record (log, entry, &err) == 0, "record: %s", cg_error_message (err));
    cg_error_destroy (&err);
    json_decref (entry);
}

//  The total_count of a search.
static long
s_count (cg_execlog_t *log, cg_execlog_query_t query)
{
    cg_error_t *err = NULL;
    json_t *result = cg_execlog_search (log, &query, &err);
    if (!result) {
        fprintf (stderr, "search: %s\n", cg_error_message (err));
        cg_error_destroy (&err);
        return -1;
    }
    long n = (long)json_integer_value (json_object_get (result, "total_count"));
    json_decref (result);
    return n;
}

static void
s_fill (cg_execlog_t *log)
{
    s_record (log, s_entry ("exec_a", "stdio", "python", "success", "import pandas as pd\nprint(1)",
                            "1\n", "", 0));
    s_record (log, s_entry ("exec_b", "stdio", "python", "failed", "import missing", "",
                            "ModuleNotFoundError: No module named 'missing'", 1));
    s_record (log, s_entry ("exec_c", "stdio", "bash", "timeout", "sleep 100", "", "", 2));
    s_record (log, s_entry ("exec_d", "other", "javascript", "success", "console.log('hi')", "hi\n",
                            "", 0));
}

//  The answers the tests expect of s_fill's entries.
static void
s_check_answers (cg_execlog_t *log)
{
    EXPECT (s_count (log, (cg_execlog_query_t){0}) == 4, "all");
    EXPECT (s_count (log, (cg_execlog_query_t){.owner = "stdio"}) == 3, "owner");
    EXPECT (s_count (log, (cg_execlog_query_t){.language = "python"}) == 2, "language");
    EXPECT (s_count (log, (cg_execlog_query_t){.status = "failed"}) == 1, "failed");
    EXPECT (s_count (log, (cg_execlog_query_t){.status = "timeout"}) == 1, "timeout");
    EXPECT (s_count (log, (cg_execlog_query_t){.query = "pandas"}) == 1, "text in code");
    EXPECT (s_count (log, (cg_execlog_query_t){.query = "modulenotfound"}) == 1,
            "text in stderr, any case");
    EXPECT (s_count (log, (cg_execlog_query_t){.query = "hi"}) == 1, "short text");
    EXPECT (s_count (log, (cg_execlog_query_t){.query = "\"quoted' % _"}) == 0, "odd text");
    EXPECT (s_count (log, (cg_execlog_query_t){.owner = "other", .query = "pandas"}) == 0,
            "text, someone else's");
    char today[32];
    cg_utc_now (today, false);
    today[10] = '\0';
    EXPECT (s_count (log, (cg_execlog_query_t){.since = today}) == 2, "since today");
    EXPECT (s_count (log, (cg_execlog_query_t){.since = "2000-01-01T00:00:00+02:00"}) == 4,
            "since with an offset");
    json_t *entry = cg_execlog_get (log, "exec_b", "stdio");
    EXPECT (entry
                && strcmp (json_string_value (json_object_get (entry, "stderr")),
                           "ModuleNotFoundError: No module named 'missing'")
                       == 0,
            "get");
    json_decref (entry);
    EXPECT (cg_execlog_get (log, "exec_b", "other") == NULL, "get, someone else's");
    EXPECT (cg_execlog_get (log, "exec_zz", NULL) == NULL, "get, unknown");
}

static void
test_search_and_get (const char *dir)
{
    const char *name = "search and get";
    cg_error_t *err = NULL;
    cg_execlog_t *log = cg_execlog_open (dir, &s_options, &err);
    CHECK (log, "open: %s", cg_error_message (err));
    s_fill (log);
    s_check_answers (log);
    cg_execlog_query_t bad = {.since = "yesterday"};
    json_t *none = cg_execlog_search (log, &bad, &err);
    EXPECT (!none && err, "a bad since is refused");
    cg_error_destroy (&err);
    json_t *page = cg_execlog_search (log, &(cg_execlog_query_t){.limit = 2}, &err);
    EXPECT (page && json_array_size (json_object_get (page, "results")) == 2
                && json_integer_value (json_object_get (page, "total_count")) == 4,
            "limit");
    json_t *first = json_array_get (json_object_get (page, "results"), 0);
    EXPECT (json_is_string (json_object_get (first, "code_preview"))
                && json_object_get (first, "error_preview")
                && json_is_integer (json_object_get (first, "duration_ms")),
            "a result's fields");
    json_decref (page);
    //  A long code has a 200-character preview; a long stream is cut at the cap.
    char *code = cg_xmalloc (5001);
    memset (code, 'x', 5000);
    code[5000] = '\0';
    s_record (log, s_entry ("exec_long", "stdio", "python", "success", code, code, "", 0));
    free (code);
    json_t *result = cg_execlog_search (log, &(cg_execlog_query_t){.query = "xxxxxxxx"}, &err);
    json_t *hit = json_array_get (json_object_get (result, "results"), 0);
    EXPECT (json_string_length (json_object_get (hit, "code_preview")) == 200, "code preview");
    json_decref (result);
    cg_execlog_destroy (&log);
    //  Survives a reopen (the index is kept).
    log = cg_execlog_open (dir, &s_options, &err);
    CHECK (log, "reopen: %s", cg_error_message (err));
    EXPECT (s_count (log, (cg_execlog_query_t){0}) == 5, "after reopen");
    cg_execlog_destroy (&log);
}

static void
test_cap (const char *dir)
{
    const char *name = "cap";
    cg_error_t *err = NULL;
    cg_execlog_options_t options = s_options;
    options.stream_cap = 100;
    cg_execlog_t *log = cg_execlog_open (dir, &options, &err);
    CHECK (log, "open: %s", cg_error_message (err));
    char big[1000];
    memset (big, 'y', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    json_t *capped = s_entry ("exec_cap", "stdio", "python", "success", "print()", big, "", 0);
    json_object_set_new (capped, "result", json_string (big));
    s_record (log, capped);
    json_t *entry = cg_execlog_get (log, "exec_cap", NULL);
    EXPECT (entry && json_string_length (json_object_get (entry, "stdout")) == 100
                && json_is_true (json_object_get (entry, "stdout_truncated_in_log")),
            "stdout cut at the cap");
    EXPECT (entry && json_string_length (json_object_get (entry, "result")) == 100
                && json_is_true (json_object_get (entry, "result_truncated_in_log")),
            "the result cut at the cap");
    json_decref (entry);
    cg_execlog_destroy (&log);
}

static void
test_rebuild (const char *dir)
{
    const char *name = "rebuild";
    cg_error_t *err = NULL;
    cg_execlog_t *log = cg_execlog_open (dir, &s_options, &err);
    CHECK (log, "open: %s", cg_error_message (err));
    s_fill (log);
    cg_execlog_destroy (&log);
    char path[512];
    snprintf (path, sizeof path, "%s/index.sqlite", dir);
    //  Deleted: rebuilt with the same answers.
    unlink (path);
    log = cg_execlog_open (dir, &s_options, &err);
    CHECK (log, "open without an index: %s", cg_error_message (err));
    s_check_answers (log);
    cg_execlog_destroy (&log);
    //  Corrupt: kept aside, rebuilt.
    CHECK (cg_write_file (path, "this is not a database, not at all, no.........", 48, 0600, &err)
               == 0,
           "corrupt: %s", cg_error_message (err));
    char wal[600];
    snprintf (wal, sizeof wal, "%s-wal", path);
    unlink (wal);
    log = cg_execlog_open (dir, &s_options, &err);
    CHECK (log, "open a corrupt index: %s", cg_error_message (err));
    s_check_answers (log);
    cg_execlog_destroy (&log);
    //  Truncated in the middle (a torn page).
    struct stat st;
    CHECK (stat (path, &st) == 0 && truncate (path, st.st_size / 2) == 0, "truncate");
    log = cg_execlog_open (dir, &s_options, &err);
    CHECK (log, "open a torn index: %s", cg_error_message (err));
    s_check_answers (log);
    cg_execlog_destroy (&log);
}

static void
test_retention (const char *dir)
{
    const char *name = "retention";
    cg_error_t *err = NULL;
    cg_execlog_t *log = cg_execlog_open (dir, &s_options, &err);
    CHECK (log, "open: %s", cg_error_message (err));
    s_record (log, s_entry ("exec_new_ok", "stdio", "python", "success", "1", "", "", 0));
    s_record (log, s_entry ("exec_old_ok", "stdio", "python", "success", "2", "", "", 40));
    s_record (log, s_entry ("exec_old_fail", "stdio", "python", "failed", "3", "", "e", 40));
    s_record (log, s_entry ("exec_older_fail", "stdio", "python", "failed", "4", "", "e", 100));
    //  A session file whose last line is 100 days old, and a fresh one.
    json_t *old_end = json_pack ("{s:s, s:s, s:s, s:s}", "type", "session_end", "session_id",
                                 "sess_old", "reason", "closed", "at", "2000-01-01T00:00:00Z");
    EXPECT (cg_execlog_session_event (log, old_end, &err) == 0, "session event");
    json_decref (old_end);
    json_t *fresh = json_pack ("{s:s, s:s}", "type", "session_start", "session_id", "sess_new");
    EXPECT (cg_execlog_session_event (log, fresh, &err) == 0, "session event");
    json_decref (fresh);
    EXPECT (s_count (log, (cg_execlog_query_t){0}) == 4, "before the sweep");
    int removed = cg_execlog_sweep (log, time (NULL), &err);
    EXPECT (removed == 3, "removed %d: %s", removed, err ? cg_error_message (err) : "");
    EXPECT (s_count (log, (cg_execlog_query_t){0}) == 2, "after the sweep");
    json_t *kept = cg_execlog_get (log, "exec_old_fail", NULL);
    EXPECT (kept != NULL, "a 40-day-old failure is kept");
    json_decref (kept);
    EXPECT (cg_execlog_get (log, "exec_old_ok", NULL) == NULL, "a 40-day-old success is gone");
    char path[512];
    snprintf (path, sizeof path, "%s/session-sess_old.jsonl", dir);
    EXPECT (access (path, F_OK) != 0, "the old session file is gone");
    snprintf (path, sizeof path, "%s/session-sess_new.jsonl", dir);
    EXPECT (access (path, F_OK) == 0, "the fresh session file stays");
    EXPECT (cg_execlog_sweep (log, time (NULL), &err) == 0, "a second sweep removes nothing");
    cg_execlog_destroy (&log);
    //  The rebuilt index agrees with the swept lines.
    snprintf (path, sizeof path, "%s/index.sqlite", dir);
    unlink (path);
    log = cg_execlog_open (dir, &s_options, &err);
    CHECK (log, "reopen: %s", cg_error_message (err));
    EXPECT (s_count (log, (cg_execlog_query_t){0}) == 2, "rebuilt after the sweep");
    cg_execlog_destroy (&log);
}

static void
test_modes (const char *dir_metadata, const char *dir_off)
{
    const char *name = "modes";
    cg_error_t *err = NULL;
    cg_execlog_options_t options = s_options;
    options.mode = CG_EXECLOG_METADATA;
    cg_execlog_t *log = cg_execlog_open (dir_metadata, &options, &err);
    CHECK (log, "open: %s", cg_error_message (err));
    json_t *secret = s_entry ("exec_m", "stdio", "python", "success", "secret()", "out", "", 0);
    json_object_set_new (secret, "result", json_string ("'secret'"));
    s_record (log, secret);
    json_t *entry = cg_execlog_get (log, "exec_m", NULL);
    EXPECT (entry && !json_object_get (entry, "code") && !json_object_get (entry, "stdout")
                && !json_object_get (entry, "result") && json_object_get (entry, "duration_ms"),
            "metadata keeps no code or output");
    json_decref (entry);
    EXPECT (s_count (log, (cg_execlog_query_t){.query = "secret"}) == 0, "nothing to find");
    cg_execlog_destroy (&log);
    options.mode = CG_EXECLOG_OFF;
    log = cg_execlog_open (dir_off, &options, &err);
    CHECK (log, "open: %s", cg_error_message (err));
    s_record (log, s_entry ("exec_o", "stdio", "python", "success", "x", "", "", 0));
    EXPECT (s_count (log, (cg_execlog_query_t){0}) == 0, "off records nothing");
    cg_execlog_destroy (&log);
    EXPECT (cg_execlog_mode_from_name ("metadata") == CG_EXECLOG_METADATA, "mode names");
    EXPECT (cg_execlog_mode_from_name ("some") < 0, "bad mode name");
}

//  Appends TEXT to the file PATH, as a crash would have left it.
static void
s_append_to (const char *path, const char *text)
{
    const char *name = "append_raw";
    FILE *f = fopen (path, "a");
    CHECK (f, "open %s", path);
    fputs (text, f);
    fclose (f);
}

//  Appends TEXT to DIR's executions file of today.
static void
s_append_raw (const char *dir, const char *text)
{
    time_t now = time (NULL);
    struct tm tm;
    gmtime_r (&now, &tm);
    char path[600];
    snprintf (path, sizeof path, "%s/executions-", dir);
    strftime (path + strlen (path), sizeof path - strlen (path), "%Y-%m-%d.jsonl", &tm);
    s_append_to (path, text);
}

//  A crash between a line and its row (SIGKILL on the log's worker after the write) leaves
//  a line the index lacks; a crash in the write leaves a line cut short. The next open
//  indexes the first, and the next line written after the second is whole and found.
static void
test_crash_catch_up (const char *dir)
{
    const char *name = "crash_catch_up";
    cg_error_t *err = NULL;
    cg_execlog_t *log = cg_execlog_open (dir, &s_options, &err);
    CHECK (log, "open: %s", cg_error_message (err));
    s_record (log, s_entry ("exec_c1", "c", "python", "success", "print(1)", "1\n", "", 0));
    s_record (log, s_entry ("exec_c2", "c", "python", "success", "print(2)", "2\n", "", 0));
    cg_execlog_destroy (&log);
    //  The line of exec_c3 written, its row not: the process died between them.
    json_t *entry = s_entry ("exec_c3", "c", "python", "success", "crash_marker()", "", "", 0);
    json_object_set_new (entry, "type", json_string ("execution"));
    char *line = json_dumps (entry, JSON_COMPACT);
    json_decref (entry);
    s_append_raw (dir, line);
    s_append_raw (dir, "\n");
    free (line);
    //  Then a line cut short: the process died in its write.
    s_append_raw (dir, "{\"execution_id\":\"exec_torn\",\"code\":\"pri");
    log = cg_execlog_open (dir, &s_options, &err);
    CHECK (log, "reopen: %s", cg_error_message (err));
    EXPECT (s_count (log, (cg_execlog_query_t){0}) == 3, "the line without a row is indexed");
    EXPECT (s_count (log, (cg_execlog_query_t){.query = "crash_marker"}) == 1,
            "its code is searchable");
    json_t *got = cg_execlog_get (log, "exec_c3", NULL);
    EXPECT (got != NULL, "get exec_c3");
    json_decref (got);
    s_record (log, s_entry ("exec_c4", "c", "python", "success", "after_torn()", "", "", 0));
    cg_execlog_destroy (&log);
    //  exec_c4's line is whole: a rebuild from the lines finds it (and not the cut one).
    char path[512];
    snprintf (path, sizeof path, "%s/index.sqlite", dir);
    unlink (path);
    log = cg_execlog_open (dir, &s_options, &err);
    CHECK (log, "open without an index: %s", cg_error_message (err));
    EXPECT (s_count (log, (cg_execlog_query_t){0}) == 4, "four executions from the lines");
    EXPECT (s_count (log, (cg_execlog_query_t){.query = "after_torn"}) == 1,
            "the line after a cut one is whole");
    cg_execlog_destroy (&log);
}

//  A crash in a session line's write leaves it cut short: the next open ends it, so the
//  next line appended to that session's file is whole.
static void
test_session_cut (const char *dir)
{
    const char *name = "session_cut";
    cg_error_t *err = NULL;
    cg_execlog_t *log = cg_execlog_open (dir, &s_options, &err);
    CHECK (log, "open: %s", cg_error_message (err));
    json_t *start = json_pack ("{s:s, s:s}", "type", "session_start", "session_id", "sess_cut");
    EXPECT (cg_execlog_session_event (log, start, &err) == 0, "session_start: %s",
            cg_error_message (err));
    json_decref (start);
    cg_execlog_destroy (&log);
    char path[600];
    snprintf (path, sizeof path, "%s/session-sess_cut.jsonl", dir);
    s_append_to (path, "{\"type\":\"execution\",\"session_id\":\"sess_c");
    log = cg_execlog_open (dir, &s_options, &err);
    CHECK (log, "reopen: %s", cg_error_message (err));
    json_t *end = json_pack ("{s:s, s:s, s:s}", "type", "session_end", "session_id", "sess_cut",
                             "reason", "closed");
    EXPECT (cg_execlog_session_event (log, end, &err) == 0, "session_end");
    json_decref (end);
    cg_execlog_destroy (&log);
    //  Three lines: the start, the cut one (ended), the end, which parses.
    FILE *f = fopen (path, "r");
    CHECK (f, "read %s", path);
    char line[512];
    int lines = 0;
    json_t *last = NULL;
    while (fgets (line, sizeof line, f)) {
        lines++;
        json_decref (last);
        last = json_loads (line, 0, NULL);
    }
    fclose (f);
    EXPECT (lines == 3, "three lines, not %d", lines);
    EXPECT (last && strcmp (json_string_value (json_object_get (last, "type")), "session_end") == 0,
            "the line after the cut one is whole");
    json_decref (last);
}

//  A reader (cg_execlog_open_reader) searches and gets what the writer has written, each
//  search seeing the writes done before it, and cannot write.
static void
test_reader (const char *dir)
{
    const char *name = "reader";
    cg_error_t *err = NULL;
    cg_execlog_t *log = cg_execlog_open (dir, &s_options, &err);
    CHECK (log, "open: %s", cg_error_message (err));
    s_record (log, s_entry ("exec_r1", "stdio", "python", "success", "print(1)", "1\n", "", 0));
    cg_execlog_t *reader = cg_execlog_open_reader (log, &err);
    CHECK (reader, "open a reader: %s", cg_error_message (err));
    EXPECT (s_count (reader, (cg_execlog_query_t){0}) == 1, "the reader finds the first entry");
    //  Written after the reader opened, in two steps: the line, then its row; the reader's
    //  next search sees it once the row is in.
    uint64_t ticket = cg_execlog_ticket_take (log);
    json_t *r2 = s_entry ("exec_r2", "stdio", "bash", "failed", "false", "", "", 0);
    cg_execlog_line_t *line = NULL;
    EXPECT (cg_execlog_record_line (log, r2, &line, &err) == 0 && line, "the line is written");
    json_decref (r2);
    EXPECT (s_count (reader, (cg_execlog_query_t){.language = "bash"}) == 0,
            "a line without its row is not found yet");
    cg_execlog_index_line (log, &line);
    EXPECT (line == NULL, "the line is taken");
    cg_execlog_ticket_done (log, ticket);
    cg_execlog_ticket_wait (reader, ticket); /* done: returns at once */
    EXPECT (cg_execlog_ticket_last (log) == ticket, "the last ticket taken");
    EXPECT (s_count (reader, (cg_execlog_query_t){.language = "bash"}) == 1,
            "the reader finds an entry written after it opened");
    json_t *entry = cg_execlog_get (reader, "exec_r2", "stdio");
    EXPECT (entry && strcmp (json_string_value (json_object_get (entry, "code")), "false") == 0,
            "the reader gets the whole entry");
    json_decref (entry);
    //  It never writes: not a line, not a session's, not a sweep.
    json_t *more = s_entry ("exec_r3", "stdio", "python", "success", "3", "", "", 0);
    EXPECT (cg_execlog_record (reader, more, &err) < 0 && err && err->code == EROFS,
            "a reader cannot record");
    cg_error_destroy (&err);
    json_t *event = json_pack ("{s:s, s:s}", "type", "session_start", "session_id", "sess_r");
    EXPECT (cg_execlog_session_event (reader, event, &err) < 0, "a reader cannot write a session");
    cg_error_destroy (&err);
    EXPECT (cg_execlog_sweep (reader, time (NULL), &err) < 0, "a reader cannot sweep");
    cg_error_destroy (&err);
    json_decref (more);
    json_decref (event);
    EXPECT (s_count (log, (cg_execlog_query_t){0}) == 2, "the writer still has two entries");
    cg_execlog_destroy (&reader);
    cg_execlog_destroy (&log);
}

int
main (void)
{
    char base[] = "/tmp/cg-execlog-XXXXXX";
    if (!mkdtemp (base))
        return 1;
    char dirs[9][64];
    for (int i = 0; i < 9; i++)
        snprintf (dirs[i], sizeof dirs[i], "%s/%d", base, i);
    test_search_and_get (dirs[0]);
    test_cap (dirs[1]);
    test_rebuild (dirs[2]);
    test_retention (dirs[3]);
    test_modes (dirs[4], dirs[5]);
    test_crash_catch_up (dirs[6]);
    test_reader (dirs[7]);
    test_session_cut (dirs[8]);
    cg_rm_rf (base, NULL);
    printf ("%d passed, %d failed\n", s_passes, s_failures);
    return s_failures ? 1 : 0;
}
