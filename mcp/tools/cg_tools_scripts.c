/*  cg_tools_scripts — the script library's tools (save_script, get_script, list_scripts,
    search_scripts, run_script) over artifacts/cg_scripts; run_script runs a saved script
    the way execute_code runs code, with its args and a pre-flight check of its packages. */
#include "mcp/tools/cg_tools.h"
#include "mcp/tools/cg_run_result.h"
#include "artifacts/cg_scripts.h"
#include "base/cg_util.h"

#include <errno.h>
#include <sodium.h>
#include <string.h>

#define S_ARGS_MAX 256
#define S_ARGS_BYTES_MAX (64 * 1024)
#define S_QUERY_MAX 256
#define S_SEARCH_LIMIT 20
#define S_SEARCH_LIMIT_MAX 100
#define S_EXECUTION_ID_MAX 64

//  The scripts directory of CONFIG: --scripts-dir, else <state-dir>/scripts. Caller frees.
static char *
s_dir (const cg_config_t *config)
{
    return config->scripts_dir ? cg_xstrdup (config->scripts_dir)
                               : cg_strdupf ("%s/scripts", config->state_dir);
}

//  The error object for ERR (ENOENT: script_not_found, EINVAL: invalid_params, EDQUOT:
//  library_full, else storage_error). Consumes *err.
static json_t *
s_error (cg_error_t **err)
{
    int code = *err ? (*err)->code : 0;
    const char *error = code == ENOENT   ? "script_not_found"
                        : code == EINVAL ? "invalid_params"
                        : code == EDQUOT ? "library_full"
                                         : "storage_error";
    json_t *result = cg_tools_error_object (error, cg_error_message (*err), NULL);
    cg_error_destroy (err);
    return result;
}

//  The optional string argument KEY of ARGUMENTS: its value, or NULL with *bad set when it
//  is there but not a string.
static const char *
s_string (json_t *arguments, const char *key, bool *bad)
{
    json_t *value = json_object_get (arguments, key);
    if (value && !json_is_string (value))
        *bad = true;
    return json_string_value (value);
}

//  Checks ARGUMENTS' script name. Returns it, or NULL after answering REQ with the rule.
static const char *
s_name (const cg_request_t *req, json_t *arguments)
{
    const char *name = json_string_value (json_object_get (arguments, "name"));
    if (!cg_scripts_valid_name (name)) {
        cg_request_result (
            req, cg_tools_error_object ("invalid_params", "'name': " CG_SCRIPTS_NAME_RULE, NULL));
        return NULL;
    }
    return name;
}

//  --------------------------------------------------------------------------
//  The library's work, on the store worker (cg_tools_jobs): every field is the job's own

typedef struct {
    cg_tool_job_t job;
    char *dir;      /* the scripts directory */
    char *name;     /* save, get */
    json_t *fields; /* save: description, language, tags, ... (a deep copy) */
    char *code;     /* save */
    cg_scripts_limits_t limits;
    const char *language; /* list, search: a filter (static), or NULL */
    char *text;           /* list: the tag; search: the query; or NULL */
    size_t limit;         /* search */
} s_job_t;

static void
s_job_free (cg_tool_job_t *job)
{
    s_job_t *self = (s_job_t *)job;
    free (self->dir);
    free (self->name);
    json_decref (self->fields);
    free (self->code);
    free (self->text);
}

//  A new job for REQ's server running RUN.
static s_job_t *
s_job_new (const cg_request_t *req, void (*run) (cg_tool_job_t *))
{
    s_job_t *self = cg_xcalloc (1, sizeof *self);
    self->job.run = run;
    self->job.free = s_job_free;
    self->dir = s_dir (cg_server_config (req->server));
    return self;
}

