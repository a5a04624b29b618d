/*  Unit tests: cg_log — the timestamp, console and JSON lines (fields, odd bytes, the
    reserved keys), level names, the log file (append, levels), records kept from the
    hook; and cg_oplog's record of a tools/call (results, errors, cancelled calls). */
#define _GNU_SOURCE
#include "base/cg_log.h"
#include "base/cg_util.h"
#include "base/cg_fs.h"
#include "mcp/cg_oplog.h"
#include "cg_test.h"

#include <regex.h>
#include <stdlib.h>
#include <string.h>

static bool
s_matches (const char *text, const char *pattern)
{
    regex_t re;
    if (regcomp (&re, pattern, REG_EXTENDED | REG_NOSUB) != 0)
        return false;
    bool match = regexec (&re, text, 0, NULL, 0) == 0;
    regfree (&re);
    return match;
}

static void
s_test_timestamp (void)
{
    char ts[32];
    cg_log_timestamp (ts);
    EXPECT (s_matches (ts, "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{3}Z$"),
            "UTC ISO 8601 with milliseconds: %s", ts);
}

static void
s_test_console (void)
{
    json_t *fields = json_pack ("{s:s, s:s, s:i, s:n, s:s}", "tool", "run_python", "client",
                                "Claude Code", "duration_ms", 12, "run_id", "status", "a=b");
    char *line = cg_log_line ("2026-02-06T12:34:56.789Z", 2, "tool call", fields, false);
    EXPECT (strcmp (line, "2026-02-06T12:34:56.789Z cellgate info: tool call tool=run_python "
                          "client=\"Claude Code\" duration_ms=12 run_id=null status=\"a=b\"")
                == 0,
            "console line: %s", line);
    free (line);
    line = cg_log_line ("T", 1, "plain", NULL, false);
    EXPECT (strcmp (line, "T cellgate warn: plain") == 0, "no fields: %s", line);
    free (line);
    json_decref (fields);
}

static void
s_test_json (void)
{
    json_t *fields = json_pack ("{s:s, s:i, s:s, s:n}", "tool", "execute_code", "exit_code", 1,
                                "ts", "forged", "session_id");
    char *line =
        cg_log_line ("2026-02-06T12:34:56.789Z", 0, "bad \xff byte\nand a line", fields, true);
    json_error_t jerr;
    json_t *parsed = json_loads (line, 0, &jerr);
    EXPECT (parsed && !strchr (line, '\n'), "one JSON object on one line: %s", line);
    EXPECT (strcmp (json_string_value (json_object_get (parsed, "ts")), "2026-02-06T12:34:56.789Z")
                == 0,
            "ts is the log's, a field cannot replace it");
    EXPECT (strcmp (json_string_value (json_object_get (parsed, "level")), "error") == 0, "level");
    EXPECT (strcmp (json_string_value (json_object_get (parsed, "msg")),
                    "bad \xef\xbf\xbd byte\nand a line")
                == 0,
            "msg, invalid UTF-8 replaced");
    EXPECT (json_integer_value (json_object_get (parsed, "exit_code")) == 1
                && json_is_null (json_object_get (parsed, "session_id"))
                && strcmp (json_string_value (json_object_get (parsed, "tool")), "execute_code")
                       == 0,
            "fields are members");
    EXPECT (strncmp (line, "{\"ts\":", 6) == 0, "ts first: %s", line);
    json_decref (parsed);
    free (line);
    json_decref (fields);
}

static void
s_test_levels (void)
{
    EXPECT (cg_log_level_from_name ("error") == 0 && cg_log_level_from_name ("WARN") == 1
                && cg_log_level_from_name ("warning") == 1 && cg_log_level_from_name ("INFO") == 2
                && cg_log_level_from_name ("Debug") == 3 && cg_log_level_from_name ("loud") == -1,
            "level names in any case, warning for warn (seed 004's INFO)");
}

static int s_hooked;

static void
s_hook (void *arg, int level, const char *message)
{
    (void)arg;
    (void)level;
    (void)message;
    s_hooked++;
}

