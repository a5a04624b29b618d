/*  cg_mcp — the MCP server's process part: the event loop, the listener, the runners'
    messages, logging, and the assembly that registers the features and tools with the
    core (cg_dispatch: handling and the method table; cg_calls: calls in flight).
    Transports (cg_stdio, cg_streamable) hand the core messages with the channel they
    came on; sessions belong to cg_registry. */
#include "mcp/cg_mcp.h"
#include "bridge/cg_adopt.h"
#include "gateway/cg_gateway.h"
#include "mcp/cg_resources.h"
#include "mcp/cg_jsonrpc.h"
#include "mcp/cg_listen.h"
#include "mcp/cg_methods.h"
#include "mcp/cg_modern.h"
#include "mcp/cg_server.h"
#include "mcp/cg_server_int.h"
#include "mcp/cg_stdio.h"
#include "mcp/cg_streamable.h"
#include "mcp/cg_tasks.h"
#include "mcp/tools/cg_tools.h"
#include "mcp/tools/cg_tools_wait.h"
#include "mcp/cg_admin.h"
#include "base/cg_limits.h"
#include "base/cg_util.h"
#include "base/cg_utf8.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

//  The longest message read from a client: 64 MiB, or more when uploads need it.
#define MIN_MESSAGE_MAX (64 * 1024 * 1024)

//  Log lines of the main thread waiting to be forwarded; more are dropped.
#define LOG_QUEUE_MAX 1000

zhashx_t *
cg_server_tasks (cg_server_t *self)
{
    return self->tasks;
}

const cg_config_t *
cg_server_config (cg_server_t *self)
{
    return self->config;
}

cg_registry_t *
cg_server_registry (cg_server_t *self)
{
    return self->registry;
}

cg_http_t *
cg_server_http (cg_server_t *self)
{
    return self->http;
}

cg_execlog_t *
cg_server_execlog (cg_server_t *self)
{
    return self->execlog;
}

cg_worker_t *
cg_server_store (cg_server_t *self)
{
    return self->store;
}

//  --------------------------------------------------------------------------
//  Logging: server log lines as notifications/message to the clients that asked

//  cg_log's hook on the main thread: queued, forwarded by the loop (never from inside
//  a send).
static void
s_log_hook (void *arg, int level, const char *message)
{
    cg_server_t *self = arg;
    if (zlistx_size (self->logs) < LOG_QUEUE_MAX)
        zlistx_add_end (self->logs, cg_strdupf ("%d\t%s", level, message));
}

//  Sends one log line: to the standing stdio stream, and to an HTTP client on the
//  streams of its calls in flight (there is no standalone stream).
static void
s_forward_log (cg_server_t *self, int level, const char *text)
{
    static const char *names[] = {"error", "warning", "info", "debug"};
    const char *name = names[level < 0 ? 0 : level > 3 ? 3 : level];
    cg_channel_t *stream = self->stdio ? cg_stdio_channel (self->stdio) : NULL;
    if (stream && stream->client->log_level >= level)
        cg_channel_send (stream,
                         cg_server_notification ("notifications/message",
                                                 json_pack ("{s:s, s:s, s:s}", "level", name,
                                                            "logger", "cellgate", "data", text)));
    for (cg_call_t *c = zhashx_first (self->calls); c; c = zhashx_next (self->calls))
        if (c->channel != stream && c->channel->client->log_level >= level)
            cg_channel_send (c->channel, cg_server_notification (
                                             "notifications/message",
                                             json_pack ("{s:s, s:s, s:s}", "level", name, "logger",
                                                        "cellgate", "data", text)));
}

static void
s_forward_logs (cg_server_t *self)
{
    while (zlistx_size (self->logs) > 0) {
        char *entry = zlistx_detach (self->logs, NULL);
        s_forward_log (self, atoi (entry), strchr (entry, '\t') + 1);
        free (entry);
    }
}

//  --------------------------------------------------------------------------
//  The runners' messages

static void
s_handle_runner (cg_server_t *self)
{
    zmsg_t *msg = zmsg_recv (cg_registry_results (self->registry));
    if (!msg)
        return;
    char *tag = zmsg_popstr (msg);
    if (tag && strcmp (tag, "LOG") == 0) {
        char *level = zmsg_popstr (msg), *text = zmsg_popstr (msg);
        if (level && text)
            s_forward_log (self, atoi (level), text);
        zstr_free (&level);
        zstr_free (&text);
    }
    else if (tag && cg_registry_runner_report (self->registry, tag, msg))
        ; /* REPORT, KERNELS */
    else if (tag) {
        char *key = zmsg_popstr (msg);
        if (cg_gateway_key (key) && self->gateway)
            cg_gateway_runner (self->gateway, tag, key, msg);
        cg_call_t *call = cg_gateway_key (key) ? NULL : cg_server_call (self, key);
        cg_registry_session_t *session =
            call ? cg_registry_find (self->registry, call->channel->client->id, call->session_id)
                 : NULL;
        if (strcmp (tag, "PROGRESS") == 0)
            cg_tools_progress (call, msg);
        else if (strcmp (tag, "RESULT") == 0)
            cg_tools_finish (self, call, session, msg);
        else if (strcmp (tag, "STARTED") == 0)
            cg_tools_started (self, call, session, msg);
        else if (strcmp (tag, "INPUT") == 0)
            cg_tools_input_ask (self, call, session, msg);
        zstr_free (&key);
    }
    zstr_free (&tag);
    zmsg_destroy (&msg);
}

