/*  cg_tools — the tool table: one row per tool (name, schemas as JSON text, handler,
    flags), tools/list built from it, the schema-driven check of arguments, and the
    results every family shares. */
#include "cg_tools.h"
#include "cg_conformance.h"
#include "cg_jsonrpc.h"
#include "cg_result.h"
#include "cg_run_result.h"
#include "../bridge/cg_session.h"
#include "../bridge/cg_util.h"

#include <ctype.h>
#include <string.h>

static const char *s_languages[][2] = {{"python", "python"},
                                       {"py", "python"},
                                       {"python3", "python"},
                                       {"javascript", "javascript"},
                                       {"js", "javascript"},
                                       {"node", "javascript"},
                                       {"nodejs", "javascript"},
                                       {"bash", "bash"},
                                       {"sh", "bash"},
                                       {"shell", "bash"},
                                       {NULL, NULL}};

#define S_SUPPORTED "python (aliases py, python3), javascript (js, node, nodejs), bash (sh, shell)"

const char *
cg_tools_supported_languages (void)
{
    return S_SUPPORTED;
}

//  --------------------------------------------------------------------------
//  The tool table
//
//  Schemas are JSON text written with ' for " (a literal ' is ${apos}); ${name} stands
//  for a limit or a setting, filled in by s_expand, so that each is defined once.

#define S_SESSION_ID \
    "'type': 'string', 'pattern': '^[A-Za-z0-9][A-Za-z0-9_.-]*$', 'maxLength': ${session_id_max}"
#define S_LANGUAGE                                                                               \
    "'language': {'type': 'string', 'description': 'Programming language: ${languages}. Python " \
    "and JavaScript run in Jupyter kernels that keep state within a session; bash runs each "    \
    "call as a new process in the same sandbox.'}"

#define S_SCRIPT_NAME "'type': 'string', 'pattern': '^[A-Za-z0-9][A-Za-z0-9_.-]*$', 'maxLength': 64"

//  The arguments every running tool shares.
#define S_RUN_ARGUMENTS                                                                          \
    "'code': {'type': 'string', 'description': 'The code to run, as a Jupyter cell: the value "  \
    "of a last expression is returned (at most ${max_code_bytes} bytes).'},"                     \
    "'stdin': {'type': 'string', 'description': 'Text fed to input() calls, one line per call; " \
    "when it runs out, input() raises EOFError.'},"                                              \
    "'stdin_data': {'type': 'string', 'description': 'Alias of stdin.'},"                        \
    "'timeout': {'type': 'integer', 'minimum': ${timeout_min_s}, 'maximum': ${timeout_max_s},"   \
    " 'description': 'Maximum execution time in seconds, ${timeout_min_s} to ${timeout_max_s} "  \
    "(default ${default_timeout_s}). On timeout the kernel is interrupted and partial output "   \
    "returned; the session keeps its state.'},"                                                  \
    "'timeout_ms': {'type': 'integer', 'minimum': ${timeout_min_ms}, 'maximum': "                \
    "${timeout_max_ms}, 'description': 'Alias of timeout, in milliseconds.'},"                   \
    "'files': {'type': 'object', 'description': 'Files to write into ${workspace} before the "   \
    "code "                                                                                      \
    "runs (seed 003): path -> text, or path -> {\\\"content_base64\\\": ...} for binary files. " \
    "Small text files the run creates come back in the result${apos}s files.',"                  \
    " 'additionalProperties': {'anyOf': [{'type': 'string'}, {'type': 'object', 'properties': "  \
    "{'content_base64': {'type': 'string'}}, 'required': ['content_base64']}]}}"

#define S_ARTIFACT_PROPERTIES                                                             \
    "'path': {'type': 'string'}, 'filename': {'type': 'string'}, 'size_bytes': {'type': " \
    "'integer'}, 'mime_type': {'type': 'string'}, 'download_url': {'type': 'string'}"
#define S_ARTIFACT                                                                        \
    "{'type': 'object', 'properties': {" S_ARTIFACT_PROPERTIES "}, 'required': ['path', " \
    "'filename', 'size_bytes', 'mime_type']}"

//  An object result that may instead be an error object {error, message}: nothing is
//  required, so both validate. PROPERTIES: its own.
#define S_OBJECT_OR_ERROR(properties)                                                          \
    "{'type': 'object', 'properties': {" properties "'error': {'type': 'string'}, 'message': " \
    "{'type': 'string'}, 'session_id': {'type': 'string'}}}"

