/*  cg_tools — the MCP tool registry: names, descriptions, input and output schemas, the
    validation of arguments, and the mapping of results onto MCP content. */
#include "cg_tools.h"
#include "../bridge/cg_session.h"
#include "../bridge/cg_util.h"

#include <ctype.h>
#include <math.h>
#include <string.h>

static const char *s_languages[][2] = {
    {"python", "python"}, {"py", "python"}, {"python3", "python"}, {NULL, NULL}};

static json_t *
s_execute_input_schema (const cg_config_t *config)
{
    cleanup_free char *timeout_doc = cg_strdupf (
        "Maximum execution time in seconds, 1 to 300 (default %d). On timeout the kernel is "
        "interrupted and partial output returned; the session keeps its state.",
        config->default_timeout_s);
    return json_pack (
        "{s:s, s:{"
        "s:{s:s, s:s},"
        "s:{s:s, s:s},"
        "s:{s:s, s:s},"
        "s:{s:s, s:s},"
        "s:{s:s, s:i, s:i, s:s},"
        "s:{s:s, s:i, s:i, s:s},"
        "s:{s:s, s:s, s:s}"
        "}, s:[s, s], s:b}",
        "type", "object", "properties",
        "language", "type", "string", "description", "Programming language: python (aliases py, python3).",
        "code", "type", "string", "description", "The code to run, as a Jupyter cell: the value of a last expression is returned.",
        "stdin", "type", "string", "description", "Text fed to input() calls, one line per call; when it runs out, input() raises EOFError.",
        "stdin_data", "type", "string", "description", "Alias of stdin.",
        "timeout", "type", "integer", "minimum", 1, "maximum", 300, "description", timeout_doc,
        "timeout_ms", "type", "integer", "minimum", 1000, "maximum", 300000, "description", "Alias of timeout, in milliseconds.",
        "session_id", "type", "string", "pattern", "^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$", "description",
        "Keep state between calls: the same id reuses the same sandbox and kernel (created on first use). "
        "Without it the code runs in a fresh sandbox that is destroyed afterwards.",
        "required", "language", "code", "additionalProperties", 0);
}

static json_t *
s_execute_output_schema (void)
{
    return json_pack (
        "{s:s, s:{"
        "s:{s:s}, s:{s:s}, s:{s:s},"
        "s:{s:s, s:[s,s,s,s]},"
        "s:{s:[s,s]}, s:{s:[s,s]},"
        "s:{s:s}, s:{s:s}, s:{s:s}, s:{s:[s,s]}, s:{s:s},"
        "s:{s:s, s:{s:s}},"
        "s:{s:s}, s:{s:s}, s:{s:s}, s:{s:s}, s:{s:s}, s:{s:s}, s:{s:s}, s:{}"
        "}, s:[s,s,s,s,s,s,s,s]}",
        "type", "object", "properties",
        "stdout", "type", "string", "stderr", "type", "string", "exit_code", "type", "integer",
        "status", "type", "string", "enum", "success", "timeout", "execution_error", "setup_error",
        "error_code", "type", "string", "null", "error_message", "type", "string", "null",
        "execution_time", "type", "number", "duration_ms", "type", "integer",
        "execution_id", "type", "string", "session_id", "type", "string", "null",
        "language", "type", "string",
        "outputs", "type", "array", "items", "type", "object",
        "success", "type", "boolean", "timed_out", "type", "boolean",
        "kernel_restarted", "type", "boolean", "cancelled", "type", "boolean",
        "stdout_truncated", "type", "boolean", "stderr_truncated", "type", "boolean",
        "execution_count", "type", "integer", "return_value",
        "required", "stdout", "stderr", "exit_code", "status", "error_code", "error_message",
        "execution_time", "duration_ms");
}

json_t *
cg_tools_list (const cg_config_t *config)
{
    json_t *execute = json_pack (
        "{s:s, s:s, s:s, s:o, s:o, s:{s:b, s:b, s:b, s:b}}", "name", "execute_code", "title",
        "Execute code in a sandbox",
        "description",
        "Run code in an isolated, network-less sandbox (a locked-down container running a "
        "Jupyter kernel). Returns stdout, stderr, exit code, status and rich outputs; "
        "matplotlib charts come back as images. Pass session_id to keep variables, imports "
        "and files in /mnt/data between calls.",
        "inputSchema", s_execute_input_schema (config), "outputSchema", s_execute_output_schema (),
        "annotations", "readOnlyHint", 0, "destructiveHint", 0, "idempotentHint", 0,
        "openWorldHint", 0);
    return json_pack ("[o]", execute);
}

