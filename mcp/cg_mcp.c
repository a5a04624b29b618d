/*  cg_mcp — the MCP server over stdio: lifecycle, version negotiation, dispatch of
    requests to session runners, concurrency and cancellation. */
#include "cg_mcp.h"
#include "cg_jsonrpc.h"
#include "cg_files.h"
#include "cg_tools.h"
#include "../artifacts/cg_http.h"
#include "../bridge/cg_runner.h"
#include "../bridge/cg_session.h"
#include "../bridge/cg_util.h"

#include <czmq.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <math.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

//  The longest line read from the client: 64 MiB, or more when uploads need it.
#define MIN_LINE_MAX (64 * 1024 * 1024)

static const char *s_versions[] = {"2025-11-25", "2025-06-18", "2025-03-26", NULL};

//  A session: its runner, the call it is running, and what list_sessions shows.
typedef struct {
    char *id;
    zactor_t *runner;
    char *busy_key;             /* key of the call in flight, NULL when idle */
    char slot[13];              /* directory and container name */
    char *dir;                  /* the session's host directory */
    cg_workspace_t *ws;         /* its workspace, for the file tools and downloads */
    char token[33];             /* download token: 128 random bits */
    char *language;
    char *name;                 /* may be NULL */
    char started_at[32];        /* ISO 8601, UTC */
    char last_activity_at[32];
    int64_t started_us;         /* monotonic */
    int64_t last_activity_us;
    int executions;
} s_session_t;

//  A tools/call in flight.
typedef struct {
    json_t *id;                 /* JSON-RPC id */
    char *tool;                 /* tool name */
    char *session_id;           /* NULL for a one-shot sandbox */
    char *run_id;               /* run_python's run id */
    zactor_t *oneshot;          /* the one-shot runner, owned here */
    bool cancelled;             /* notifications/cancelled arrived: send no response */
} s_call_t;

typedef struct {
    const cg_config_t *config;
    cg_backend_t *backend;
    cg_instance_t *instance;
    int out_fd;
    zsock_t *results;
    char *results_endpoint;
    zhashx_t *sessions;         /* session_id -> s_session_t */
    zlistx_t *closing;          /* s_session_t whose runners are destroying their sandboxes */
    zhashx_t *calls;            /* key -> s_call_t */
    cg_http_t *http;            /* download listener, NULL when off */
    unsigned long next_key;
    bool initialized;
    bool output_failed;
} s_server_t;

//  Stops a runner and waits for it (and so its sandbox) to be gone. SIGINT and SIGTERM
//  are blocked in this thread meanwhile: an interrupted wait would leave the runner's
//  thread running while the server exits.
static void
s_runner_join (zactor_t **runner_p)
{
    sigset_t signals, old;
    sigemptyset (&signals);
    sigaddset (&signals, SIGINT);
    sigaddset (&signals, SIGTERM);
    pthread_sigmask (SIG_BLOCK, &signals, &old);
    zactor_destroy (runner_p);
    pthread_sigmask (SIG_SETMASK, &old, NULL);
}

static void
s_session_free (void **item)
{
    s_session_t *session = *item;
    if (!session)
        return;
    s_runner_join (&session->runner);
    cg_workspace_destroy (&session->ws);
    //  The runner removes what it made; a session that only had uploads has its
    //  directory left, so it is removed here.
    cg_error_t *err = NULL;
    if (session->dir && cg_rm_rf (session->dir, &err) < 0)
        cg_log (1, "%s", cg_error_message (err));
    cg_error_destroy (&err);
    free (session->dir);
    free (session->id);
    free (session->busy_key);
    free (session->language);
    free (session->name);
    free (session);
    *item = NULL;
}

static void
s_call_free (void **item)
{
    s_call_t *call = *item;
    if (!call)
        return;
    json_decref (call->id);
    free (call->tool);
    free (call->session_id);
    free (call->run_id);
    s_runner_join (&call->oneshot);
    free (call);
    *item = NULL;
}

//  --------------------------------------------------------------------------
//  Output

static void
s_send (s_server_t *self, json_t *message)
{
    char *text = json_dumps (message, JSON_COMPACT | JSON_REAL_PRECISION (9));
    json_decref (message);
    if (!text)
        abort ();
    size_t len = strlen (text);
    text = cg_xrealloc (text, len + 2);
    text[len++] = '\n';
    size_t done = 0;
    while (done < len && !self->output_failed) {
        ssize_t n = write (self->out_fd, text + done, len - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            cg_log (0, "write to client: %s", strerror (errno));
            self->output_failed = true;
            break;
        }
        done += (size_t) n;
    }
    free (text);
}

static void
s_send_error (s_server_t *self, json_t *id, int code, const char *message)
{
    s_send (self, cg_jsonrpc_error (id, code, message));
}

//  Sends the tools/call RESULT (stolen) of TOOL, in seed 001's status terms when TOOL
//  is seed 001's.
static void
s_send_tool_result (s_server_t *self, json_t *id, const char *tool, json_t *result)
{
    if (strcmp (tool, CG_SEED001_TOOL) == 0)
        cg_tools_seed001_status (json_object_get (result, "structuredContent"));
    s_send (self, cg_jsonrpc_result (id, result));
}

