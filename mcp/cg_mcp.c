/*  cg_mcp — the MCP front end on the process's loop: its core set up with the features the
    process hands it, its transport (stdio or Streamable HTTP), its own watches and hooks
    (the calls' streams and stdin's end, the log lines, the disk work's answers), the
    runners' events for its calls (handed to the call's ops) and log lines as
    notifications. The core: cg_dispatch (handling and the method table), cg_calls (calls
    in flight). Sessions belong to cg_registry; the loop to the process (server/). */
#include "mcp/cg_mcp.h"
#include "mcp/cg_server_int.h"
#include "mcp/cg_stdio.h"
#include "mcp/cg_streamable.h"
#include "base/cg_util.h"

#include <string.h>

//  The longest message read from a client: 64 MiB, or more when uploads need it.
#define MIN_MESSAGE_MAX (64 * 1024 * 1024)

//  Log lines of the main thread waiting to be forwarded; more are dropped.
#define LOG_QUEUE_MAX 1000

//  Large messages waiting for the encoder at most (cg_server_encoder).
#define ENCODER_QUEUE_MAX 64

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

cg_worker_t *
cg_server_files_worker (cg_server_t *self)
{
    return self->files;
}

cg_worker_t *
cg_server_encoder (cg_server_t *self)
{
    return self->encoder;
}

cg_worker_t *
cg_server_log_worker (cg_server_t *self)
{
    return self->log_worker;
}

cg_execlog_t *
cg_server_log_reader (cg_server_t *self)
{
    return self->log_reader;
}

cg_worker_t *
cg_server_log_reads (cg_server_t *self)
{
    return self->log_reads;
}