//  The result of every running tool: the union of seeds 000-004's fields.
#define S_RUN_RESULT                                                                           \
    "{'type': 'object', 'properties': {"                                                       \
    "'stdout': {'type': 'string'}, 'stderr': {'type': 'string'}, 'exit_code': {'type': "       \
    "'integer'}, 'status': {'type': 'string', 'enum': ['success', 'timeout', "                 \
    "'execution_error', 'setup_error']}, 'error_code': {'type': ['string', 'null']}, "         \
    "'error_message': {'type': ['string', 'null']}, 'execution_time': {'type': 'number'}, "    \
    "'duration_ms': {'type': 'integer'}, 'execution_id': {'type': 'string'}, 'session_id': "   \
    "{'type': ['string', 'null']}, 'language': {'type': 'string'}, 'outputs': {'type': "       \
    "'array', 'items': {'type': 'object'}}, 'success': {'type': 'boolean'}, 'timed_out': "     \
    "{'type': 'boolean'}, 'kernel_restarted': {'type': 'boolean'}, 'cancelled': {'type': "     \
    "'boolean'}, 'stdout_truncated': {'type': 'boolean'}, 'stderr_truncated': {'type': "       \
    "'boolean'}, 'execution_count': {'type': 'integer'}, 'return_value': {}, 'truncated': "    \
    "{'type': 'boolean'}, 'artifacts': {'type': 'array', 'items': " S_ARTIFACT "}, 'run_id': " \
    "{'type': 'string'}, 'error': {'type': 'string'}, 'message': {'type': 'string'}, "         \
    "'stdout_file': {'type': 'string'}, 'stderr_file': {'type': 'string'}, 'stdout_url': "     \
    "{'type': 'string'}, 'stderr_url': {'type': 'string'}, 'notice': {'type': 'string'}, "     \
    "'artifacts_created': {'type': 'array', 'items': {'type': 'string'}}, "                    \
    "'artifacts_modified': {'type': 'array', 'items': {'type': 'string'}}, "                   \
    "'artifacts_deleted': {'type': 'array', 'items': {'type': 'string'}}, "                    \
    "'returnValue': {}, 'executionTimeMs': {'type': 'number'}, 'memoryUsedMB': {'type': "      \
    "'number'}, 'files': {'type': 'object', 'additionalProperties': {'type': 'string'}}}, "    \
    "'required': ['stdout', 'stderr', 'exit_code', 'status', 'error_code', 'error_message', "  \
    "'execution_time', 'duration_ms']}"