bool
cg_tools_known (const char *name)
{
    return strcmp (name, "execute_code") == 0;
}

//  --------------------------------------------------------------------------
//  Arguments

static json_t *
s_invalid (const char *error_code, const char *message, const char *language)
{
    char execution_id[18] = "exec_";
    cg_random_hex (execution_id + 5, 6);
    cg_exec_request_t request = {.language = language ? language : "", .execution_id = execution_id};
    return cg_tools_call_result (cg_result_setup_error (&request, error_code, message));
}

static const char *
s_canonical_language (const char *name)
{
    char lower[32];
    size_t len = strlen (name);
    if (len >= sizeof lower)
        return NULL;
    for (size_t i = 0; i <= len; i++)
        lower[i] = (char) tolower ((unsigned char) name[i]);
    for (int i = 0; s_languages[i][0]; i++)
        if (strcmp (lower, s_languages[i][0]) == 0)
            return s_languages[i][1];
    return NULL;
}

static bool
s_valid_session_id (const char *id)
{
    size_t len = strlen (id);
    if (len == 0 || len > 128 || !isalnum ((unsigned char) id[0]))
        return false;
    for (size_t i = 0; i < len; i++)
        if (!isalnum ((unsigned char) id[i]) && !strchr ("_.-", id[i]))
            return false;
    return true;
}

json_t *
cg_tools_execute_request (const cg_config_t *config, json_t *arguments, json_t **error_result)
{
    *error_result = NULL;
    static const char *allowed[] = {"language", "code", "stdin", "stdin_data", "timeout",
                                    "timeout_ms", "session_id", NULL};
    if (arguments && !json_is_object (arguments)) {
        *error_result = s_invalid ("INVALID_PARAMS", "arguments must be an object", NULL);
        return NULL;
    }
    const char *key;
    json_t *value;
    json_object_foreach (arguments, key, value) {
        bool known = false;
        for (int i = 0; allowed[i] && !known; i++)
            known = strcmp (key, allowed[i]) == 0;
        if (!known) {
            cleanup_free char *message = cg_strdupf (
                "unknown argument '%.64s'; execute_code takes language, code, stdin (or stdin_data), "
                "timeout (or timeout_ms) and session_id", key);
            *error_result = s_invalid ("INVALID_PARAMS", message, NULL);
            return NULL;
        }
    }
    json_t *language = json_object_get (arguments, "language");
    json_t *code = json_object_get (arguments, "code");
    if (!json_is_string (language) || !json_is_string (code)) {
        *error_result = s_invalid ("INVALID_PARAMS", "'language' and 'code' are required strings", NULL);
        return NULL;
    }
    const char *canonical = s_canonical_language (json_string_value (language));
    if (!canonical) {
        cleanup_free char *message = cg_strdupf (
            "language '%.64s' is not supported; supported: python (aliases py, python3)",
            json_string_value (language));
        *error_result = s_invalid ("UNSUPPORTED_LANGUAGE", message, json_string_value (language));
        return NULL;
    }
    if (json_string_length (code) > CG_MAX_CODE_BYTES) {
        cleanup_free char *message = cg_strdupf ("code is %zu bytes; the limit is %d bytes",
                                                 json_string_length (code), CG_MAX_CODE_BYTES);
        *error_result = s_invalid ("INVALID_PARAMS", message, canonical);
        return NULL;
    }
    json_t *stdin_value = json_object_get (arguments, "stdin");
    json_t *stdin_alias = json_object_get (arguments, "stdin_data");
    if ((stdin_value && !json_is_string (stdin_value)) || (stdin_alias && !json_is_string (stdin_alias))
        || (stdin_value && stdin_alias && !json_equal (stdin_value, stdin_alias))) {
        *error_result = s_invalid ("INVALID_PARAMS", "'stdin' (alias 'stdin_data') must be one string", canonical);
        return NULL;
    }
    if (!stdin_value)
        stdin_value = stdin_alias;
    if (stdin_value && json_string_length (stdin_value) > CG_MAX_STDIN_BYTES) {
        *error_result = s_invalid ("INVALID_PARAMS", "stdin is larger than 1 MiB", canonical);
        return NULL;
    }
    json_t *timeout = json_object_get (arguments, "timeout");
    json_t *timeout_ms = json_object_get (arguments, "timeout_ms");
    double seconds = config->default_timeout_s;
    if (timeout && timeout_ms) {
        *error_result = s_invalid ("INVALID_PARAMS", "give either 'timeout' (seconds) or 'timeout_ms', not both", canonical);
        return NULL;
    }
    if (timeout) {
        seconds = json_number_value (timeout);
        if (!json_is_number (timeout) || !(seconds >= 1 && seconds <= 300)) {
            *error_result = s_invalid ("INVALID_PARAMS", "'timeout' must be a number of seconds from 1 to 300", canonical);
            return NULL;
        }
    }
    if (timeout_ms) {
        double ms = json_number_value (timeout_ms);
        if (!json_is_number (timeout_ms) || !(ms >= 1000 && ms <= 300000)) {
            *error_result = s_invalid ("INVALID_PARAMS", "'timeout_ms' must be from 1000 to 300000", canonical);
            return NULL;
        }
        seconds = ms / 1000.0;
    }
    json_t *session_id = json_object_get (arguments, "session_id");
    if (session_id && !json_is_null (session_id)
        && (!json_is_string (session_id) || !s_valid_session_id (json_string_value (session_id)))) {
        *error_result = s_invalid ("INVALID_PARAMS",
                                   "'session_id' must be 1 to 128 characters: letters, digits, '_', '.', '-', starting with a letter or digit",
                                   canonical);
        return NULL;
    }
    char execution_id[18] = "exec_";
    cg_random_hex (execution_id + 5, 6);
    json_t *request = json_pack ("{s:s, s:O, s:f, s:s}", "language", canonical, "code", code,
                                 "timeout", seconds, "execution_id", execution_id);
    if (stdin_value)
        json_object_set (request, "stdin", stdin_value);
    if (json_is_string (session_id))
        json_object_set (request, "session_id", session_id);
    return request;
}