//  --------------------------------------------------------------------------
//  The event loop

//  The port policy of a stdio server's listener left at its default (--http-listen): when
//  8080 is taken (another cellgate, say), the next free port of 8081-8089, else any free
//  port, said in the log (and in start_session's gateway_url). A listener that was asked
//  for (--http, --http-listen) is that one or none. Returns the listener, or NULL with
//  *err set.
static cg_http_t *
s_http_listen (const cg_config_t *config, const char *listen, cg_error_t **err)
{
    cg_http_t *http = cg_http_new (listen, err);
    if (http || config->http || config->http_listen_set || (*err)->code != EADDRINUSE)
        return http;
    cleanup_free char *taken = cg_xstrdup (cg_error_message (*err));
    for (int i = 1; !http && i <= CG_HTTP_LISTEN_TRIES && (*err)->code == EADDRINUSE; i++) {
        cleanup_free char *next = i < CG_HTTP_LISTEN_TRIES ? cg_strdupf (CG_HTTP_LISTEN_HOST ":%d",
                                                                         CG_HTTP_LISTEN_PORT + i)
                                                           : cg_xstrdup (CG_HTTP_LISTEN_HOST ":0");
        cg_error_destroy (err);
        http = cg_http_new (next, err);
    }
    if (http)
        cg_log (1,
                "http: %s; using a free port instead: %s (the default's policy: the first free "
                "port of 8081-8089, else any)",
                taken, cg_http_base_url (http));
    return http;
}

//  Starts the listener per the configuration. Returns 0 (self->http stays NULL when it
//  is off), or -1 when it cannot listen.
static int
s_http_start (cg_server_t *self)
{
    const cg_config_t *config = self->config;
    const char *listen = config->http ? config->http : config->http_listen;
    if (strcmp (listen, "off") == 0)
        return 0;
    cg_error_t *err = NULL;
    self->http = s_http_listen (config, listen, &err);
    if (!self->http) {
        cg_log (0, "http: cannot listen on %s: %s%s", listen, cg_error_message (err),
                config->http ? "" : " (--http-listen off disables downloads)");
        cg_error_destroy (&err);
        return -1;
    }
    cg_http_set_public_url (self->http, config->public_url);
    self->downloads = cg_downloads_new (self->http, cg_registry_download, self->registry);
    cg_http_set_limits (self->http, &(cg_http_limits_t){(unsigned)config->http_per_address,
                                                        (unsigned)config->http_owner_reserve,
                                                        (unsigned)config->http_request_timeout_s});
    cg_admin_route (self, self->http);
    cg_metrics_serve (self->http, self->admin_token, cg_registry_metrics_cb, self->registry);
    if (config->gateway && !(self->gateway = cg_gateway_new (config, self->registry, self->http)))
        return -1;
    return 0;
}