static const cg_tool_t s_tools[] = {
    {.name = "execute_code",
     .title = "Execute code in a sandbox",
     .description =
         "Run Python, JavaScript or bash in an isolated, network-less sandbox (a "
         "locked-down container running Jupyter kernels). Returns stdout, stderr, exit "
         "code, status and rich outputs; matplotlib charts come back as images. Pass "
         "session_id to keep variables, imports and files in " CG_WORKSPACE_MOUNT " between calls.",
     .input_schema =
         "{'type': 'object', 'additionalProperties': false, 'required': ['language', "
         "'code'], 'properties': {" S_LANGUAGE ", " S_RUN_ARGUMENTS ", 'session_id': {" S_SESSION_ID
         ", 'description': 'Keep state between calls: the same id reuses "
         "the same sandbox and kernel (created on first use). Without it the code runs "
         "in a fresh sandbox that is destroyed afterwards.'}}}",
     .output_schema = S_RUN_RESULT,
     .handler = cg_tools_run,
     .flags = CG_TOOL_RUNS | CG_TOOL_LANGUAGE | CG_TOOL_NOT_SEED001},
    {.name = CG_SEED001_TOOL,
     .title = "Execute code in a sandbox",
     .description = "Allows an LLM or AI agent to securely execute a given code snippet in a "
                    "specified language (python, javascript, bash) within an isolated sandbox. "
                    "Returns the standard output, standard error, and exit code.",
     .input_schema =
         "{'type': 'object', 'required': ['language', 'code'], 'properties': {"
         "'language': {'type': 'string', 'description': 'Programming language (e.g., "
         "python, javascript, bash).'}, 'code': {'type': 'string', 'description': 'The "
         "code snippet to execute.'}, 'stdin_data': {'type': 'string', 'description': "
         "'Data to pass to the script${apos}s standard input.'}, 'timeout_ms': {'type': "
         "'integer', 'default': ${seed001_timeout_ms}, 'description': 'Max execution "
         "time in milliseconds. Default: ${seed001_timeout_ms}.'}}}",
     .output_schema =
         "{'type': 'object', 'properties': {'stdout': {'type': 'string'}, 'stderr': "
         "{'type': 'string'}, 'exit_code': {'type': 'integer'}, 'status': {'type': "
         "'string', 'enum': ['completed', 'timeout', 'error_runtime', 'error_setup']}, "
         "'duration_ms': {'type': 'integer'}}, 'required': ['stdout', 'stderr', "
         "'exit_code', 'status', 'duration_ms']}",
     .handler = cg_tools_run,
     .flags = CG_TOOL_RUNS | CG_TOOL_LANGUAGE | CG_TOOL_SEED001},
    {.name = "run_python",
     .title = "Run Python in a session",
     .description =
         "Run Python in a persistent sandboxed session (variables and files in " CG_WORKSPACE_MOUNT
         " persist between calls). Returns stdout, stderr, exit_code, the "
         "run_id and the files the run created or changed (artifacts, with download "
         "URLs); charts come back as images.",
     .input_schema = "{'type': 'object', 'additionalProperties': false, 'required': ['code'], "
                     "'properties': {" S_RUN_ARGUMENTS ", 'session_id': {" S_SESSION_ID ", "
                     "'description': 'Session to run in; created on first use. Omitted: a new "
                     "session is created and its id returned (sess_<12 hex>) for later calls.'}}}",
     .output_schema = S_RUN_RESULT,
     .handler = cg_tools_run,
     .flags = CG_TOOL_RUNS | CG_TOOL_SESSION_MADE},
    {.name = "start_session",
     .title = "Start a persistent session",
     .description = "Start a persistent sandboxed REPL session and return its session_id; use "
                    "send_to_session to run code in it and close_session when done.",
     .input_schema = "{'type': 'object', 'additionalProperties': false, 'required': ['language'], "
                     "'properties': {" S_LANGUAGE ", 'name': {'type': 'string', 'description': "
                     "'Optional human-readable name (at most ${name_max} characters).'}, "
                     "'working_dir': {'type': 'string', 'description': 'Only ${workspace} (the "
                     "default), the session${apos}s workspace: host paths do not exist in the "
                     "sandbox; upload files there instead.'}}}",
     .output_schema = "{'type': 'object', 'properties': {'success': {'type': 'boolean'}, "
                      "'session_id': {'type': 'string'}, 'language': {'type': 'string'}, 'name': "
                      "{'type': ['string', 'null']}, 'pid': {'type': ['integer', 'null']}, "
                      "'started_at': {'type': 'string'}, 'error': {'type': 'string'}, 'message': "
                      "{'type': 'string'}}}",
     .handler = cg_tools_start_session},
    {.name = "send_to_session",
     .title = "Run code in a session",
     .description = "Run code in an existing session; it builds on the state of earlier calls.",
     .input_schema = "{'type': 'object', 'additionalProperties': false, 'required': ['session_id', "
                     "'code'], 'properties': {'session_id': {" S_SESSION_ID ", 'description': 'The "
                     "session to run in (from start_session).'}, " S_RUN_ARGUMENTS "}}",
     .output_schema = S_RUN_RESULT,
     .handler = cg_tools_run,
     .flags = CG_TOOL_RUNS | CG_TOOL_SESSION_GIVEN},
    {.name = "close_session",
     .title = "Close a session",
     .description = "Destroy a session's sandbox, its kernels and its files.",
     .input_schema = "{'type': 'object', 'additionalProperties': false, 'required': "
                     "['session_id'], 'properties': {'session_id': {" S_SESSION_ID ", "
                     "'description': 'The session to close.'}}}",
     .output_schema = "{'type': 'object', 'properties': {'success': {'type': 'boolean'}, 'status': "
                      "{'type': 'string'}, 'session_id': {'type': 'string'}, 'duration_total_ms': "
                      "{'type': 'integer'}, 'executions_count': {'type': 'integer'}, 'error': "
                      "{'type': 'string'}, 'message': {'type': 'string'}}}",
     .handler = cg_tools_close_session,
     .flags = CG_TOOL_DESTRUCTIVE},
    {.name = "upload_file",
     .title = "Upload a file into a session",
     .description =
         "Upload a data file (base64) into the session's " CG_WORKSPACE_MOUNT " so code can read "
         "it. Returns the session_id and the path.",
     .input_schema = "{'type': 'object', 'additionalProperties': false, 'required': ['filename', "
                     "'content_base64'], 'properties': {'session_id': {" S_SESSION_ID ", "
                     "'description': 'Session to upload into; created on first use. Omitted: a "
                     "new session is created and its id returned.'}, 'filename': {'type': "
                     "'string', 'description': 'Name in ${workspace}, e.g. sales.csv or "
                     "in/sales.csv; no ${apos}..${apos}, absolute paths or control characters.'}, "
                     "'content_base64': {'type': 'string', 'description': 'The file${apos}s "
                     "bytes, base64-encoded (at most ${max_upload_bytes} bytes decoded).'}, "
                     "'overwrite': {'type': 'boolean', 'description': 'Replace an existing file "
                     "(default false: file_exists error).'}}}",
     .output_schema = S_OBJECT_OR_ERROR (S_ARTIFACT_PROPERTIES ", "),
     .handler = cg_tools_upload_file},
    {.name = "read_artifact",
     .title = "Read a file from a session",
     .description =
         "Read a file from the session's " CG_WORKSPACE_MOUNT " as base64 (content_base64); "
         "format 'image' gives a PNG/JPEG/GIF/WebP as image content to look at instead.",
     .input_schema =
         "{'type': 'object', 'additionalProperties': false, 'required': ['session_id', "
         "'path'], 'properties': {'session_id': {" S_SESSION_ID ", 'description': 'An "
         "existing session.'}, 'path': {'type': 'string', 'description': 'Absolute "
         "path within ${workspace} (or relative to it), e.g. ${workspace}/chart.png.'}, 'format': "
         "{'enum': ['base64', 'image', 'both'], 'description': 'Where an image${apos}s bytes "
         "go: content_base64 (default), an image block, or both.'}}}",
     .output_schema = S_OBJECT_OR_ERROR (S_ARTIFACT_PROPERTIES ", 'content_base64': {'type': "
                                                               "'string'}, "),
     .handler = cg_tools_read_artifact,
     .flags = CG_TOOL_READ_ONLY},
    {.name = "list_artifacts",
     .title = "List a session's files",
     .description =
         "List every file in the session's " CG_WORKSPACE_MOUNT " with size, MIME type and "
         "download URL.",
     .input_schema = "{'type': 'object', 'additionalProperties': false, 'required': "
                     "['session_id'], 'properties': {'session_id': {" S_SESSION_ID ", "
                     "'description': 'An existing session.'}}}",
     .output_schema = S_OBJECT_OR_ERROR ("'artifacts': {'type': 'array', 'items': " S_ARTIFACT
                                         "}, 'truncated': {'type': 'boolean'}, "),
     .handler = cg_tools_list_artifacts,
     .flags = CG_TOOL_READ_ONLY},
    {.name = "list_sessions",
     .title = "List sessions",
     .description =
         "List the active sessions with language, name, age, activity, executions, "
         "memory and the workspace's (" CG_WORKSPACE_MOUNT ") space and files, used and limit.",
     .input_schema = "{'type': 'object', 'additionalProperties': false, 'properties': {}}",
     .output_schema = S_OBJECT_OR_ERROR (
         "'sessions': {'type': 'array', 'items': {'type': 'object', 'properties': {"
         "'workspace_limit_mb': {'type': ['number', 'null']}, 'workspace_used_mb': {'type': "
         "['number', 'null']}, 'workspace_inodes_limit': {'type': ['integer', 'null']}, "
         "'workspace_inodes_used': {'type': ['integer', 'null']}}}}, "),
     .handler = cg_tools_list_sessions,
     .flags = CG_TOOL_READ_ONLY},
    {.name = "save_script",
     .title = "Save a script",
     .description =
         "Save code as a reusable named script with a description, tags and the packages it "
         "needs, in the script library (a directory people can read and edit). Saving an "
         "existing name keeps the previous version.",
     .input_schema =
         "{'type': 'object', 'additionalProperties': false, 'required': ['name', 'language', "
         "'code'], 'properties': {'name': {" S_SCRIPT_NAME "}, 'description': {'type': 'string', "
         "'description': 'What the script does, for search.'}, " S_LANGUAGE ", 'code': {'type': "
         "'string', 'description': 'The script (at most ${max_code_bytes} bytes). It gets "
         "run_script"
         "${apos}s args as sys.argv[1:], process.argv.slice(2) or \\\"$@\\\".'}, 'tags': {'type': "
         "'array', 'items': {'type': 'string'}}, 'packages': {'type': 'array', 'items': {'type': "
         "'string'}, 'description': 'Packages the script needs; run_script checks them first.'}, "
         "'source_execution_id': {'type': 'string', 'description': 'The execution it was "
         "developed in.'}}}",
     .output_schema = S_OBJECT_OR_ERROR (
         "'success': {'type': 'boolean'}, 'script_id': {'type': 'string'}, 'name': {'type': "
         "'string'}, 'path': {'type': 'string'}, 'saved_at': {'type': 'string'}, 'version': "
         "{'type': 'integer'}, "),
     .handler = cg_tools_save_script},
    {.name = "get_script",
     .title = "Get a saved script",
     .description = "Retrieve a saved script by name: its code, metadata, run history and "
                    "earlier versions.",
     .input_schema = "{'type': 'object', 'additionalProperties': false, 'required': ['name'], "
                     "'properties': {'name': {" S_SCRIPT_NAME "}}}",
     .output_schema = S_OBJECT_OR_ERROR (
         "'success': {'type': 'boolean'}, 'name': {'type': 'string'}, 'script_id': {'type': "
         "'string'}, 'description': {'type': 'string'}, 'language': {'type': 'string'}, 'code': "
         "{'type': 'string'}, 'tags': {'type': 'array', 'items': {'type': 'string'}}, "
         "'packages': {'type': 'array', 'items': {'type': 'string'}}, 'source_execution_id': "
         "{'type': ['string', 'null']}, 'path': {'type': 'string'}, 'created_at': {'type': "
         "'string'}, 'saved_at': {'type': 'string'}, 'last_run_at': {'type': ['string', "
         "'null']}, 'run_count': {'type': 'integer'}, 'last_run_success': {'type': ['boolean', "
         "'null']}, 'versions': {'type': 'array', 'items': {'type': 'object'}}, "),
     .handler = cg_tools_get_script,
     .flags = CG_TOOL_READ_ONLY},
    {.name = "list_scripts",
     .title = "List saved scripts",
     .description = "List the saved scripts with descriptions and tags, optionally only one "
                    "language's or one tag's.",
     .input_schema = "{'type': 'object', 'additionalProperties': false, 'properties': {"
                     "'language': {'type': 'string'}, 'tag': {'type': 'string'}}}",
     .output_schema = S_OBJECT_OR_ERROR (
         "'scripts': {'type': 'array', 'items': {'type': 'object', 'properties': {'name': "
         "{'type': 'string'}, 'description': {'type': 'string'}, 'language': {'type': "
         "'string'}, 'tags': {'type': 'array'}, 'last_run_at': {'type': ['string', 'null']}}}}, "
         "'total_count': {'type': 'integer'}, "),
     .handler = cg_tools_list_scripts,
     .flags = CG_TOOL_READ_ONLY},
    {.name = "search_scripts",
     .title = "Search saved scripts",
     .description = "Search the saved scripts' names, tags, descriptions and code for the words "
                    "of a query; best matches first, each saying what matched.",
     .input_schema =
         "{'type': 'object', 'additionalProperties': false, 'required': ['query'], "
         "'properties': {'query': {'type': 'string', 'description': 'Words to look for, e.g. "
         "excel parsing.'}, 'language': {'type': 'string', 'description': 'Only this "
         "language${apos}s scripts.'}, 'limit': {'type': 'integer', 'minimum': 1, 'maximum': "
         "100, 'description': 'At most this many results (default 20).'}}}",
     .output_schema = S_OBJECT_OR_ERROR (
         "'results': {'type': 'array', 'items': {'type': 'object', 'properties': {'name': "
         "{'type': 'string'}, 'description': {'type': 'string'}, 'language': {'type': "
         "'string'}, 'relevance': {'type': 'string', 'enum': ['name_match', 'tag_match', "
         "'description_match', 'code_match']}, 'score': {'type': 'integer'}}}}, "
         "'total_count': {'type': 'integer'}, "),
     .handler = cg_tools_search_scripts,
     .flags = CG_TOOL_READ_ONLY},
    {.name = "run_script",
     .title = "Run a saved script",
     .description =
         "Run a saved script by name, with arguments, in a fresh sandbox (or in a session when "
         "session_id is given). Checks first that the packages it lists are installed. Returns "
         "the same result as execute_code.",
     .input_schema = "{'type': 'object', 'additionalProperties': false, 'required': ['name'], "
                     "'properties': {'name': {" S_SCRIPT_NAME "}, 'args': {'type': 'array', "
                     "'items': {'type': 'string'}, 'description': 'Command-line arguments: "
                     "sys.argv[1:] in Python, process.argv.slice(2) in JavaScript, \\\"$@\\\" "
                     "in bash.'}, 'timeout_ms': {'type': 'integer', 'minimum': ${timeout_min_ms}, "
                     "'maximum': ${timeout_max_ms}}, 'session_id': {" S_SESSION_ID ", "
                     "'description': 'Run in this session (created on first use) instead of a "
                     "fresh sandbox.'}}}",
     .output_schema = S_RUN_RESULT,
     .handler = cg_tools_run_script,
     .flags = CG_TOOL_RUNS},
    {.name = "search_execution_logs",
     .title = "Search past executions",
     .description =
         "Search this client's logged executions (every run by any tool) by language, status, "
         "text in the code or output, and date; newest first, with code and error previews. "
         "get_execution_log gives an entry in full.",
     .input_schema =
         "{'type': 'object', 'additionalProperties': false, 'properties': {'language': {'type': "
         "'string', 'description': 'Only this language: ${languages}.'}, 'status': {'type': "
         "'string', 'enum': ['success', 'failed', 'timeout']}, 'query': {'type': 'string', "
         "'description': 'Text to find in the code, stdout or stderr (any case).'}, 'since': "
         "{'type': 'string', 'description': 'Only executions from then on: an ISO 8601 date "
         "(2026-02-01) or time (2026-02-01T10:00:00Z).'}, 'limit': {'type': 'integer', "
         "'minimum': 1, 'maximum': 100, 'default': 20}}}",
     .output_schema = S_OBJECT_OR_ERROR (
         "'results': {'type': 'array', 'items': {'type': 'object', 'properties': {"
         "'execution_id': {'type': 'string'}, 'session_id': {'type': ['string', 'null']}, "
         "'language': {'type': 'string'}, 'code_preview': {'type': ['string', 'null']}, "
         "'status': {'type': 'string'}, 'exit_code': {'type': ['integer', 'null']}, "
         "'error_preview': {'type': ['string', 'null']}, 'duration_ms': {'type': 'integer'}, "
         "'executed_at': {'type': 'string'}}}}, 'total_count': {'type': 'integer'}, "),
     .handler = cg_tools_search_execution_logs,
     .flags = CG_TOOL_READ_ONLY},
    {.name = "get_execution_log",
     .title = "Get a logged execution",
     .description = "The full log entry of one of this client's executions: code, stdin, "
                    "stdout, stderr, exit code, status, duration, memory, artifacts, tool.",
     .input_schema = "{'type': 'object', 'additionalProperties': false, 'required': "
                     "['execution_id'], 'properties': {'execution_id': {'type': 'string', "
                     "'description': 'From a run${apos}s result or search_execution_logs.'}}}",
     .output_schema = "{'type': 'object', 'properties': {'execution_id': {'type': 'string'}, "
                      "'session_id': {'type': ['string', 'null']}, 'language': {'type': "
                      "'string'}, 'code': {'type': 'string'}, 'stdout': {'type': 'string'}, "
                      "'stderr': {'type': 'string'}, 'exit_code': {'type': ['integer', 'null']}, "
                      "'status': {'type': 'string'}, 'duration_ms': {'type': 'integer'}, "
                      "'executed_at': {'type': 'string'}, 'packages_installed': {'type': "
                      "'array', 'items': {'type': 'string'}}, 'artifacts_created': {'type': "
                      "'array', 'items': {'type': 'string'}}, 'artifacts_modified': {'type': "
                      "'array', 'items': {'type': 'string'}}, 'artifacts_deleted': {'type': "
                      "'array', 'items': {'type': 'string'}}, 'sandbox_mode': {'type': "
                      "'string'}, 'agent_id': {'type': ['string', 'null']}, 'trace_id': "
                      "{'type': ['string', 'null']}, 'guardian_pre_scan': {'type': ['object', "
                      "'null']}, 'guardian_post_scan': {'type': ['object', 'null']}, 'error': "
                      "{'type': 'string'}, 'message': {'type': 'string'}}}",
     .handler = cg_tools_get_execution_log,
     .flags = CG_TOOL_READ_ONLY},
    {.name = "install_package",
     .title = "Install a package",
     .description =
         "Install a pip or npm package into a session (import or require it right away, no "
         "restart, state kept) or, without session_id, into the shared layer every new session "
         "sees. Packages come only from the operator's local sources (--wheelhouse, "
         "--npm-mirror): the sandbox has no network, and the install runs inside it.",
     .input_schema =
         "{'type': 'object', 'additionalProperties': false, 'required': ['package', "
         "'language'], 'properties': {'session_id': {" S_SESSION_ID ", 'description': 'The "
         "session to install into. Omitted: the shared layer, for every new session.'}, "
         "'package': {'type': 'string', 'maxLength': 300, 'description': 'A package name, "
         "optionally pinned: pandas, pandas==2.2.1; left-pad, @scope/name@1.2.0. No URLs, paths "
         "or options.'}, 'language': {'type': 'string', 'enum': ['python', 'node'], "
         "'description': 'python (pip) or node (npm).'}}}",
     .output_schema = S_OBJECT_OR_ERROR (
         "'success': {'type': 'boolean'}, 'package': {'type': 'string'}, 'version': {'type': "
         "'string'}, 'install_output': {'type': 'string'}, 'language': {'type': 'string'}, "
         "'scope': {'type': 'string', 'enum': ['session', 'shared']}, "),
     .handler = cg_tools_install_package,
     .finish = cg_tools_install_finish},
};

