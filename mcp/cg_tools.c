/*  cg_tools — the MCP tool registry: names, descriptions, input and output schemas, the
    validation of arguments, and the results of the tools that do not run code (a run's
    result is cg_run_result's). */
#include "cg_tools.h"
#include "cg_run_result.h"
#include "../bridge/cg_util.h"

#include "../artifacts/cg_workspace.h"

#include <ctype.h>
#include <sodium.h>
#include <math.h>
#include <string.h>

static const char *s_languages[][2] = {
    {"python", "python"},         {"py", "python"},         {"python3", "python"},
    {"javascript", "javascript"}, {"js", "javascript"},     {"node", "javascript"},
    {"nodejs", "javascript"},     {"bash", "bash"},         {"sh", "bash"},
    {"shell", "bash"},            {NULL, NULL}};

#define S_SUPPORTED "python (aliases py, python3), javascript (js, node, nodejs), bash (sh, shell)"

const char *
cg_tools_supported_languages (void)
{
    return S_SUPPORTED;
}

static json_t *
s_prop (const char *type, const char *description)
{
    return json_pack ("{s:s, s:s}", "type", type, "description", description);
}

#define SESSION_ID_PATTERN "^[A-Za-z0-9][A-Za-z0-9_.-]*$"

static json_t *
s_session_id_prop (const char *description)
{
    json_t *prop = s_prop ("string", description);
    json_object_set_new (prop, "pattern", json_string (SESSION_ID_PATTERN));
    json_object_set_new (prop, "maxLength", json_integer (CG_SESSION_ID_MAX));
    return prop;
}

//  The arguments every running tool shares: code, stdin, timeout.
static void
s_add_run_props (json_t *props, const cg_config_t *config)
{
    cleanup_free char *timeout_doc = cg_strdupf (
        "Maximum execution time in seconds, 1 to 300 (default %d). On timeout the kernel is "
        "interrupted and partial output returned; the session keeps its state.",
        config->default_timeout_s);
    cleanup_free char *code_doc = cg_strdupf ("The code to run, as a Jupyter cell: the value of a last expression is returned (at most %zu bytes).", config->max_code_bytes);
    json_object_set_new (props, "code", s_prop ("string", code_doc));
    json_object_set_new (props, "stdin", s_prop ("string", "Text fed to input() calls, one line per call; when it runs out, input() raises EOFError."));
    json_object_set_new (props, "stdin_data", s_prop ("string", "Alias of stdin."));
    json_t *timeout = s_prop ("integer", timeout_doc);
    json_object_set_new (timeout, "minimum", json_integer (1));
    json_object_set_new (timeout, "maximum", json_integer (300));
    json_object_set_new (props, "timeout", timeout);
    json_t *timeout_ms = s_prop ("integer", "Alias of timeout, in milliseconds.");
    json_object_set_new (timeout_ms, "minimum", json_integer (1000));
    json_object_set_new (timeout_ms, "maximum", json_integer (300000));
    json_object_set_new (props, "timeout_ms", timeout_ms);
    json_t *files = s_prop ("object", "Files to write into /mnt/data before the code runs (seed 003): path -> text, or path -> {\"content_base64\": ...} for binary files. Small text files the run creates come back in the result's files.");
    json_object_set_new (files, "additionalProperties",
                         json_pack ("{s:[{s:s}, {s:s, s:{s:{s:s}}, s:[s]}]}", "anyOf", "type", "string", "type", "object",
                                    "properties", "content_base64", "type", "string", "required", "content_base64"));
    json_object_set_new (props, "files", files);
}

static json_t *
s_schema (json_t *props, const char *const *required)
{
    json_t *schema = json_pack ("{s:s, s:o, s:b}", "type", "object", "properties", props,
                                "additionalProperties", 0);
    if (required && required[0]) {
        json_t *list = json_array ();
        for (int i = 0; required[i]; i++)
            json_array_append_new (list, json_string (required[i]));
        json_object_set_new (schema, "required", list);
    }
    return schema;
}

//  The properties of one workspace file, seed 004's shape. CONTENT adds read_artifact's.
static json_t *
s_artifact_props (bool content)
{
    json_t *props = json_pack ("{s:{s:s}, s:{s:s}, s:{s:s}, s:{s:s}, s:{s:s}}", "path", "type", "string", "filename",
                               "type", "string", "size_bytes", "type", "integer", "mime_type", "type", "string",
                               "download_url", "type", "string");
    if (content)
        json_object_set_new (props, "content_base64", json_pack ("{s:s}", "type", "string"));
    return props;
}

