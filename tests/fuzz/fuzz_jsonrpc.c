/*  fuzz_jsonrpc — what an MCP client's message goes through before anything runs: the
    JSON text parsed as the transports parse it (duplicate keys refused; a NUL inside a
    string refused), JSON-RPC classification (cg_jsonrpc_classify), and for tools/call the
    argument checks of the running tools (cg_tools_execute_request, for every running
    tool whatever the name says) and of upload_file (cg_files_upload_check), with the
    session id rule; and the name rules of save_script and install_package.

    Input: one message, as one stdio line or one HTTP body. */
#include "cg_fuzz.h"

#include "artifacts/cg_scripts.h"
#include "artifacts/cg_workspace.h"
#include "base/cg_config.h"
#include "base/cg_util.h"
#include "mcp/tools/cg_files.h"
#include "mcp/cg_jsonrpc.h"
#include "mcp/tools/cg_tools.h"

#include <string.h>

static const char *s_running_tools[] = {"execute_code", "run_python", "send_to_session",
                                        CG_SEED001_TOOL};

static const cg_config_t *
s_config (void)
{
    static cg_config_t config;
    static bool loaded;
    if (!loaded) {
        cg_error_t *err = NULL;
        if (cg_config_load (&config, 0, NULL, &err) < 0)
            abort ();
        loaded = true;
    }
    return &config;
}

static void
s_check_classify (json_t *message)
{
    const char *why = NULL;
    cg_jsonrpc_kind_t kind = cg_jsonrpc_classify (message, &why);
    CG_FUZZ_CHECK ((kind == CG_JSONRPC_INVALID) == (why != NULL), "a reason exactly when invalid");
    json_t *id = json_object_get (message, "id");
    const char *method = json_string_value (json_object_get (message, "method"));
    if (kind == CG_JSONRPC_REQUEST)
        CG_FUZZ_CHECK (method && (json_is_string (id) || json_is_integer (id)),
                       "a request has a method and an id");
    if (kind == CG_JSONRPC_NOTIFICATION)
        CG_FUZZ_CHECK (method && !id, "a notification has a method and no id");
    if (kind == CG_JSONRPC_REQUEST || kind == CG_JSONRPC_NOTIFICATION) {
        json_t *params = json_object_get (message, "params");
        CG_FUZZ_CHECK (!params || json_is_object (params), "params an object");
    }
    //  What the server answers with must build for any id it echoes.
    json_t *error = cg_jsonrpc_error (kind == CG_JSONRPC_INVALID ? NULL : id,
                                      CG_JSONRPC_INVALID_REQUEST, why ? why : "x");
    CG_FUZZ_CHECK (error != NULL, "an error response builds");
    json_decref (error);
}

//  Runs one running tool's checks on ARGUMENTS and checks the outcome.
static void
s_check_run_arguments (const char *tool, json_t *arguments)
{
    json_t *error_result = NULL;
    json_t *request = cg_tools_execute_request (s_config (), tool, arguments, &error_result);
    CG_FUZZ_CHECK ((request == NULL) != (error_result == NULL), "a request or an error result");
    if (error_result) {
        json_t *structured = json_object_get (error_result, "structuredContent");
        CG_FUZZ_CHECK (json_is_true (json_object_get (error_result, "isError"))
                           && json_is_string (json_object_get (structured, "error_code")),
                       "an error result says so, with an error_code");
        char *text = json_dumps (error_result, JSON_COMPACT);
        CG_FUZZ_CHECK (text != NULL, "the error result serializes");
        free (text);
        json_decref (error_result);
        return;
    }
    const char *language = json_string_value (json_object_get (request, "language"));
    CG_FUZZ_CHECK (language && cg_tools_canonical_language (language)
                       && strcmp (cg_tools_canonical_language (language), language) == 0,
                   "a canonical language");
    json_t *code = json_object_get (request, "code");
    CG_FUZZ_CHECK (json_is_string (code)
                       && json_string_length (code) <= s_config ()->max_code_bytes,
                   "code within its limit");
    double timeout = json_number_value (json_object_get (request, "timeout"));
    CG_FUZZ_CHECK (timeout >= 1 && timeout <= 300, "timeout from 1 to 300 s");
    const char *session_id = json_string_value (json_object_get (request, "session_id"));
    CG_FUZZ_CHECK (!session_id || cg_tools_valid_session_id (session_id), "a valid session id");
    json_t *stdin_value = json_object_get (request, "stdin");
    CG_FUZZ_CHECK (!stdin_value || json_string_length (stdin_value) <= CG_MAX_STDIN_BYTES,
                   "stdin within 1 MiB");
    size_t i;
    json_t *file;
    json_array_foreach (json_object_get (request, "files"), i, file)
    {
        const char *rel = json_string_value (json_object_get (file, "path"));
        cg_error_t *err = NULL;
        cleanup_free char *again = rel ? cg_workspace_normalize (rel, &err) : NULL;
        cg_error_destroy (&err);
        CG_FUZZ_CHECK (again && strcmp (again, rel) == 0, "files' paths canonical");
    }
    json_decref (request);
}