//  --------------------------------------------------------------------------
//  Methods

static void
s_initialize (s_server_t *self, json_t *id, json_t *params)
{
    const char *requested = json_string_value (json_object_get (params, "protocolVersion"));
    if (!requested) {
        s_send_error (self, id, CG_JSONRPC_INVALID_PARAMS, "initialize: 'protocolVersion' is required");
        return;
    }
    //  Echo a version we support; otherwise offer our latest (the client decides).
    const char *version = s_versions[0];
    for (int i = 0; s_versions[i]; i++)
        if (strcmp (requested, s_versions[i]) == 0)
            version = s_versions[i];
    self->initialized = true;
    json_t *result = json_pack (
        "{s:s, s:{s:{s:b}}, s:{s:s, s:s, s:s}, s:s}", "protocolVersion", version, "capabilities",
        "tools", "listChanged", 0, "serverInfo", "name", "cellgate", "title",
        "cellgate code sandbox", "version", CG_VERSION, "instructions",
        "Use execute_code or run_python to run Python in a sandbox without network access. Pass "
        "a session_id to keep state between calls; files in /mnt/data persist within a session. "
        "upload_file puts data in, list_artifacts and read_artifact get results out (charts "
        "come back as images; download_url links work in a browser).");
    s_send (self, cg_jsonrpc_result (id, result));
}

//  Formats the current UTC time with FORMAT (strftime) into OUT (32 bytes).
static void
s_utc_now (char out[32], const char *format)
{
    time_t now = time (NULL);
    struct tm tm;
    gmtime_r (&now, &tm);
    strftime (out, 32, format, &tm);
}

#define ISO_8601 "%Y-%m-%dT%H:%M:%SZ"


static size_t
s_sandbox_count (s_server_t *self)
{
    size_t count = zhashx_size (self->sessions);
    for (s_call_t *call = zhashx_first (self->calls); call; call = zhashx_next (self->calls))
        if (call->oneshot)
            count++;
    return count;
}

static cg_runner_args_t *
s_runner_args (s_server_t *self, const char *slot, bool oneshot)
{
    cg_runner_args_t *args = cg_xcalloc (1, sizeof *args);
    *args = (cg_runner_args_t){.backend = self->backend,
                               .config = self->config,
                               .sessions_dir = cg_instance_sessions_dir (self->instance),
                               .container_prefix = cg_instance_prefix (self->instance),
                               .results_endpoint = self->results_endpoint,
                               .oneshot = oneshot};
    if (slot)
        snprintf (args->slot, sizeof args->slot, "%s", slot);
    return args;
}

//  LANGUAGE: the running tool's language, or NULL for start_session (an error object).
static json_t *
s_max_sessions_result (s_server_t *self, const char *language, const char *session_id)
{
    cleanup_free char *message = cg_strdupf (
        "Maximum %d concurrent sessions reached. Close an existing session first.",
        self->config->max_sessions);
    return language ? cg_tools_run_error (language, session_id, "max_sessions", message)
                : cg_tools_error_object ("max_sessions", message, session_id);
}

//  Returns a tools/call error result when ARGUMENTS has a key that is not in ALLOWED
//  (NULL-terminated), else NULL.
static json_t *
s_check_keys (json_t *arguments, const char *const *allowed, const char *tool)
{
    const char *key;
    json_t *value;
    json_object_foreach (arguments, key, value) {
        bool known = false;
        for (int i = 0; allowed[i] && !known; i++)
            known = strcmp (key, allowed[i]) == 0;
        if (known)
            continue;
        cleanup_free char *names = cg_xstrdup (allowed[0] ? allowed[0] : "no arguments");
        for (int i = 1; allowed[0] && allowed[i]; i++) {
            char *more = cg_strdupf ("%s, %s", names, allowed[i]);
            free (names);
            names = more;
        }
        cleanup_free char *message = cg_strdupf ("unknown argument '%.64s'; %s takes %s", key, tool, names);
        return cg_tools_error_object ("invalid_params", message, NULL);
    }
    return NULL;
}

//  A session was used: it is not idle.
static void
s_touch (s_session_t *session)
{
    session->last_activity_us = cg_now_us ();
    s_utc_now (session->last_activity_at, ISO_8601);
}

//  Registers a new session and starts its runner. Returns it, or NULL when the limit
//  of concurrent sandboxes is reached.
static s_session_t *
s_session_new (s_server_t *self, const char *session_id, const char *language, const char *name)
{
    if (s_sandbox_count (self) >= (size_t) self->config->max_sessions)
        return NULL;
    s_session_t *session = cg_xcalloc (1, sizeof *session);
    session->id = cg_xstrdup (session_id);
    cg_random_hex (session->slot, 6);
    session->language = cg_xstrdup (language);
    session->name = name ? cg_xstrdup (name) : NULL;
    s_utc_now (session->started_at, ISO_8601);
    memcpy (session->last_activity_at, session->started_at, sizeof session->started_at);
    session->started_us = session->last_activity_us = cg_now_us ();
    cg_random_hex (session->token, 16);
    //  The workspace exists from the start so that files can be uploaded before the
    //  sandbox runs; the runner creates the rest when the session first runs.
    session->dir = cg_strdupf ("%s/%s", cg_instance_sessions_dir (self->instance), session->slot);
    cleanup_free char *workspace = cg_strdupf ("%s/workspace", session->dir);
    cg_error_t *err = NULL;
    if (cg_mkdir_p (session->dir, 0700, &err) < 0 || cg_mkdir_p (workspace, 0755, &err) < 0
        || chown (workspace, (uid_t) self->config->sandbox_uid, (gid_t) self->config->sandbox_gid) < 0
        || !(session->ws = cg_workspace_open (workspace, &err)))
        cg_log (1, "session %s workspace: %s", session_id, err ? cg_error_message (err) : strerror (errno));
    cg_error_destroy (&err);
    session->runner = zactor_new (cg_runner_actor, s_runner_args (self, session->slot, false));
    zhashx_insert (self->sessions, session_id, session);
    return session;
}