static json_t *
s_artifact_schema (bool content)
{
    return json_pack ("{s:s, s:o, s:[s,s,s,s]}", "type", "object", "properties", s_artifact_props (content),
                      "required", "path", "filename", "size_bytes", "mime_type");
}

//  An object result that may instead be an error object {error, message}: nothing is
//  required, so both validate.
static json_t *
s_object_schema (json_t *props)
{
    json_object_set_new (props, "error", json_pack ("{s:s}", "type", "string"));
    json_object_set_new (props, "message", json_pack ("{s:s}", "type", "string"));
    json_object_set_new (props, "session_id", json_pack ("{s:s}", "type", "string"));
    return json_pack ("{s:s, s:o}", "type", "object", "properties", props);
}

//  The result of every running tool: the union of seeds 000-004's fields.
static json_t *
s_run_output_schema (void)
{
    json_t *schema = json_pack (
        "{s:s, s:{"
        "s:{s:s}, s:{s:s}, s:{s:s},"
        "s:{s:s, s:[s,s,s,s]},"
        "s:{s:[s,s]}, s:{s:[s,s]},"
        "s:{s:s}, s:{s:s}, s:{s:s}, s:{s:[s,s]}, s:{s:s},"
        "s:{s:s, s:{s:s}},"
        "s:{s:s}, s:{s:s}, s:{s:s}, s:{s:s}, s:{s:s}, s:{s:s}, s:{s:s}, s:{},"
        "s:{s:s}, s:{s:s}, s:{s:s}, s:{s:s}, s:{s:s}"
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
        "truncated", "type", "boolean", "artifacts", "type", "array", "run_id", "type", "string",
        "error", "type", "string", "message", "type", "string",
        "required", "stdout", "stderr", "exit_code", "status", "error_code", "error_message",
        "execution_time", "duration_ms");
    json_t *props = json_object_get (schema, "properties");
    const char *strings[] = {"stdout_file", "stderr_file", "stdout_url", "stderr_url", "notice", NULL};
    for (int i = 0; strings[i]; i++)
        json_object_set_new (props, strings[i], json_pack ("{s:s}", "type", "string"));
    const char *lists[] = {"artifacts_created", "artifacts_modified", "artifacts_deleted", NULL};
    for (int i = 0; lists[i]; i++)
        json_object_set_new (props, lists[i], json_pack ("{s:s, s:{s:s}}", "type", "array", "items", "type", "string"));
    json_object_set_new (json_object_get (props, "artifacts"), "items", s_artifact_schema (false));
    //  Seed 003's names.
    json_object_set_new (props, "returnValue", json_object ());
    json_object_set_new (props, "executionTimeMs", json_pack ("{s:s}", "type", "number"));
    json_object_set_new (props, "memoryUsedMB", json_pack ("{s:s}", "type", "number"));
    json_object_set_new (props, "files", json_pack ("{s:s, s:{s:s}}", "type", "object", "additionalProperties", "type", "string"));
    return schema;
}

//  list_sessions' result: the sessions, each with its workspace's figures (null: no limit).
static json_t *
s_list_sessions_output_schema (void)
{
    return s_object_schema (json_pack (
        "{s:{s:s, s:{s:s, s:{s:{s:[s,s]}, s:{s:[s,s]}, s:{s:[s,s]}, s:{s:[s,s]}}}}}", "sessions", "type",
        "array", "items", "type", "object", "properties",
        "workspace_limit_mb", "type", "number", "null", "workspace_used_mb", "type", "number", "null",
        "workspace_inodes_limit", "type", "integer", "null", "workspace_inodes_used", "type", "integer", "null"));
}

static json_t *
s_tool (const char *name, const char *title, const char *description, json_t *input,
        json_t *output, bool read_only, bool destructive)
{
    return json_pack ("{s:s, s:s, s:s, s:o, s:o, s:{s:b, s:b, s:b, s:b}}", "name", name, "title",
                      title, "description", description, "inputSchema", input, "outputSchema",
                      output, "annotations", "readOnlyHint", read_only, "destructiveHint",
                      destructive, "idempotentHint", read_only, "openWorldHint", 0);
}