static void
s_save_run (cg_tool_job_t *job)
{
    s_job_t *self = (s_job_t *)job;
    cg_error_t *err = NULL;
    json_t *metadata =
        cg_scripts_save (self->dir, self->name, self->fields, self->code, &self->limits, &err);
    if (!metadata) {
        job->result = s_error (&err);
        return;
    }
    json_int_t pruned = json_integer_value (json_object_get (metadata, "versions_pruned"));
    json_t *structured = json_pack (
        "{s:b, s:O, s:s, s:O, s:O, s:i, s:I, s:I}", "success", 1, "script_id",
        json_object_get (metadata, "script_id"), "name", self->name, "path",
        json_object_get (metadata, "path"), "saved_at", json_object_get (metadata, "saved_at"),
        "version", cg_scripts_version_of (metadata), "versions_kept",
        (json_int_t)json_array_size (json_object_get (metadata, "versions")), "versions_pruned",
        pruned);
    json_decref (metadata);
    cleanup_free char *text = json_dumps (structured, JSON_COMPACT);
    cleanup_free char *said =
        pruned > 0 ? cg_strdupf ("%s\nKept the newest %zu earlier versions (--script-versions); "
                                 "%" JSON_INTEGER_FORMAT " older one%s removed.",
                                 text, self->limits.versions, pruned, pruned > 1 ? "s" : "")
                   : NULL;
    job->result = cg_tools_object_result (structured, said ? said : text, false);
}

void
cg_tools_save_script (const cg_request_t *req, json_t *arguments)
{
    const cg_config_t *config = cg_server_config (req->server);
    const char *name = s_name (req, arguments);
    if (!name)
        return;
    bool bad = false;
    const char *language = s_string (arguments, "language", &bad);
    const char *canonical = NULL;
    json_t *code = json_object_get (arguments, "code");
    const char *description = s_string (arguments, "description", &bad);
    const char *source = s_string (arguments, "source_execution_id", &bad);
    if (!cg_tools_language_arg (req, json_object_get (arguments, "language"), &canonical))
        return;
    cleanup_free char *why = NULL;
    if (bad || !json_is_string (code) || !language)
        why = cg_xstrdup ("'name', 'language' and 'code' are required; 'description' and "
                          "'source_execution_id' are strings");
    else if (json_string_length (code) > config->max_code_bytes
             || strlen (json_string_value (code)) != json_string_length (code))
        why = cg_strdupf ("'code' must be at most %zu bytes, without NUL characters",
                          config->max_code_bytes);
    else if (source && strlen (source) > S_EXECUTION_ID_MAX)
        why = cg_xstrdup (
            "'source_execution_id' is at most " CG_STR (S_EXECUTION_ID_MAX) " characters");
    if (why) {
        cg_request_result (req, cg_tools_error_object ("invalid_params", why, NULL));
        return;
    }
    s_job_t *job = s_job_new (req, s_save_run);
    job->fields = json_pack ("{s:s, s:s}", "description", description ? description : "",
                             "language", canonical);
    const char *lists[] = {"tags", "packages", "source_execution_id", NULL};
    for (int i = 0; lists[i]; i++)
        if (json_object_get (arguments, lists[i]))
            json_object_set_new (job->fields, lists[i],
                                 json_deep_copy (json_object_get (arguments, lists[i])));
    job->name = cg_xstrdup (name);
    job->code = cg_xstrdup (json_string_value (code));
    job->limits = (cg_scripts_limits_t){.versions = (size_t)config->script_versions,
                                        .scripts = (size_t)config->max_scripts,
                                        .bytes = config->max_scripts_bytes};
    cg_tools_job_start (req, &job->job);
}

static void
s_get_run (cg_tool_job_t *job)
{
    s_job_t *self = (s_job_t *)job;
    cg_error_t *err = NULL;
    cleanup_free char *code = NULL;
    json_t *metadata = cg_scripts_get (self->dir, self->name, &code, &err);
    if (!metadata) {
        job->result = s_error (&err);
        return;
    }
    json_object_set_new (metadata, "success", json_true ());
    json_object_set_new (metadata, "code", json_string (code));
    cleanup_free char *text = json_dumps (metadata, JSON_COMPACT);
    job->result = cg_tools_object_result (metadata, text, false);
}