static s_call_t *
s_call_new (s_server_t *self, json_t *id, const char *tool, const char *session_id, char key[32])
{
    s_call_t *call = cg_xcalloc (1, sizeof *call);
    call->id = json_incref (id);
    call->tool = cg_xstrdup (tool);
    call->session_id = session_id ? cg_xstrdup (session_id) : NULL;
    snprintf (key, 32, "c%lu", ++self->next_key);
    zhashx_insert (self->calls, key, call);
    return call;
}

static const char *s_busy_message = "A run is already in progress for this session. Wait for it to complete.";

//  Runs a validated REQUEST (stolen) of a running tool in its session's runner, or in
//  a one-shot runner when it has no session.
static void
s_start_run (s_server_t *self, json_t *id, json_t *request)
{
    const char *tool = json_string_value (json_object_get (request, "tool"));
    char generated[18];
    if (strcmp (tool, "run_python") == 0 && !json_object_get (request, "session_id")) {
        //  Seed 004: a session is generated and returned when none is given.
        memcpy (generated, "sess_", 5);
        cg_random_hex (generated + 5, 6);
        json_object_set_new (request, "session_id", json_string (generated));
    }
    const char *session_id = json_string_value (json_object_get (request, "session_id"));
    const char *language = json_string_value (json_object_get (request, "language"));
    s_session_t *session = session_id ? zhashx_lookup (self->sessions, session_id) : NULL;
    json_t *refusal = NULL;
    if (strcmp (tool, "send_to_session") == 0 && !session) {
        cleanup_free char *message = cg_strdupf ("No active session with id %s", session_id);
        refusal = cg_tools_run_error (language, session_id, "session_not_found", message);
    }
    else if (session && session->busy_key)
        refusal = cg_tools_run_error (language, session_id, "session_busy", s_busy_message);
    else if (session_id && !session) {
        session = s_session_new (self, session_id, language, NULL);
        if (!session)
            refusal = s_max_sessions_result (self, language, session_id);
    }
    else if (!session_id && s_sandbox_count (self) >= (size_t) self->config->max_sessions)
        refusal = s_max_sessions_result (self, language, NULL);
    if (refusal) {
        s_send_tool_result (self, id, tool, refusal);
        json_decref (request);
        return;
    }
    char key[32];
    s_call_t *call = s_call_new (self, id, tool, session_id, key);
    if (strcmp (tool, "run_python") == 0) {
        //  run_<UTC time>_<4 hex>, seed 004's format.
        char stamp[32], suffix[5];
        s_utc_now (stamp, "%Y%m%dT%H%M%SZ");
        cg_random_hex (suffix, 2);
        call->run_id = cg_strdupf ("run_%s_%s", stamp, suffix);
    }
    zactor_t *runner;
    if (session) {
        session->busy_key = cg_xstrdup (key);
        runner = session->runner;
    }
    else {
        call->oneshot = zactor_new (cg_runner_actor, s_runner_args (self, NULL, true));
        runner = call->oneshot;
    }
    char *text = json_dumps (request, JSON_COMPACT);
    json_decref (request);
    zstr_sendx (runner, "EXEC", key, text, NULL);
    free (text);
}

static void
s_start_session (s_server_t *self, json_t *id, json_t *arguments)
{
    static const char *allowed[] = {"language", "name", "working_dir", NULL};
    json_t *refusal = s_check_keys (arguments, allowed, "start_session");
    if (refusal) {
        s_send (self, cg_jsonrpc_result (id, refusal));
        return;
    }
    json_t *language = json_object_get (arguments, "language");
    json_t *name = json_object_get (arguments, "name");
    json_t *working_dir = json_object_get (arguments, "working_dir");
    const char *canonical = json_is_string (language) ? cg_tools_canonical_language (json_string_value (language)) : NULL;
    const char *error = NULL;
    cleanup_free char *unsupported = cg_strdupf ("language is not supported; supported: %s", cg_tools_supported_languages ());
    if (!json_is_string (language))
        error = "'language' is a required string";
    else if (!canonical)
        error = unsupported;
    else if (name && (!json_is_string (name) || json_string_length (name) > 128))
        error = "'name' must be a string of at most 128 characters";
    else if (working_dir && (!json_is_string (working_dir)
                             || (strcmp (json_string_value (working_dir), "/mnt/data") != 0
                                 && strcmp (json_string_value (working_dir), "/mnt/data/") != 0)))
        error = "working_dir is not a host path here: the session runs in a sandbox whose only "
                "writable directory is /mnt/data (the default). Omit working_dir, or pass "
                "/mnt/data, and upload files there instead.";
    if (error) {
        s_send (self, cg_jsonrpc_result (id, cg_tools_error_object (canonical || !json_is_string (language) ? "invalid_params" : "unsupported_language", error, NULL)));
        return;
    }
    char session_id[18] = "sess_";
    cg_random_hex (session_id + 5, 6);
    s_session_t *session = s_session_new (self, session_id, canonical, json_string_value (name));
    if (!session) {
        s_send (self, cg_jsonrpc_result (id, s_max_sessions_result (self, NULL, NULL)));
        return;
    }
    char call_key[32];
    s_call_new (self, id, "start_session", session_id, call_key);
    session->busy_key = cg_xstrdup (call_key);
    cleanup_free char *text = cg_strdupf ("{\"language\":\"%s\"}", canonical);
    zstr_sendx (session->runner, "START", call_key, text, NULL);
}

