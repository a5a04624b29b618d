/*  cg_execlog_index — the execution log's SQLite index: built from the lines, opened and
    checked (rebuilt when missing, corrupt or old; caught up with lines a crash left
    unindexed), and one entry added. Internal to cg_execlog. */
#define _GNU_SOURCE
#include "artifacts/cg_execlog.h"
#include "artifacts/cg_execlog_int.h"

#include "base/cg_log.h"
#include "base/cg_util.h"

#include <czmq.h>
#include <errno.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define S_INDEX_VERSION 1 /* PRAGMA user_version of a built index (cg_execlog_rebuild sets it) */
#define S_PREVIEW_CHARS 200

static const char *s_schema =
    "CREATE TABLE IF NOT EXISTS executions (id INTEGER PRIMARY KEY, execution_id TEXT UNIQUE "
    "NOT NULL, owner TEXT, session_id TEXT, language TEXT, status TEXT, exit_code INTEGER, "
    "duration_ms INTEGER, executed_at TEXT, file TEXT, offset INTEGER, length INTEGER, "
    "code_preview TEXT, error_preview TEXT);"
    "CREATE INDEX IF NOT EXISTS executions_at ON executions (executed_at);"
    "CREATE INDEX IF NOT EXISTS executions_owner ON executions (owner, executed_at);"
    "CREATE INDEX IF NOT EXISTS executions_file ON executions (file);"
    "CREATE VIRTUAL TABLE IF NOT EXISTS executions_text USING fts5 (code, output, tokenize = "
    "'trigram');";

//  The first MAX characters of TEXT (UTF-8), as a new string.
static char *
s_prefix_chars (const char *text, int max)
{
    size_t i = 0;
    for (int chars = 0; text[i] && chars < max; chars++)
        for (i++; (text[i] & 0xC0) == 0x80; i++)
            ;
    return cg_xstrndup (text, i);
}

//  Cuts ENTRY's string KEY to the cap (at a character boundary), marking it.
//  Indexes ENTRY, whose line is LENGTH bytes at OFFSET in FILE.
int
cg_execlog_index_entry (cg_execlog_t *self, json_t *entry, const char *file, off_t offset,
                        size_t length, cg_error_t **err)
{
    const char *code = cg_execlog_str (entry, "code") ? cg_execlog_str (entry, "code") : "";
    const char *out = cg_execlog_str (entry, "stdout") ? cg_execlog_str (entry, "stdout") : "";
    const char *errs = cg_execlog_str (entry, "stderr") ? cg_execlog_str (entry, "stderr") : "";
    const char *message = cg_execlog_str (entry, "error_message");
    cleanup_free char *code_preview = s_prefix_chars (code, S_PREVIEW_CHARS);
    cleanup_free char *error_preview = *errs     ? s_prefix_chars (errs, S_PREVIEW_CHARS)
                                       : message ? s_prefix_chars (message, S_PREVIEW_CHARS)
                                                 : NULL;
    cleanup_free char *output = cg_strdupf ("%s\n%s", out, errs);
    sqlite3_stmt *st = self->insert;
    sqlite3_reset (st);
    sqlite3_bind_text (st, 1, cg_execlog_str (entry, "execution_id"), -1, SQLITE_STATIC);
    sqlite3_bind_text (st, 2, cg_execlog_str (entry, "client_id"), -1, SQLITE_STATIC);
    sqlite3_bind_text (st, 3, cg_execlog_str (entry, "session_id"), -1, SQLITE_STATIC);
    sqlite3_bind_text (st, 4, cg_execlog_str (entry, "language"), -1, SQLITE_STATIC);
    sqlite3_bind_text (st, 5, cg_execlog_str (entry, "status"), -1, SQLITE_STATIC);
    json_t *exit_code = json_object_get (entry, "exit_code");
    if (json_is_integer (exit_code))
        sqlite3_bind_int64 (st, 6, json_integer_value (exit_code));
    else
        sqlite3_bind_null (st, 6);
    sqlite3_bind_int64 (st, 7, json_integer_value (json_object_get (entry, "duration_ms")));
    sqlite3_bind_text (st, 8, cg_execlog_str (entry, "executed_at"), -1, SQLITE_STATIC);
    sqlite3_bind_text (st, 9, file, -1, SQLITE_STATIC);
    sqlite3_bind_int64 (st, 10, offset);
    sqlite3_bind_int64 (st, 11, (sqlite3_int64)length);
    sqlite3_bind_text (st, 12, code_preview, -1, SQLITE_STATIC);
    sqlite3_bind_text (st, 13, error_preview, -1, SQLITE_STATIC);
    int rc = sqlite3_step (st);
    sqlite3_reset (st);
    if (rc != SQLITE_DONE)
        return cg_execlog_db_error (self, err, "insert");
    if (sqlite3_changes (self->db) == 0)
        return 0; /* the same execution indexed already */
    st = self->insert_fts;
    sqlite3_reset (st);
    sqlite3_bind_int64 (st, 1, sqlite3_last_insert_rowid (self->db));
    sqlite3_bind_text (st, 2, code, -1, SQLITE_STATIC);
    sqlite3_bind_text (st, 3, output, -1, SQLITE_STATIC);
    rc = sqlite3_step (st);
    sqlite3_reset (st);
    return rc == SQLITE_DONE ? 0 : cg_execlog_db_error (self, err, "insert text");
}