void
cg_tools_get_script (const cg_request_t *req, json_t *arguments)
{
    const char *name = s_name (req, arguments);
    if (!name)
        return;
    s_job_t *job = s_job_new (req, s_get_run);
    job->name = cg_xstrdup (name);
    cg_tools_job_start (req, &job->job);
}

//  Checks ARGUMENTS' optional language filter: sets *canonical (NULL: none). Returns
//  false after answering REQ when it is not a supported language.
static bool
s_language_filter (const cg_request_t *req, json_t *arguments, const char **canonical)
{
    bool bad = false;
    s_string (arguments, "language", &bad);
    if (!cg_tools_language_arg (req, json_object_get (arguments, "language"), canonical))
        return false;
    if (bad) {
        cleanup_free char *why =
            cg_strdupf ("'language' must be one of: %s", cg_tools_supported_languages ());
        cg_request_result (req, cg_tools_error_object ("invalid_params", why, NULL));
        return false;
    }
    return true;
}

//  True when SCRIPT (index metadata) has TAG (NULL: any).
static bool
s_tagged (json_t *script, const char *tag)
{
    if (!tag)
        return true;
    size_t t;
    json_t *item;
    json_array_foreach (json_object_get (script, "tags"), t, item)
    {
        if (json_is_string (item) && strcmp (json_string_value (item), tag) == 0)
            return true;
    }
    return false;
}

static void
s_list_run (cg_tool_job_t *job)
{
    s_job_t *self = (s_job_t *)job;
    cg_error_t *err = NULL;
    json_t *scripts = cg_scripts_list (self->dir, &err);
    if (!scripts) {
        job->result = s_error (&err);
        return;
    }
    json_t *list = json_array ();
    size_t i;
    json_t *script;
    json_array_foreach (scripts, i, script)
    {
        const char *language = json_string_value (json_object_get (script, "language"));
        if ((self->language && (!language || strcmp (self->language, language) != 0))
            || !s_tagged (script, self->text))
            continue;
        json_t *last_run = json_object_get (script, "last_run_at");
        json_array_append_new (
            list,
            json_pack ("{s:O, s:O, s:O, s:O, s:O, s:I}", "name", json_object_get (script, "name"),
                       "description", json_object_get (script, "description"), "language",
                       json_object_get (script, "language"), "tags",
                       json_object_get (script, "tags"), "last_run_at",
                       json_is_string (last_run) ? last_run : json_null (), "run_count",
                       json_integer_value (json_object_get (script, "run_count"))));
    }
    json_decref (scripts);
    json_t *structured =
        json_pack ("{s:o, s:i}", "scripts", list, "total_count", (int)json_array_size (list));
    cleanup_free char *text = json_dumps (structured, JSON_COMPACT);
    job->result = cg_tools_object_result (structured, text, false);
}

void
cg_tools_list_scripts (const cg_request_t *req, json_t *arguments)
{
    const char *language, *tag;
    bool bad = false;
    if (!s_language_filter (req, arguments, &language))
        return;
    if ((tag = s_string (arguments, "tag", &bad)), bad) {
        cg_request_result (req,
                           cg_tools_error_object ("invalid_params", "'tag' is a string", NULL));
        return;
    }
    s_job_t *job = s_job_new (req, s_list_run);
    job->language = language;
    job->text = tag ? cg_xstrdup (tag) : NULL;
    cg_tools_job_start (req, &job->job);
}