static json_t *
s_session_pid (s_server_t *self, s_session_t *session)
{
    cleanup_free char *path = cg_strdupf ("%s/%s/bundle/kernel-%s.pid", cg_instance_sessions_dir (self->instance),
                                          session->slot, session->language);
    cleanup_free char *text = cg_read_file (path, 64, NULL, NULL);
    return text ? json_integer (atol (text)) : json_null ();
}

static void
s_list_sessions (s_server_t *self, json_t *id)
{
    json_t *list = json_array ();
    for (s_session_t *s = zhashx_first (self->sessions); s; s = zhashx_next (self->sessions)) {
        cleanup_free char *container = cg_strdupf ("%s%s", cg_instance_prefix (self->instance), s->slot);
        cg_sandbox_t sandbox = {.id = container};
        cg_container_stats_t stats = {0};
        json_t *memory = cg_container_stats (self->backend, &sandbox, &stats, NULL) == 0
                             ? json_real (round (stats.memory_mb * 10) / 10)
                             : json_null ();
        json_array_append_new (list, json_pack (
            "{s:s, s:s, s:o, s:s, s:s, s:i, s:o, s:o, s:[], s:b}", "session_id", s->id, "language",
            s->language, "name", s->name ? json_string (s->name) : json_null (), "started_at",
            s->started_at, "last_activity_at", s->last_activity_at, "executions_count",
            s->executions, "pid", s_session_pid (self, s), "memory_mb", memory,
            "packages_installed", "busy", s->busy_key != NULL));
    }
    json_t *structured = json_pack ("{s:o}", "sessions", list);
    cleanup_free char *text = json_dumps (structured, JSON_COMPACT);
    s_send (self, cg_jsonrpc_result (id, cg_tools_object_result (structured, text, false)));
}

//  Takes SESSION out of the registry and tells its runner to stop. It waits in the
//  closing list until the runner has destroyed the sandbox (the main loop polls for
//  that), so closing a session never holds up other requests.
static void
s_session_retire (s_server_t *self, s_session_t *session)
{
    zstr_send (session->runner, "$TERM");
    zhashx_delete (self->sessions, session->id);
    zlistx_add_end (self->closing, session);
}

//  Ends SESSION: answers its call in flight (if any) with an error, stops its runner
//  (destroying the sandbox) and forgets it.
static void
s_session_close (s_server_t *self, s_session_t *session, const char *why)
{
    if (session->busy_key) {
        s_call_t *call = zhashx_lookup (self->calls, session->busy_key);
        //  A running tool's answer keeps its result shape; start_session's is an error object.
        if (call && !call->cancelled && strcmp (call->tool, "start_session") == 0)
            s_send (self, cg_jsonrpc_result (call->id, cg_tools_error_object ("session_closed", why, session->id)));
        else if (call && !call->cancelled)
            s_send_tool_result (self, call->id, call->tool,
                                cg_tools_run_error (session->language, session->id, "session_closed", why));
        zhashx_delete (self->calls, session->busy_key);
    }
    s_session_retire (self, session);
}

static void
s_close_session (s_server_t *self, json_t *id, json_t *arguments)
{
    json_t *session_id = json_object_get (arguments, "session_id");
    if (!json_is_string (session_id)) {
        s_send (self, cg_jsonrpc_result (id, cg_tools_error_object ("invalid_params", "'session_id' is a required string", NULL)));
        return;
    }
    const char *sid = json_string_value (session_id);
    s_session_t *session = zhashx_lookup (self->sessions, sid);
    if (!session) {
        cleanup_free char *message = cg_strdupf ("No active session with id %.128s", sid);
        s_send (self, cg_jsonrpc_result (id, cg_tools_error_object ("session_not_found", message, sid)));
        return;
    }
    int64_t duration_ms = (cg_now_us () - session->started_us) / 1000;
    int executions = session->executions;
    cleanup_free char *kept_id = cg_xstrdup (sid);
    s_session_close (self, session, "The session was closed while this call was running.");
    json_t *structured = json_pack ("{s:b, s:s, s:s, s:I, s:i}", "success", 1, "status", "closed",
                                    "session_id", kept_id, "duration_total_ms", (json_int_t) duration_ms,
                                    "executions_count", executions);
    cleanup_free char *text = cg_strdupf ("Session %s closed.", kept_id);
    s_send (self, cg_jsonrpc_result (id, cg_tools_object_result (structured, text, false)));
}

