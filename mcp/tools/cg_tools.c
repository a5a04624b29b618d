/*  cg_tools — the tool table: one row per tool (name, schemas as JSON text, handler,
    flags), tools/list built from it, the schema-driven check of arguments, and the
    results every family shares. */
#include "mcp/tools/cg_tools.h"
#include "mcp/cg_jsonrpc.h"
#include "mcp/cg_result.h"
#include "mcp/tools/cg_run_result.h"
#include "bridge/cg_session.h"
#include "base/cg_kernels.h"
#include "base/cg_util.h"
#include "base/cg_utf8.h"

#include <ctype.h>
#include <pthread.h>
#include <inttypes.h>
#include <string.h>

//  --------------------------------------------------------------------------
//  The tool table
//
//  Schemas are JSON text written with ' for " (a literal ' is ${apos}); ${name} stands
//  for a limit or a setting, filled in by s_expand, so that each is defined once.

#define S_STRING "{'type': 'string'}"
#define S_STRINGS "{'type': 'array', 'items': {'type': 'string'}}"
#define S_LANGUAGE "'language': {'type': 'string', 'enum': [${languages}]}"

//  The arguments every running tool shares; DOCS_CODE, DOCS_STDIN and DOCS_FILES are
//  their descriptions (, 'description': ...) or "" where execute_code's say it already.
#define S_RUN_ARGUMENTS(docs_code, docs_stdin, docs_files)                                 \
    "'code': {'type': 'string'" docs_code "}, 'stdin': {'type': 'string'" docs_stdin "}, " \
    "'stdin_data': {'type': 'string'}, 'timeout': {'type': 'integer', 'minimum': "         \
    "${timeout_min_s}, 'maximum': ${timeout_max_s}, 'default': ${default_timeout_s}, "     \
    "'description': 'Seconds (default ${default_timeout_s}).'}, 'timeout_ms': {'type': "   \
    "'integer'}, 'files': {'type': "                                                       \
    "'object'" docs_files "}"

//  A new sandbox's own --egress proxy list (start_session, a one-shot execute_code).
#define S_EGRESS_ALLOW "'egress_allow': {'type': 'array', 'items': {'type': 'string'}}"

//  execute_code's, with the descriptions the other running tools refer to.
#define S_DOCUMENTED_RUN_ARGUMENTS                                                       \
    S_RUN_ARGUMENTS (", 'description': 'A last expression${apos}s value is returned.'",  \
                     ", 'description': 'Standard input, a line per input() call.'",      \
                     ", 'description': 'Written to ${workspace} first: path -> text or " \
                     "{\\\"content_base64\\\": ...}.'")

//  Output schemas name the fields of each seed's contract for the tool, field for field,
//  and the values of enumerations; an empty schema accepts any value. Results carry
//  more (a run result has every field docs/tools.md lists for execute_code, whichever tool ran it).
#define S_OBJECT(properties) "{'type': 'object', 'properties': {" properties "}}"
#define S_ARTIFACT_PROPERTIES \
    "'path': {}, 'filename': {}, 'size_bytes': {}, 'mime_type': {}, 'download_url': {}"
#define S_ARTIFACTS "{'items': {'properties': {" S_ARTIFACT_PROPERTIES "}}}"
//  Seed 004's error object {error, message}; nothing is required, so both validate.
#define S_ERROR "'error': {}, 'message': {}"

//  Seed 002's run result (execute_code's, send_to_session's and run_script's).
#define S_RUN_002                                                                     \
    "'success': {}, 'execution_id': {}, 'language': {}, 'stdout': {}, 'stderr': {}, " \
    "'exit_code': {}, 'duration_ms': {}, 'truncated': {}, 'timed_out': {}, "          \
    "'artifacts': " S_ARTIFACTS