#define S_TOOL_COUNT (sizeof s_tools / sizeof s_tools[0])

//  Returns TEMPLATE as JSON text: ' becomes ", and each ${name} its value. Caller frees.
static char *
s_expand (const char *template, const cg_config_t *config)
{
    cleanup_free char *timeout_s = cg_strdupf ("%d", config ? config->default_timeout_s : 0);
    cleanup_free char *code_max = cg_strdupf ("%zu", config ? config->max_code_bytes : 0);
    cleanup_free char *upload_max = cg_strdupf ("%zu", config ? config->max_upload_bytes : 0);
    const char *values[][2] = {{"apos", "'"},
                               {"languages", S_SUPPORTED},
                               {"session_id_max", CG_STR (CG_SESSION_ID_MAX)},
                               {"name_max", CG_STR (CG_SESSION_NAME_MAX)},
                               {"timeout_min_s", CG_STR (CG_TIMEOUT_MIN_S)},
                               {"timeout_max_s", CG_STR (CG_TIMEOUT_MAX_S)},
                               {"timeout_min_ms", CG_MS_STR (CG_TIMEOUT_MIN_S)},
                               {"timeout_max_ms", CG_MS_STR (CG_TIMEOUT_MAX_S)},
                               {"workspace", CG_WORKSPACE_MOUNT},
                               {"seed001_timeout_ms", CG_STR (CG_SEED001_TIMEOUT_MS)},
                               {"default_timeout_s", timeout_s},
                               {"max_code_bytes", code_max},
                               {"max_upload_bytes", upload_max},
                               {NULL, NULL}};
    size_t len = strlen (template), cap = len * 2 + 256, n = 0;
    char *out = cg_xmalloc (cap);
    for (size_t i = 0; i < len;) {
        const char *end = strncmp (template + i, "${", 2) == 0 ? strchr (template + i, '}') : NULL;
        const char *value = NULL;
        for (int k = 0; end && values[k][0] && !value; k++)
            if (strlen (values[k][0]) == (size_t)(end - template - i - 2)
                && strncmp (template + i + 2, values[k][0], strlen (values[k][0])) == 0)
                value = values[k][1];
        if (!value) {
            out[n++] = template[i] == '\'' ? '"' : template[i];
            i++;
        }
        else {
            size_t vlen = strlen (value);
            if (n + vlen + (len - i) + 1 > cap)
                out = cg_xrealloc (out, cap = (n + vlen + len) * 2);
            memcpy (out + n, value, vlen);
            n += vlen;
            i = (size_t)(end - template) + 1;
        }
        if (n + 1 >= cap)
            out = cg_xrealloc (out, cap *= 2);
    }
    out[n] = '\0';
    return out;
}