//  Closes sessions idle for longer than the TTL. Returns the ms until the next check.
static int
s_reap_idle (s_server_t *self)
{
    int64_t ttl_us = (int64_t) self->config->idle_ttl_s * 1000000;
    int64_t now = cg_now_us ();
    int64_t next = INT64_MAX;
    zlistx_t *expired = zlistx_new ();
    for (s_session_t *s = zhashx_first (self->sessions); s; s = zhashx_next (self->sessions)) {
        if (s->busy_key)
            continue;
        int64_t due = s->last_activity_us + ttl_us;
        if (due <= now)
            zlistx_add_end (expired, s);
        else if (due < next)
            next = due;
    }
    for (s_session_t *s = zlistx_first (expired); s; s = zlistx_next (expired)) {
        cg_log (2, "closing session %s: idle for %d s", s->id, self->config->idle_ttl_s);
        s_session_close (self, s, "idle");
    }
    zlistx_destroy (&expired);
    if (next == INT64_MAX)
        return -1;
    int64_t wait_ms = (next - now) / 1000 + 1;
    return wait_ms > 60000 ? 60000 : (int) wait_ms;
}

static cg_files_t
s_files (s_server_t *self, s_session_t *session)
{
    return (cg_files_t){.config = self->config, .ws = session->ws, .session_id = session->id,
                        .token = session->token, .http = self->http};
}

//  Finds the existing session that a file tool's ARGUMENTS name. Returns it, or NULL
//  with *refusal set to the error result.
static s_session_t *
s_file_session (s_server_t *self, json_t *arguments, json_t **refusal)
{
    json_t *session_id = json_object_get (arguments, "session_id");
    s_session_t *session = NULL;
    if (!json_is_string (session_id))
        *refusal = cg_tools_error_object ("invalid_params", "'session_id' is a required string", NULL);
    else if (!cg_tools_valid_session_id (json_string_value (session_id)))
        *refusal = cg_tools_error_object ("invalid_params", "'session_id' must be 1 to 128 characters: letters, digits, '_', '.', '-', starting with a letter or digit", NULL);
    else if (!(session = zhashx_lookup (self->sessions, json_string_value (session_id)))) {
        cleanup_free char *message = cg_strdupf ("No active session with id %s", json_string_value (session_id));
        *refusal = cg_tools_error_object ("session_not_found", message, json_string_value (session_id));
    }
    else if (!session->ws) {
        *refusal = cg_tools_error_object ("sandbox_setup_failed", "the session's workspace could not be created; see the server log", session->id);
        session = NULL;
    }
    return session;
}

static void
s_file_tool (s_server_t *self, json_t *id, const char *tool, json_t *arguments)
{
    static const char *read_keys[] = {"session_id", "path", NULL};
    static const char *list_keys[] = {"session_id", NULL};
    bool read = strcmp (tool, "read_artifact") == 0;
    json_t *result = s_check_keys (arguments, read ? read_keys : list_keys, tool);
    s_session_t *session = result ? NULL : s_file_session (self, arguments, &result);
    if (session) {
        cg_files_t files = s_files (self, session);
        result = read ? cg_files_read (&files, arguments) : cg_files_list (&files);
        s_touch (session);
    }
    s_send (self, cg_jsonrpc_result (id, result));
}

static void
s_upload_file (s_server_t *self, json_t *id, json_t *arguments)
{
    static const char *allowed[] = {"session_id", "filename", "content_base64", "overwrite", NULL};
    json_t *result = s_check_keys (arguments, allowed, "upload_file");
    json_t *session_id = json_object_get (arguments, "session_id");
    if (!result && session_id && !json_is_null (session_id)
        && (!json_is_string (session_id) || !cg_tools_valid_session_id (json_string_value (session_id))))
        result = cg_tools_error_object ("invalid_params", "'session_id' must be 1 to 128 characters: letters, digits, '_', '.', '-', starting with a letter or digit", NULL);
    char generated[18] = "sess_";
    cg_random_hex (generated + 5, 6);   /* seed 004: created and returned when omitted */
    const char *name = json_is_string (session_id) ? json_string_value (session_id) : generated;
    if (!result)
        result = cg_files_upload_check (self->config, arguments, name);
    s_session_t *session = result ? NULL : zhashx_lookup (self->sessions, name);
    if (result)
        ;
    else if (session && session->busy_key)
        result = cg_tools_error_object ("session_busy", s_busy_message, name);
    else if (!session && !(session = s_session_new (self, name, "python", NULL)))
        result = s_max_sessions_result (self, NULL, name);
    else if (!session->ws)
        result = cg_tools_error_object ("sandbox_setup_failed", "the session's workspace could not be created; see the server log", name);
    else {
        cg_files_t files = s_files (self, session);
        result = cg_files_upload (&files, arguments);
        s_touch (session);
    }
    s_send (self, cg_jsonrpc_result (id, result));
}