//  execute_code's result: seeds 000 to 003 (001's fields are 000's and 002's).
#define S_RUN_RESULT                                                                             \
    "{'type': 'object', 'properties': {" S_RUN_002 ", 'status': {'enum': ['success', "           \
    "'timeout', 'execution_error', 'setup_error']}, 'execution_time': {}, 'error_message': {}, " \
    "'error_code': {}, 'session_id': {}, 'kernel_id': {}, 'returnValue': {}, "                   \
    "'executionTimeMs': {}, "                                                                    \
    "'memoryUsedMB': {}, 'files': {}}, 'required': ['stdout', 'stderr', 'exit_code', "           \
    "'status', 'error_code', 'error_message', 'execution_time', 'duration_ms']}"

static const cg_tool_t s_tools[] = {
    {.name = "execute_code",
     .description = "Run ${language_list} code in an isolated sandbox; returns "
                    "stdout, stderr, exit_code, status and rich outputs (charts as images). "
                    "Pass session_id to keep variables and files in " CG_WORKSPACE_MOUNT
                    " between calls. ${sandbox_note}",
     .input_schema =
         "{'type': 'object', 'required': ['language', 'code'], 'properties': {" S_LANGUAGE
         ", " S_DOCUMENTED_RUN_ARGUMENTS ", 'session_id': {'type': 'string', "
         "'description': 'Reuse a sandbox and its state.'}, " S_EGRESS_ALLOW "}}",
     .output_schema = S_RUN_RESULT,
     .handler = cg_tools_run,
     .flags = CG_TOOL_RUNS | CG_TOOL_LANGUAGE | CG_TOOL_NOT_SEED001},
    {.name = CG_SEED001_TOOL,
     .description = "Allows an LLM or AI agent to securely execute a given code snippet in a "
                    "specified language (${language_list}) within an isolated sandbox. "
                    "Returns the standard output, standard error, and exit code.",
     .input_schema =
         "{'type': 'object', 'required': ['language', 'code'], 'properties': {"
         "'language': {'type': 'string', 'description': 'Programming language (e.g., "
         "${language_list}).'}, 'code': {'type': 'string', 'description': 'The "
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
     .flags = CG_TOOL_RUNS | CG_TOOL_LANGUAGE | CG_TOOL_SEED001,
     .timeout = CG_TOOL_TIMEOUT_SEED001},
    {.name = "run_python",
     .description = "Run Python in a persistent session (arguments as execute_code's); returns "
                    "stdout, stderr, run_id and the files changed, with download URLs.",
     .input_schema = "{'type': 'object', 'required': ['code'], 'properties': {" S_RUN_ARGUMENTS (
         "", "", "") ", 'session_id': {'type': 'string', 'description': 'Omitted: a new session, "
                     "its id returned.'}}}",
     .output_schema = S_OBJECT ("'session_id': {}, 'run_id': {}, 'exit_code': {}, 'stdout': {}, "
                                "'stderr': {}, 'stdout_truncated': {}, 'stderr_truncated': {}, "
                                "'artifacts': " S_ARTIFACTS ", 'duration_ms': {}, " S_ERROR),
     .handler = cg_tools_run,
     .flags = CG_TOOL_RUNS | CG_TOOL_SESSION_MADE,
     .timeout = CG_TOOL_TIMEOUT_RUN_PYTHON},
    {.name = "start_session",
     .description = "Start a persistent session for send_to_session; returns its session_id.",
     .input_schema = "{'type': 'object', 'required': ['language'], 'properties': {" S_LANGUAGE
                     ", 'name': " S_STRING ", 'working_dir': {'type': 'string', 'description': "
                     "'Only ${workspace}.'}, " S_EGRESS_ALLOW "}}",
     .output_schema = S_OBJECT ("'success': {}, 'session_id': {}, 'language': {}, 'name': {}, "
                                "'pid': {}, 'started_at': {}, 'kernel_id': {}"),
     .handler = cg_tools_start_session},
    {.name = "send_to_session",
     .description = "Run code in a session, building on its state (arguments as "
                    "execute_code's).",
     .input_schema = "{'type': 'object', 'required': ['session_id', 'code'], 'properties': {"
                     "'session_id': " S_STRING ", " S_RUN_ARGUMENTS ("", "", "") "}}",
     .output_schema = S_OBJECT (S_RUN_002 ", 'session_id': {}"),
     .handler = cg_tools_run,
     .flags = CG_TOOL_RUNS | CG_TOOL_SESSION_GIVEN},
    {.name = "close_session",
     .description = "Destroy a session with its sandbox and files.",
     .input_schema = "{'type': 'object', 'required': ['session_id'], 'properties': {"
                     "'session_id': " S_STRING "}}",
     .output_schema = S_OBJECT ("'success': {}, 'status': {}, 'session_id': {}, "
                                "'duration_total_ms': {}, 'executions_count': {}, " S_ERROR),
     .handler = cg_tools_close_session,
     .flags = CG_TOOL_DESTRUCTIVE},
    {.name = "upload_file",
     .description = "Upload a file into a session's " CG_WORKSPACE_MOUNT
                    " (a new session without session_id).",
     .input_schema = "{'type': 'object', 'required': ['filename', 'content_base64'], "
                     "'properties': {'session_id': " S_STRING ", 'filename': {'type': 'string', "
                     "'description': 'e.g. sales.csv or in/sales.csv'}, 'content_base64': " S_STRING
                     ", 'overwrite': {'type': 'boolean'}}}",
     .output_schema = S_OBJECT ("'session_id': {}, " S_ARTIFACT_PROPERTIES ", " S_ERROR),
     .handler = cg_tools_upload_file},
    {.name = "read_artifact",
     .description =
         "Read a file from a session's " CG_WORKSPACE_MOUNT " as base64; format 'image' gives "
         "an image as image content instead.",
     .input_schema = "{'type': 'object', 'required': ['session_id', 'path'], 'properties': {"
                     "'session_id': " S_STRING ", 'path': {'type': 'string', 'description': 'e.g. "
                     "${workspace}/chart.png'}, 'format': {'enum': ['base64', 'image', 'both']}}}",
     .output_schema = S_OBJECT (S_ARTIFACT_PROPERTIES ", 'content_base64': {}, " S_ERROR),
     .handler = cg_tools_read_artifact,
     .flags = CG_TOOL_READ_ONLY},
    {.name = "list_artifacts",
     .description = "List the files in a session's " CG_WORKSPACE_MOUNT " with download URLs.",
     .input_schema = "{'type': 'object', 'required': ['session_id'], 'properties': {"
                     "'session_id': " S_STRING "}}",
     .output_schema = S_OBJECT ("'artifacts': " S_ARTIFACTS ", " S_ERROR),
     .handler = cg_tools_list_artifacts,
     .flags = CG_TOOL_READ_ONLY},
    {.name = "export_notebook",
     .description =
         "Save a session's runs and outputs as a Jupyter notebook in its " CG_WORKSPACE_MOUNT ".",
     .input_schema = "{'type': 'object', 'required': ['session_id'], 'properties': {"
                     "'session_id': " S_STRING ", 'filename': " S_STRING ", 'language': "
                     "{'enum': [${kernel_languages}]}}}",
     .output_schema = S_OBJECT ("'session_id': {}, " S_ARTIFACT_PROPERTIES
                                ", 'cells': {}, 'language': {}, " S_ERROR),
     .handler = cg_tools_export_notebook},
    {.name = "list_sessions",
     .description = "List the active sessions with their memory, packages and workspace use, "
                    "and the sandboxes' limits.",
     .input_schema = "{'type': 'object', 'properties': {}}",
     .output_schema = S_OBJECT ("'sessions': {'items': {'properties': {'session_id': {}, "
                                "'language': {}, 'name': {}, 'started_at': {}, "
                                "'last_activity_at': {}, 'executions_count': {}, 'pid': {}, "
                                "'memory_mb': {}, 'packages_installed': {}}}}, 'limits': {}, "
                                "'languages': {}"),
     .handler = cg_tools_list_sessions,
     .flags = CG_TOOL_READ_ONLY},
    {.name = "save_script",
     .description = "Save code as a named script for run_script (a new version if the name "
                    "exists).",
     .input_schema = "{'type': 'object', 'required': ['name', 'language', 'code'], "
                     "'properties': {'name': {'type': 'string', 'pattern': "
                     "'^[A-Za-z0-9][A-Za-z0-9_.-]*$'}, 'description': " S_STRING ", " S_LANGUAGE
                     ", 'code': {'type': 'string', 'description': 'Gets args as sys.argv[1:], "
                     "commandArgs(TRUE), "
                     "process.argv.slice(2) or \\\"$@\\\".'}, 'tags': " S_STRINGS
                     ", 'packages': " S_STRINGS ", 'source_execution_id': " S_STRING "}}",
     .output_schema = S_OBJECT ("'success': {}, 'script_id': {}, 'name': {}, 'path': {}, "
                                "'saved_at': {}"),
     .handler = cg_tools_save_script},
    {.name = "get_script",
     .description = "Get a saved script with its metadata and run history.",
     .input_schema =
         "{'type': 'object', 'required': ['name'], 'properties': {'name': " S_STRING "}}",
     .output_schema = S_OBJECT ("'success': {}, 'name': {}, 'description': {}, 'language': {}, "
                                "'code': {}, 'tags': {}, 'packages': {}, 'created_at': {}, "
                                "'last_run_at': {}, 'run_count': {}, 'last_run_success': {}"),
     .handler = cg_tools_get_script,
     .flags = CG_TOOL_READ_ONLY},
    {.name = "list_scripts",
     .description = "List the saved scripts.",
     .input_schema =
         "{'type': 'object', 'properties': {'language': " S_STRING ", 'tag': " S_STRING "}}",
     .output_schema = S_OBJECT ("'scripts': {'items': {'properties': {'name': {}, 'description': "
                                "{}, 'language': {}, 'tags': {}, 'last_run_at': {}}}}, "
                                "'total_count': {}"),
     .handler = cg_tools_list_scripts,
     .flags = CG_TOOL_READ_ONLY},
    {.name = "search_scripts",
     .description = "Search the saved scripts by words; best first.",
     .input_schema = "{'type': 'object', 'required': ['query'], 'properties': {'query': " S_STRING
                     ", 'language': " S_STRING ", 'limit': {'type': 'integer', 'minimum': 1, "
                     "'maximum': 100}}}",
     .output_schema = S_OBJECT ("'results': {'items': {'properties': {'name': {}, 'description': "
                                "{}, 'relevance': {'enum': ['name_match', 'tag_match', "
                                "'description_match', 'code_match']}}}}"),
     .handler = cg_tools_search_scripts,
     .flags = CG_TOOL_READ_ONLY},
    {.name = "run_script",
     .description = "Run a saved script in a fresh sandbox, or in a session; returns "
                    "execute_code's result.",
     .input_schema =
         "{'type': 'object', 'required': ['name'], 'properties': {'name': " S_STRING
         ", 'args': " S_STRINGS ", 'timeout_ms': {'type': 'integer'}, 'session_id': " S_STRING "}}",
     .output_schema = S_OBJECT (S_RUN_002),
     .handler = cg_tools_run_script,
     .flags = CG_TOOL_RUNS},
    {.name = "search_execution_logs",
     .description = "Search your past executions, newest first.",
     .input_schema = "{'type': 'object', 'properties': {'language': " S_STRING ", 'status': "
                     "{'type': 'string', 'enum': ['success', 'failed', 'timeout']}, 'query': {"
                     "'type': 'string', 'description': 'Text in the code or output.'}, 'since': "
                     "{'type': 'string', 'description': 'ISO 8601 date.'}, 'limit': {'type': "
                     "'integer', 'minimum': 1, 'maximum': 100}}}",
     .output_schema = S_OBJECT ("'results': {'items': {'properties': {'execution_id': {}, "
                                "'session_id': {}, 'language': {}, 'code_preview': {}, 'status': "
                                "{}, 'exit_code': {}, 'error_preview': {}, 'duration_ms': {}, "
                                "'executed_at': {}}}}, 'total_count': {}"),
     .handler = cg_tools_search_execution_logs,
     .flags = CG_TOOL_READ_ONLY},
    {.name = "get_execution_log",
     .description = "Get one past execution in full.",
     .input_schema = "{'type': 'object', 'required': ['execution_id'], 'properties': {"
                     "'execution_id': " S_STRING "}}",
     .output_schema = S_OBJECT (
         "'execution_id': {}, 'session_id': {}, 'language': {}, 'code': {}, 'stdout': {}, "
         "'stderr': {}, 'exit_code': {}, 'duration_ms': {}, 'packages_installed': {}, "
         "'artifacts_created': {}, 'artifacts_modified': {}, 'artifacts_deleted': {}, "
         "'sandbox_mode': {}, 'guardian_pre_scan': {}, 'guardian_post_scan': {}, 'agent_id': {}, "
         "'trace_id': {}, 'executed_at': {}"),
     .handler = cg_tools_get_execution_log,
     .flags = CG_TOOL_READ_ONLY},
    {.name = "install_package",
     .description = "Install a pip or npm package into a session, or without session_id into "
                    "every new session.",
     .input_schema = "{'type': 'object', 'required': ['package', 'language'], 'properties': {"
                     "'session_id': " S_STRING ", 'package': {'type': 'string', 'description': "
                     "'e.g. pandas==2.2.1'}, 'language': {'type': 'string', 'enum': ['python', "
                     "'node']}, 'hashes': {'type': 'object'}}}",
     .output_schema = S_OBJECT ("'success': {}, 'package': {}, 'version': {}, "
                                "'install_output': {}"),
     .handler = cg_tools_install_package,
     .finish = cg_tools_install_finish},
    {.name = "calculate",
     .description =
         "Evaluate math with SymPy, math.js syntax: 2x^2, sqrt(2), 5 cm + 2 inch "
         "to cm, derivative(x^3 + 2x^2, x), integrate(f, x[, a, b]), solve(x^2 = 4, x), "
         "simplify, expand, factor, limit. Result: a number, or math.js text (3x^2 + 4x).",
     .input_schema = "{'type': 'object', 'required': ['expression'], 'properties': {"
                     "'expression': {'type': 'string', 'maxLength': ${calc_max}}}}",
     .output_schema = S_OBJECT ("'expression': {}, 'result': {}, 'steps': {}"),
     .handler = cg_tools_calculate,
     .flags = CG_TOOL_READ_ONLY,
     .finish = cg_tools_calculate_finish},
};