//  Parses one of the table's schemas. A malformed one is the program's bug: abort.
static json_t *
s_schema (const char *template, const cg_config_t *config)
{
    cleanup_free char *text = s_expand (template, config);
    json_error_t jerr;
    json_t *schema = json_loads (text, JSON_REJECT_DUPLICATES, &jerr);
    if (!schema) {
        cg_log (0, "tool schema: %s at %d: %.80s", jerr.text, jerr.position, text);
        abort ();
    }
    return schema;
}

const cg_tool_t *
cg_tools_find (const char *name)
{
    for (size_t i = 0; name && i < S_TOOL_COUNT; i++)
        if (strcmp (name, s_tools[i].name) == 0)
            return &s_tools[i];
    return NULL;
}

bool
cg_tools_is (const char *name, unsigned flags)
{
    const cg_tool_t *tool = cg_tools_find (name);
    return tool && (tool->flags & flags) == flags;
}

bool
cg_tools_known (const char *name)
{
    return cg_tools_find (name) != NULL;
}

json_t *
cg_tools_list (const cg_config_t *config)
{
    bool seed001 = strcmp (config->tool_profile, "seed001") == 0;
    json_t *tools = json_array ();
    for (size_t i = 0; i < S_TOOL_COUNT; i++) {
        const cg_tool_t *tool = &s_tools[i];
        if ((tool->flags & CG_TOOL_SEED001 && !seed001)
            || (tool->flags & CG_TOOL_NOT_SEED001 && seed001))
            continue;
        bool read_only = tool->flags & CG_TOOL_READ_ONLY;
        json_array_append_new (
            tools,
            json_pack ("{s:s, s:s, s:s, s:o, s:o, s:{s:b, s:b, s:b, s:b}}", "name", tool->name,
                       "title", tool->title, "description", tool->description, "inputSchema",
                       s_schema (tool->input_schema, config), "outputSchema",
                       s_schema (tool->output_schema, config), "annotations", "readOnlyHint",
                       read_only, "destructiveHint", (tool->flags & CG_TOOL_DESTRUCTIVE) != 0,
                       "idempotentHint", read_only, "openWorldHint", 0));
    }
    if (strcmp (config->tool_profile, "conformance") == 0) {
        json_t *fixtures = cg_conformance_tools ();
        json_array_extend (tools, fixtures);
        json_decref (fixtures);
    }
    return tools;
}