//  Seed 001's tool, exactly: its invocation name, parameters, defaults and output.
static json_t *
s_seed001_tool (void)
{
    json_t *props = json_object ();
    json_object_set_new (props, "language", s_prop ("string", "Programming language (e.g., python, javascript, bash)."));
    json_object_set_new (props, "code", s_prop ("string", "The code snippet to execute."));
    json_object_set_new (props, "stdin_data", s_prop ("string", "Data to pass to the script's standard input."));
    json_t *timeout = s_prop ("integer", "Max execution time in milliseconds. Default: 5000.");
    json_object_set_new (timeout, "default", json_integer (CG_SEED001_TIMEOUT_MS));
    json_object_set_new (props, "timeout_ms", timeout);
    json_t *input = json_pack ("{s:s, s:o, s:[s,s]}", "type", "object", "properties", props, "required", "language", "code");
    json_t *output = json_pack ("{s:s, s:{s:{s:s}, s:{s:s}, s:{s:s}, s:{s:s, s:[s,s,s,s]}, s:{s:s}}, s:[s,s,s,s,s]}",
                                "type", "object", "properties", "stdout", "type", "string", "stderr", "type",
                                "string", "exit_code", "type", "integer", "status", "type", "string", "enum",
                                "completed", "timeout", "error_runtime", "error_setup", "duration_ms", "type",
                                "integer", "required", "stdout", "stderr", "exit_code", "status", "duration_ms");
    return s_tool (CG_SEED001_TOOL, "Execute code in a sandbox",
                   "Allows an LLM or AI agent to securely execute a given code snippet in a specified "
                   "language (python, javascript, bash) within an isolated sandbox. Returns the standard "
                   "output, standard error, and exit code.",
                   input, output, false, false);
}