//  Waits for and handles one round of events. Returns 1 to go on, 0 when the client is
//  gone, -1 on a fatal error.
static int
s_poll_once (cg_server_t *self)
{
    //  Polled: the runners' messages, the client, the listener, and the pipes of the
    //  runners still closing (each signals there once its sandbox is gone).
    enum { FIXED = 4, CLOSING_MAX = 1024, GATEWAY_MAX = 5 * 64 };
    zmq_pollitem_t items[FIXED + CLOSING_MAX + GATEWAY_MAX];
    items[0] =
        (zmq_pollitem_t){zsock_resolve (cg_registry_results (self->registry)), 0, ZMQ_POLLIN, 0};
    int in_fd = self->stdio ? cg_stdio_fd (self->stdio) : -1;
    int http_fd = self->http ? cg_http_fd (self->http) : -1;
    items[1] = (zmq_pollitem_t){NULL, in_fd >= 0 ? in_fd : http_fd, in_fd >= 0 ? ZMQ_POLLIN : 0, 0};
    items[2] =
        (zmq_pollitem_t){NULL, http_fd >= 0 ? http_fd : in_fd, http_fd >= 0 ? ZMQ_POLLIN : 0, 0};
    items[3] = (zmq_pollitem_t){zsock_resolve (cg_worker_sock (self->store)), 0, ZMQ_POLLIN, 0};
    size_t closing = cg_registry_closing_items (self->registry, items + FIXED, CLOSING_MAX);
    int gateway =
        self->gateway ? cg_gateway_items (self->gateway, items + FIXED + closing, GATEWAY_MAX) : 0;
    int wait_ms = cg_tools_wait_tick (self, cg_registry_reap_idle (self->registry));
    wait_ms = self->streamable ? cg_streamable_reap (self->streamable, wait_ms) : wait_ms;
    wait_ms = cg_tasks_tick (self, wait_ms);
    wait_ms = cg_server_calls_tick (self, wait_ms);
    wait_ms = cg_listen_tick (self, wait_ms);
    //  Once stdin has ended, the calls in flight are finished, or cancelled, and answered.
    if (self->stdio && !cg_stdio_open (self->stdio) && !cg_server_drain (self, &wait_ms))
        return 0;
    //  What the last round resumed (answers, stream writes) goes out before we wait: a
    //  resumed connection does not wake our poll by itself.
    if (self->http)
        cg_http_process (self->http);
    s_forward_logs (self);
    cg_tools_log_sweep (self->execlog);
    int http_ms = self->http ? cg_http_timeout_ms (self->http) : -1;
    if (http_ms >= 0 && (wait_ms < 0 || http_ms < wait_ms))
        wait_ms = http_ms;
    if (self->gateway)
        wait_ms = cg_gateway_timeout_ms (self->gateway, wait_ms);
    if (zmq_poll (items, (int)(FIXED + closing) + gateway, wait_ms) < 0)
        return errno == EINTR ? 1 : -1;
    if (self->http)
        cg_http_process (self->http);
    if (self->gateway)
        cg_gateway_process (self->gateway, items + FIXED + closing, gateway);
    cg_registry_reap_closed (self->registry, items + FIXED, closing);
    if (items[0].revents)
        s_handle_runner (self);
    if (items[3].revents)
        cg_worker_collect (self->store);
    if (in_fd >= 0 && items[1].revents)
        cg_stdio_read (self->stdio);
    return 1;
}

void
cg_mcp_features (cg_server_t *server, cg_server_setup_fn *extra)
{
    cg_methods_register (server);
    cg_modern_register (server);
    cg_tools_register (server); /* tools/call first: tasks add their step to it */
    cg_tasks_register (server);
    cg_listen_register (server);
    cg_resources_register (server);
    if (extra)
        extra (server);
}

int
cg_mcp_serve (const cg_config_t *config, cg_backend_t *backend, cg_instance_t *instance, int in_fd,
              int out_fd, cg_server_setup_fn *extra)
{
    cg_server_t self = {0};
    //  A message must hold the largest upload in base64 (4 characters per 3 bytes).
    size_t message_max = config->max_upload_bytes / 3 * 4 + 1024 * 1024;
    if (message_max < MIN_MESSAGE_MAX)
        message_max = MIN_MESSAGE_MAX;
    cg_server_core_init (&self, config, cg_registry_new (config, backend, instance));
    cg_adopt (self.registry, backend, instance, config);
    self.execlog = cg_tools_log_open (config);
    self.store = cg_worker_new ("store", CG_TOOLS_JOBS_MAX);
    cg_registry_set_listener (self.registry, cg_tools_log_session, self.execlog);
    self.records = cg_run_record_new (self.registry, config, self.execlog, self.store);
    cg_mcp_features (&self, extra);
    cg_log_set_hook (s_log_hook, &self);
    int rc = s_http_start (&self) < 0 ? 1 : 0;
    if (rc == 0 && config->http)
        self.streamable = cg_streamable_new (&self, self.http, message_max);
    else if (rc == 0)
        self.stdio = cg_stdio_new (&self, in_fd, out_fd, message_max);
    for (int go = rc == 0; go > 0 && !zsys_interrupted;)
        if ((go = s_poll_once (&self)) < 0)
            rc = 1;
    //  Ending: every sandbox goes; all runners are asked first, then each is waited for.
    cg_registry_stop (self.registry);
    for (cg_call_t *c = zhashx_first (self.calls); c; c = zhashx_next (self.calls))
        if (c->oneshot)
            zstr_send (c->oneshot, "$TERM");
    for (cg_call_t *c = zhashx_first (self.calls); c; c = zhashx_next (self.calls))
        cg_registry_oneshot_end (self.registry, &c->oneshot);
    //  The library's and notebooks' work queued is done and answered, unless a signal
    //  stops the server now.
    if (zsys_interrupted)
        cg_worker_cancel_waiting (self.store);
    cg_worker_destroy (&self.store);
    cg_log_set_hook (NULL, NULL);
    zhashx_destroy (&self.calls); /* before the registry: the calls' one-shot runners */
    cg_registry_destroy (&self.registry);
    cg_run_record_destroy (&self.records);
    cg_execlog_destroy (&self.execlog);
    cg_streamable_destroy (&self.streamable);
    cg_stdio_destroy (&self.stdio);
    cg_gateway_destroy (&self.gateway);
    cg_http_destroy (&self.http);
    cg_downloads_destroy (&self.downloads);
    cg_admin_token_free (&self.admin_token);
    cg_server_core_fini (&self);
    return rc;
}