#define S_TOOL_COUNT (sizeof s_tools / sizeof s_tools[0])

double
cg_tools_default_timeout (const cg_config_t *config, const cg_tool_t *tool)
{
    cg_tool_timeout_t setting = tool ? tool->timeout : CG_TOOL_TIMEOUT_DEFAULT;
    return setting == CG_TOOL_TIMEOUT_SEED001      ? CG_SEED001_TIMEOUT_MS / 1000.0
           : setting == CG_TOOL_TIMEOUT_RUN_PYTHON ? config->run_python_timeout_s
                                                   : config->default_timeout_s;
}

//  The catalogue's languages as schema text ("python", "r", ...; KERNELS: those with a
//  kernel), as words ("python, r or bash"), with their aliases (for errors), and what they
//  have preinstalled. Made once: the catalogue never changes.
static char *s_quoted[2], *s_list, *s_supported, *s_note;

static void
s_language_texts (void)
{
    const cg_kernels_t *kernels = cg_kernels ();
    for (int k = 0; k < 2; k++) {
        json_t *names = cg_kernels_enum (kernels, k == 1);
        //  JSON text ("python", "r"; a value is copied as is), without the brackets: the
        //  template has them.
        char *text = json_dumps (names, JSON_COMPACT);
        text[strlen (text) - 1] = '\0';
        s_quoted[k] = cg_xstrdup (text + 1);
        free (text);
        json_decref (names);
    }
    cleanup_free char *names = cg_kernels_names (kernels, ", ");
    char *last = strrchr (names, ',');
    if (last)
        *last = '\0';
    s_list = last ? cg_strdupf ("%s or%s", names, last + 1) : cg_xstrdup (names);
    s_supported = cg_kernels_describe (kernels);
    s_note = cg_kernels_preinstalled (kernels);
}