//  Indexes the lines of the executions file NAME from byte FROM (a line's start) on.
//  Returns how many, or -1 with *err.
static int
s_index_from (cg_execlog_t *self, const char *name, off_t from, cg_error_t **err)
{
    int fd = openat (self->dir_fd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    FILE *in = fd >= 0 ? fdopen (fd, "r") : NULL;
    if (!in) {
        if (fd >= 0)
            close (fd);
        return cg_error_set (err, errno, "open %s/%s: %s", self->dir, name, strerror (errno));
    }
    if (from > 0 && fseeko (in, from, SEEK_SET) < 0) {
        int e = errno;
        fclose (in);
        return cg_error_set (err, e, "seek %s/%s: %s", self->dir, name, strerror (e));
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    off_t offset = from;
    int count = 0, rc = 0;
    while (rc == 0 && (n = getline (&line, &cap, in)) > 0) {
        json_t *entry = line[n - 1] == '\n' ? json_loadb (line, (size_t)n, 0, NULL) : NULL;
        //  A line that does not parse (cut short by a crash) is skipped, not fatal.
        if (json_is_object (entry) && cg_execlog_str (entry, "execution_id")) {
            rc = cg_execlog_index_entry (self, entry, name, offset, (size_t)n, err);
            count++;
        }
        json_decref (entry);
        offset += n;
    }
    free (line);
    fclose (in);
    return rc < 0 ? -1 : count;
}

int
cg_execlog_index_file (cg_execlog_t *self, const char *name, cg_error_t **err)
{
    return s_index_from (self, name, 0, err);
}

//  The end of the last line of the executions file NAME that the index holds (0: none).
static off_t
s_indexed_end (cg_execlog_t *self, const char *name)
{
    sqlite3_stmt *st = NULL;
    off_t end = 0;
    if (sqlite3_prepare_v2 (self->db, "SELECT MAX(offset + length) FROM executions WHERE file = ?",
                            -1, &st, NULL)
        == SQLITE_OK) {
        sqlite3_bind_text (st, 1, name, -1, SQLITE_STATIC);
        if (sqlite3_step (st) == SQLITE_ROW)
            end = (off_t)sqlite3_column_int64 (st, 0);
    }
    sqlite3_finalize (st);
    return end;
}

//  What a crash left in the day file NAME: the lines past the last one indexed (the line is
//  written before its row, so a crash between them leaves a line the index lacks) are
//  indexed, and a last line cut short (the process died in its write) is ended with a
//  newline, so that the next line is a line of its own (the cut one is never indexed).
//  Returns how many lines it indexed, or -1 with *err.
static int
s_catch_up_file (cg_execlog_t *self, const char *name, cg_error_t **err)
{
    cleanup_close int fd =
        openat (self->dir_fd, name, O_WRONLY | O_APPEND | O_CLOEXEC | O_NOFOLLOW);
    struct stat st;
    if (fd < 0 || fstat (fd, &st) < 0)
        return cg_error_set (err, errno, "open %s/%s: %s", self->dir, name, strerror (errno));
    cleanup_close int rd = openat (self->dir_fd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    char last = '\n';
    if (st.st_size > 0 && (rd < 0 || pread (rd, &last, 1, st.st_size - 1) != 1))
        return cg_error_set (err, errno, "read %s/%s: %s", self->dir, name, strerror (errno));
    off_t end = s_indexed_end (self, name);
    int count = end < st.st_size ? s_index_from (self, name, end, err) : 0;
    if (count >= 0 && last != '\n' && write (fd, "\n", 1) != 1)
        return cg_error_set (err, errno, "write %s/%s: %s", self->dir, name, strerror (errno));
    return count;
}

//  Runs BEGIN_SQL, then FILE_FN on every day file, then COMMIT_SQL, all in one transaction
//  (rolled back when one fails). Returns how many lines FILE_FN indexed, or -1 with *err.
static int
s_each_day_file (cg_execlog_t *self, const char *begin_sql,
                 int (*file_fn) (cg_execlog_t *, const char *, cg_error_t **),
                 const char *commit_sql, cg_error_t **err)
{
    if (cg_execlog_exec (self, begin_sql, err) < 0)
        return -1;
    zlistx_t *names = cg_execlog_files (self, "executions-");
    int total = 0;
    for (const char *name = zlistx_first (names); name && total >= 0; name = zlistx_next (names)) {
        time_t day;
        int n = cg_execlog_is_day_file (name, &day) ? file_fn (self, name, err) : 0;
        total = n < 0 ? -1 : total + n;
    }
    zlistx_destroy (&names);
    if (total < 0) {
        sqlite3_exec (self->db, "ROLLBACK", NULL, NULL, NULL);
        return -1;
    }
    return cg_execlog_exec (self, commit_sql, err) < 0 ? -1 : total;
}

//  Catches the index up with every day file (s_catch_up_file). Returns how many lines it
//  indexed, or -1 with *err.
static int
s_catch_up (cg_execlog_t *self, cg_error_t **err)
{
    return s_each_day_file (self, "BEGIN", s_catch_up_file, "COMMIT", err);
}

int
cg_execlog_rebuild (cg_execlog_t *self, cg_error_t **err)
{
    return s_each_day_file (self, "BEGIN; DELETE FROM executions; DELETE FROM executions_text;",
                            cg_execlog_index_file, "PRAGMA user_version = 1; COMMIT;", err);
}

void
cg_execlog_index_close (cg_execlog_t *self)
{
    sqlite3_finalize (self->insert);
    sqlite3_finalize (self->insert_fts);
    sqlite3_close (self->db);
    self->insert = self->insert_fts = NULL;
    self->db = NULL;
}

//  Opens the index and checks it. Returns 1 when it is whole and built, 0 when it must be
//  built, -1 with *err when it cannot be used (corrupt, not a database).
static int
s_index_try (cg_execlog_t *self, const char *path, cg_error_t **err)
{
    if (sqlite3_open_v2 (path, &self->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL)
        != SQLITE_OK)
        return cg_execlog_db_error (self, err, "open");
    sqlite3_busy_timeout (self->db, 5000);
    sqlite3_stmt *st = NULL;
    bool ok = sqlite3_prepare_v2 (self->db, "PRAGMA quick_check", -1, &st, NULL) == SQLITE_OK
              && sqlite3_step (st) == SQLITE_ROW
              && strcmp ((const char *)sqlite3_column_text (st, 0), "ok") == 0;
    sqlite3_finalize (st);
    if (!ok)
        return cg_execlog_db_error (self, err, "check");
    if (cg_execlog_exec (self, "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;", err) < 0
        || cg_execlog_exec (self, s_schema, err) < 0)
        return -1;
    if (sqlite3_prepare_v2 (self->db,
                            "INSERT OR IGNORE INTO executions (execution_id, owner, session_id, "
                            "language, status, exit_code, duration_ms, executed_at, file, offset, "
                            "length, code_preview, error_preview) VALUES (?, ?, ?, ?, ?, ?, ?, "
                            "?, ?, ?, ?, ?, ?)",
                            -1, &self->insert, NULL)
            != SQLITE_OK
        || sqlite3_prepare_v2 (self->db,
                               "INSERT INTO executions_text (rowid, code, output) VALUES (?, "
                               "?, ?)",
                               -1, &self->insert_fts, NULL)
               != SQLITE_OK)
        return cg_execlog_db_error (self, err, "prepare");
    int version = 0;
    if (sqlite3_prepare_v2 (self->db, "PRAGMA user_version", -1, &st, NULL) == SQLITE_OK
        && sqlite3_step (st) == SQLITE_ROW)
        version = sqlite3_column_int (st, 0);
    sqlite3_finalize (st);
    return version == S_INDEX_VERSION ? 1 : 0;
}

//  Opens the index, rebuilding it from the lines when it is missing, corrupt or old, and
//  catching it up with what a crash left (s_catch_up).
int
cg_execlog_index_open (cg_execlog_t *self, cg_error_t **err)
{
    cleanup_free char *path = cg_strdupf ("%s/" CG_EXECLOG_INDEX, self->dir);
    cg_error_t *why = NULL;
    int state = s_index_try (self, path, &why);
    if (state < 0) {
        cg_log (1, "execution log: %s; rebuilding it from the lines", cg_error_message (why));
        cg_error_destroy (&why);
        cg_execlog_index_close (self);
        cleanup_free char *aside = cg_strdupf ("%s.corrupt", path);
        cleanup_free char *wal = cg_strdupf ("%s-wal", path);
        cleanup_free char *shm = cg_strdupf ("%s-shm", path);
        if (rename (path, aside) < 0 && errno != ENOENT)
            return cg_error_set (err, errno, "rename %s: %s", path, strerror (errno));
        unlink (wal);
        unlink (shm);
        state = s_index_try (self, path, err);
        if (state < 0)
            return -1;
    }
    if (state == 0) {
        int count = cg_execlog_rebuild (self, err);
        if (count < 0)
            return -1;
        if (count > 0)
            cg_log (2, "execution log: indexed %d executions from %s", count, self->dir);
    }
    //  Not fatal: the lines are there, and the next rebuild finds them.
    int caught = s_catch_up (self, &why);
    if (caught < 0)
        cg_log (1, "execution log: catching the index up: %s", cg_error_message (why));
    else if (caught > 0)
        cg_log (1, "execution log: indexed %d executions a crash left unindexed", caught);
    cg_error_destroy (&why);
    return 0;
}