static void
s_tools_call (s_server_t *self, json_t *id, json_t *params)
{
    const char *name = json_string_value (json_object_get (params, "name"));
    json_t *arguments = json_object_get (params, "arguments");
    if (!name) {
        s_send_error (self, id, CG_JSONRPC_INVALID_PARAMS, "tools/call: 'name' is required");
        return;
    }
    if (!cg_tools_known (name)) {
        cleanup_free char *message = cg_strdupf ("Unknown tool: %.128s", name);
        s_send_error (self, id, CG_JSONRPC_INVALID_PARAMS, message);
        return;
    }
    if (arguments && !json_is_object (arguments)) {
        s_send (self, cg_jsonrpc_result (id, cg_tools_error_object ("invalid_params", "arguments must be an object", NULL)));
        return;
    }
    static const char *no_keys[] = {NULL};
    static const char *close_keys[] = {"session_id", NULL};
    bool list = strcmp (name, "list_sessions") == 0, close = strcmp (name, "close_session") == 0;
    json_t *refusal = list || close ? s_check_keys (arguments, list ? no_keys : close_keys, name) : NULL;
    if (refusal)
        s_send (self, cg_jsonrpc_result (id, refusal));
    else if (list)
        s_list_sessions (self, id);
    else if (close)
        s_close_session (self, id, arguments);
    else if (strcmp (name, "start_session") == 0)
        s_start_session (self, id, arguments);
    else if (strcmp (name, "upload_file") == 0)
        s_upload_file (self, id, arguments);
    else if (strcmp (name, "read_artifact") == 0 || strcmp (name, "list_artifacts") == 0)
        s_file_tool (self, id, name, arguments);
    else {
        json_t *error_result = NULL;
        json_t *request = cg_tools_execute_request (self->config, name, arguments, &error_result);
        if (request && strcmp (name, "send_to_session") == 0) {
            s_session_t *session = zhashx_lookup (self->sessions, json_string_value (json_object_get (request, "session_id")));
            if (session)
                json_object_set_new (request, "language", json_string (session->language));
        }
        if (!request)
            s_send_tool_result (self, id, name, error_result);
        else
            s_start_run (self, id, request);
    }
}

static void
s_cancel (s_server_t *self, json_t *params)
{
    json_t *request_id = json_object_get (params, "requestId");
    if (!request_id)
        return;
    for (s_call_t *call = zhashx_first (self->calls); call; call = zhashx_next (self->calls)) {
        if (!json_equal (call->id, request_id) || call->cancelled)
            continue;
        call->cancelled = true;
        zactor_t *runner = call->oneshot;
        if (!runner) {
            s_session_t *session = zhashx_lookup (self->sessions, call->session_id);
            runner = session ? session->runner : NULL;
        }
        if (runner)
            zstr_send (runner, "CANCEL");
        return;
    }
}

static void
s_handle_message (s_server_t *self, json_t *message)
{
    const char *why = NULL;
    cg_jsonrpc_kind_t kind = cg_jsonrpc_classify (message, &why);
    json_t *id = json_object_get (message, "id");
    if (kind == CG_JSONRPC_INVALID) {
        s_send_error (self, json_is_object (message) ? id : NULL, CG_JSONRPC_INVALID_REQUEST, why);
        return;
    }
    if (kind == CG_JSONRPC_RESPONSE)
        return;     /* we send no requests that need answers */
    const char *method = json_string_value (json_object_get (message, "method"));
    json_t *params = json_object_get (message, "params");
    if (kind == CG_JSONRPC_NOTIFICATION) {
        if (strcmp (method, "notifications/cancelled") == 0)
            s_cancel (self, params);
        return;     /* notifications/initialized and unknown ones need nothing */
    }
    if (strcmp (method, "initialize") == 0)
        s_initialize (self, id, params);
    else if (strcmp (method, "ping") == 0)
        s_send (self, cg_jsonrpc_result (id, json_object ()));
    else if (!self->initialized)
        s_send_error (self, id, CG_JSONRPC_INVALID_REQUEST, "the session is not initialized: send 'initialize' first");
    else if (strcmp (method, "tools/list") == 0)
        s_send (self, cg_jsonrpc_result (id, json_pack ("{s:o}", "tools", cg_tools_list (self->config))));
    else if (strcmp (method, "tools/call") == 0)
        s_tools_call (self, id, params);
    else {
        cleanup_free char *text = cg_strdupf ("Method not found: %.128s", method);
        s_send_error (self, id, CG_JSONRPC_METHOD_NOT_FOUND, text);
    }
}

//  Untrusted: one line from the client.
static void
s_handle_line (s_server_t *self, const char *line, size_t len)
{
    while (len > 0 && (line[len - 1] == '\r' || line[len - 1] == ' ' || line[len - 1] == '\t'))
        len--;
    if (len == 0)
        return;
    json_error_t jerr;
    json_t *message = json_loadb (line, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!message && json_error_code (&jerr) == json_error_null_character) {
        //  Valid JSON, but no string here may hold a NUL (it would cut C strings short):
        //  the request is refused, answered with its own id so the client is not left
        //  waiting.
        message = json_loadb (line, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr);
        json_t *id = json_object_get (message, "id");
        if (message && (json_is_string (id) || json_is_integer (id)))
            s_send_error (self, id, CG_JSONRPC_INVALID_PARAMS,
                          "invalid params: strings must not contain NUL characters (\\u0000)");
        json_decref (message);
        return;
    }
    if (!message) {
        cleanup_free char *text = cg_strdupf ("Parse error: %s", jerr.text);
        s_send_error (self, NULL, CG_JSONRPC_PARSE_ERROR, text);
        return;
    }
    s_handle_message (self, message);
    json_decref (message);
}