cg_loop_t *
cg_server_loop (cg_server_t *self)
{
    return self->loop;
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
//  The runners' events for our calls

bool
cg_mcp_owns_key (cg_server_t *self, const char *key)
{
    return cg_server_call (self, key) != NULL;
}

void
cg_mcp_runner_event (cg_server_t *self, cg_runner_event_t *event)
{
    if (event->tag == CG_RUNNER_LOG) {
        s_forward_log (self, event->log.level, event->log.text);
        return;
    }
    cg_call_t *call = cg_server_call (self, event->key);
    const cg_call_ops_t *ops = call && call->ops ? call->ops : self->call_ops;
    if (!call || !ops || !ops->runner_event)
        return;
    cg_registry_session_t *session =
        cg_registry_find (self->registry, call->channel->client->id, call->session_id);
    ops->runner_event (self, call, session, event);
}

//  --------------------------------------------------------------------------
//  Life on the loop

static void
s_stdin_cb (cg_loop_t *loop, short revents, void *arg)
{
    (void)loop;
    (void)revents;
    cg_stdio_read (((cg_server_t *)arg)->stdio);
}

static void
s_store_cb (cg_loop_t *loop, short revents, void *arg)
{
    (void)loop;
    (void)revents;
    cg_worker_collect (((cg_server_t *)arg)->store);
    cg_worker_collect (((cg_server_t *)arg)->files);
    cg_worker_collect (((cg_server_t *)arg)->log_reads);
    cg_worker_collect (((cg_server_t *)arg)->encoder);
}

//  Before each wait: the 2026-07-28 calls' streams looked at; once stdin has ended, the
//  calls in flight are finished, or cancelled, and answered, and then the loop stops.
static int
s_calls_cb (cg_loop_t *loop, void *arg)
{
    cg_server_t *self = arg;
    int wait_ms = cg_server_calls_tick (self, -1);
    if (self->stdio) {
        bool reading = cg_stdio_fd (self->stdio) >= 0;
        cg_loop_watch_events (self->stdin_watch, reading ? ZMQ_POLLIN : 0);
        if (!cg_stdio_open (self->stdio) && !cg_server_drain (self, &wait_ms))
            cg_loop_stop (loop);
    }
    return wait_ms;
}

//  Before each wait: the log lines queued since go to the clients that asked.
static int
s_logs_cb (cg_loop_t *loop, void *arg)
{
    (void)loop;
    s_forward_logs (arg);
    return -1;
}

cg_server_t *
cg_mcp_new (const cg_mcp_env_t *env)
{
    cg_server_t *self = cg_xcalloc (1, sizeof *self);
    const cg_config_t *config = env->config;
    cg_server_core_init (self, config, env->registry);
    self->loop = env->loop;
    self->http = env->http;
    self->execlog = env->execlog;
    self->log_worker = env->log_worker;
    //  A message must hold the largest upload in base64 (4 characters per 3 bytes).
    size_t message_max = config->max_upload_bytes / 3 * 4 + 1024 * 1024;
    if (message_max < MIN_MESSAGE_MAX)
        message_max = MIN_MESSAGE_MAX;
    self->store = cg_worker_new_nice ("store", env->store_max, CG_WORKER_NICE);
    cg_worker_watch (self->store, self->loop, s_store_cb, self);
    self->files = cg_worker_new_nice ("files", env->store_max, CG_WORKER_NICE);
    cg_worker_watch (self->files, self->loop, s_store_cb, self);
    //  The log's searches and reads run beside its writes, so that no answer waiting for a
    //  write (cg_tools_run) waits for a search.
    cg_error_t *err = NULL;
    if (self->execlog && !(self->log_reader = cg_execlog_open_reader (self->execlog, &err))) {
        cg_log (0, "execution log: %s (it cannot be searched)", cg_error_message (err));
        cg_error_destroy (&err);
    }
    self->log_reads = cg_worker_new_nice ("log-search", env->log_reads_max, CG_WORKER_NICE);
    cg_worker_watch (self->log_reads, self->loop, s_store_cb, self);
    //  Large messages to the clients are encoded beside the loop; past ENCODER_QUEUE_MAX
    //  waiting, on it (cg_channel_send).
    self->encoder = cg_worker_new_nice ("encoder", ENCODER_QUEUE_MAX, CG_WORKER_NICE);
    cg_worker_watch (self->encoder, self->loop, s_store_cb, self);
    //  The features and tools register their methods, hooks and their own loop hooks.
    for (size_t i = 0; env->setup[i]; i++)
        env->setup[i](self);
    cg_log_set_hook (s_log_hook, self);
    if (config->http)
        self->streamable = cg_streamable_new (self, self->http, message_max);
    else {
        self->stdio = cg_stdio_new (self, env->in_fd, env->out_fd, message_max);
        self->stdin_watch =
            cg_loop_watch_fd (self->loop, cg_stdio_fd (self->stdio), ZMQ_POLLIN, s_stdin_cb, self);
    }
    cg_loop_before_wait (self->loop, s_calls_cb, self);
    cg_loop_before_wait (self->loop, s_logs_cb, self);
    return self;
}

void
cg_mcp_destroy (cg_server_t **self_p)
{
    cg_server_t *self = *self_p;
    if (!self)
        return;
    //  Every one-shot sandbox goes: all runners are asked first, then each is waited for.
    for (cg_call_t *c = zhashx_first (self->calls); c; c = zhashx_next (self->calls))
        if (c->oneshot)
            cg_runner_term (c->oneshot);
    for (cg_call_t *c = zhashx_first (self->calls); c; c = zhashx_next (self->calls))
        cg_registry_oneshot_end (self->registry, &c->oneshot);
    //  The library's and notebooks' work queued is done and answered, unless a signal
    //  stops the server now.
    if (zsys_interrupted) {
        cg_worker_cancel_waiting (self->store);
        cg_worker_cancel_waiting (self->files);
        cg_worker_cancel_waiting (self->log_reads);
        cg_worker_cancel_waiting (self->encoder); /* encoded on the loop, still sent */
    }
    cg_loop_forget (self->loop, self);
    cg_worker_destroy (&self->store);
    cg_worker_destroy (&self->files);
    //  The runs' answers waiting for their log lines and the log's searches queued are
    //  answered while the calls are here (the writer is the process's and outlives this
    //  front end).
    cg_worker_flush (self->log_worker);
    cg_worker_destroy (&self->log_reads);
    //  Then every answer given is encoded and sent, before the transports go.
    cg_worker_destroy (&self->encoder);
    cg_execlog_destroy (&self->log_reader);
    cg_log_set_hook (NULL, NULL);
    zhashx_destroy (&self->calls); /* before the registry: the calls' one-shot runners */
    cg_streamable_destroy (&self->streamable);
    cg_stdio_destroy (&self->stdio);
    cg_server_core_fini (self);
    free (self);
    *self_p = NULL;
}