static void
s_search_run (cg_tool_job_t *job)
{
    s_job_t *self = (s_job_t *)job;
    cg_error_t *err = NULL;
    json_t *results = cg_scripts_search (self->dir, self->text, self->language, self->limit, &err);
    if (!results) {
        job->result = s_error (&err);
        return;
    }
    json_t *structured =
        json_pack ("{s:o, s:i}", "results", results, "total_count", (int)json_array_size (results));
    cleanup_free char *text = json_dumps (structured, JSON_COMPACT);
    job->result = cg_tools_object_result (structured, text, false);
}

void
cg_tools_search_scripts (const cg_request_t *req, json_t *arguments)
{
    const char *language;
    if (!s_language_filter (req, arguments, &language))
        return;
    json_t *query = json_object_get (arguments, "query");
    json_t *limit = json_object_get (arguments, "limit");
    json_int_t most = limit ? json_integer_value (limit) : S_SEARCH_LIMIT;
    if (!json_is_string (query) || json_string_length (query) == 0
        || json_string_length (query) > S_QUERY_MAX
        || (limit && (!json_is_integer (limit) || most < 1 || most > S_SEARCH_LIMIT_MAX))) {
        cg_request_result (
            req, cg_tools_error_object (
                     "invalid_params",
                     "'query' is a string of 1 to " CG_STR (
                         S_QUERY_MAX) " characters; 'limit' is 1 to " CG_STR (S_SEARCH_LIMIT_MAX),
                     NULL));
        return;
    }
    s_job_t *job = s_job_new (req, s_search_run);
    job->language = language;
    job->text = cg_xstrdup (json_string_value (query));
    job->limit = (size_t)most;
    cg_tools_job_start (req, &job->job);
}

//  --------------------------------------------------------------------------
//  run_script's cell: a one-line prologue, then the script

//  The Python prologue's body, run by exec in its own namespace (nothing is left in the
//  session's) with _cg_run, the base64 of {name, args, packages, language}.
static const char s_python_prologue[] =
    "import base64, importlib.util, json, re, sys\n"
    "p = json.loads(base64.b64decode(_cg_run).decode('utf-8'))\n"
    "def present(spec):\n"
    "    name = re.split(r'[<>=!~;\\[ ]', spec, maxsplit=1)[0].strip()\n"
    "    try:\n"
    "        import importlib.metadata\n"
    "        importlib.metadata.distribution(name)\n"
    "        return True\n"
    "    except Exception:\n"
    "        pass\n"
    "    try:\n"
    "        return importlib.util.find_spec(name.replace('-', '_')) is not None\n"
    "    except Exception:\n"
    "        return False\n"
    "missing = [s for s in p['packages'] if not present(s)]\n"
    "if missing:\n"
    "    raise ModuleNotFoundError('run_script ' + p['name'] + ': missing package' + "
    "('s' if len(missing) > 1 else '') + ' ' + ', '.join(missing) + '; the script was not run. "
    "Install with ' + '; '.join('install_package ' + json.dumps({'package': m, 'language': "
    "'python'}) for m in missing) + ', then run it again.')\n"
    "sys.argv = [p['name']] + p['args']\n";

//  The JavaScript prologue, one line around the payload P (JSON): resolves the packages,
//  then sets process.argv.
#define S_JS_PROLOGUE                                                                             \
    "(() => { const p = %s; const missing = p.packages.filter((n) => { try { "                    \
    "require.resolve(n.replace(/^(@?[^@]+)@.*$/, '$1')); return false; } catch (e) { return "     \
    "true; } }); if (missing.length) throw new Error('run_script ' + p.name + ': missing "        \
    "package' + (missing.length > 1 ? 's ' : ' ') + missing.join(', ') + '; the script was not "  \
    "run. Install with ' + missing.map((m) => 'install_package ' + JSON.stringify({ package: m, " \
    "language: 'node' })).join('; ') + ', then run it again.'); process.argv = "                  \
    "[process.argv[0], p.name, ...p.args]; })();\n"