static pthread_once_t s_texts_once = PTHREAD_ONCE_INIT;

static const char *
s_quoted_languages (bool kernels)
{
    pthread_once (&s_texts_once, s_language_texts);
    return s_quoted[kernels];
}

static const char *
s_language_list (void)
{
    pthread_once (&s_texts_once, s_language_texts);
    return s_list;
}

const char *
cg_tools_language_list (void)
{
    return s_language_list ();
}

const char *
cg_tools_supported_languages (void)
{
    pthread_once (&s_texts_once, s_language_texts);
    return s_supported;
}

const char *
cg_tools_sandbox_note (void)
{
    pthread_once (&s_texts_once, s_language_texts);
    return s_note;
}

//  Returns TEMPLATE, a schema of TOOL, as JSON text: ' becomes " (when SCHEMA; a
//  description keeps its '), and each ${name} its value (CONFIG NULL: settings are 0).
//  Caller frees.
static char *
s_expand (const char *template, const cg_config_t *config, const cg_tool_t *tool, bool schema)
{
    cleanup_free char *timeout_s =
        cg_strdupf ("%g", config ? cg_tools_default_timeout (config, tool) : 0);
    cleanup_free char *max_s = cg_strdupf (
        "%d", config && config->max_timeout_s ? config->max_timeout_s : CG_TIMEOUT_MAX_S);
    const char *values[][2] = {{"apos", "'"},
                               {"languages", s_quoted_languages (false)},
                               {"kernel_languages", s_quoted_languages (true)},
                               {"language_list", s_language_list ()},
                               {"sandbox_note", cg_tools_sandbox_note ()},
                               {"timeout_min_s", CG_STR (CG_TIMEOUT_MIN_S)},
                               {"timeout_max_s", max_s},
                               {"workspace", CG_WORKSPACE_MOUNT},
                               {"seed001_timeout_ms", CG_STR (CG_SEED001_TIMEOUT_MS)},
                               {"default_timeout_s", timeout_s},
                               {"calc_max", CG_STR (CG_CALC_EXPRESSION_MAX)},
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
            out[n++] = schema && template[i] == '\'' ? '"' : template[i];
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
s_schema (const char *template, const cg_config_t *config, const cg_tool_t *tool)
{
    cleanup_free char *text = s_expand (template, config, tool, true);
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
    bool seed001 = config->tool_profile == CG_TOOL_PROFILE_SEED001;
    json_t *tools = json_array ();
    for (size_t i = 0; i < S_TOOL_COUNT; i++) {
        const cg_tool_t *tool = &s_tools[i];
        if ((tool->flags & CG_TOOL_SEED001 && !seed001)
            || (tool->flags & CG_TOOL_NOT_SEED001 && seed001))
            continue;
        //  One hint each: read-only, or whether a change destroys anything.
        json_t *annotations =
            tool->flags & CG_TOOL_READ_ONLY
                ? json_pack ("{s:b}", "readOnlyHint", 1)
                : json_pack ("{s:b}", "destructiveHint", (tool->flags & CG_TOOL_DESTRUCTIVE) != 0);
        cleanup_free char *description = s_expand (tool->description, config, tool, false);
        json_t *entry =
            json_pack ("{s:s, s:s, s:o, s:o, s:o}", "name", tool->name, "description", description,
                       "inputSchema", s_schema (tool->input_schema, config, tool), "outputSchema",
                       s_schema (tool->output_schema, config, tool), "annotations", annotations);
        if (tool->title)
            json_object_set_new (entry, "title", json_string (tool->title));
        //  2025-11-25's tasks: a long cell may run as a task the client polls (cg_tasks).
        if (tool->flags & CG_TOOL_RUNS)
            json_object_set_new (entry, "execution",
                                 json_pack ("{s:s}", "taskSupport", "optional"));
        json_array_append_new (tools, entry);
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
        parsed[i] = s_schema (tool->input_schema, NULL, tool);
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
        cleanup_free char *message =
            cg_strdupf ("unknown argument '%.*s'; %s takes %s", cg_utf8_prefix (key, 64), key,
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
    const char *name = json_string_value (json_object_get (params, "name"));
    json_t *arguments = json_object_get (params, "arguments");
    const cg_tool_t *tool = cg_tools_find (name);
    if (!name) {
        cg_request_error (req, CG_JSONRPC_INVALID_PARAMS, "tools/call: 'name' is required");
        return;
    }
    if (!tool) {
        cleanup_free char *message =
            cg_strdupf ("Unknown tool: %.*s", cg_utf8_prefix (name, 128), name);
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

json_t *
cg_tools_unsupported_language (const char *tool, const char *language, const char *session_id)
{
    cleanup_free char *message =
        cg_strdupf ("language '%.*s' is not supported; supported: %s",
                    cg_utf8_prefix (language, 64), language, cg_tools_supported_languages ());
    return cg_tools_refusal (tool, language, session_id, "unsupported_language", message);
}

bool
cg_tools_language_arg (const cg_request_t *req, const json_t *language, const char **canonical)
{
    const char *name = json_string_value (language);
    *canonical = name ? cg_tools_canonical_language (name) : NULL;
    if (name && !*canonical) {
        cg_request_result (req, cg_tools_unsupported_language (req->tool->name, name, NULL));
        return false;
    }
    return true;
}

const char *
cg_tools_canonical_language (const char *name)
{
    const cg_language_t *language = cg_kernels_find (cg_kernels (), name);
    return language ? language->name : NULL;
}

bool
cg_tools_valid_session_id (const char *id)
{
    return cg_valid_name (id, CG_SESSION_ID_MAX, "_.-");
}

//  --------------------------------------------------------------------------
//  Results

json_t *
cg_tools_object_result (json_t *structured, const char *text, bool is_error)
{
    return json_pack ("{s:[{s:s, s:s}], s:o, s:b}", "content", "type", "text", "text", text,
                      "structuredContent", structured, "isError", is_error);
}

void
cg_tools_kernel_id (json_t *structured, cg_server_t *server, cg_registry_session_t *session,
                    const char *language)
{
    const cg_registry_kernel_t *kernel =
        language ? cg_registry_session_kernel (session, language) : NULL;
    if (!json_is_object (structured) || !kernel || !kernel->pid)
        return;
    json_object_set_new (structured, "kernel_id", json_string (kernel->id));
    cg_http_t *http = cg_server_http (server);
    if (http && cg_server_config (server)->gateway)
        json_object_set_new (structured, "gateway_url", json_string (cg_http_base_url (http)));
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
    const cg_config_t *config = cg_server_config (req->server);
    cleanup_free char *holders =
        cg_registry_holders (cg_server_registry (req->server), req->client->id);
    cleanup_free char *message = cg_strdupf (
        "Maximum %d concurrent sessions reached. Close an existing session first. Held by: %s. "
        "Other clients' sessions close once their client has sent nothing for %d s, or after "
        "%d s idle.",
        config->max_sessions, holders, config->client_grace_s, config->idle_ttl_s);
    return cg_tools_refusal (req->tool->name, language, session_id, "max_sessions", message);
}
