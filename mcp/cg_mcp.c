/*  cg_mcp — the MCP server over stdio: lifecycle, version negotiation, dispatch of
    requests to session runners, concurrency and cancellation. */
#include "cg_mcp.h"
#include "cg_jsonrpc.h"
#include "cg_tools.h"
#include "../bridge/cg_runner.h"
#include "../bridge/cg_session.h"
#include "../bridge/cg_util.h"

#include <czmq.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#define MAX_LINE (64 * 1024 * 1024)

static const char *s_versions[] = {"2025-11-25", "2025-06-18", "2025-03-26", NULL};

//  A session's runner and the call it is running, if any.
typedef struct {
    zactor_t *runner;
    char *busy_key;             /* key of the call in flight, NULL when idle */
} s_session_t;

//  A tools/call in flight.
typedef struct {
    json_t *id;                 /* JSON-RPC id */
    char *session_id;           /* NULL for a one-shot sandbox */
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
    zhashx_t *calls;            /* key -> s_call_t */
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
    free (session->busy_key);
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
    free (call->session_id);
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
        "Use execute_code to run Python in a sandbox without network access. Pass a session_id "
        "to keep state between calls; files in /mnt/data persist within a session.");
    s_send (self, cg_jsonrpc_result (id, result));
}

static void
s_start_call (s_server_t *self, json_t *id, json_t *request)
{
    const char *session_id = json_string_value (json_object_get (request, "session_id"));
    s_session_t *session = session_id ? zhashx_lookup (self->sessions, session_id) : NULL;
    if (session && session->busy_key) {
        cg_exec_request_t busy = {
            .language = json_string_value (json_object_get (request, "language")),
            .execution_id = json_string_value (json_object_get (request, "execution_id")),
            .session_id = session_id};
        json_t *structured = cg_result_setup_error (
            &busy, "SESSION_BUSY", "Session is busy running another call; wait for it to finish or cancel it.");
        s_send (self, cg_jsonrpc_result (id, cg_tools_call_result (structured)));
        json_decref (request);
        return;
    }
    cg_runner_args_t *args = cg_xcalloc (1, sizeof *args);
    *args = (cg_runner_args_t){.backend = self->backend,
                               .config = self->config,
                               .sessions_dir = cg_instance_sessions_dir (self->instance),
                               .container_prefix = cg_instance_prefix (self->instance),
                               .results_endpoint = self->results_endpoint,
                               .oneshot = session_id == NULL};
    s_call_t *call = cg_xcalloc (1, sizeof *call);
    call->id = json_incref (id);
    char key[32];
    snprintf (key, sizeof key, "c%lu", ++self->next_key);
    zactor_t *runner;
    if (session_id) {
        if (!session) {
            session = cg_xcalloc (1, sizeof *session);
            session->runner = zactor_new (cg_runner_actor, args);
            zhashx_insert (self->sessions, session_id, session);
        }
        else
            free (args);
        session->busy_key = cg_xstrdup (key);
        call->session_id = cg_xstrdup (session_id);
        runner = session->runner;
    }
    else {
        call->oneshot = zactor_new (cg_runner_actor, args);
        runner = call->oneshot;
    }
    zhashx_insert (self->calls, key, call);
    char *text = json_dumps (request, JSON_COMPACT);
    json_decref (request);
    zstr_sendx (runner, "EXEC", key, text, NULL);
    free (text);
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
    json_t *error_result = NULL;
    json_t *request = cg_tools_execute_request (self->config, arguments, &error_result);
    if (!request) {
        s_send (self, cg_jsonrpc_result (id, error_result));
        return;
    }
    s_start_call (self, id, request);
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
    if (!message) {
        cleanup_free char *text = cg_strdupf ("Parse error: %s", jerr.text);
        s_send_error (self, NULL, CG_JSONRPC_PARSE_ERROR, text);
        return;
    }
    s_handle_message (self, message);
    json_decref (message);
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
        if (call->session_id) {
            s_session_t *session = zhashx_lookup (self->sessions, call->session_id);
            if (session) {
                free (session->busy_key);
                session->busy_key = NULL;
            }
        }
        json_t *structured = text ? json_loads (text, 0, NULL) : NULL;
        if (call->cancelled)
            json_decref (structured);   /* the spec: no response to a cancelled request */
        else if (structured)
            s_send (self, cg_jsonrpc_result (call->id, cg_tools_call_result (structured)));
        else
            s_send_error (self, call->id, CG_JSONRPC_INTERNAL_ERROR, "the runner returned no result");
        zhashx_delete (self->calls, key);
    }
    zstr_free (&tag);
    zstr_free (&key);
    zstr_free (&text);
    zmsg_destroy (&msg);
}

int
cg_mcp_serve_stdio (const cg_config_t *config, cg_backend_t *backend, cg_instance_t *instance,
                    int in_fd, int out_fd)
{
    s_server_t self = {.config = config, .backend = backend, .instance = instance, .out_fd = out_fd};
    self.results_endpoint = cg_strdupf ("inproc://cg-results-%p", (void *) &self);
    self.results = zsock_new_pull (self.results_endpoint);
    self.sessions = zhashx_new ();
    zhashx_set_destructor (self.sessions, s_session_free);
    self.calls = zhashx_new ();
    zhashx_set_destructor (self.calls, s_call_free);

    size_t cap = 65536, len = 0;
    char *buf = cg_xmalloc (cap);
    bool discarding = false;    /* skipping the rest of an oversized line */
    bool input_open = true;
    int rc = 0;
    while (input_open && !self.output_failed && !zsys_interrupted) {
        zmq_pollitem_t items[] = {{zsock_resolve (self.results), 0, ZMQ_POLLIN, 0},
                                  {NULL, in_fd, ZMQ_POLLIN, 0}};
        if (zmq_poll (items, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            rc = 1;
            break;
        }
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
        if (len > MAX_LINE) {
            if (!discarding)
                s_send_error (&self, NULL, CG_JSONRPC_INVALID_REQUEST, "message larger than 64 MiB");
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
    for (s_session_t *s = zhashx_first (self.sessions); s; s = zhashx_next (self.sessions))
        zstr_send (s->runner, "$TERM");
    for (s_call_t *c = zhashx_first (self.calls); c; c = zhashx_next (self.calls))
        if (c->oneshot)
            zstr_send (c->oneshot, "$TERM");
    zhashx_destroy (&self.calls);
    zhashx_destroy (&self.sessions);
    zsock_destroy (&self.results);
    free (self.results_endpoint);
    return rc;
}