json_t *
cg_tools_list (const cg_config_t *config)
{
    json_t *tools = json_array ();

    json_t *props = json_object ();
    json_object_set_new (props, "language", s_prop ("string", "Programming language: " S_SUPPORTED ". Python and JavaScript run in Jupyter kernels that keep state within a session; bash runs each call as a new process in the same sandbox."));
    s_add_run_props (props, config);
    json_object_set_new (props, "session_id", s_session_id_prop (
        "Keep state between calls: the same id reuses the same sandbox and kernel (created on first use). "
        "Without it the code runs in a fresh sandbox that is destroyed afterwards."));
    static const char *exec_required[] = {"language", "code", NULL};
    if (strcmp (config->tool_profile, "seed001") == 0) {
        json_decref (props);
        json_array_append_new (tools, s_seed001_tool ());
    }
    else
        json_array_append_new (tools, s_tool (
            "execute_code", "Execute code in a sandbox",
            "Run Python, JavaScript or bash in an isolated, network-less sandbox (a locked-down "
            "container running Jupyter kernels). Returns stdout, stderr, exit code, status and rich "
            "outputs; matplotlib charts come back as images. Pass session_id to keep variables, "
            "imports and files in /mnt/data between calls.",
            s_schema (props, exec_required), s_run_output_schema (), false, false));

    props = json_object ();
    s_add_run_props (props, config);
    json_object_set_new (props, "session_id", s_session_id_prop (
        "Session to run in; created on first use. Omitted: a new session is created and its id "
        "returned (sess_<12 hex>) for later calls."));
    static const char *code_required[] = {"code", NULL};
    json_array_append_new (tools, s_tool (
        "run_python", "Run Python in a session",
        "Run Python in a persistent sandboxed session (variables and files in /mnt/data persist "
        "between calls). Returns stdout, stderr, exit_code, the run_id and the files the run "
        "created or changed (artifacts, with download URLs); charts come back as images.",
        s_schema (props, code_required), s_run_output_schema (), false, false));

    props = json_object ();
    json_object_set_new (props, "language", s_prop ("string", "Programming language: " S_SUPPORTED ". Python and JavaScript run in Jupyter kernels that keep state within a session; bash runs each call as a new process in the same sandbox."));
    json_object_set_new (props, "name", s_prop ("string", "Optional human-readable name (at most 128 characters)."));
    json_object_set_new (props, "working_dir", s_prop ("string", "Only /mnt/data (the default), the session's workspace: host paths do not exist in the sandbox; upload files there instead."));
    static const char *start_required[] = {"language", NULL};
    json_array_append_new (tools, s_tool (
        "start_session", "Start a persistent session",
        "Start a persistent sandboxed REPL session and return its session_id; use send_to_session "
        "to run code in it and close_session when done.",
        s_schema (props, start_required),
        json_pack ("{s:s, s:{s:{s:s}, s:{s:s}, s:{s:s}, s:{s:[s,s]}, s:{s:[s,s]}, s:{s:s}, s:{s:s}, s:{s:s}}}",
                   "type", "object", "properties", "success", "type", "boolean", "session_id", "type", "string",
                   "language", "type", "string", "name", "type", "string", "null", "pid", "type", "integer", "null",
                   "started_at", "type", "string", "error", "type", "string", "message", "type", "string"),
        false, false));

    props = json_object ();
    json_object_set_new (props, "session_id", s_session_id_prop ("The session to run in (from start_session)."));
    s_add_run_props (props, config);
    static const char *send_required[] = {"session_id", "code", NULL};
    json_array_append_new (tools, s_tool (
        "send_to_session", "Run code in a session",
        "Run code in an existing session; it builds on the state of earlier calls.",
        s_schema (props, send_required), s_run_output_schema (), false, false));

    props = json_object ();
    json_object_set_new (props, "session_id", s_session_id_prop ("The session to close."));
    static const char *close_required[] = {"session_id", NULL};
    json_array_append_new (tools, s_tool (
        "close_session", "Close a session",
        "Destroy a session's sandbox, its kernels and its files.",
        s_schema (props, close_required),
        json_pack ("{s:s, s:{s:{s:s}, s:{s:s}, s:{s:s}, s:{s:s}, s:{s:s}, s:{s:s}, s:{s:s}}}",
                   "type", "object", "properties", "success", "type", "boolean", "status", "type", "string",
                   "session_id", "type", "string", "duration_total_ms", "type", "integer",
                   "executions_count", "type", "integer", "error", "type", "string", "message", "type", "string"),
        false, true));

    props = json_object ();
    json_object_set_new (props, "session_id", s_session_id_prop (
        "Session to upload into; created on first use. Omitted: a new session is created and its id returned."));
    json_object_set_new (props, "filename", s_prop ("string", "Name in /mnt/data, e.g. sales.csv or in/sales.csv; no '..', absolute paths or control characters."));
    cleanup_free char *content_doc = cg_strdupf ("The file's bytes, base64-encoded (at most %zu bytes decoded).", config->max_upload_bytes);
    json_object_set_new (props, "content_base64", s_prop ("string", content_doc));
    json_object_set_new (props, "overwrite", s_prop ("boolean", "Replace an existing file (default false: file_exists error)."));
    static const char *upload_required[] = {"filename", "content_base64", NULL};
    json_t *upload_out = s_artifact_props (false);
    json_array_append_new (tools, s_tool (
        "upload_file", "Upload a file into a session",
        "Upload a data file (base64) into the session's /mnt/data so code can read it. Returns the session_id and the path.",
        s_schema (props, upload_required), s_object_schema (upload_out), false, false));

    props = json_object ();
    json_object_set_new (props, "session_id", s_session_id_prop ("An existing session."));
    json_object_set_new (props, "path", s_prop ("string", "Absolute path within /mnt/data (or relative to it), e.g. /mnt/data/chart.png."));
    static const char *read_required[] = {"session_id", "path", NULL};
    json_t *read_out = s_artifact_props (true);
    json_array_append_new (tools, s_tool (
        "read_artifact", "Read a file from a session",
        "Read a file from the session's /mnt/data as base64; images also come back as image content to look at.",
        s_schema (props, read_required), s_object_schema (read_out), true, false));

    props = json_object ();
    json_object_set_new (props, "session_id", s_session_id_prop ("An existing session."));
    static const char *list_required[] = {"session_id", NULL};
    json_array_append_new (tools, s_tool (
        "list_artifacts", "List a session's files",
        "List every file in the session's /mnt/data with size, MIME type and download URL.",
        s_schema (props, list_required),
        s_object_schema (json_pack ("{s:{s:s, s:o}, s:{s:s}}", "artifacts", "type", "array", "items",
                                    s_artifact_schema (false), "truncated", "type", "boolean")),
        true, false));

    json_array_append_new (tools, s_tool (
        "list_sessions", "List sessions",
        "List the active sessions with language, name, age, activity, executions, memory and "
        "the workspace's (/mnt/data) space and files, used and limit.",
        s_schema (json_object (), NULL),
        s_list_sessions_output_schema (),
        true, false));
    return tools;
}