//  The properties of TOOL's input schema (a row of s_tools), parsed once: every running
//  tool's call is checked twice (cg_tools_call, then cg_tools_execute_request), and the
//  names do not depend on the configuration. Tool calls are handled on the main thread.
static json_t *
s_properties (const cg_tool_t *tool)
{
    static json_t *parsed[S_TOOL_COUNT];
    size_t i = (size_t)(tool - s_tools);
    if (!parsed[i])
        parsed[i] = s_schema (tool->input_schema, NULL);
    return json_object_get (parsed[i], "properties");
}

json_t *
cg_tools_check_arguments (const cg_tool_t *tool, json_t *arguments)
{
    json_t *properties = s_properties (tool);
    const char *key;
    json_t *value;
    json_t *refusal = NULL;
    json_object_foreach (arguments, key, value)
    {
        if (json_object_get (properties, key))
            continue;
        const char *name;
        json_t *property;
        cleanup_free char *names = NULL;
        json_object_foreach (properties, name, property)
        {
            char *more = names ? cg_strdupf ("%s, %s", names, name) : cg_xstrdup (name);
            free (names);
            names = more;
        }
        cleanup_free char *message = cg_strdupf ("unknown argument '%.64s'; %s takes %s", key,
                                                 tool->name, names ? names : "no arguments");
        refusal = tool->flags & CG_TOOL_RUNS
                      ? cg_tools_refusal (tool->name, NULL, NULL, "invalid_params", message)
                      : cg_tools_error_object ("invalid_params", message, NULL);
        break;
    }
    return refusal;
}

