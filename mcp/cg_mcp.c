/*  cg_mcp — the MCP server over stdio: lifecycle, version negotiation, dispatch of
    requests to session runners, concurrency and cancellation. */
#include "cg_mcp.h"
#include "cg_jsonrpc.h"
#include "cg_conformance.h"
#include "cg_files.h"
#include "cg_result.h"
#include "cg_run_result.h"
#include "cg_tools.h"
#include "../artifacts/cg_http.h"
#include "../artifacts/cg_wsfs.h"
#include "../bridge/cg_runner.h"
#include "../bridge/cg_session.h"
#include "../bridge/cg_util.h"

#include <czmq.h>
#include <errno.h>
#include <sodium.h>
#include <pthread.h>
#include <signal.h>
#include <math.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

//  The longest line read from the client: 64 MiB, or more when uploads need it.
#define MIN_LINE_MAX (64 * 1024 * 1024)

static const char *s_versions[] = {"2025-11-25", "2025-06-18", "2025-03-26", NULL};

//  Returns our spelling of protocol revision VERSION, or NULL when we do not speak it.
static const char *
s_version_supported (const char *version)
{
    for (int i = 0; version && s_versions[i]; i++)
        if (strcmp (version, s_versions[i]) == 0)
            return s_versions[i];
    return NULL;
}

//  An MCP client: the stdio peer, or one Streamable HTTP session (Mcp-Session-Id).
//  Each client has its own sandbox sessions; no client sees another's.
typedef struct {
    char *id;                   /* "stdio", or the Mcp-Session-Id */
    bool http;
    bool initialized;
    char version[16];           /* the negotiated protocol version */
    int log_level;              /* logging/setLevel (cg_log levels); -1: none asked */
    int64_t last_seen_us;       /* its last request (HTTP) */
} s_client_t;

//  HTTP clients at once; an idle one without sessions is forgotten after the idle TTL.
#define MAX_HTTP_CLIENTS 1024

//  Where the messages for one request go: stdout (stdio), or one HTTP POST's answer,
//  first pending, then JSON or an SSE stream.
typedef enum { S_CHANNEL_PENDING, S_CHANNEL_STREAM, S_CHANNEL_DONE } s_channel_state_t;
typedef struct {
    s_client_t *client;
    cg_http_exchange_t *exchange; /* NULL for stdio */
    json_t *request_id;         /* the request the HTTP answer is for */
    s_channel_state_t state;
    bool kept;                  /* a call owns it */
} s_channel_t;

//  A session: its runner, the call it is running, and what list_sessions shows.
typedef struct {
    char *id;
    char *key;                  /* registry key: client id + "/" + id */
    s_client_t *client;
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
    s_channel_t *channel;       /* where its answer goes (owned) */
    json_t *progress_token;     /* _meta.progressToken, or NULL */
    int progress;               /* progress notifications sent */
    char *client_request;       /* id of our request to the client it waits for, or NULL */
} s_call_t;

typedef struct {
    const cg_config_t *config;
    cg_backend_t *backend;
    cg_instance_t *instance;
    int out_fd;
    s_client_t *stdio;          /* the stdio client, NULL when serving HTTP */
    s_channel_t stdio_channel;
    s_channel_t *current;       /* where what is being handled is answered */
    zhashx_t *clients;          /* Mcp-Session-Id -> s_client_t (HTTP) */
    zsock_t *results;
    char *results_endpoint;
    zhashx_t *sessions;         /* client id + "/" + session_id -> s_session_t */
    zlistx_t *closing;          /* s_session_t whose runners are destroying their sandboxes */
    zhashx_t *calls;            /* key -> s_call_t */
    cg_http_t *http;            /* download listener, NULL when off */
    unsigned long next_key;
    bool output_failed;
    size_t line_max;            /* the largest message accepted */
    json_t *progress_token;     /* the tools/call being handled asked for progress */
    pthread_mutex_t log_lock;   /* guards log_queue, filled by any thread's cg_log */
    zlistx_t *log_queue;        /* "<level>\t<message>" for clients that asked for logs */
    int log_fd;                 /* eventfd: the queue has something */
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
    //  The workspace's file system is released as soon as the runner unmounts it.
    cg_workspace_destroy (&session->ws);
    s_runner_join (&session->runner);
    //  The runner removes what it made; a session that only had uploads has its
    //  workspace and directory left, so they are removed here.
    if (session->dir)
        cg_session_dir_remove (session->dir);
    free (session->dir);
    free (session->key);
    free (session->id);
    free (session->busy_key);
    free (session->language);
    free (session->name);
    free (session);
    *item = NULL;
}

static void s_channel_free (s_channel_t **channel_p);