bool
cg_tools_known (const char *name)
{
    static const char *names[] = {"execute_code", "run_python", "start_session", "send_to_session",
                                  "close_session", "list_sessions", "upload_file", "read_artifact",
                                  "list_artifacts", CG_SEED001_TOOL, NULL};
    for (int i = 0; names[i]; i++)
        if (strcmp (name, names[i]) == 0)
            return true;
    return false;
}

//  --------------------------------------------------------------------------
//  Arguments

static json_t *
s_invalid (const char *error_code, const char *message, const char *language)
{
    return cg_run_result_invalid (language, error_code, message);
}

const char *
cg_tools_canonical_language (const char *name)
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

bool
cg_tools_valid_session_id (const char *id)
{
    size_t len = strlen (id);
    if (len == 0 || len > CG_SESSION_ID_MAX || !isalnum ((unsigned char) id[0]))
        return false;
    for (size_t i = 0; i < len; i++)
        if (!isalnum ((unsigned char) id[i]) && !strchr ("_.-", id[i]))
            return false;
    return true;
}

#define S_FILES_MAX 100

//  Checks seed 003's files argument: path -> text, or path -> {"content_base64": ...}.
//  Returns a new array [{"path": rel, "base64": ...}] (text is encoded too), or NULL with
//  *why set (caller frees).
static json_t *
s_files_arg (const cg_config_t *config, json_t *files, char **why)
{
    if (!json_is_object (files)) {
        *why = cg_xstrdup ("'files' must be an object mapping paths to contents");
        return NULL;
    }
    if (json_object_size (files) > S_FILES_MAX) {
        *why = cg_strdupf ("'files' holds %zu files; at most %d", json_object_size (files), S_FILES_MAX);
        return NULL;
    }
    json_t *list = json_array ();
    size_t total = 0;
    const char *key;
    json_t *value;
    json_object_foreach (files, key, value) {
        cg_error_t *err = NULL;
        cleanup_free char *rel = cg_workspace_sanitize_filename (key, &err);
        if (!rel) {
            *why = cg_strdupf ("files: invalid path: %s", cg_error_message (err));
            cg_error_destroy (&err);
            break;
        }
        json_t *b64 = json_object_get (value, "content_base64");
        size_t len = 0;
        if (json_is_string (value)) {
            len = json_string_length (value);
            size_t cap = sodium_base64_encoded_len (len, sodium_base64_VARIANT_ORIGINAL);
            cleanup_free char *encoded = cg_xmalloc (cap);
            sodium_bin2base64 (encoded, cap, (const unsigned char *) json_string_value (value), len,
                               sodium_base64_VARIANT_ORIGINAL);
            json_array_append_new (list, json_pack ("{s:s, s:s}", "path", rel, "base64", encoded));
        }
        else if (json_is_object (value) && json_object_size (value) == 1 && json_is_string (b64)) {
            size_t cap = json_string_length (b64) / 4 * 3 + 3;
            cleanup_free unsigned char *bytes = cg_xmalloc (cap);
            if (sodium_base642bin (bytes, cap, json_string_value (b64), json_string_length (b64), " \r\n", &len,
                                   NULL, sodium_base64_VARIANT_ORIGINAL) != 0) {
                *why = cg_strdupf ("files: %s: content_base64 is not valid base64", rel);
                break;
            }
            json_array_append_new (list, json_pack ("{s:s, s:O}", "path", rel, "base64", b64));
        }
        else {
            *why = cg_strdupf ("files: %s: give the text as a string, or {\"content_base64\": ...}", rel);
            break;
        }
        total += len;
        if (total > config->max_upload_bytes) {
            *why = cg_strdupf ("files: more than %zu bytes in all (the upload limit)", config->max_upload_bytes);
            break;
        }
    }
    if (*why)
        json_decref (list), list = NULL;
    return list;
}