//  Completes a run's structured result for its tool: the seeds' extra fields.
static json_t *
s_run_response (s_server_t *self, s_call_t *call, json_t *structured)
{
    s_session_t *session = call->session_id ? zhashx_lookup (self->sessions, call->session_id) : NULL;
    if (session) {
        cg_files_t files = s_files (self, session);
        cg_files_add_urls (&files, structured);
    }
    json_object_set_new (structured, "truncated",
                         json_boolean (json_is_true (json_object_get (structured, "stdout_truncated"))
                                       || json_is_true (json_object_get (structured, "stderr_truncated"))));
    if (!json_object_get (structured, "artifacts"))
        json_object_set_new (structured, "artifacts", json_array ());
    if (call->run_id)
        json_object_set_new (structured, "run_id", json_string (call->run_id));
    return cg_tools_call_result (structured);
}

static json_t *
s_start_response (s_server_t *self, s_session_t *session, json_t *result)
{
    if (!json_is_true (json_object_get (result, "ok")))
        return cg_tools_error_object ("sandbox_setup_failed",
                                      json_string_value (json_object_get (result, "error")), session->id);
    json_t *structured = json_pack ("{s:b, s:s, s:s, s:o, s:o, s:s}", "success", 1, "session_id", session->id,
                                    "language", session->language, "name",
                                    session->name ? json_string (session->name) : json_null (), "pid",
                                    s_session_pid (self, session), "started_at", session->started_at);
    cleanup_free char *text = cg_strdupf ("Session %s started (%s).", session->id, session->language);
    return cg_tools_object_result (structured, text, false);
}

static void
s_handle_result (s_server_t *self)
{
    zmsg_t *msg = zmsg_recv (self->results);
    if (!msg)
        return;
    char *tag = zmsg_popstr (msg);
    char *key = zmsg_popstr (msg);
    char *text = zmsg_popstr (msg);
    s_call_t *call = key ? zhashx_lookup (self->calls, key) : NULL;
    if (call) {
        s_session_t *session = call->session_id ? zhashx_lookup (self->sessions, call->session_id) : NULL;
        if (session && session->busy_key && strcmp (session->busy_key, key) == 0) {
            free (session->busy_key);
            session->busy_key = NULL;
            s_touch (session);
        }
        json_t *structured = text ? json_loads (text, 0, NULL) : NULL;
        bool start = strcmp (call->tool, "start_session") == 0;
        if (session && !start)
            session->executions++;
        if (call->cancelled)
            ;   /* the spec: no response to a cancelled request */
        else if (!structured)
            s_send_error (self, call->id, CG_JSONRPC_INTERNAL_ERROR, "the runner returned no result");
        else if (start && session)
            s_send (self, cg_jsonrpc_result (call->id, s_start_response (self, session, structured)));
        else if (!start)
            s_send_tool_result (self, call->id, call->tool, s_run_response (self, call, json_incref (structured)));
        //  A session whose start failed is not kept: it would hold a sandbox slot.
        if (start && session && !json_is_true (json_object_get (structured, "ok")))
            s_session_retire (self, session);
        json_decref (structured);
        zhashx_delete (self->calls, key);
    }
    zstr_free (&tag);
    zstr_free (&key);
    zstr_free (&text);
    zmsg_destroy (&msg);
}

//  Frees the closing sessions whose runner pipes (ITEMS, COUNT of them, in list order)
//  are readable: their runners have finished, so the joins return at once.
static void
s_reap_closed (s_server_t *self, zmq_pollitem_t *items, size_t count)
{
    s_session_t *done[count ? count : 1];
    size_t ready = 0, i = 0;
    for (s_session_t *s = zlistx_first (self->closing); s && i < count; s = zlistx_next (self->closing), i++)
        if (items[i].revents & ZMQ_POLLIN)
            done[ready++] = s;
    for (i = 0; i < ready; i++)
        zlistx_delete (self->closing, zlistx_find (self->closing, done[i]));
}

//  cg_http's lookup: a session's workspace and download token.
static int
s_http_lookup (void *arg, const char *session_id, cg_workspace_t **workspace, const char **token)
{
    s_server_t *self = arg;
    s_session_t *session = zhashx_lookup (self->sessions, session_id);
    if (!session || !session->ws)
        return -1;
    *workspace = session->ws;
    *token = session->token;
    return 0;
}