void
cg_tools_call (const cg_request_t *req, json_t *params)
{
    const cg_config_t *config = cg_server_config (req->server);
    const char *name = json_string_value (json_object_get (params, "name"));
    json_t *arguments = json_object_get (params, "arguments");
    const cg_tool_t *tool = cg_tools_find (name);
    if (!name) {
        cg_request_error (req, CG_JSONRPC_INVALID_PARAMS, "tools/call: 'name' is required");
        return;
    }
    if (strcmp (config->tool_profile, "conformance") == 0 && cg_conformance_known (name)) {
        cg_conformance_handle (req, name, arguments);
        return;
    }
    if (!tool) {
        cleanup_free char *message = cg_strdupf ("Unknown tool: %.128s", name);
        cg_request_error (req, CG_JSONRPC_INVALID_PARAMS, message);
        return;
    }
    json_t *refusal = NULL;
    if (arguments && !json_is_object (arguments))
        refusal =
            tool->flags & CG_TOOL_RUNS
                ? cg_tools_refusal (name, NULL, NULL, "invalid_params",
                                    "arguments must be an object")
                : cg_tools_error_object ("invalid_params", "arguments must be an object", NULL);
    else
        refusal = cg_tools_check_arguments (tool, arguments);
    if (refusal) {
        cg_request_result (req, refusal);
        return;
    }
    json_t *empty = arguments ? NULL : json_object ();
    cg_request_t named = *req;
    named.tool = tool;
    tool->handler (&named, arguments ? arguments : empty);
    json_decref (empty);
}