static void
s_call_free (void **item)
{
    s_call_t *call = *item;
    if (!call)
        return;
    s_channel_free (&call->channel);
    free (call->client_request);
    json_decref (call->progress_token);
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
s_write_stdout (s_server_t *self, const char *text, size_t len)
{
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
}

//  True when MESSAGE is the response (result or error) to the request ID.
static bool
s_answers (json_t *message, json_t *id)
{
    return id && (json_object_get (message, "result") || json_object_get (message, "error"))
           && json_equal (json_object_get (message, "id"), id);
}

//  Sends MESSAGE (stolen) on CHANNEL: a line on stdout, or the HTTP answer — JSON when it
//  is the response and nothing came before it, else events on an SSE stream that ends
//  with the response.
static void
s_send_to (s_server_t *self, s_channel_t *channel, json_t *message)
{
    bool links = channel && channel->client && strcmp (channel->client->version, "2025-06-18") >= 0; /* resource_link */
    char *text = cg_result_encode (message, self->config->max_result_bytes, links);
    if (!channel || !channel->exchange) {
        json_decref (message);
        size_t len = strlen (text);
        text = cg_xrealloc (text, len + 2);
        text[len++] = '\n';
        s_write_stdout (self, text, len);
        free (text);
        return;
    }
    bool final = s_answers (message, channel->request_id);
    json_decref (message);
    const char *session_header[] = {"Mcp-Session-Id", channel->client ? channel->client->id : NULL, NULL};
    const char *const *headers = channel->client ? session_header : NULL;
    if (channel->state == S_CHANNEL_PENDING && final) {
        cg_http_respond (channel->exchange, 200, "application/json", text, strlen (text), headers);
        channel->state = S_CHANNEL_DONE;
    }
    else if (channel->state != S_CHANNEL_DONE) {
        if (channel->state == S_CHANNEL_PENDING) {
            cg_http_stream_open (channel->exchange, headers);
            channel->state = S_CHANNEL_STREAM;
        }
        cleanup_free char *event = cg_strdupf ("event: message\ndata: %s\n\n", text);
        cg_http_stream_write (channel->exchange, event, strlen (event));
        if (final) {
            cg_http_stream_close (channel->exchange);
            channel->state = S_CHANNEL_DONE;
        }
    }
    free (text);
}

static void
s_send (s_server_t *self, json_t *message)
{
    s_send_to (self, self->current, message);
}

//  Ends CHANNEL's HTTP answer if it is still open (an empty stream when nothing was
//  sent: a cancelled request gets no response) and frees it.
static void
s_channel_free (s_channel_t **channel_p)
{
    s_channel_t *channel = *channel_p;
    if (!channel)
        return;
    if (channel->exchange && channel->state == S_CHANNEL_PENDING)
        cg_http_stream_open (channel->exchange, NULL);
    if (channel->exchange && channel->state != S_CHANNEL_DONE)
        cg_http_stream_close (channel->exchange);
    cg_http_exchange_release (&channel->exchange);
    json_decref (channel->request_id);
    free (channel);
    *channel_p = NULL;
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
        cg_run_result_seed001_status (json_object_get (result, "structuredContent"));
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
    const char *version = s_version_supported (requested);
    if (!version)
        version = s_versions[0];
    self->current->client->initialized = true;
    snprintf (self->current->client->version, sizeof self->current->client->version, "%s", version);
    json_t *result = json_pack (
        "{s:s, s:{s:{s:b}, s:{}}, s:{s:s, s:s, s:s}, s:s}", "protocolVersion", version, "capabilities",
        "tools", "listChanged", 0, "logging", "serverInfo", "name", "cellgate", "title",
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
    return language ? cg_run_result_refused (language, session_id, "max_sessions", message)
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

//  Returns the current client's session SESSION_ID, or NULL.
static s_session_t *
s_find (s_server_t *self, const char *session_id)
{
    if (!session_id)
        return NULL;
    cleanup_free char *key = cg_strdupf ("%s/%s", self->current->client->id, session_id);
    return zhashx_lookup (self->sessions, key);
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
    session->client = self->current->client;
    session->key = cg_strdupf ("%s/%s", session->client->id, session_id);
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
    if (cg_mkdir_p (session->dir, 0700, &err) < 0 || cg_session_workspace_create (self->config, session->dir, &err) < 0
        || !(session->ws = cg_workspace_open (workspace, &err)))
        cg_log (1, "session %s workspace: %s", session_id, cg_error_message (err));
    cg_error_destroy (&err);
    session->runner = zactor_new (cg_runner_actor, s_runner_args (self, session->slot, false));
    zhashx_insert (self->sessions, session->key, session);
    return session;
}

static s_call_t *
s_call_new (s_server_t *self, json_t *id, const char *tool, const char *session_id, char key[32])
{
    s_call_t *call = cg_xcalloc (1, sizeof *call);
    //  The answer comes later: the call takes the request's HTTP channel, or a stdio one.
    if (self->current->exchange) {
        call->channel = self->current;
        self->current->kept = true;
    }
    else {
        call->channel = cg_xcalloc (1, sizeof *call->channel);
        call->channel->client = self->current->client;
    }
    if (self->progress_token)
        call->progress_token = json_incref (self->progress_token);
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
    s_session_t *session = s_find (self, session_id);
    json_t *refusal = NULL;
    if (strcmp (tool, "send_to_session") == 0 && !session) {
        cleanup_free char *message = cg_strdupf ("No active session with id %s", session_id);
        refusal = cg_run_result_refused (language, session_id, "session_not_found", message);
    }
    else if (session && session->busy_key)
        refusal = cg_run_result_refused (language, session_id, "session_busy", s_busy_message);
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
    if (call->progress_token)
        json_object_set_new (request, "progress", json_true ());
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
                             || (strcmp (json_string_value (working_dir), CG_WORKSPACE_MOUNT) != 0
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
        if (s->client != self->current->client)
            continue;
        cleanup_free char *container = cg_strdupf ("%s%s", cg_instance_prefix (self->instance), s->slot);
        cg_sandbox_t sandbox = {.id = container};
        cg_container_stats_t stats = {0};
        json_t *memory = cg_container_stats (self->backend, &sandbox, &stats, NULL) == 0
                             ? json_real (round (stats.memory_mb * 10) / 10)
                             : json_null ();
        json_t *entry = json_pack (
            "{s:s, s:s, s:o, s:s, s:s, s:i, s:o, s:o, s:[], s:b}", "session_id", s->id, "language",
            s->language, "name", s->name ? json_string (s->name) : json_null (), "started_at",
            s->started_at, "last_activity_at", s->last_activity_at, "executions_count",
            s->executions, "pid", s_session_pid (self, s), "memory_mb", memory,
            "packages_installed", "busy", s->busy_key != NULL);
        //  The workspace's own file system, as the kernel counts it; null: no limit.
        cg_wsfs_usage_t usage;
        if (s->dir && cg_wsfs_usage (s->dir, &usage, NULL) == 1)
            json_object_update_new (entry, json_pack ("{s:f, s:f, s:I, s:I}", "workspace_limit_mb", usage.size_mb,
                                                      "workspace_used_mb", usage.used_mb, "workspace_inodes_limit",
                                                      (json_int_t) usage.inodes, "workspace_inodes_used",
                                                      (json_int_t) usage.inodes_used));
        else
            json_object_update_new (entry, json_pack ("{s:n, s:n, s:n, s:n}", "workspace_limit_mb", "workspace_used_mb",
                                                      "workspace_inodes_limit", "workspace_inodes_used"));
        json_array_append_new (list, entry);
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
    zhashx_delete (self->sessions, session->key);
    zlistx_add_end (self->closing, session);
}

//  Ends SESSION: answers its call in flight (if any) with an error, stops its runner
//  (destroying the sandbox) and forgets it.
static void
s_session_close (s_server_t *self, s_session_t *session, const char *why)
{
    if (session->busy_key) {
        s_call_t *call = zhashx_lookup (self->calls, session->busy_key);
        s_channel_t *saved = self->current;
        if (call)
            self->current = call->channel;
        //  A running tool's answer keeps its result shape; start_session's is an error object.
        if (call && !call->cancelled && strcmp (call->tool, "start_session") == 0)
            s_send (self, cg_jsonrpc_result (call->id, cg_tools_error_object ("session_closed", why, session->id)));
        else if (call && !call->cancelled)
            s_send_tool_result (self, call->id, call->tool,
                                cg_run_result_refused (session->language, session->id, "session_closed", why));
        self->current = saved;
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
    s_session_t *session = s_find (self, sid);
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
        *refusal = cg_tools_error_object ("invalid_params", CG_SESSION_ID_RULE, NULL);
    else if (!(session = s_find (self, json_string_value (session_id)))) {
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
        result = cg_tools_error_object ("invalid_params", CG_SESSION_ID_RULE, NULL);
    char generated[18] = "sess_";
    cg_random_hex (generated + 5, 6);   /* seed 004: created and returned when omitted */
    const char *name = json_is_string (session_id) ? json_string_value (session_id) : generated;
    cleanup_free char *rel = NULL;
    if (!result)
        result = cg_files_upload_check (self->config, arguments, name, &rel);
    s_session_t *session = result ? NULL : s_find (self, name);
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
        result = cg_files_upload (&files, arguments, rel);
        s_touch (session);
    }
    s_send (self, cg_jsonrpc_result (id, result));
}

//  --------------------------------------------------------------------------
//  Logging, and the conformance suite's fixtures

//  tools/list: the profile's tools, and the fixtures under the conformance profile.
static json_t *
s_tool_list (s_server_t *self)
{
    json_t *tools = cg_tools_list (self->config);
    if (strcmp (self->config->tool_profile, "conformance") == 0)
    {
        json_t *fixtures = cg_conformance_tools ();
        json_array_extend (tools, fixtures);
        json_decref (fixtures);
    }
    return tools;
}

static const char *s_mcp_levels[] = {"debug", "info", "notice", "warning", "error", "critical",
                                     "alert", "emergency", NULL};

//  cg_log levels (0 error .. 3 debug) for MCP's level names; -1 when unknown.
static int
s_log_level_of (const char *name)
{
    static const int levels[] = {3, 2, 2, 1, 0, 0, 0, 0};
    for (int i = 0; name && s_mcp_levels[i]; i++)
        if (strcmp (name, s_mcp_levels[i]) == 0)
            return levels[i];
    return -1;
}

//  cg_log's hook, on any thread: queue the message for the main loop and wake it.
static void
s_log_hook (void *arg, int level, const char *message)
{
    s_server_t *self = arg;
    pthread_mutex_lock (&self->log_lock);
    if (zlistx_size (self->log_queue) < 1000)
        zlistx_add_end (self->log_queue, cg_strdupf ("%d\t%s", level, message));
    pthread_mutex_unlock (&self->log_lock);
    uint64_t one = 1;
    if (write (self->log_fd, &one, sizeof one) < 0) {
        //  The eventfd is full: the main loop wakes anyway.
    }
}

//  Sets cg_log's hook to the most verbose level any client asked for.
static void
s_update_log_hook (s_server_t *self)
{
    int level = self->stdio ? self->stdio->log_level : -1;
    for (s_client_t *c = zhashx_first (self->clients); c; c = zhashx_next (self->clients))
        if (c->log_level > level)
            level = c->log_level;
    cg_log_set_hook (level >= 0 ? s_log_hook : NULL, self, level);
}

static void
s_set_log_level (s_server_t *self, json_t *id, json_t *params)
{
    int level = s_log_level_of (json_string_value (json_object_get (params, "level")));
    if (level < 0) {
        s_send_error (self, id, CG_JSONRPC_INVALID_PARAMS,
                      "logging/setLevel: 'level' must be debug, info, notice, warning, error, critical, alert or emergency");
        return;
    }
    self->current->client->log_level = level;
    s_update_log_hook (self);
    s_send (self, cg_jsonrpc_result (id, json_object ()));
}

static json_t *
s_notification (const char *method, json_t *params)
{
    return json_pack ("{s:s, s:s, s:o}", "jsonrpc", "2.0", "method", method, "params", params);
}

//  Sends the queued server logs as notifications/message: to the stdio client, and to an
//  HTTP client on the streams of its calls in flight (there is no standalone stream).
static void
s_forward_logs (s_server_t *self)
{
    uint64_t count;
    if (read (self->log_fd, &count, sizeof count) < 0) {
        //  Nothing pending.
    }
    pthread_mutex_lock (&self->log_lock);
    zlistx_t *queue = self->log_queue;
    self->log_queue = zlistx_new ();
    zlistx_set_destructor (self->log_queue, (zlistx_destructor_fn *) zstr_free);
    pthread_mutex_unlock (&self->log_lock);
    static const char *names[] = {"error", "warning", "info", "debug"};
    for (char *entry = zlistx_first (queue); entry; entry = zlistx_next (queue)) {
        int level = atoi (entry);
        const char *text = strchr (entry, '\t') + 1;
        const char *name = names[level < 0 ? 0 : level > 3 ? 3 : level];
        if (self->stdio && self->stdio->log_level >= level)
            s_send_to (self, &self->stdio_channel, s_notification ("notifications/message",
                       json_pack ("{s:s, s:s, s:s}", "level", name, "logger", "cellgate", "data", text)));
        for (s_call_t *c = zhashx_first (self->calls); c; c = zhashx_next (self->calls))
            if (c->channel->exchange && c->channel->client->log_level >= level)
                s_send_to (self, c->channel, s_notification ("notifications/message",
                           json_pack ("{s:s, s:s, s:s}", "level", name, "logger", "cellgate", "data", text)));
    }
    zlistx_destroy (&queue);
}

//  A fixture tool of the conformance profile: its notes, then its result, or a request
//  to the client whose answer (s_client_response) finishes the call.
static void
s_fixture_call (s_server_t *self, json_t *id, const char *name, json_t *arguments)
{
    json_t *notes = NULL, *request = NULL;
    json_t *result = cg_conformance_call (name, arguments, self->progress_token, &notes, &request);
    size_t i;
    json_t *note;
    json_array_foreach (notes, i, note) {
        const char *method = json_string_value (json_object_get (note, "method"));
        if (strcmp (method, "notifications/message") == 0
            && self->current->client->log_level < s_log_level_of (json_string_value (json_object_get (json_object_get (note, "params"), "level"))))
            continue;
        s_send (self, s_notification (method, json_incref (json_object_get (note, "params"))));
    }
    json_decref (notes);
    if (result) {
        s_send (self, cg_jsonrpc_result (id, result));
        return;
    }
    char key[32];
    s_call_t *call = s_call_new (self, id, name, NULL, key);
    call->client_request = cg_strdupf ("cg-%s", key);
    s_send (self, json_pack ("{s:s, s:s, s:O, s:O}", "jsonrpc", "2.0", "id", call->client_request, "method",
                             json_object_get (request, "method"), "params", json_object_get (request, "params")));
    json_decref (request);
}

//  A response from the client: the answer to a fixture's request.
static void
s_client_response (s_server_t *self, json_t *message)
{
    const char *id = json_string_value (json_object_get (message, "id"));
    for (s_call_t *call = zhashx_first (self->calls); id && call; call = zhashx_next (self->calls)) {
        if (!call->client_request || strcmp (call->client_request, id) != 0
            || call->channel->client != self->current->client)
            continue;
        const char *key = zhashx_cursor (self->calls);
        s_channel_t *saved = self->current;
        self->current = call->channel;
        if (!call->cancelled)
            s_send (self, cg_jsonrpc_result (call->id, cg_conformance_finish (call->tool, message)));
        self->current = saved;
        zhashx_delete (self->calls, key);
        return;
    }
}

static void s_tools_call_named (s_server_t *self, json_t *id, json_t *params);

static void
s_tools_call (s_server_t *self, json_t *id, json_t *params)
{
    json_t *token = json_object_get (json_object_get (params, "_meta"), "progressToken");
    self->progress_token = json_is_string (token) || json_is_integer (token) ? token : NULL;
    s_tools_call_named (self, id, params);
    self->progress_token = NULL;
}

static void
s_tools_call_named (s_server_t *self, json_t *id, json_t *params)
{
    const char *name = json_string_value (json_object_get (params, "name"));
    json_t *arguments = json_object_get (params, "arguments");
    if (!name) {
        s_send_error (self, id, CG_JSONRPC_INVALID_PARAMS, "tools/call: 'name' is required");
        return;
    }
    if (strcmp (self->config->tool_profile, "conformance") == 0 && cg_conformance_known (name)) {
        s_fixture_call (self, id, name, arguments);
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
            s_session_t *session = s_find (self, json_string_value (json_object_get (request, "session_id")));
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
        if (!json_equal (call->id, request_id) || call->cancelled || call->channel->client != self->current->client)
            continue;
        call->cancelled = true;
        zactor_t *runner = call->oneshot;
        if (!runner) {
            s_session_t *session = s_find (self, call->session_id);
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
    if (kind == CG_JSONRPC_RESPONSE) {
        s_client_response (self, message);
        return;
    }
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
    else if (!self->current->client->initialized)
        s_send_error (self, id, CG_JSONRPC_INVALID_REQUEST, "the session is not initialized: send 'initialize' first");
    else if (strcmp (method, "tools/list") == 0)
        s_send (self, cg_jsonrpc_result (id, json_pack ("{s:o}", "tools", s_tool_list (self))));
    else if (strcmp (method, "tools/call") == 0)
        s_tools_call (self, id, params);
    else if (strcmp (method, "logging/setLevel") == 0)
        s_set_log_level (self, id, params);
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
        if (message) {
            json_decref (message);
            return;
        }
        //  Not JSON after all (an error after the NUL): a parse error, as below.
    }
    if (!message) {
        cleanup_free char *text = cg_strdupf ("Parse error: %s", jerr.text);
        s_send_error (self, NULL, CG_JSONRPC_PARSE_ERROR, text);
        return;
    }
    s_handle_message (self, message);
    json_decref (message);
}

//  The tools/call result of a run: OUTCOME's (cg_run_result), with the session's
//  download URLs.
static json_t *
s_run_response (s_server_t *self, s_call_t *call, const cg_outcome_t *outcome)
{
    s_session_t *session = s_find (self, call->session_id);
    cg_files_t files = session ? s_files (self, session) : (cg_files_t){0};
    return cg_run_result_call (cg_run_result_structured (outcome, session ? &files : NULL, call->run_id));
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

//  Forwards a runner's output note TEXT ({"stream", "text"}) as notifications/progress
//  when the call asked for progress.
static void
s_progress (s_server_t *self, s_call_t *call, const char *text)
{
    json_t *note = text ? json_loads (text, 0, NULL) : NULL;
    const char *stream = json_string_value (json_object_get (note, "stream"));
    const char *chunk = json_string_value (json_object_get (note, "text"));
    if (call->progress_token && !call->cancelled && stream && chunk) {
        cleanup_free char *message = strcmp (stream, "display") == 0
                                         ? cg_strdupf ("[display: %s]", chunk)
                                         : cg_strdupf ("%s%s", strcmp (stream, "stderr") == 0 ? "[stderr] " : "", chunk);
        json_t *params = json_pack ("{s:O, s:i, s:s}", "progressToken", call->progress_token, "progress",
                                    ++call->progress, "message", message);
        s_send (self, json_pack ("{s:s, s:s, s:o}", "jsonrpc", "2.0", "method", "notifications/progress",
                                 "params", params));
    }
    json_decref (note);
}

//  A runner's message: PROGRESS <key> <note JSON>, RESULT <key> <start_session reply
//  JSON>, or OUTCOME <key> <cg_outcome_t pointer> (ours to destroy).
static void
s_handle_result (s_server_t *self)
{
    zmsg_t *msg = zmsg_recv (self->results);
    if (!msg)
        return;
    char *tag = zmsg_popstr (msg);
    char *key = zmsg_popstr (msg);
    bool is_outcome = tag && strcmp (tag, "OUTCOME") == 0;
    char *text = is_outcome ? NULL : zmsg_popstr (msg);
    cg_outcome_t *outcome = NULL;
    zframe_t *frame = is_outcome ? zmsg_pop (msg) : NULL;
    if (frame && zframe_size (frame) == sizeof outcome)
        memcpy (&outcome, zframe_data (frame), sizeof outcome);
    zframe_destroy (&frame);
    s_call_t *call = key ? zhashx_lookup (self->calls, key) : NULL;
    s_channel_t *saved = self->current;
    if (call && tag && strcmp (tag, "PROGRESS") == 0) {
        self->current = call->channel;
        s_progress (self, call, text);
        call = NULL;
    }
    if (call) {
        self->current = call->channel;
        s_session_t *session = s_find (self, call->session_id);
        if (session && session->busy_key && strcmp (session->busy_key, key) == 0) {
            free (session->busy_key);
            session->busy_key = NULL;
            s_touch (session);
        }
        bool start = strcmp (call->tool, "start_session") == 0;
        json_t *structured = start && text ? json_loads (text, 0, NULL) : NULL;
        if (session && !start)
            session->executions++;
        if (call->cancelled)
            ;   /* the spec: no response to a cancelled request */
        else if (start ? !structured : !outcome)
            s_send_error (self, call->id, CG_JSONRPC_INTERNAL_ERROR, "the runner returned no result");
        else if (start && session)
            s_send (self, cg_jsonrpc_result (call->id, s_start_response (self, session, structured)));
        else if (!start)
            s_send_tool_result (self, call->id, call->tool, s_run_response (self, call, outcome));
        //  A session whose start failed is not kept: it would hold a sandbox slot.
        if (start && session && !json_is_true (json_object_get (structured, "ok")))
            s_session_retire (self, session);
        json_decref (structured);
        zhashx_delete (self->calls, key);
    }
    self->current = saved;
    cg_outcome_destroy (&outcome);
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

//  cg_http's lookup: the workspace of the session SESSION_ID (of any client) whose
//  download token is TOKEN.
static cg_workspace_t *
s_http_lookup (void *arg, const char *session_id, const char *token, size_t token_len)
{
    s_server_t *self = arg;
    for (s_session_t *s = zhashx_first (self->sessions); s; s = zhashx_next (self->sessions))
        if (s->ws && strcmp (s->id, session_id) == 0 && token_len == strlen (s->token)
            && sodium_memcmp (s->token, token, token_len) == 0)
            return s->ws;
    return NULL;
}

//  --------------------------------------------------------------------------
//  Streamable HTTP

//  Frees CLIENT: closes its sessions (answering their calls in flight), drops its other
//  calls (their streams end) and forgets it.
static void
s_client_close (s_server_t *self, s_client_t *client)
{
    zlistx_t *mine = zlistx_new ();
    for (s_session_t *s = zhashx_first (self->sessions); s; s = zhashx_next (self->sessions))
        if (s->client == client)
            zlistx_add_end (mine, s);
    for (s_session_t *s = zlistx_first (mine); s; s = zlistx_next (mine))
        s_session_close (self, s, "The MCP session was ended.");
    zlistx_purge (mine);
    for (s_call_t *c = zhashx_first (self->calls); c; c = zhashx_next (self->calls))
        if (c->channel->client == client)
            zlistx_add_end (mine, (void *) zhashx_cursor (self->calls));
    for (const char *key = zlistx_first (mine); key; key = zlistx_next (mine)) {
        s_call_t *c = zhashx_lookup (self->calls, key);
        if (c && c->oneshot)
            zstr_send (c->oneshot, "$TERM");
        zhashx_delete (self->calls, key);
    }
    zlistx_destroy (&mine);
    zhashx_delete (self->clients, client->id);
}

static void
s_client_free (void **item)
{
    s_client_t *client = *item;
    if (!client)
        return;
    free (client->id);
    free (client);
    *item = NULL;
}

//  Forgets HTTP clients that sent nothing for the idle TTL and hold no session or call:
//  a client that never says DELETE does not stay forever.
static void
s_reap_clients (s_server_t *self)
{
    int64_t cutoff = cg_now_us () - (int64_t) self->config->idle_ttl_s * 1000000;
    zlistx_t *stale = zlistx_new ();
    for (s_client_t *c = zhashx_first (self->clients); c; c = zhashx_next (self->clients)) {
        if (c->last_seen_us > cutoff)
            continue;
        bool busy = false;
        for (s_session_t *s = zhashx_first (self->sessions); s && !busy; s = zhashx_next (self->sessions))
            busy = s->client == c;
        for (s_call_t *k = zhashx_first (self->calls); k && !busy; k = zhashx_next (self->calls))
            busy = k->channel->client == c;
        if (!busy)
            zlistx_add_end (stale, c);
    }
    for (s_client_t *c = zlistx_first (stale); c; c = zlistx_next (stale)) {
        cg_log (2, "forgetting MCP session %.8s…: idle for %d s", c->id, self->config->idle_ttl_s);
        zhashx_delete (self->clients, c->id);
    }
    zlistx_destroy (&stale);
}

//  Answers EXCHANGE with STATUS and a JSON-RPC error (id null) saying MESSAGE.
static void
s_http_refuse (cg_http_exchange_t *ex, unsigned int status, int code, const char *message,
               const char *const *headers)
{
    json_t *error = cg_jsonrpc_error (NULL, code, message);
    cleanup_free char *body = json_dumps (error, JSON_COMPACT);
    json_decref (error);
    cg_http_respond (ex, status, "application/json", body, strlen (body), headers);
}

//  True when AUTHORITY ("host:port") names this listener on loopback.
static bool
s_loopback_authority (s_server_t *self, const char *authority, size_t len)
{
    int port = cg_http_port (self->http);
    const char *hosts[] = {"127.0.0.1", "localhost", "[::1]", NULL};
    for (int i = 0; hosts[i]; i++) {
        cleanup_free char *expected = cg_strdupf ("%s:%d", hosts[i], port);
        if (strlen (expected) == len && strncasecmp (expected, authority, len) == 0)
            return true;
    }
    return false;
}

//  DNS rebinding: on loopback, Host must name this listener, and an Origin (a browser's
//  page) must be this listener too. Returns true when the request may go on.
static bool
s_http_origin_ok (s_server_t *self, cg_http_exchange_t *ex)
{
    const char *host = cg_http_exchange_header (ex, "Host");
    if (cg_http_loopback (self->http) && (!host || !s_loopback_authority (self, host, strlen (host))))
        return false;
    const char *origin = cg_http_exchange_header (ex, "Origin");
    if (!origin)
        return true;
    const char *authority = strstr (origin, "://");
    if (!authority || (strncmp (origin, "http://", 7) != 0 && strncmp (origin, "https://", 8) != 0))
        return false;
    authority += 3;
    size_t len = strcspn (authority, "/");
    return s_loopback_authority (self, authority, len)
           || (host && strlen (host) == len && strncasecmp (host, authority, len) == 0);
}

static bool
s_http_token_ok (s_server_t *self, cg_http_exchange_t *ex)
{
    const char *expected = self->config->http_token;
    if (!expected)
        return true;
    const char *given = cg_http_exchange_header (ex, "Authorization");
    if (!given || strncasecmp (given, "Bearer ", 7) != 0)
        return false;
    given += 7;
    size_t len = strlen (given);
    return len == strlen (expected) && sodium_memcmp (given, expected, len) == 0;
}

//  cg_http's /mcp handler: one POST (a JSON-RPC message), GET or DELETE.
static void
s_http_mcp (void *arg, cg_http_exchange_t *ex)
{
    s_server_t *self = arg;
    const char *method = cg_http_exchange_method (ex);
    static const char *bearer[] = {"WWW-Authenticate", "Bearer realm=\"cellgate\"", NULL};
    static const char *allow[] = {"Allow", "POST, DELETE", NULL};
    if (!s_http_origin_ok (self, ex)) {
        s_http_refuse (ex, 403, CG_JSONRPC_INVALID_REQUEST, "Forbidden: Host or Origin is not this server", NULL);
        return;
    }
    if (!s_http_token_ok (self, ex)) {
        s_http_refuse (ex, 401, CG_JSONRPC_INVALID_REQUEST, "Unauthorized: send Authorization: Bearer <token>", bearer);
        return;
    }
    const char *version = cg_http_exchange_header (ex, "MCP-Protocol-Version");
    if (version && !s_version_supported (version)) {
        s_http_refuse (ex, 400, CG_JSONRPC_INVALID_REQUEST, "Bad Request: unsupported MCP-Protocol-Version", NULL);
        return;
    }
    const char *sid = cg_http_exchange_header (ex, "Mcp-Session-Id");
    s_client_t *client = sid ? zhashx_lookup (self->clients, sid) : NULL;
    if (strcmp (method, "DELETE") == 0) {
        if (!sid)
            s_http_refuse (ex, 400, CG_JSONRPC_INVALID_REQUEST, "Bad Request: Mcp-Session-Id header is required", NULL);
        else if (!client)
            s_http_refuse (ex, 404, CG_JSONRPC_INVALID_REQUEST, "Session not found", NULL);
        else {
            s_client_close (self, client);
            cg_http_respond (ex, 200, NULL, "", 0, NULL);
        }
        return;
    }
    if (strcmp (method, "POST") != 0) {
        //  No server-initiated stream: every message to a client answers one of its
        //  requests and goes on that request's response.
        s_http_refuse (ex, 405, CG_JSONRPC_INVALID_REQUEST, "Method Not Allowed: POST JSON-RPC messages; DELETE ends the session", allow);
        return;
    }
    const char *accept = cg_http_exchange_header (ex, "Accept");
    if (accept && !strstr (accept, "*/*") && (!strstr (accept, "application/json") || !strstr (accept, "text/event-stream"))) {
        s_http_refuse (ex, 406, CG_JSONRPC_INVALID_REQUEST, "Not Acceptable: accept both application/json and text/event-stream", NULL);
        return;
    }
    size_t len = 0;
    const char *body = cg_http_exchange_body (ex, &len);
    json_error_t jerr;
    json_t *message = json_loadb (body, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!message) {
        cleanup_free char *text = cg_strdupf ("Parse error: %s", jerr.text);
        s_http_refuse (ex, 400, CG_JSONRPC_PARSE_ERROR, text, NULL);
        return;
    }
    const char *why = NULL;
    cg_jsonrpc_kind_t kind = cg_jsonrpc_classify (message, &why);
    json_t *id = json_object_get (message, "id");
    const char *rpc_method = json_string_value (json_object_get (message, "method"));
    bool initialize = kind == CG_JSONRPC_REQUEST && rpc_method && strcmp (rpc_method, "initialize") == 0;
    if (kind == CG_JSONRPC_INVALID) {
        s_http_refuse (ex, 400, CG_JSONRPC_INVALID_REQUEST, why, NULL);
        json_decref (message);
        return;
    }
    if (initialize && zhashx_size (self->clients) >= MAX_HTTP_CLIENTS) {
        s_http_refuse (ex, 503, CG_JSONRPC_INTERNAL_ERROR, "Service Unavailable: too many MCP sessions; end one with DELETE", NULL);
        json_decref (message);
        return;
    }
    if (initialize) {
        //  A new MCP session: its id is 128 random bits.
        client = cg_xcalloc (1, sizeof *client);
        client->http = true;
        client->log_level = -1;
        char hex[33];
        cg_random_hex (hex, 16);
        client->id = cg_xstrdup (hex);
        zhashx_insert (self->clients, client->id, client);
    }
    else if (!sid) {
        s_http_refuse (ex, 400, CG_JSONRPC_INVALID_REQUEST, "Bad Request: Mcp-Session-Id header is required", NULL);
        json_decref (message);
        return;
    }
    else if (!client) {
        s_http_refuse (ex, 404, CG_JSONRPC_INVALID_REQUEST, "Session not found", NULL);
        json_decref (message);
        return;
    }
    client->last_seen_us = cg_now_us ();
    s_channel_t *channel = cg_xcalloc (1, sizeof *channel);
    channel->client = client;
    channel->exchange = cg_http_exchange_keep (ex);
    channel->request_id = kind == CG_JSONRPC_REQUEST ? json_incref (id) : NULL;
    s_channel_t *saved = self->current;
    self->current = channel;
    s_handle_message (self, message);
    self->current = saved;
    json_decref (message);
    if (kind != CG_JSONRPC_REQUEST && channel->state == S_CHANNEL_PENDING) {
        cg_http_respond (ex, 202, NULL, "", 0, NULL);
        channel->state = S_CHANNEL_DONE;
    }
    if (!channel->kept)
        s_channel_free (&channel);
}

//  Starts the download listener per the configuration. Returns 0 (self->http stays NULL
//  when it is off), or -1 when it cannot listen.
static int
s_http_start (s_server_t *self)
{
    const cg_config_t *config = self->config;
    const char *listen = config->http ? config->http : config->http_listen;
    if (strcmp (listen, "off") == 0)
        return 0;
    cg_error_t *err = NULL;
    self->http = cg_http_new (listen, s_http_lookup, self, &err);
    if (!self->http && !config->http && !config->http_listen_set && err && err->code == EADDRINUSE) {
        //  The default port is taken (another cellgate, say): any free port will do.
        cg_log (1, "downloads: %s; using a free port instead", cg_error_message (err));
        cg_error_destroy (&err);
        self->http = cg_http_new ("127.0.0.1:0", s_http_lookup, self, &err);
    }
    if (!self->http) {
        cg_log (0, "http: cannot listen on %s: %s%s", listen, cg_error_message (err),
                config->http ? "" : " (--http-listen off disables downloads)");
        cg_error_destroy (&err);
        return -1;
    }
    if (config->http) {
        cg_http_set_mcp (self->http, self->line_max, s_http_mcp, self);
        cleanup_free char *host = cg_xstrndup (listen, (size_t) (strrchr (listen, ':') - listen));
        cg_log (2, "serving MCP at http://%s:%d/mcp%s", host, cg_http_port (self->http),
                config->http_token ? " (bearer token required)" : "");
    }
    return 0;
}

int
cg_mcp_serve (const cg_config_t *config, cg_backend_t *backend, cg_instance_t *instance, int in_fd,
              int out_fd)
{
    s_server_t self = {.config = config, .backend = backend, .instance = instance, .out_fd = out_fd};
    //  A message must hold the largest upload in base64 (4 characters per 3 bytes).
    size_t line_max = config->max_upload_bytes / 3 * 4 + 1024 * 1024;
    if (line_max < MIN_LINE_MAX)
        line_max = MIN_LINE_MAX;
    self.line_max = line_max;
    pthread_mutex_init (&self.log_lock, NULL);
    self.log_queue = zlistx_new ();
    zlistx_set_destructor (self.log_queue, (zlistx_destructor_fn *) zstr_free);
    self.log_fd = eventfd (0, EFD_NONBLOCK | EFD_CLOEXEC);
    self.clients = zhashx_new ();
    zhashx_set_destructor (self.clients, s_client_free);
    if (!config->http) {
        self.stdio = cg_xcalloc (1, sizeof *self.stdio);
        self.stdio->id = cg_xstrdup ("stdio");
        self.stdio->log_level = -1;
        self.stdio_channel.client = self.stdio;
        self.current = &self.stdio_channel;
    }
    else
        in_fd = -1;     /* HTTP only: stdin is not a transport */
    if (s_http_start (&self) < 0) {
        zhashx_destroy (&self.clients);
        if (self.stdio)
            free (self.stdio->id), free (self.stdio);
        return 1;
    }
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
    int64_t next_client_reap_us = 0;
    bool input_open = true;
    int rc = 0;
    while ((input_open || in_fd < 0) && !self.output_failed && !zsys_interrupted) {
        //  Polled: runner results, the client, the HTTP listener, and the pipes of the
        //  runners still closing (each signals there once its sandbox is gone).
        size_t closing = zlistx_size (self.closing);
        zmq_pollitem_t items[4 + closing];
        items[0] = (zmq_pollitem_t){zsock_resolve (self.results), 0, ZMQ_POLLIN, 0};
        int quiet_fd = self.http ? cg_http_fd (self.http) : in_fd;     /* polled for nothing */
        items[1] = (zmq_pollitem_t){NULL, in_fd >= 0 ? in_fd : quiet_fd, in_fd >= 0 ? ZMQ_POLLIN : 0, 0};
        items[2] = (zmq_pollitem_t){NULL, self.http ? cg_http_fd (self.http) : quiet_fd, self.http ? ZMQ_POLLIN : 0, 0};
        items[3] = (zmq_pollitem_t){NULL, self.log_fd, ZMQ_POLLIN, 0};
        size_t i = 4;
        for (s_session_t *s = zlistx_first (self.closing); s; s = zlistx_next (self.closing))
            items[i++] = (zmq_pollitem_t){zsock_resolve (s->runner), 0, ZMQ_POLLIN, 0};
        //  What the last round resumed (answers, stream writes) goes out before we wait:
        //  a resumed connection does not wake our poll by itself.
        if (self.http)
            cg_http_process (self.http);
        int wait_ms = s_reap_idle (&self);
        int reap_every_ms = config->idle_ttl_s < 10 ? config->idle_ttl_s * 1000 : 10000;
        if (config->http && cg_now_us () >= next_client_reap_us) {
            s_reap_clients (&self);
            next_client_reap_us = cg_now_us () + (int64_t) reap_every_ms * 1000;
        }
        if (config->http && (wait_ms < 0 || wait_ms > reap_every_ms))
            wait_ms = reap_every_ms;
        int http_ms = self.http ? cg_http_timeout_ms (self.http) : -1;
        if (http_ms >= 0 && (wait_ms < 0 || http_ms < wait_ms))
            wait_ms = http_ms;
        if (zmq_poll (items, (int) (4 + closing), wait_ms) < 0) {
            if (errno == EINTR)
                continue;
            rc = 1;
            break;
        }
        if (self.http)
            cg_http_process (self.http);
        s_reap_closed (&self, items + 4, closing);
        if (items[3].revents)
            s_forward_logs (&self);
        if (items[0].revents)
            s_handle_result (&self);
        if (in_fd < 0 || !items[1].revents)
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
    cg_log_set_hook (NULL, NULL, -1);
    zhashx_destroy (&self.calls);
    cg_http_destroy (&self.http);
    zlistx_destroy (&self.closing);
    zhashx_destroy (&self.sessions);
    zhashx_destroy (&self.clients);
    if (self.stdio) {
        free (self.stdio->id);
        free (self.stdio);
    }
    zlistx_destroy (&self.log_queue);
    pthread_mutex_destroy (&self.log_lock);
    close (self.log_fd);
    zsock_destroy (&self.results);
    free (self.results_endpoint);
    return rc;
}