//  --------------------------------------------------------------------------
//  Results

static void
s_append (char **text, const char *more)
{
    char *joined = cg_strdupf ("%s%s", *text, more);
    free (*text);
    *text = joined;
}

json_t *
cg_tools_call_result (json_t *structured)
{
    const char *status = json_string_value (json_object_get (structured, "status"));
    const char *out = json_string_value (json_object_get (structured, "stdout"));
    const char *err = json_string_value (json_object_get (structured, "stderr"));
    const char *message = json_string_value (json_object_get (structured, "error_message"));
    json_t *content = json_array ();

    char *text = cg_xstrdup ("");
    if (out && *out)
        s_append (&text, out);
    if (err && *err) {
        s_append (&text, *text ? "\n[stderr]\n" : "[stderr]\n");
        s_append (&text, err);
    }
    json_t *outputs = json_object_get (structured, "outputs");
    size_t i;
    json_t *item;
    json_array_foreach (outputs, i, item) {
        json_t *data = json_object_get (item, "data");
        const char *png = json_string_value (json_object_get (data, "image/png"));
        const char *jpeg = json_string_value (json_object_get (data, "image/jpeg"));
        if (png || jpeg)
            json_array_append_new (content, json_pack ("{s:s, s:s, s:s}", "type", "image", "data",
                                                       png ? png : jpeg, "mimeType",
                                                       png ? "image/png" : "image/jpeg"));
        else if (json_object_get (data, "text/plain")
                 && strcmp (json_string_value (json_object_get (item, "type")), "execute_result") == 0) {
            s_append (&text, *text ? "\n[result]\n" : "[result]\n");
            s_append (&text, json_string_value (json_object_get (data, "text/plain")));
        }
    }
    if (status && strcmp (status, "success") != 0 && message) {
        s_append (&text, *text ? "\n" : "");
        cleanup_free char *line = cg_strdupf ("[%s] %s", status, message);
        s_append (&text, line);
    }
    if (!*text)
        s_append (&text, "(no output)");
    json_array_insert_new (content, 0, json_pack ("{s:s, s:s}", "type", "text", "text", text));
    free (text);
    return json_pack ("{s:o, s:o, s:b}", "content", content, "structuredContent", structured,
                      "isError", status && strcmp (status, "success") != 0);
}