//  Starts the download listener per the configuration. Returns 0 (self->http stays NULL
//  when it is off), or -1 when it cannot listen.
static int
s_http_start (s_server_t *self)
{
    const cg_config_t *config = self->config;
    if (strcmp (config->http_listen, "off") == 0)
        return 0;
    cg_error_t *err = NULL;
    self->http = cg_http_new (config->http_listen, s_http_lookup, self, &err);
    if (!self->http && !config->http_listen_set && err && err->code == EADDRINUSE) {
        //  The default port is taken (another cellgate, say): any free port will do.
        cg_log (1, "downloads: %s; using a free port instead", cg_error_message (err));
        cg_error_destroy (&err);
        self->http = cg_http_new ("127.0.0.1:0", s_http_lookup, self, &err);
    }
    if (!self->http) {
        cg_log (0, "downloads: cannot listen on %s: %s (--http-listen off disables them)", config->http_listen,
                cg_error_message (err));
        cg_error_destroy (&err);
        return -1;
    }
    return 0;
}

int
cg_mcp_serve_stdio (const cg_config_t *config, cg_backend_t *backend, cg_instance_t *instance,
                    int in_fd, int out_fd)
{
    s_server_t self = {.config = config, .backend = backend, .instance = instance, .out_fd = out_fd};
    if (s_http_start (&self) < 0)
        return 1;
    //  A line must hold the largest upload in base64 (4 characters per 3 bytes).
    size_t line_max = config->max_upload_bytes / 3 * 4 + 1024 * 1024;
    if (line_max < MIN_LINE_MAX)
        line_max = MIN_LINE_MAX;
    self.results_endpoint = cg_strdupf ("inproc://cg-results-%p", (void *) &self);
    self.results = zsock_new_pull (self.results_endpoint);
    self.sessions = zhashx_new ();
    self.closing = zlistx_new ();
    zlistx_set_destructor (self.closing, s_session_free);
    self.calls = zhashx_new ();
    zhashx_set_destructor (self.calls, s_call_free);

    size_t cap = 65536, len = 0;
    char *buf = cg_xmalloc (cap);
    bool discarding = false;    /* skipping the rest of an oversized line */
    bool input_open = true;
    int rc = 0;
    while (input_open && !self.output_failed && !zsys_interrupted) {
        //  Polled: runner results, the client, the HTTP listener, and the pipes of the
        //  runners still closing (each signals there once its sandbox is gone).
        size_t closing = zlistx_size (self.closing);
        zmq_pollitem_t items[3 + closing];
        items[0] = (zmq_pollitem_t){zsock_resolve (self.results), 0, ZMQ_POLLIN, 0};
        items[1] = (zmq_pollitem_t){NULL, in_fd, ZMQ_POLLIN, 0};
        items[2] = (zmq_pollitem_t){NULL, self.http ? cg_http_fd (self.http) : in_fd, self.http ? ZMQ_POLLIN : 0, 0};
        size_t i = 3;
        for (s_session_t *s = zlistx_first (self.closing); s; s = zlistx_next (self.closing))
            items[i++] = (zmq_pollitem_t){zsock_resolve (s->runner), 0, ZMQ_POLLIN, 0};
        int wait_ms = s_reap_idle (&self);
        int http_ms = self.http ? cg_http_timeout_ms (self.http) : -1;
        if (http_ms >= 0 && (wait_ms < 0 || http_ms < wait_ms))
            wait_ms = http_ms;
        if (zmq_poll (items, (int) (3 + closing), wait_ms) < 0) {
            if (errno == EINTR)
                continue;
            rc = 1;
            break;
        }
        if (self.http)
            cg_http_process (self.http);
        s_reap_closed (&self, items + 3, closing);
        if (items[0].revents)
            s_handle_result (&self);
        if (!items[1].revents)
            continue;
        if (cap - len < 65536) {
            cap *= 2;
            buf = cg_xrealloc (buf, cap);
        }
        ssize_t n = read (in_fd, buf + len, cap - len);
        if (n < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (n <= 0) {
            input_open = false;
            if (len > 0 && !discarding)
                s_handle_line (&self, buf, len);
            break;
        }
        len += (size_t) n;
        size_t start = 0;
        for (char *nl; (nl = memchr (buf + start, '\n', len - start));) {
            size_t line_len = (size_t) (nl - (buf + start));
            if (!discarding)
                s_handle_line (&self, buf + start, line_len);
            discarding = false;
            start += line_len + 1;
        }
        memmove (buf, buf + start, len - start);
        len -= start;
        if (len > line_max) {
            if (!discarding) {
                cleanup_free char *message = cg_strdupf ("message larger than %zu bytes", line_max);
                s_send_error (&self, NULL, CG_JSONRPC_INVALID_REQUEST, message);
            }
            discarding = true;
            len = 0;
        }
        if (cap > 4 * 65536 && len < cap / 4) {
            cap = len + 65536;
            buf = cg_xrealloc (buf, cap);
        }
    }
    free (buf);
    //  Ending: every sandbox goes. Ask all runners to stop first, then wait for each.
    zlistx_t *all = zhashx_values (self.sessions);
    for (s_session_t *s = zlistx_first (all); s; s = zlistx_next (all))
        s_session_retire (&self, s);
    zlistx_destroy (&all);
    for (s_call_t *c = zhashx_first (self.calls); c; c = zhashx_next (self.calls))
        if (c->oneshot)
            zstr_send (c->oneshot, "$TERM");
    zhashx_destroy (&self.calls);
    cg_http_destroy (&self.http);
    zlistx_destroy (&self.closing);
    zhashx_destroy (&self.sessions);
    zsock_destroy (&self.results);
    free (self.results_endpoint);
    return rc;
}