static void
s_test_file (void)
{
    const char *name = "log file";
    char path[] = "/tmp/cg-test-log-XXXXXX";
    int fd = mkstemp (path);
    CHECK (fd >= 0, "mkstemp");
    CHECK (write (fd, "earlier\n", 8) == 8, "write");
    close (fd);
    cg_error_t *err = NULL;
    CHECK (cg_log_set_file (path, &err) == 0, "open: %s", cg_error_message (err));
    cg_log_set_json (true);
    cg_log_set_level (2);
    cg_log_set_hook (s_hook, NULL);
    cg_log (2, "hello %d", 42);
    cg_log (3, "dropped");
    json_t *fields = json_pack ("{s:s}", "tool", "list_sessions");
    cg_log_fields (2, fields, "tool call");
    json_decref (fields);
    cg_log_set_hook (NULL, NULL);
    cg_log_set_file (NULL, NULL);
    cg_log_set_json (false);
    EXPECT (s_hooked == 2, "the hook gets plain lines, not records: %d", s_hooked);
    char *text = cg_read_file (path, 65536, NULL, &err);
    unlink (path);
    CHECK (text, "read back");
    char *second = strchr (text, '\n') + 1;
    char *third = strchr (second, '\n');
    CHECK (third && strncmp (text, "earlier\n", 8) == 0, "appended: %s", text);
    *third = '\0';
    json_t *hello = json_loads (second, 0, NULL);
    json_t *record = json_loads (third + 1, JSON_DISABLE_EOF_CHECK, NULL);
    EXPECT (hello && strcmp (json_string_value (json_object_get (hello, "msg")), "hello 42") == 0,
            "first line: %s", second);
    EXPECT (record
                && strcmp (json_string_value (json_object_get (record, "tool")), "list_sessions")
                       == 0,
            "record: %s", third + 1);
    EXPECT (!strstr (third + 1, "dropped"), "debug dropped at info");
    json_decref (hello);
    json_decref (record);
    free (text);
    err = NULL;
    EXPECT (cg_log_set_file ("/nonexistent-dir/x.log", &err) < 0 && err
                && strstr (cg_error_message (err), "/nonexistent-dir/x.log"),
            "an unopenable file is an error naming it");
    cg_error_destroy (&err);
}

static void
s_test_oplog (void)
{
    cg_client_t client = {.id = "stdio"};
    snprintf (client.name, sizeof client.name, "inspector");
    snprintf (client.client_version, sizeof client.client_version, "0.16.1");
    cg_oplog_call_t call = {.client = &client,
                            .tool = "run_python",
                            .session_id = "s1",
                            .run_id = "run_20260206T123456Z_a1b2",
                            .started_us = 1000000,
                            .timeout_s = 60};
    json_t *result =
        json_pack ("{s:{s:s, s:s, s:i, s:s, s:n}, s:b}", "structuredContent", "session_id", "s1",
                   "execution_id", "exec_0123456789ab", "exit_code", 1, "status", "execution_error",
                   "error_code", "isError", 1);
    json_t *fields = cg_oplog_fields (&call, 3500000, result, 0, NULL);
    EXPECT (strcmp (json_string_value (json_object_get (fields, "tool")), "run_python") == 0
                && strcmp (json_string_value (json_object_get (fields, "client_name")), "inspector")
                       == 0
                && strcmp (json_string_value (json_object_get (fields, "client_version")), "0.16.1")
                       == 0
                && strcmp (json_string_value (json_object_get (fields, "client_id")), "stdio") == 0,
            "tool and client");
    EXPECT (strcmp (json_string_value (json_object_get (fields, "session_id")), "s1") == 0
                && strcmp (json_string_value (json_object_get (fields, "run_id")),
                           "run_20260206T123456Z_a1b2")
                       == 0
                && strcmp (json_string_value (json_object_get (fields, "execution_id")),
                           "exec_0123456789ab")
                       == 0,
            "ids");
    EXPECT (json_integer_value (json_object_get (fields, "duration_ms")) == 2500
                && json_integer_value (json_object_get (fields, "exit_code")) == 1
                && json_integer_value (json_object_get (fields, "timeout_ms")) == 60000,
            "duration, exit code, timeout");
    EXPECT (strcmp (json_string_value (json_object_get (fields, "status")), "execution_error") == 0
                && !json_object_get (fields, "error_code"),
            "status; a null error_code is left out");
    json_decref (fields);
    //  A JSON-RPC error: status error, its code.
    call = (cg_oplog_call_t){.client = &client, .tool = "nope", .started_us = 0};
    fields = cg_oplog_fields (&call, 0, NULL, -32602, NULL);
    EXPECT (strcmp (json_string_value (json_object_get (fields, "status")), "error") == 0
                && json_integer_value (json_object_get (fields, "error_code")) == -32602
                && json_is_null (json_object_get (fields, "exit_code"))
                && json_is_null (json_object_get (fields, "session_id"))
                && !json_object_get (fields, "timeout_ms"),
            "JSON-RPC error record");
    json_decref (fields);
    //  An error object (seed 004's upload_file), and a status given by the core.
    json_decref (result);
    result = json_pack ("{s:{s:b, s:s, s:s}, s:b}", "structuredContent", "success", 0, "error",
                        "file_exists", "message", "exists", "isError", 1);
    fields = cg_oplog_fields (&call, 0, result, 0, NULL);
    EXPECT (
        strcmp (json_string_value (json_object_get (fields, "status")), "error") == 0
            && strcmp (json_string_value (json_object_get (fields, "error_code")), "file_exists")
                   == 0,
        "error object record");
    json_decref (fields);
    fields = cg_oplog_fields (&call, 0, NULL, 0, "cancelled");
    EXPECT (strcmp (json_string_value (json_object_get (fields, "status")), "cancelled") == 0
                && !json_object_get (fields, "error_code"),
            "cancelled");
    json_decref (fields);
    json_decref (result);
}

int
main (void)
{
    s_test_timestamp ();
    s_test_console ();
    s_test_json ();
    s_test_levels ();
    s_test_file ();
    s_test_oplog ();
    printf ("test_log: %d passed, %d failed\n", s_passes, s_failures);
    return s_failures ? 1 : 0;
}
