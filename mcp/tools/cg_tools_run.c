/*  cg_tools_run — the running tools (execute_code, seed 001's tool, run_python,
    send_to_session): their arguments, their runs in a session's runner or a one-shot
    sandbox, live progress, and their results. */
#include "mcp/tools/cg_files.h"
#include "mcp/tools/cg_tools.h"
#include "mcp/cg_resources.h"
#include "mcp/tools/cg_tools_wait.h"
#include "mcp/cg_jsonrpc.h"
#include "mcp/tools/cg_run_result.h"
#include "base/cg_util.h"
#include "artifacts/cg_execlog_queue.h"
#include "artifacts/cg_workspace.h"

#include <sodium.h>
#include <string.h>
#include <time.h>

//  --------------------------------------------------------------------------
//  Arguments

//  The result of a run refused for its arguments: ERROR_CODE, MESSAGE, for LANGUAGE.
static json_t *
s_invalid (const char *error_code, const char *message, const char *language)
{
    return cg_run_result_invalid (language, error_code, message);
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
        *why = cg_strdupf ("'files' holds %zu files; at most %d", json_object_size (files),
                           S_FILES_MAX);
        return NULL;
    }
    json_t *list = json_array ();
    size_t total = 0;
    const char *key;
    json_t *value;
    json_object_foreach (files, key, value)
    {
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
            sodium_bin2base64 (encoded, cap, (const unsigned char *)json_string_value (value), len,
                               sodium_base64_VARIANT_ORIGINAL);
            json_array_append_new (list, json_pack ("{s:s, s:s}", "path", rel, "base64", encoded));
        }
        else if (json_is_object (value) && json_object_size (value) == 1 && json_is_string (b64)) {
            size_t cap = json_string_length (b64) / 4 * 3 + 3;
            cleanup_free unsigned char *bytes = cg_xmalloc (cap);
            if (sodium_base642bin (bytes, cap, json_string_value (b64), json_string_length (b64),
                                   " \r\n", &len, NULL, sodium_base64_VARIANT_ORIGINAL)
                != 0) {
                *why = cg_strdupf ("files: %s: content_base64 is not valid base64", rel);
                break;
            }
            json_array_append_new (list, json_pack ("{s:s, s:O}", "path", rel, "base64", b64));
        }
        else {
            *why = cg_strdupf ("files: %s: give the text as a string, or {\"content_base64\": ...}",
                               rel);
            break;
        }
        total += len;
        if (total > config->max_upload_bytes) {
            *why = cg_strdupf ("files: more than %zu bytes in all (the upload limit)",
                               config->max_upload_bytes);
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
    bool execute = cg_tools_is (tool, CG_TOOL_LANGUAGE);
    bool send = cg_tools_is (tool, CG_TOOL_SESSION_GIVEN);
    if (arguments && !json_is_object (arguments)) {
        *error_result = s_invalid ("INVALID_PARAMS", "arguments must be an object", NULL);
        return NULL;
    }
    const cg_tool_t *row = cg_tools_find (tool);
    if (row && (*error_result = cg_tools_check_arguments (row, arguments)))
        return NULL;
    json_t *language = execute ? json_object_get (arguments, "language") : NULL;
    json_t *code = json_object_get (arguments, "code");
    if ((execute && !json_is_string (language)) || !json_is_string (code)) {
        *error_result = s_invalid ("INVALID_PARAMS",
                                   execute ? "'language' and 'code' are required strings"
                                           : "'code' is a required string",
                                   NULL);
        return NULL;
    }
    const char *canonical =
        execute ? cg_tools_canonical_language (json_string_value (language)) : "python";
    if (!canonical) {
        *error_result = cg_tools_unsupported_language (tool, json_string_value (language), NULL);
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
    if ((stdin_value && !json_is_string (stdin_value))
        || (stdin_alias && !json_is_string (stdin_alias))
        || (stdin_value && stdin_alias && !json_equal (stdin_value, stdin_alias))) {
        *error_result = s_invalid ("INVALID_PARAMS",
                                   "'stdin' (alias 'stdin_data') must be one string", canonical);
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
    double seconds = cg_tools_default_timeout (config, row);
    if (timeout && timeout_ms) {
        *error_result =
            s_invalid ("INVALID_PARAMS",
                       "give either 'timeout' (seconds) or 'timeout_ms', not both", canonical);
        return NULL;
    }
    int max_s = config->max_timeout_s ? config->max_timeout_s : CG_TIMEOUT_MAX_S;
    if (timeout) {
        seconds = json_number_value (timeout);
        if (!json_is_number (timeout) || !(seconds >= CG_TIMEOUT_MIN_S && seconds <= max_s)) {
            cleanup_free char *message = cg_strdupf (
                "'timeout' must be a number of seconds from %d to %d", CG_TIMEOUT_MIN_S, max_s);
            *error_result = s_invalid ("INVALID_PARAMS", message, canonical);
            return NULL;
        }
    }
    if (timeout_ms) {
        double ms = json_number_value (timeout_ms);
        if (!json_is_number (timeout_ms) || !(ms >= CG_TIMEOUT_MIN_MS && ms <= max_s * 1000.0)) {
            cleanup_free char *message =
                cg_strdupf ("'timeout_ms' must be from %d to %d", CG_TIMEOUT_MIN_MS, max_s * 1000);
            *error_result = s_invalid ("INVALID_PARAMS", message, canonical);
            return NULL;
        }
        seconds = ms / 1000.0;
    }
    json_t *session_id = json_object_get (arguments, "session_id");
    if (send && !json_is_string (session_id)) {
        *error_result = s_invalid (
            "INVALID_PARAMS", "'session_id' is required (start one with start_session)", canonical);
        return NULL;
    }
    if (session_id && !json_is_null (session_id)
        && (!json_is_string (session_id)
            || !cg_tools_valid_session_id (json_string_value (session_id)))) {
        *error_result = s_invalid ("INVALID_PARAMS", CG_SESSION_ID_RULE, canonical);
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
    json_t *egress_allow = json_object_get (arguments, "egress_allow");
    if (egress_allow)
        json_object_set (request, "egress_allow", egress_allow);
    return request;
}

//  --------------------------------------------------------------------------
//  Runs

//  True while a cell a Jupyter front end sent (through the gateway) runs in SESSION's
//  LANGUAGE kernel: the kernel would queue the call behind it, and its timeout would
//  interrupt the front end's cell, so the call is refused instead.
static bool
s_frontend_busy (cg_registry_session_t *session, const char *language)
{
    const cg_registry_kernel_t *kernel =
        cg_registry_session_kernel (session, language ? language : session->language);
    return kernel && kernel->frontend_busy;
}

//  The session a validated REQUEST runs in: found, or created on first use. Returns it,
//  or NULL with *refusal set (or not, for a one-shot sandbox).
static cg_registry_session_t *
s_run_session (const cg_request_t *req, json_t *request, json_t **refusal)
{
    cg_registry_t *registry = cg_server_registry (req->server);
    const char *session_id = json_string_value (json_object_get (request, "session_id"));
    const char *language = json_string_value (json_object_get (request, "language"));
    cg_registry_session_t *session = cg_registry_find (registry, req->client->id, session_id);
    const char *tool = req->tool->name;
    json_t *egress_allow = json_object_get (request, "egress_allow");
    if (egress_allow && session)
        *refusal = s_invalid ("INVALID_PARAMS",
                              "egress_allow applies to a new sandbox (a one-shot run or a new "
                              "session); this session has its list already",
                              language);
    else if (req->tool->flags & CG_TOOL_SESSION_GIVEN && !session) {
        cleanup_free char *message = cg_strdupf ("No active session with id %s", session_id);
        *refusal = cg_tools_refusal (tool, language, session_id, "session_not_found", message);
    }
    else if (session && session->busy)
        *refusal =
            cg_tools_refusal (tool, language, session_id, "session_busy", CG_TOOLS_BUSY_MESSAGE);
    else if (session && s_frontend_busy (session, language))
        *refusal = cg_tools_refusal (tool, language, session_id, "session_busy",
                                     "A Jupyter front end attached through the gateway is running "
                                     "a cell in this session's kernel (one run at a time); call "
                                     "again once it has finished.");
    else if (session_id && !session) {
        session = cg_registry_create (registry, req->client->id, session_id, language, NULL,
                                      egress_allow);
        if (!session)
            *refusal = cg_tools_max_sessions (req, language, session_id);
    }
    else if (!session_id && cg_registry_oneshot_full (registry))
        *refusal = cg_tools_max_sessions (req, language, NULL);
    return session;
}

void
cg_tools_run (const cg_request_t *req, json_t *arguments)
{
    json_t *refusal = NULL;
    json_t *request = cg_tools_execute_request (cg_server_config (req->server), req->tool->name,
                                                arguments, &refusal);
    if (!request) {
        if (req->tool->flags & CG_TOOL_SEED001)
            cg_run_result_seed001_status (json_object_get (refusal, "structuredContent"));
        cg_request_result (req, refusal);
        return;
    }
    if (!cg_tools_wait_defer (req, &request))
        cg_tools_begin (req->server, cg_tools_run_request (req, &request));
}

cg_call_t *
cg_tools_run_request (const cg_request_t *req, json_t **request_p)
{
    json_t *request = *request_p;
    *request_p = NULL;
    unsigned flags = req->tool->flags;
    cg_registry_t *registry = cg_server_registry (req->server);
    json_t *refusal = NULL;
    char generated[18];
    if (flags & CG_TOOL_SESSION_MADE && !json_object_get (request, "session_id")) {
        //  Seed 004: a session is generated and returned when none is given.
        memcpy (generated, "sess_", 5);
        cg_random_hex (generated + 5, 6);
        json_object_set_new (request, "session_id", json_string (generated));
    }
    //  A new sandbox's own egress list, checked against the server's and normalized.
    json_t *egress_allow = NULL;
    cleanup_free char *egress_error = NULL;
    if (cg_tools_egress_allow (registry, json_object_get (request, "egress_allow"), &egress_allow,
                               &egress_error)
        < 0) {
        cg_request_result (req,
                           s_invalid ("INVALID_PARAMS", egress_error,
                                      json_string_value (json_object_get (request, "language"))));
        json_decref (request);
        return NULL;
    }
    if (egress_allow)
        json_object_set_new (request, "egress_allow", egress_allow);
    const char *session_id = json_string_value (json_object_get (request, "session_id"));
    cg_registry_session_t *existing = cg_registry_find (registry, req->client->id, session_id);
    if (existing && flags & CG_TOOL_SESSION_GIVEN)
        json_object_set_new (request, "language", json_string (existing->language));
    cg_registry_session_t *session = s_run_session (req, request, &refusal);
    zactor_t *oneshot = NULL;
    if (!refusal && !session
        && !(oneshot = cg_registry_oneshot_claim (
                 registry, json_string_value (json_object_get (request, "language")),
                 json_object_get (request, "egress_allow"))))
        refusal = cg_tools_max_sessions (
            req, json_string_value (json_object_get (request, "language")), NULL);
    if (refusal) {
        cg_request_result (req, refusal);
        json_decref (request);
        return NULL;
    }
    cg_call_t *call = cg_tools_dispatch (req, request, session, oneshot);
    //  What the execution log keeps of the request (the runner has its own copy).
    call->request = json_pack ("{s:O, s:O*, s:O*}", "code", json_object_get (request, "code"),
                               "stdin", json_object_get (request, "stdin"), "language",
                               json_object_get (request, "language"));
    if (flags & CG_TOOL_SESSION_MADE) {
        //  run_<UTC time>_<4 hex>, seed 004's format.
        char stamp[32], suffix[5];
        cg_utc_now (stamp, true);
        cg_random_hex (suffix, 2);
        call->run_id = cg_strdupf ("run_%s_%s", stamp, suffix);
    }
    json_decref (request);
    return call;
}

cg_call_t *
cg_tools_dispatch (const cg_request_t *req, json_t *request, cg_registry_session_t *session,
                   zactor_t *oneshot)
{
    cg_call_t *call = cg_server_call_new (
        req, req->tool->name, json_string_value (json_object_get (request, "session_id")));
    call->oneshot = oneshot;
    call->timeout_s = json_number_value (json_object_get (request, "timeout"));
    if (session)
        cg_registry_set_busy (session, call->key);
    json_t *copy = json_deep_copy (request);
    if (call->progress_token)
        json_object_set_new (copy, "progress", json_true ());
    //  A cell that wants more input than its stdin had asks the user (cg_tools_input).
    //  2026-07-28 asks with an input_required answer, when this request's capabilities say
    //  so (cg_tools_input).
    if (req->modern ? req->modern_elicit : req->client->elicitation)
        json_object_set_new (copy, "elicit", json_true ());
    //  The request is handed over as a pointer: the runner takes a deep copy, so that no
    //  JSON value (the client's arguments share theirs) is held by two threads.
    cg_runner_exec (session ? session->runner : oneshot, call->key, &copy);
    return call;
}

void
cg_tools_progress (cg_call_t *call, const cg_runner_event_t *event)
{
    const char *stream = event->progress.stream;
    if (call && call->progress_token && !call->cancelled && stream && event->progress.text) {
        const char *chunk = event->progress.text;
        int len = (int)event->progress.text_len;
        cleanup_free char *message =
            strcmp (stream, "display") == 0
                ? cg_strdupf ("[display: %.*s]", len, chunk)
                : cg_strdupf ("%s%.*s", strcmp (stream, "stderr") == 0 ? "[stderr] " : "", len,
                              chunk);
        json_t *params = json_pack ("{s:O, s:i, s:s}", "progressToken", call->progress_token,
                                    "progress", ++call->progress, "message", message);
        cg_channel_send (call->channel, json_pack ("{s:s, s:s, s:o}", "jsonrpc", "2.0", "method",
                                                   "notifications/progress", "params", params));
    }
}

//  The files of a one-shot run OUTCOME, copied out of its sandbox by its runner
//  (kept_dir, taken over here): kept for download under an id of their own (cg_kept),
//  when the download listener is on. Returns them (ws NULL: none kept; every artifact is
//  then marked "kept": false).
static cg_files_t
s_kept_files (cg_server_t *server, cg_outcome_t *outcome)
{
    cg_files_t files = {.config = cg_server_config (server), .http = cg_server_http (server)};
    cg_kept_t *kept = cg_registry_kept (cg_server_registry (server));
    if (outcome->kept_dir && files.http
        && cg_kept_add (kept, &outcome->kept_dir, outcome->kept_bytes, &files.session_id,
                        &files.token)
               == 0)
        files.ws = cg_kept_download (kept, files.session_id, files.token, strlen (files.token));
    size_t i;
    json_t *item;
    json_array_foreach (files.ws ? NULL : outcome->artifacts, i, item)
        json_object_set_new (item, "kept", json_false ());
    return files;
}

//  After cg_files_add_urls on a one-shot run's STRUCTURED: an artifact that was not kept
//  has no URL (nothing would serve it); the others get a resource_link to their download
//  URL when LINKS, and when any was not kept the notice says that the sandbox's files
//  went with it.
static void
s_kept_links (json_t *result, bool links)
{
    json_t *structured = json_object_get (result, "structuredContent");
    json_t *content = json_object_get (result, "content");
    bool lost = false;
    size_t i;
    json_t *item;
    json_array_foreach (json_object_get (structured, "artifacts"), i, item)
    {
        const char *url = json_string_value (json_object_get (item, "download_url"));
        if (json_is_false (json_object_get (item, "kept"))) {
            json_object_del (item, "download_url");
            lost = true;
        }
        else if (url && links) {
            const char *path = json_string_value (json_object_get (item, "path"));
            const char *slash = path ? strrchr (path, '/') : NULL;
            json_array_append_new (content, json_pack ("{s:s, s:s, s:s, s:O?, s:O?}", "type",
                                                       "resource_link", "uri", url, "name",
                                                       slash ? slash + 1 : "file", "mimeType",
                                                       json_object_get (item, "mime_type"), "size",
                                                       json_object_get (item, "size_bytes")));
        }
    }
    if (lost) {
        json_t *text = json_object_get (json_array_get (content, 0), "text");
        const char *said = json_string_value (text);
        cleanup_free char *more = cg_strdupf (
            "%s%s[notice] files marked \"kept\": false went with the one-shot sandbox (over "
            "the limits for keeping them, or keeping is off); run with a session_id to keep "
            "files",
            said ? said : "", said && *said ? "\n" : "");
        json_string_set (text, more);
    }
}

//  The tools/call result of CALL's run from OUTCOME (a one-shot run's kept files are
//  taken over), in its tool's terms.
static json_t *
s_run_response (cg_server_t *server, cg_call_t *call, cg_registry_session_t *session,
                cg_outcome_t *outcome)
{
    cg_files_t files = {0};
    if (session && session->ws)
        files = cg_files_of (cg_server_config (server), cg_server_http (server), session);
    else if (!session && json_array_size (outcome->artifacts) > 0)
        files = s_kept_files (server, outcome);
    const cg_config_t *config = cg_server_config (server);
    cg_run_images_t images = {.budget = config->image_budget,
                              .links = cg_client_links (call->channel->client),
                              .previews = outcome->previews};
    json_t *result = cg_run_result_call (
        cg_run_result_structured (outcome, files.ws ? &files : NULL, call->run_id), &images);
    if (cg_tools_is (call->tool, CG_TOOL_SEED001))
        cg_run_result_seed001_status (json_object_get (result, "structuredContent"));
    else if (session)
        cg_tools_kernel_id (json_object_get (result, "structuredContent"), server, session,
                            outcome->language);
    //  resource_link blocks exist from revision 2025-06-18 on.
    if (images.links)
        cg_resources_link_artifacts (result, session ? session->id : NULL);
    if (!session)
        s_kept_links (result, images.links);
    return result;
}

//  A run's answer waiting for the log's writer to write its lines.
typedef struct {
    cg_server_t *server;
    char key[32];   /* its call's */
    json_t *result; /* the call's result, or NULL: the runner gave none */
} s_logged_answer_t;

//  cg_execlog_then_fn: the lines queued before it are written (or the server is ending):
//  the call, unless it is gone meanwhile (its client ended, the server stopped), is
//  answered and ends.
static void
s_logged_answer_cb (void *arg, bool written)
{
    s_logged_answer_t *self = arg;
    (void)written;
    cg_call_t *call = cg_server_call (self->server, self->key);
    if (call && self->result)
        cg_server_call_answer (call, self->result);
    else if (call)
        cg_server_call_fail (call, CG_JSONRPC_INTERNAL_ERROR, "the runner returned no result");
    else
        json_decref (self->result);
    if (call)
        cg_server_call_end (self->server, call);
    free (self);
}

//  The answer of a run's call (cg_run_report_t's answer; ARG is the server), once the
//  registry has ended the run: the resource subscribers hear of the run (before the
//  answer, which ends an HTTP call's stream that carries their notifications), then the
//  call's answer is made from the run's outcome (NULL: the runner gave none) and sent once
//  the execution log's lines about the run are written (its entry, queued by the registry's
//  early observers, a package's install line by its tool's finish), so that a client never
//  has an answer whose run is not in the log, even if the server is killed next. A call
//  already gone (its client ended) has nothing to answer.
static void
s_answer_cb (void *arg, cg_registry_session_t *session, const cg_run_report_t *run)
{
    cg_server_t *server = arg;
    cg_call_t *call = cg_server_call (server, run->key);
    if (!call)
        return;
    cg_outcome_t *outcome = run->outcome;
    cg_resources_ran (server, call, session ? session->id : NULL, outcome);
    s_logged_answer_t *answer = cg_xcalloc (1, sizeof *answer);
    answer->server = server;
    snprintf (answer->key, sizeof answer->key, "%s", call->key);
    if (outcome) {
        const cg_tool_t *row = cg_tools_find (call->tool);
        answer->result = row && row->finish ? row->finish (server, call, session, outcome)
                                            : s_run_response (server, call, session, outcome);
    }
    //  Its run has ended: nothing is left to interrupt (its session may run another's).
    call->ending = true;
    cg_execlog_queue_then (cg_server_log_worker (server), cg_server_execlog (server),
                           s_logged_answer_cb, answer);
}

void
cg_tools_begin (cg_server_t *server, cg_call_t *call)
{
    if (!call)
        return;
    cg_registry_t *registry = cg_server_registry (server);
    cg_client_t *client = call->channel->client;
    cg_run_report_t run = {.front_end = "mcp",
                           .tool = call->tool,
                           .client_id = client->id,
                           .client_name = client->name,
                           .key = call->key,
                           .request = call->request,
                           .run_id = call->run_id,
                           .script = call->script,
                           .answer = s_answer_cb,
                           .answer_arg = server};
    const cg_registry_session_t *session =
        call->oneshot ? NULL : cg_registry_find (registry, client->id, call->session_id);
    cg_registry_run_begin (registry, session, &run);
}

void
cg_tools_abandon (cg_server_t *server, cg_call_t *call, const char *why)
{
    if (!call->request) {
        cg_server_call_fail (call, CG_JSONRPC_INTERNAL_ERROR, why);
        cg_server_call_end (server, call);
        return;
    }
    const char *language = json_string_value (json_object_get (call->request, "language"));
    char execution_id[18] = "exec_";
    cg_random_hex (execution_id + 5, 6);
    cg_outcome_t *outcome =
        cg_outcome_new (language ? language : "", execution_id, call->session_id);
    cg_outcome_fail (outcome, CG_OUTCOME_CANCELLED, 130, CG_OUTCOME_ERROR_RUNTIME, why);
    outcome->cancelled = true;
    outcome->duration_us = cg_now_us () - call->started_us;
    //  The registry ends the run now, answered (s_answer_cb) and recorded as cancelled;
    //  its RESULT, when it comes, finds no run and no call.
    if (!cg_registry_run_end_now (cg_server_registry (server), call->key, outcome)) {
        cg_server_call_fail (call, CG_JSONRPC_INTERNAL_ERROR, why);
        cg_server_call_end (server, call);
    }
}
