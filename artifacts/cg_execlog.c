/*  cg_execlog — the execution log: JSON lines per day and per session, indexed in SQLite
    (rebuilt from the lines when missing or corrupt), searched, and swept by age. */
#define _GNU_SOURCE
#include "artifacts/cg_execlog.h"
#include "artifacts/cg_execlog_int.h"

#include "base/cg_fault.h"
#include "base/cg_util.h"
#include "base/cg_fs.h"
#include "base/cg_utf8.h"

#include <czmq.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define S_DEFAULT_CAP (1024 * 1024)
#define S_DAY_S 86400

int
cg_execlog_mode_from_name (const char *name)
{
    static const char *names[] = {"full", "metadata", "off"};
    for (int i = 0; name && i < 3; i++)
        if (strcmp (name, names[i]) == 0)
            return i;
    return -1;
}

//  --------------------------------------------------------------------------
//  Times

//  Parses ISO 8601 TEXT: a date, or a date and time (fraction ignored) in UTC (Z or no
//  zone) or with a +HH:MM / -HH:MM offset. Returns 0 with *out set, or -1.
static int
s_parse_time (const char *text, time_t *out)
{
    struct tm tm = {0};
    int used = 0, hh = 0, mm = 0;
    if (!text || sscanf (text, "%4d-%2d-%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &used) != 3
        || used != 10)
        return -1;
    const char *rest = text + 10;
    if (*rest == 'T' || *rest == ' ') {
        used = 0;
        if (sscanf (rest + 1, "%2d:%2d:%2d%n", &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &used) != 3
            || used != 8)
            return -1;
        rest += 9;
        if (*rest == '.')
            for (rest++; *rest >= '0' && *rest <= '9'; rest++)
                ;
        int sign = *rest == '+' ? 1 : *rest == '-' ? -1 : 0;
        if (sign) {
            used = 0;
            if (sscanf (rest + 1, "%2d:%2d%n", &hh, &mm, &used) != 2 || used != 5)
                return -1;
            hh *= sign, mm *= sign;
            rest += 6;
        }
        else if (*rest == 'Z')
            rest++;
    }
    if (*rest || tm.tm_mon < 1 || tm.tm_mon > 12 || tm.tm_mday < 1 || tm.tm_mday > 31
        || tm.tm_hour > 23 || tm.tm_min > 59 || tm.tm_sec > 60)
        return -1;
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    *out = timegm (&tm) - hh * 3600 - mm * 60;
    return 0;
}

//  Writes T as "YYYY-MM-DDTHH:MM:SS" (the index's executed_at compares against it).
static void
s_format_time (time_t t, char out[32])
{
    struct tm tm;
    gmtime_r (&t, &tm);
    strftime (out, 32, "%Y-%m-%dT%H:%M:%S", &tm);
}

//  Writes now as ISO 8601 UTC with milliseconds ("2026-02-09T14:30:01.123Z").
static void
s_now_iso (char out[40])
{
    struct timespec ts;
    clock_gettime (CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r (&ts.tv_sec, &tm);
    char base[32];
    strftime (base, sizeof base, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf (out, 40, "%.20s.%03dZ", base, (int)(ts.tv_nsec / 1000000) % 1000);
}

//  --------------------------------------------------------------------------
//  Text helpers

static void
s_cap (json_t *entry, const char *key, size_t cap)
{
    json_t *value = json_object_get (entry, key);
    if (!json_is_string (value) || json_string_length (value) <= cap)
        return;
    const char *text = json_string_value (value);
    size_t len = cap;
    while (len > 0 && (text[len] & 0xC0) == 0x80)
        len--;
    json_object_set_new (entry, key, json_stringn (text, len));
    cleanup_free char *mark = cg_strdupf ("%s_truncated_in_log", key);
    json_object_set_new (entry, mark, json_true ());
}

const char *
cg_execlog_str (json_t *entry, const char *key)
{
    return json_string_value (json_object_get (entry, key));
}

//  --------------------------------------------------------------------------
//  Lines

//  Appends LINE (LEN bytes, newline included) to NAME in the log directory. Sets *OFFSET
//  to where it starts. Returns 0 or -1 with *err.
static int
s_append (cg_execlog_t *self, const char *name, const char *line, size_t len, off_t *offset,
          cg_error_t **err)
{
    cleanup_close int fd =
        openat (self->dir_fd, name, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0)
        return cg_error_set (err, errno, "open %s/%s: %s", self->dir, name, strerror (errno));
    off_t at = lseek (fd, 0, SEEK_END);
    ssize_t n = write (fd, line, len);
    if (n != (ssize_t)len) {
        //  A partial line would corrupt the next: cut it off again.
        if (n > 0 && at >= 0 && ftruncate (fd, at) < 0)
            cg_log (1, "execution log: %s: %s", name, strerror (errno));
        return cg_error_set (err, n < 0 ? errno : ENOSPC, "write %s/%s: %s", self->dir, name,
                             n < 0 ? strerror (errno) : "short write");
    }
    if (offset)
        *offset = at;
    return 0;
}

//  ENTRY (borrowed) as one line with its newline; *LEN its length. Caller frees.
static char *
s_line (json_t *entry, size_t *len)
{
    char *text = json_dumps (entry, JSON_COMPACT);
    size_t n = strlen (text);
    text = cg_xrealloc (text, n + 2);
    text[n] = '\n';
    text[n + 1] = '\0';
    *len = n + 1;
    return text;
}

//  --------------------------------------------------------------------------
//  The index

int
cg_execlog_db_error (cg_execlog_t *self, cg_error_t **err, const char *what)
{
    return cg_error_set (err, EIO, "execution log index %s/" CG_EXECLOG_INDEX ": %s: %s", self->dir,
                         what, sqlite3_errmsg (self->db));
}

bool
cg_execlog_is_day_file (const char *name, time_t *day)
{
    char date[11];
    if (strlen (name) != strlen ("executions-YYYY-MM-DD.jsonl")
        || strncmp (name, "executions-", 11) != 0 || strcmp (name + 21, ".jsonl") != 0)
        return false;
    memcpy (date, name + 11, 10);
    date[10] = '\0';
    return s_parse_time (date, day) == 0;
}

//  The directory's file names starting with PREFIX, sorted. Caller destroys.
zlistx_t *
cg_execlog_files (cg_execlog_t *self, const char *prefix)
{
    zlistx_t *names = zlistx_new ();
    zlistx_set_destructor (names, (zlistx_destructor_fn *)zstr_free);
    zlistx_set_comparator (names, (zlistx_comparator_fn *)strcmp);
    int fd = openat (self->dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *dir = fd >= 0 ? fdopendir (fd) : NULL;
    if (!dir && fd >= 0)
        close (fd);
    for (struct dirent *d; dir && (d = readdir (dir));)
        if (strncmp (d->d_name, prefix, strlen (prefix)) == 0)
            zlistx_add_end (names, cg_xstrdup (d->d_name));
    if (dir)
        closedir (dir);
    zlistx_sort (names);
    return names;
}

int
cg_execlog_exec (cg_execlog_t *self, const char *sql, cg_error_t **err)
{
    return sqlite3_exec (self->db, sql, NULL, NULL, NULL) == SQLITE_OK
               ? 0
               : cg_execlog_db_error (self, err, sql);
}

//  --------------------------------------------------------------------------
//  The log

//  Ends with a newline each session file whose last line a crash cut short (the process
//  died in its write), so that the next line appended to it is a line of its own. Logs
//  how many.
static void
s_end_cut_session_files (cg_execlog_t *self)
{
    zlistx_t *names = cg_execlog_files (self, "session-");
    int ended = 0;
    for (const char *name = zlistx_first (names); name; name = zlistx_next (names)) {
        cleanup_close int fd =
            openat (self->dir_fd, name, O_RDWR | O_APPEND | O_CLOEXEC | O_NOFOLLOW);
        struct stat st;
        char last = '\n';
        if (fd < 0 || fstat (fd, &st) < 0 || !S_ISREG (st.st_mode) || st.st_size == 0
            || pread (fd, &last, 1, st.st_size - 1) != 1 || last == '\n')
            continue;
        if (write (fd, "\n", 1) == 1)
            ended++;
        else
            cg_log (1, "execution log: %s/%s: %s", self->dir, name, strerror (errno));
    }
    zlistx_destroy (&names);
    if (ended > 0)
        cg_log (1, "execution log: ended %d session file(s) a crash left with a line cut short",
                ended);
}

//  A handle on the log in DIR with OPTIONS (copied), its directory open, no index yet.
//  Returns it, or NULL with *err set.
static cg_execlog_t *
s_handle_new (const char *dir, const cg_execlog_options_t *options, cg_error_t **err)
{
    cg_execlog_t *self = cg_xcalloc (1, sizeof *self);
    self->dir = cg_xstrdup (dir);
    self->options = *options;
    pthread_mutex_init (&self->lock, NULL);
    pthread_cond_init (&self->written, NULL);
    self->dir_fd = open (dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (self->dir_fd < 0) {
        cg_error_set (err, errno, "open %s: %s", dir, strerror (errno));
        cg_execlog_destroy (&self);
    }
    return self;
}

cg_execlog_t *
cg_execlog_open (const char *dir, const cg_execlog_options_t *options, cg_error_t **err)
{
    if (cg_mkdir_p (dir, 0700, err) < 0)
        return NULL;
    cg_execlog_t *self = s_handle_new (dir, options, err);
    if (!self)
        return NULL;
    if (!self->options.stream_cap)
        self->options.stream_cap = S_DEFAULT_CAP;
    if (cg_execlog_index_open (self, err) < 0)
        cg_execlog_destroy (&self);
    else
        s_end_cut_session_files (self);
    return self;
}

cg_execlog_t *
cg_execlog_open_reader (cg_execlog_t *log, cg_error_t **err)
{
    cg_execlog_t *self = s_handle_new (log->dir, &log->options, err);
    if (!self)
        return NULL;
    self->reader = true;
    self->writer = log;
    cleanup_free char *path = cg_strdupf ("%s/" CG_EXECLOG_INDEX, log->dir);
    if (sqlite3_open_v2 (path, &self->db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
        cg_execlog_db_error (self, err, "open to read");
        cg_execlog_destroy (&self);
        return NULL;
    }
    sqlite3_busy_timeout (self->db, 5000);
    return self;
}

//  -1 with *err set when SELF is a reader (cg_execlog_open_reader), which never writes.
static int
s_writer (cg_execlog_t *self, cg_error_t **err)
{
    return self->reader
               ? cg_error_set (err, EROFS, "execution log %s: a reader cannot write", self->dir)
               : 0;
}

void
cg_execlog_destroy (cg_execlog_t **self_p)
{
    cg_execlog_t *self = *self_p;
    if (!self)
        return;
    cg_execlog_index_close (self);
    if (self->dir_fd >= 0)
        close (self->dir_fd);
    pthread_mutex_destroy (&self->lock);
    pthread_cond_destroy (&self->written);
    free (self->dir);
    free (self);
    *self_p = NULL;
}

uint64_t
cg_execlog_ticket_take (cg_execlog_t *self)
{
    return ++self->queued;
}

uint64_t
cg_execlog_ticket_last (cg_execlog_t *self)
{
    return self->queued;
}

void
cg_execlog_ticket_done (cg_execlog_t *self, uint64_t ticket)
{
    pthread_mutex_lock (&self->lock);
    if (ticket > self->done)
        self->done = ticket;
    pthread_cond_broadcast (&self->written);
    pthread_mutex_unlock (&self->lock);
}

void
cg_execlog_ticket_wait (cg_execlog_t *self, uint64_t ticket)
{
    cg_execlog_t *writer = self->writer ? self->writer : self;
    pthread_mutex_lock (&writer->lock);
    while (writer->done < ticket)
        pthread_cond_wait (&writer->written, &writer->lock);
    pthread_mutex_unlock (&writer->lock);
}

//  A session id usable in a file name (the front ends' rule, checked again here).
static bool
s_plain_name (const char *id)
{
    size_t len = id ? strlen (id) : 0;
    return len > 0 && len <= 128 && id[0] != '.'
           && strspn (id, "abcdefghijklmnopqrstuvwxyz"
                          "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
                          "0123456789_.-")
                  == len;
}

//  The short line a session's file gets for one of its executions.
static json_t *
s_session_line (json_t *entry)
{
    json_t *line = json_pack (
        "{s:s, s:O, s:O, s:O?, s:O?, s:O?, s:O?, s:O?, s:O?, s:O?}", "type", "execution",
        "execution_id", json_object_get (entry, "execution_id"), "session_id",
        json_object_get (entry, "session_id"), "tool", json_object_get (entry, "tool"), "code",
        json_object_get (entry, "code"), "stdout", json_object_get (entry, "stdout"), "stderr",
        json_object_get (entry, "stderr"), "exit_code", json_object_get (entry, "exit_code"),
        "status", json_object_get (entry, "status"), "duration_ms",
        json_object_get (entry, "duration_ms"));
    json_object_set (line, "at", json_object_get (entry, "executed_at"));
    return line;
}

//  An execution's line written, its index row not yet made.
struct cg_execlog_line_t {
    json_t *entry; /* as written */
    char file[40]; /* the day's file it went to */
    off_t offset;
    size_t len;
};

int
cg_execlog_record_line (cg_execlog_t *self, json_t *entry, cg_execlog_line_t **line_p,
                        cg_error_t **err)
{
    *line_p = NULL;
    if (s_writer (self, err) < 0)
        return -1;
    if (self->options.mode == CG_EXECLOG_OFF)
        return 0;
    json_t *copy = json_deep_copy (entry);
    json_object_set_new (copy, "type", json_string ("execution"));
    static const char *texts[] = {"code", "stdin", "stdout", "stderr", "result", NULL};
    for (int i = 0; texts[i]; i++)
        if (self->options.mode == CG_EXECLOG_METADATA)
            json_object_del (copy, texts[i]);
        else
            s_cap (copy, texts[i], self->options.stream_cap);
    char now[40];
    time_t at;
    if (s_parse_time (cg_execlog_str (copy, "executed_at"), &at) < 0) {
        s_now_iso (now);
        json_object_set_new (copy, "executed_at", json_string (now));
    }
    cg_execlog_line_t *written = cg_xcalloc (1, sizeof *written);
    written->entry = copy;
    snprintf (written->file, sizeof written->file, "executions-%.10s.jsonl",
              cg_execlog_str (copy, "executed_at"));
    cleanup_free char *line = s_line (copy, &written->len);
    int rc = s_append (self, written->file, line, written->len, &written->offset, err);
    const char *session_id = cg_execlog_str (copy, "session_id");
    if (rc == 0 && s_plain_name (session_id)) {
        json_t *short_line = s_session_line (copy);
        cleanup_free char *name = cg_strdupf ("session-%s.jsonl", session_id);
        size_t short_len;
        cleanup_free char *text = s_line (short_line, &short_len);
        rc = s_append (self, name, text, short_len, NULL, err);
        json_decref (short_line);
    }
    if (rc == 0)
        *line_p = written;
    else
        cg_execlog_line_destroy (&written);
    return rc;
}

void
cg_execlog_index_line (cg_execlog_t *self, cg_execlog_line_t **line_p)
{
    cg_execlog_line_t *line = *line_p;
    if (!line)
        return;
    cg_fault_hold ("log_index"); /* a test's crash between the line and its row */
    cg_error_t *why = NULL;
    if (cg_execlog_index_entry (self, line->entry, line->file, line->offset, line->len, &why) < 0) {
        cg_log (1, "%s", cg_error_message (why));
        cg_error_destroy (&why);
    }
    cg_execlog_line_destroy (line_p);
}

void
cg_execlog_line_destroy (cg_execlog_line_t **line_p)
{
    cg_execlog_line_t *line = *line_p;
    if (!line)
        return;
    json_decref (line->entry);
    free (line);
    *line_p = NULL;
}

int
cg_execlog_record (cg_execlog_t *self, json_t *entry, cg_error_t **err)
{
    cg_execlog_line_t *line = NULL;
    int rc = cg_execlog_record_line (self, entry, &line, err);
    cg_execlog_index_line (self, &line);
    return rc;
}

int
cg_execlog_session_event (cg_execlog_t *self, json_t *entry, cg_error_t **err)
{
    if (s_writer (self, err) < 0)
        return -1;
    if (self->options.mode == CG_EXECLOG_OFF)
        return 0;
    const char *session_id = cg_execlog_str (entry, "session_id");
    if (!s_plain_name (session_id))
        return cg_error_set (err, EINVAL, "session id '%.*s' is not a plain name",
                             cg_utf8_prefix (session_id ? session_id : "", 64),
                             session_id ? session_id : "");
    json_t *copy = json_deep_copy (entry);
    if (!json_object_get (copy, "at")) {
        char now[40];
        s_now_iso (now);
        json_object_set_new (copy, "at", json_string (now));
    }
    cleanup_free char *name = cg_strdupf ("session-%s.jsonl", session_id);
    size_t len;
    cleanup_free char *line = s_line (copy, &len);
    json_decref (copy);
    return s_append (self, name, line, len, NULL, err);
}

//  --------------------------------------------------------------------------
//  Search and get

//  A search's WHERE clause and its bound values.
typedef struct {
    char sql[512];
    const char *values[6];
    int count;
} s_where_t;

static void
s_where_add (s_where_t *where, const char *clause, const char *value)
{
    strncat (where->sql, clause, sizeof where->sql - strlen (where->sql) - 1);
    where->values[where->count++] = value;
}

//  QUERY as an FTS5 phrase ("..." with " doubled), or as a LIKE pattern (for fewer than
//  three characters, which the trigram index cannot look up). Caller frees.
static char *
s_text_pattern (const char *query, bool *like)
{
    size_t chars = 0;
    for (const char *p = query; *p; p++)
        chars += (*p & 0xC0) != 0x80;
    *like = chars < 3;
    char *out = cg_xmalloc (strlen (query) * 2 + 3), *o = out;
    *o++ = *like ? '%' : '"';
    for (const char *p = query; *p; p++) {
        if ((*like && (*p == '%' || *p == '_' || *p == '\\')) || (!*like && *p == '"'))
            *o++ = *like ? '\\' : '"';
        *o++ = *p;
    }
    *o++ = *like ? '%' : '"';
    *o = '\0';
    return out;
}

static sqlite3_stmt *
s_prepare (cg_execlog_t *self, const char *head, const s_where_t *where, const char *tail)
{
    cleanup_free char *sql = cg_strdupf ("%s WHERE 1%s%s", head, where->sql, tail);
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2 (self->db, sql, -1, &st, NULL) != SQLITE_OK)
        return NULL;
    for (int i = 0; i < where->count; i++)
        sqlite3_bind_text (st, i + 1, where->values[i], -1, SQLITE_STATIC);
    return st;
}

static json_t *
s_column (sqlite3_stmt *st, int i)
{
    switch (sqlite3_column_type (st, i)) {
        case SQLITE_NULL:
            return json_null ();
        case SQLITE_INTEGER:
            return json_integer (sqlite3_column_int64 (st, i));
        default:
            return json_string ((const char *)sqlite3_column_text (st, i));
    }
}

json_t *
cg_execlog_search (cg_execlog_t *self, const cg_execlog_query_t *query, cg_error_t **err)
{
    s_where_t where = {{0}};
    cleanup_free char *pattern = NULL;
    if (query->query && *query->query) {
        bool like;
        pattern = s_text_pattern (query->query, &like);
        if (like) {
            s_where_add (&where,
                         " AND id IN (SELECT rowid FROM executions_text WHERE code LIKE ? "
                         "ESCAPE '\\' OR output LIKE ? ESCAPE '\\')",
                         pattern);
            where.values[where.count++] = pattern;
        }
        else
            s_where_add (&where,
                         " AND id IN (SELECT rowid FROM executions_text WHERE executions_text "
                         "MATCH ?)",
                         pattern);
    }
    char since[32];
    time_t t;
    if (query->since) {
        if (s_parse_time (query->since, &t) < 0) {
            cg_error_set (err, EINVAL,
                          "'since' must be an ISO 8601 date or time, e.g. 2026-02-01 or "
                          "2026-02-01T10:00:00Z");
            return NULL;
        }
        s_format_time (t, since);
        s_where_add (&where, " AND executed_at >= ?", since);
    }
    if (query->owner)
        s_where_add (&where, " AND owner = ?", query->owner);
    if (query->language)
        s_where_add (&where, " AND language = ?", query->language);
    if (query->status)
        s_where_add (&where, " AND status = ?", query->status);
    int limit = query->limit > 0 ? (query->limit > 100 ? 100 : query->limit) : 20;
    sqlite3_stmt *count = s_prepare (self, "SELECT count(*) FROM executions", &where, "");
    cleanup_free char *tail = cg_strdupf (" ORDER BY executed_at DESC, id DESC LIMIT %d", limit);
    sqlite3_stmt *rows = s_prepare (self,
                                    "SELECT execution_id, session_id, language, code_preview, "
                                    "status, exit_code, error_preview, duration_ms, executed_at "
                                    "FROM executions",
                                    &where, tail);
    json_t *result = NULL;
    if (count && rows && sqlite3_step (count) == SQLITE_ROW) {
        static const char *keys[] = {"execution_id",  "session_id",  "language",
                                     "code_preview",  "status",      "exit_code",
                                     "error_preview", "duration_ms", "executed_at"};
        json_t *results = json_array ();
        int rc;
        while ((rc = sqlite3_step (rows)) == SQLITE_ROW) {
            json_t *row = json_object ();
            for (int i = 0; i < 9; i++)
                json_object_set_new (row, keys[i], s_column (rows, i));
            json_array_append_new (results, row);
        }
        if (rc == SQLITE_DONE)
            result = json_pack ("{s:o, s:I}", "results", results, "total_count",
                                (json_int_t)sqlite3_column_int64 (count, 0));
        else
            json_decref (results);
    }
    if (!result)
        cg_execlog_db_error (self, err, "search");
    sqlite3_finalize (count);
    sqlite3_finalize (rows);
    return result;
}

//  Reads LENGTH bytes at OFFSET of FILE as one JSON entry, or NULL.
static json_t *
s_read_line (cg_execlog_t *self, const char *file, off_t offset, size_t length)
{
    cleanup_close int fd = openat (self->dir_fd, file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0 || length == 0 || length > (size_t)1 << 30)
        return NULL;
    cleanup_free char *buf = cg_xmalloc (length);
    if (pread (fd, buf, length, offset) != (ssize_t)length)
        return NULL;
    json_t *entry = json_loadb (buf, length, 0, NULL);
    if (!json_is_object (entry))
        json_decref (entry), entry = NULL;
    return entry;
}

json_t *
cg_execlog_get (cg_execlog_t *self, const char *execution_id, const char *owner)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2 (self->db,
                            "SELECT file, offset, length, owner FROM executions WHERE "
                            "execution_id = ?",
                            -1, &st, NULL)
        != SQLITE_OK)
        return NULL;
    sqlite3_bind_text (st, 1, execution_id, -1, SQLITE_STATIC);
    json_t *entry = NULL;
    if (sqlite3_step (st) == SQLITE_ROW) {
        const char *row_owner = (const char *)sqlite3_column_text (st, 3);
        if (!owner || (row_owner && strcmp (owner, row_owner) == 0))
            entry =
                s_read_line (self, (const char *)sqlite3_column_text (st, 0),
                             sqlite3_column_int64 (st, 1), (size_t)sqlite3_column_int64 (st, 2));
    }
    sqlite3_finalize (st);
    //  The line must still be the one indexed (a file rewritten outside would differ).
    if (entry
        && strcmp (cg_execlog_str (entry, "execution_id") ? cg_execlog_str (entry, "execution_id")
                                                          : "",
                   execution_id)
               != 0)
        json_decref (entry), entry = NULL;
    return entry;
}

//  --------------------------------------------------------------------------
//  Retention

//  Forgets the index rows of FILE.
static int
s_unindex_file (cg_execlog_t *self, const char *file, cg_error_t **err)
{
    sqlite3_stmt *st = NULL;
    const char *sql[] = {"DELETE FROM executions_text WHERE rowid IN (SELECT id FROM executions "
                         "WHERE file = ?)",
                         "DELETE FROM executions WHERE file = ?"};
    for (int i = 0; i < 2; i++) {
        if (sqlite3_prepare_v2 (self->db, sql[i], -1, &st, NULL) != SQLITE_OK)
            return cg_execlog_db_error (self, err, "delete");
        sqlite3_bind_text (st, 1, file, -1, SQLITE_STATIC);
        int rc = sqlite3_step (st);
        sqlite3_finalize (st);
        if (rc != SQLITE_DONE)
            return cg_execlog_db_error (self, err, "delete");
    }
    return 0;
}

//  How many of FILE's rows are past their age (executed before CUT_SUCCESS for
//  successes, before CUT_FAILED for the others).
static int
s_stale_rows (cg_execlog_t *self, const char *file, const char *cut_success, const char *cut_failed)
{
    sqlite3_stmt *st = NULL;
    int count = -1;
    if (sqlite3_prepare_v2 (self->db,
                            "SELECT count(*) FROM executions WHERE file = ? AND ((status = "
                            "'success' AND executed_at < ?) OR (status != 'success' AND "
                            "executed_at < ?))",
                            -1, &st, NULL)
        == SQLITE_OK) {
        sqlite3_bind_text (st, 1, file, -1, SQLITE_STATIC);
        sqlite3_bind_text (st, 2, cut_success, -1, SQLITE_STATIC);
        sqlite3_bind_text (st, 3, cut_failed, -1, SQLITE_STATIC);
        if (sqlite3_step (st) == SQLITE_ROW)
            count = sqlite3_column_int (st, 0);
    }
    sqlite3_finalize (st);
    return count;
}

//  Rewrites the day file NAME without its lines past their age. Returns the number of
//  lines removed, or -1 with *err.
static int
s_rewrite_day (cg_execlog_t *self, const char *name, time_t cut_success, time_t cut_failed,
               cg_error_t **err)
{
    size_t len = 0;
    cleanup_free char *path = cg_strdupf ("%s/%s", self->dir, name);
    cleanup_free char *text = cg_read_file (path, (size_t)1 << 34, &len, err);
    if (!text)
        return -1;
    char *kept = cg_xmalloc (len + 1);
    size_t kept_len = 0;
    int removed = 0;
    for (char *line = text, *end; line < text + len; line = end + 1) {
        end = memchr (line, '\n', (size_t)(text + len - line));
        if (!end)
            break; /* a cut last line goes */
        json_t *entry = json_loadb (line, (size_t)(end - line), 0, NULL);
        const char *status = cg_execlog_str (entry, "status");
        time_t at;
        bool stale = !entry || s_parse_time (cg_execlog_str (entry, "executed_at"), &at) < 0
                     || at < (status && strcmp (status, "success") == 0 ? cut_success : cut_failed);
        json_decref (entry);
        if (stale)
            removed++;
        else {
            memcpy (kept + kept_len, line, (size_t)(end - line) + 1);
            kept_len += (size_t)(end - line) + 1;
        }
    }
    int rc = kept_len ? cg_write_file_at (self->dir_fd, name, kept, kept_len, 0600, (uid_t)-1,
                                          (gid_t)-1, err)
                      : (unlinkat (self->dir_fd, name, 0) == 0
                             ? 0
                             : cg_error_set (err, errno, "unlink %s: %s", path, strerror (errno)));
    free (kept);
    if (rc < 0 || s_unindex_file (self, name, err) < 0)
        return -1;
    if (kept_len && cg_execlog_index_file (self, name, err) < 0)
        return -1;
    return removed;
}

//  The time of a session file's last line ("at", or "started_at"), or -1.
static time_t
s_session_last (cg_execlog_t *self, const char *name)
{
    cleanup_free char *path = cg_strdupf ("%s/%s", self->dir, name);
    size_t len = 0;
    cleanup_free char *text = cg_read_file (path, (size_t)1 << 34, &len, NULL);
    if (!text || len < 2)
        return -1;
    size_t start = len - 1;
    while (start > 0 && text[start - 1] != '\n')
        start--;
    json_t *entry = json_loadb (text + start, len - start, 0, NULL);
    const char *at = cg_execlog_str (entry, "at") ? cg_execlog_str (entry, "at")
                                                  : cg_execlog_str (entry, "started_at");
    time_t t = -1;
    if (s_parse_time (at, &t) < 0)
        t = -1;
    json_decref (entry);
    return t;
}

int
cg_execlog_sweep (cg_execlog_t *self, time_t now, cg_error_t **err)
{
    if (s_writer (self, err) < 0)
        return -1;
    const cg_execlog_options_t *o = &self->options;
    time_t cut_success = now - (time_t)o->success_days * S_DAY_S;
    time_t cut_failed = now - (time_t)o->failed_days * S_DAY_S;
    time_t cut_both = cut_success < cut_failed ? cut_success : cut_failed;
    char success_iso[32], failed_iso[32];
    s_format_time (cut_success, success_iso);
    s_format_time (cut_failed, failed_iso);
    int removed = 0;
    if (cg_execlog_exec (self, "BEGIN", err) < 0)
        return -1;
    zlistx_t *names = cg_execlog_files (self, "executions-");
    for (const char *name = zlistx_first (names); name && removed >= 0;
         name = zlistx_next (names)) {
        time_t day;
        if (!cg_execlog_is_day_file (name, &day))
            continue;
        if (day + S_DAY_S <= cut_both) {
            if (unlinkat (self->dir_fd, name, 0) < 0 && errno != ENOENT)
                cg_log (1, "execution log: unlink %s/%s: %s", self->dir, name, strerror (errno));
            else
                removed = s_unindex_file (self, name, err) < 0 ? -1 : removed + 1;
        }
        else if (day < (cut_success > cut_failed ? cut_success : cut_failed)
                 && s_stale_rows (self, name, success_iso, failed_iso) != 0) {
            int n = s_rewrite_day (self, name, cut_success, cut_failed, err);
            removed = n < 0 ? -1 : removed + n;
        }
    }
    zlistx_destroy (&names);
    names = cg_execlog_files (self, "session-");
    time_t cut_session = now - (time_t)o->session_days * S_DAY_S;
    for (const char *name = zlistx_first (names); name && removed >= 0;
         name = zlistx_next (names)) {
        time_t last = s_session_last (self, name);
        if (last >= 0 && last < cut_session && unlinkat (self->dir_fd, name, 0) == 0)
            removed++;
    }
    zlistx_destroy (&names);
    if (removed < 0) {
        sqlite3_exec (self->db, "ROLLBACK", NULL, NULL, NULL);
        return -1;
    }
    return cg_execlog_exec (self, "COMMIT", err) < 0 ? -1 : removed;
}