//  The R prologue, one line around the base64 of the payload (JSON): checks the packages
//  with requireNamespace, then gives the script its args through commandArgs(), defined
//  in the session's global environment (R has no argv to set).
#define S_R_PROLOGUE                                                                             \
    "local({ p <- jsonlite::fromJSON(rawToChar(jsonlite::base64_dec('%s'))); args <- "           \
    "as.character(unlist(p$args)); pkgs <- as.character(unlist(p$packages)); missing <- "        \
    "pkgs[!vapply(sub('[ <>=!].*$', '', pkgs), requireNamespace, logical(1), quietly = TRUE)]; " \
    "if (length(missing)) stop(paste0('run_script ', p$name, ': missing package', "              \
    "if (length(missing) > 1) 's ' else ' ', paste(missing, collapse = ', '), '; the script "    \
    "was not run (the sandbox has R packages from Debian only).'), call. = FALSE); "             \
    "assign('commandArgs', function(trailingOnly = FALSE) if (trailingOnly) args else "          \
    "c('R', '--args', args), envir = globalenv()) })\n"

//  Returns TEXT in single quotes for bash ('\'' for each quote). Caller frees.
static char *
s_shell_quote (const char *text)
{
    size_t len = strlen (text), n = 0;
    char *out = cg_xmalloc (len * 4 + 3);
    out[n++] = '\'';
    for (const char *p = text; *p; p++) {
        if (*p == '\'') {
            memcpy (out + n, "'\\''", 4);
            n += 4;
        }
        else
            out[n++] = *p;
    }
    out[n++] = '\'';
    out[n] = '\0';
    return out;
}

//  Returns the base64 of LEN bytes at DATA. Caller frees.
static char *
s_base64 (const char *data, size_t len)
{
    size_t cap = sodium_base64_encoded_len (len, sodium_base64_VARIANT_ORIGINAL);
    char *out = cg_xmalloc (cap);
    sodium_bin2base64 (out, cap, (const unsigned char *)data, len, sodium_base64_VARIANT_ORIGINAL);
    return out;
}

//  Returns the bash prologue: a check that PACKAGES are commands on PATH, then ARGS as
//  the positional parameters. Caller frees.
static char *
s_bash_prologue (const char *name, json_t *args, json_t *packages)
{
    size_t cap = 256 + strlen (name);
    size_t i;
    json_t *item;
    json_array_foreach (args, i, item) cap += json_string_length (item) * 4 + 3;
    json_array_foreach (packages, i, item) cap += json_string_length (item) * 4 + 3;
    char *out = cg_xmalloc (cap + 512), *end = out;
    if (json_array_size (packages) > 0) {
        end = stpcpy (end, "_cg_missing=''; for _cg_p in");
        json_array_foreach (packages, i, item)
        {
            cleanup_free char *quoted = s_shell_quote (json_string_value (item));
            end = stpcpy (stpcpy (end, " "), quoted);
        }
        end += sprintf (end,
                        "; do command -v \"$_cg_p\" >/dev/null 2>&1 || _cg_missing=\"$_cg_missing "
                        "$_cg_p\"; done; if [ -n \"$_cg_missing\" ]; then echo \"run_script %s: "
                        "missing commands:$_cg_missing; the script was not run\" >&2; exit 127; "
                        "fi; unset _cg_p _cg_missing; ",
                        name);
    }
    end = stpcpy (end, "set --");
    json_array_foreach (args, i, item)
    {
        cleanup_free char *quoted = s_shell_quote (json_string_value (item));
        end = stpcpy (stpcpy (end, " "), quoted);
    }
    stpcpy (end, "\n");
    return out;
}