static void
s_check_upload_arguments (json_t *arguments)
{
    char *rel = NULL;
    json_t *refusal = cg_files_upload_check (s_config (), arguments, "sess_fuzz", &rel);
    CG_FUZZ_CHECK ((refusal == NULL) == (rel != NULL), "a name or a refusal");
    if (rel) {
        cg_error_t *err = NULL;
        cleanup_free char *again = cg_workspace_normalize (rel, &err);
        cg_error_destroy (&err);
        CG_FUZZ_CHECK (again && strcmp (again, rel) == 0, "the upload name is canonical");
    }
    free (rel);
    json_decref (refusal);
}

//  What a name may never hold once accepted: it reaches a path (a script's directory) or a
//  shell command (a package to install).
static bool
s_tame (const char *text)
{
    return text && *text && text[0] != '-' && text[0] != '.' && !strstr (text, "..")
           && !strpbrk (text, " \t\n\r;|&$`'\"\\<>()*?[]{}#%=:,") && strlen (text) <= 256;
}

//  The script-name rule and the package-spec rule, on a script's "name" and an install's
//  "package" (both languages).
static void
s_check_names (json_t *arguments)
{
    const char *name = json_string_value (json_object_get (arguments, "name"));
    if (name && cg_scripts_valid_name (name))
        CG_FUZZ_CHECK (s_tame (name) && !strchr (name, '/') && strcmp (name, "index.json") != 0,
                       "a valid script name is a plain file name");
    const char *package = json_string_value (json_object_get (arguments, "package"));
    for (int python = 0; package && python < 2; python++) {
        char *pkg = NULL, *version = NULL;
        if (cg_tools_package_spec (python, package, &pkg, &version)) {
            CG_FUZZ_CHECK (s_tame (pkg) && (!version || s_tame (version)),
                           "an accepted package name and version need no quoting");
            CG_FUZZ_CHECK (!strchr (pkg, '/') || (!python && pkg[0] == '@'),
                           "a '/' only after an npm scope");
        }
        free (pkg);
        free (version);
    }
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
    cg_fuzz_init ();
    json_error_t jerr;
    json_t *message = json_loadb ((const char *)data, size, JSON_REJECT_DUPLICATES, &jerr);
    if (!message) {
        //  As the stdio transport does: find the id of a message refused for a NUL (a
        //  parse error when it is not JSON even with NULs allowed).
        if (json_error_code (&jerr) == json_error_null_character) {
            message = json_loadb ((const char *)data, size, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL,
                                  &jerr);
            json_t *id = json_object_get (message, "id");
            if (json_is_string (id) || json_is_integer (id))
                json_decref (cg_jsonrpc_error (id, CG_JSONRPC_INVALID_PARAMS, "NUL"));
            json_decref (message);
        }
        return 0;
    }
    s_check_classify (message);
    json_t *params = json_object_get (message, "params");
    const char *name = json_string_value (json_object_get (params, "name"));
    json_t *arguments = json_object_get (params, "arguments");
    if (name)
        (void)cg_tools_known (name);
    if (!arguments && json_is_object (message) && !json_object_get (message, "jsonrpc"))
        arguments = message; /* a bare arguments object, as a corpus may hold */
    if (json_is_object (arguments) || !arguments) {
        for (size_t i = 0; i < sizeof s_running_tools / sizeof s_running_tools[0]; i++)
            s_check_run_arguments (s_running_tools[i], arguments);
        s_check_upload_arguments (arguments);
    }
    json_t *session_id = json_object_get (arguments, "session_id");
    if (json_is_string (session_id))
        (void)cg_tools_valid_session_id (json_string_value (session_id));
    s_check_names (arguments);
    json_decref (message);
    return 0;
}