json_t *
cg_tools_execute_request (const cg_config_t *config, const char *tool, json_t *arguments,
                          json_t **error_result)
{
    *error_result = NULL;
    bool seed001 = strcmp (tool, CG_SEED001_TOOL) == 0;
    bool execute = strcmp (tool, "execute_code") == 0 || seed001;
    bool send = strcmp (tool, "send_to_session") == 0;
    //  execute_code alone takes a language; the others run the session's (python).
    static const char *allowed[] = {"code", "stdin", "stdin_data", "timeout", "timeout_ms",
                                    "session_id", "language", "files", NULL};
    if (arguments && !json_is_object (arguments)) {
        *error_result = s_invalid ("INVALID_PARAMS", "arguments must be an object", NULL);
        return NULL;
    }
    const char *key;
    json_t *value;
    json_object_foreach (arguments, key, value) {
        bool known = false;
        for (int i = 0; allowed[i] && !known; i++)
            known = strcmp (key, allowed[i]) == 0 && (execute || strcmp (key, "language") != 0);
        if (!known) {
            cleanup_free char *message = cg_strdupf (
                "unknown argument '%.64s'; %s takes %scode, stdin (or stdin_data), timeout (or "
                "timeout_ms), session_id and files", key, tool, execute ? "language, " : "");
            *error_result = s_invalid ("INVALID_PARAMS", message, NULL);
            return NULL;
        }
    }
    json_t *language = execute ? json_object_get (arguments, "language") : NULL;
    json_t *code = json_object_get (arguments, "code");
    if ((execute && !json_is_string (language)) || !json_is_string (code)) {
        *error_result = s_invalid ("INVALID_PARAMS", execute ? "'language' and 'code' are required strings" : "'code' is a required string", NULL);
        return NULL;
    }
    const char *canonical = execute ? cg_tools_canonical_language (json_string_value (language)) : "python";
    if (!canonical) {
        cleanup_free char *message = cg_strdupf (
            "language '%.64s' is not supported; supported: " S_SUPPORTED,
            json_string_value (language));
        *error_result = s_invalid ("UNSUPPORTED_LANGUAGE", message, json_string_value (language));
        return NULL;
    }
    if (json_string_length (code) > config->max_code_bytes) {
        cleanup_free char *message = cg_strdupf ("code is %zu bytes; the limit is %zu bytes",
                                                 json_string_length (code), config->max_code_bytes);
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
    double seconds = seed001 ? CG_SEED001_TIMEOUT_MS / 1000.0 : config->default_timeout_s;
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
    if (send && !json_is_string (session_id)) {
        *error_result = s_invalid ("INVALID_PARAMS", "'session_id' is required (start one with start_session)", canonical);
        return NULL;
    }
    if (session_id && !json_is_null (session_id)
        && (!json_is_string (session_id) || !cg_tools_valid_session_id (json_string_value (session_id)))) {
        *error_result = s_invalid ("INVALID_PARAMS",
                                   CG_SESSION_ID_RULE,
                                   canonical);
        return NULL;
    }
    json_t *files = NULL;
    if (json_object_get (arguments, "files")) {
        cleanup_free char *why = NULL;
        files = s_files_arg (config, json_object_get (arguments, "files"), &why);
        if (!files) {
            *error_result = s_invalid ("INVALID_PARAMS", why, canonical);
            return NULL;
        }
    }
    char execution_id[18] = "exec_";
    cg_random_hex (execution_id + 5, 6);
    json_t *request = json_pack ("{s:s, s:O, s:f, s:s, s:s}", "language", canonical, "code", code,
                                 "timeout", seconds, "execution_id", execution_id, "tool", tool);
    if (files)
        json_object_set_new (request, "files", files);
    if (stdin_value)
        json_object_set (request, "stdin", stdin_value);
    if (json_is_string (session_id))
        json_object_set (request, "session_id", session_id);
    return request;
}

//  --------------------------------------------------------------------------
//  Results

json_t *
cg_tools_object_result (json_t *structured, const char *text, bool is_error)
{
    return json_pack ("{s:[{s:s, s:s}], s:o, s:b}", "content", "type", "text", "text", text,
                      "structuredContent", structured, "isError", is_error);
}

json_t *
cg_tools_error_object (const char *error, const char *message, const char *session_id)
{
    json_t *structured = json_pack ("{s:b, s:s, s:s}", "success", 0, "error", error, "message", message);
    if (session_id)
        json_object_set_new (structured, "session_id", json_string (session_id));
    return cg_tools_object_result (structured, message, true);
}