//  Returns the cell that runs CODE of LANGUAGE as script NAME with ARGS, after checking
//  PACKAGES, or NULL for a language without a prologue given either. ARGS and PACKAGES are
//  untrusted strings: they reach the cell only as base64, JSON literals or single-quoted
//  words. Caller frees.
static char *
s_cell (const char *name, const char *language, const char *code, json_t *args, json_t *packages)
{
    json_t *payload = json_pack ("{s:s, s:O, s:O}", "name", name, "args", args, "packages",
                                 packages ? packages : json_array ());
    cleanup_free char *json = json_dumps (payload, JSON_COMPACT | JSON_ENSURE_ASCII);
    json_decref (payload);
    if (strcmp (language, "python") == 0) {
        cleanup_free char *data = s_base64 (json, strlen (json));
        cleanup_free char *body = s_base64 (s_python_prologue, strlen (s_python_prologue));
        return cg_strdupf ("exec(__import__('base64').b64decode('%s').decode('utf-8'), "
                           "{'_cg_run': '%s'})\n%s",
                           body, data, code);
    }
    if (strcmp (language, "javascript") == 0) {
        cleanup_free char *prologue = cg_strdupf (S_JS_PROLOGUE, json);
        return cg_strdupf ("%s%s", prologue, code);
    }
    if (strcmp (language, "r") == 0) {
        cleanup_free char *data = s_base64 (json, strlen (json));
        return cg_strdupf (S_R_PROLOGUE "%s", data, code);
    }
    if (strcmp (language, "bash") == 0) {
        cleanup_free char *prologue = s_bash_prologue (name, args, packages);
        return cg_strdupf ("%s%s", prologue, code);
    }
    //  A kernel added by configuration: no prologue, so nothing to pass args or packages.
    return json_array_size (args) || json_array_size (packages) ? NULL : cg_xstrdup (code);
}

//  Checks run_script's ARGS (may be NULL): strings without NUL, within the limits. Returns
//  NULL when they are fine, else why (static).
static const char *
s_check_args (json_t *args)
{
    size_t i, total = 0;
    json_t *item;
    if (args && (!json_is_array (args) || json_array_size (args) > S_ARGS_MAX))
        return "'args' must be a list of at most " CG_STR (S_ARGS_MAX) " strings";
    json_array_foreach (args, i, item)
    {
        if (!json_is_string (item)
            || strlen (json_string_value (item)) != json_string_length (item))
            return "'args' items must be strings without NUL characters";
        total += json_string_length (item);
    }
    return total > S_ARGS_BYTES_MAX ? "'args' hold more than " CG_STR (S_ARGS_BYTES_MAX) " bytes"
                                    : NULL;
}

//  Runs script NAME of ARGUMENTS (checked) for REQ once its METADATA and CODE are read
//  (METADATA NULL: refused for READ_ERR).
static void
s_run_read (const cg_request_t *req, json_t *arguments, json_t *metadata, const char *code,
            const cg_error_t *read_err)
{
    const cg_config_t *config = cg_server_config (req->server);
    const char *tool = req->tool->name;
    const char *name = json_string_value (json_object_get (arguments, "name"));
    const char *session = json_string_value (json_object_get (arguments, "session_id"));
    json_t *args = json_object_get (arguments, "args");
    if (!metadata) {
        const char *error =
            read_err && read_err->code == ENOENT ? "script_not_found" : "storage_error";
        cg_request_result (req, cg_tools_refusal (tool, NULL, session, error,
                                                  cg_error_message (CG_UNCONST (read_err))));
        return;
    }
    const char *language = json_string_value (json_object_get (metadata, "language"));
    json_t *no_args = json_array ();
    cleanup_free char *cell = s_cell (name, language, code, args ? args : no_args,
                                      json_object_get (metadata, "packages"));
    json_decref (no_args);
    if (!cell) {
        cleanup_free char *why = cg_strdupf (
            "run_script passes args and packages to python, javascript, r and bash scripts "
            "only; %s is %s",
            name, language);
        cg_request_result (req, cg_tools_refusal (tool, language, session, "invalid_params", why));
        return;
    }
    //  The same validation and request as execute_code's, for the cell.
    json_t *run_arguments = json_pack ("{s:s, s:s}", "language", language, "code", cell);
    const char *passed[] = {"timeout_ms", "session_id", NULL};
    for (int i = 0; passed[i]; i++)
        if (json_object_get (arguments, passed[i]))
            json_object_set (run_arguments, passed[i], json_object_get (arguments, passed[i]));
    json_t *refusal = NULL;
    json_t *request = cg_tools_execute_request (config, "execute_code", run_arguments, &refusal);
    json_decref (run_arguments);
    if (!request) {
        cg_request_result (req, refusal);
        return;
    }
    json_object_set_new (request, "tool", json_string (tool));
    cg_call_t *call = cg_tools_run_request (req, &request);
    if (!call)
        return;
    call->script = cg_xstrdup (name);
    //  The execution log and the notebook keep the script's own code, not the cell around it.
    json_object_set_new (call->request, "code", json_string (code));
    json_object_set_new (call->request, "script",
                         json_pack ("{s:s, s:i, s:o}", "name", name, "version",
                                    cg_scripts_version_of (metadata), "args",
                                    args ? json_incref (args) : json_array ()));
    cg_tools_begin (req->server, call);
}