json_t *
cg_tools_refusal (const char *tool, const char *language, const char *session_id, const char *error,
                  const char *message)
{
    const cg_tool_t *row = cg_tools_find (tool);
    if (!row || !(row->flags & CG_TOOL_RUNS))
        return cg_tools_error_object (error, message, session_id);
    json_t *result = cg_run_result_refused (language, session_id, error, message);
    if (row->flags & CG_TOOL_SEED001)
        cg_run_result_seed001_status (json_object_get (result, "structuredContent"));
    return result;
}

const char *
cg_tools_canonical_language (const char *name)
{
    char lower[32];
    size_t len = strlen (name);
    if (len >= sizeof lower)
        return NULL;
    for (size_t i = 0; i <= len; i++)
        lower[i] = (char)tolower ((unsigned char)name[i]);
    for (int i = 0; s_languages[i][0]; i++)
        if (strcmp (lower, s_languages[i][0]) == 0)
            return s_languages[i][1];
    return NULL;
}

bool
cg_tools_valid_session_id (const char *id)
{
    size_t len = strlen (id);
    if (len == 0 || len > CG_SESSION_ID_MAX || !isalnum ((unsigned char)id[0]))
        return false;
    for (size_t i = 0; i < len; i++)
        if (!isalnum ((unsigned char)id[i]) && !strchr ("_.-", id[i]))
            return false;
    return true;
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
    json_t *structured =
        json_pack ("{s:b, s:s, s:s}", "success", 0, "error", error, "message", message);
    if (session_id)
        json_object_set_new (structured, "session_id", json_string (session_id));
    return cg_tools_object_result (structured, message, true);
}

json_t *
cg_tools_max_sessions (const cg_request_t *req, const char *language, const char *session_id)
{
    cleanup_free char *message =
        cg_strdupf ("Maximum %d concurrent sessions reached. Close an existing session first.",
                    cg_server_config (req->server)->max_sessions);
    return cg_tools_refusal (req->tool->name, language, session_id, "max_sessions", message);
}
