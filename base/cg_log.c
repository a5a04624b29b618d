/*  cg_log — the server's log: timestamped lines, console or JSON, to stderr or a file. */
#include "base/cg_log.h"
#include "base/cg_utf8.h"
#include "base/cg_util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

static const char *s_names[] = {"error", "warn", "info", "debug"};

static atomic_int s_level = 2;

//  Where and how lines are written: set at start-up, before any thread but the main one.
static int s_fd = STDERR_FILENO;
static bool s_json;

//  Each thread's own hook: nothing is shared between threads.
static _Thread_local cg_log_hook_fn *s_hook;
static _Thread_local void *s_hook_arg;

static const char *
s_name (int level)
{
    return s_names[level < 0 ? 0 : level > 3 ? 3 : level];
}

void
cg_log_set_level (int level)
{
    atomic_store (&s_level, level);
}

bool
cg_log_enabled (int level)
{
    return level <= atomic_load (&s_level);
}

int
cg_log_level_from_name (const char *name)
{
    for (int i = 0; i < 4; i++)
        if (strcasecmp (name, s_names[i]) == 0)
            return i;
    return strcasecmp (name, "warning") == 0 ? 1 : -1;
}

void
cg_log_set_json (bool json)
{
    s_json = json;
}

int
cg_log_set_file (const char *path, cg_error_t **err)
{
    if (!path) {
        if (s_fd != STDERR_FILENO)
            close (s_fd);
        s_fd = STDERR_FILENO;
        return 0;
    }
    int fd = open (path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY, 0640);
    if (fd < 0)
        return cg_error_set (err, errno, "log file %s: %s", path, strerror (errno));
    if (s_fd != STDERR_FILENO)
        close (s_fd);
    s_fd = fd;
    return 0;
}

void
cg_log_timestamp (char out[32])
{
    struct timespec now;
    clock_gettime (CLOCK_REALTIME, &now);
    struct tm tm;
    gmtime_r (&now.tv_sec, &tm);
    size_t n = strftime (out, 32, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf (out + n, 32 - n, ".%03ldZ", now.tv_nsec / 1000000);
}

//  A console value: a plain word as it is, anything else as JSON. Caller frees.
static char *
s_console_value (const json_t *value)
{
    const char *text = json_string_value (value);
    if (text && *text && !strpbrk (text, " =\"\\\t\r\n"))
        return cg_xstrdup (text);
    char *dumped = json_dumps (value, JSON_ENCODE_ANY | JSON_COMPACT);
    return dumped ? dumped : cg_xstrdup ("?");
}

//  MESSAGE then FIELDS as " key=value", the console form. Caller frees.
static char *
s_console (const char *message, const json_t *fields)
{
    size_t cap = strlen (message) + 256, len = strlen (message);
    char *out = cg_xmalloc (cap);
    memcpy (out, message, len + 1);
    const char *key;
    const json_t *value;
    json_object_foreach (CG_UNCONST (fields), key, value)
    {
        cleanup_free char *text = s_console_value (value);
        size_t more = strlen (key) + strlen (text) + 2;
        if (len + more + 1 > cap)
            out = cg_xrealloc (out, cap = (len + more + 1) * 2);
        len += (size_t)sprintf (out + len, " %s=%s", key, text);
    }
    return out;
}

char *
cg_log_line (const char *ts, int level, const char *message, const json_t *fields, bool json)
{
    cleanup_free char *clean = cg_utf8_clean (message, strlen (message), NULL);
    if (!json) {
        cleanup_free char *body = s_console (clean, fields);
        return cg_strdupf ("%s cellgate %s: %s", ts, s_name (level), body);
    }
    json_t *line = json_pack ("{s:s, s:s, s:s}", "ts", ts, "level", s_name (level), "msg", clean);
    const char *key;
    json_t *value;
    json_object_foreach (CG_UNCONST (fields), key, value)
    {
        if (!json_object_get (line, key))
            json_object_set (line, key, value);
    }
    char *text = json_dumps (line, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref (line);
    return text ? text : cg_xstrdup ("{}");
}

//  Writes TEXT and a newline in one write, so that threads' lines never interleave.
static void
s_write (const char *text)
{
    size_t len = strlen (text);
    cleanup_free char *buf = cg_xmalloc (len + 1);
    memcpy (buf, text, len);
    buf[len] = '\n';
    for (size_t done = 0; done < len + 1;) {
        ssize_t n = write (s_fd, buf + done, len + 1 - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return;
        done += (size_t)n;
    }
}

static void s_vlog (int level, const json_t *fields, const char *fmt, va_list args)
    __attribute__ ((format (printf, 3, 0)));

static void
s_vlog (int level, const json_t *fields, const char *fmt, va_list args)
{
    bool to_file = level <= atomic_load (&s_level);
    if (!to_file && (!s_hook || fields))
        return;
    char message[4096];
    vsnprintf (message, sizeof message, fmt, args);
    if (to_file) {
        char ts[32];
        cg_log_timestamp (ts);
        cleanup_free char *line = cg_log_line (ts, level, message, fields, s_json);
        s_write (line);
    }
    if (s_hook && !fields) {
        cg_log_hook_fn *hook = s_hook;
        s_hook = NULL; /* a hook that logs does not reach itself */
        hook (s_hook_arg, level, message);
        s_hook = hook;
    }
}

void
cg_log (int level, const char *fmt, ...)
{
    va_list args;
    va_start (args, fmt);
    s_vlog (level, NULL, fmt, args);
    va_end (args);
}

void
cg_log_fields (int level, const json_t *fields, const char *fmt, ...)
{
    va_list args;
    va_start (args, fmt);
    s_vlog (level, fields, fmt, args);
    va_end (args);
}

void
cg_log_set_hook (cg_log_hook_fn *fn, void *arg)
{
    s_hook_arg = arg;
    s_hook = fn;
}