//  run_script's read of the script, on the store worker; the run starts back on the loop.
typedef struct {
    cg_tool_job_t job;
    char *dir;
    json_t *arguments; /* name, args, timeout_ms, session_id: a deep copy */
    bool modern_elicit;
    json_t *metadata; /* what was read, or NULL with ERR */
    char *code;
    cg_error_t *err;
} s_run_job_t;

static void
s_run_job_free (cg_tool_job_t *job)
{
    s_run_job_t *self = (s_run_job_t *)job;
    free (self->dir);
    json_decref (self->arguments);
    json_decref (self->metadata);
    free (self->code);
    cg_error_destroy (&self->err);
}

static void
s_run_job_read (cg_tool_job_t *job)
{
    s_run_job_t *self = (s_run_job_t *)job;
    const char *name = json_string_value (json_object_get (self->arguments, "name"));
    self->metadata = cg_scripts_get (self->dir, name, &self->code, &self->err);
}

static void
s_run_job_resume (cg_tool_job_t *job, cg_call_t *call)
{
    s_run_job_t *self = (s_run_job_t *)job;
    cg_request_t req = cg_tools_job_request (job->server, call);
    req.modern_elicit = self->modern_elicit;
    if (call->cancelled || !req.tool) {
        cg_server_call_end (job->server, call); /* recorded cancelled; its task told */
        return;
    }
    s_run_read (&req, self->arguments, self->metadata, self->code, self->err);
    cg_tools_job_hand_on (job->server, call);
}

void
cg_tools_run_script (const cg_request_t *req, json_t *arguments)
{
    const char *name = json_string_value (json_object_get (arguments, "name"));
    const char *session = json_string_value (json_object_get (arguments, "session_id"));
    json_t *args = json_object_get (arguments, "args");
    const char *why =
        !cg_scripts_valid_name (name) ? "'name': " CG_SCRIPTS_NAME_RULE : s_check_args (args);
    if (why) {
        cg_request_result (
            req, cg_tools_refusal (req->tool->name, NULL, session, "invalid_params", why));
        return;
    }
    s_run_job_t *job = cg_xcalloc (1, sizeof *job);
    job->job =
        (cg_tool_job_t){.run = s_run_job_read, .resume = s_run_job_resume, .free = s_run_job_free};
    job->dir = s_dir (cg_server_config (req->server));
    job->arguments = json_object ();
    const char *kept[] = {"name", "args", "timeout_ms", "session_id", NULL};
    for (int i = 0; kept[i]; i++)
        if (json_object_get (arguments, kept[i]))
            json_object_set_new (job->arguments, kept[i],
                                 json_deep_copy (json_object_get (arguments, kept[i])));
    job->modern_elicit = req->modern_elicit;
    cg_tools_job_start (req, &job->job);
}
