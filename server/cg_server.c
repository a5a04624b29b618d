/*  cg_server — the process: its loop, its services and its front ends, from start to end. */
#include "server/cg_server.h"
#include "server/cg_admin.h"
#include "server/cg_frontend.h"
#include "gateway/cg_gateway.h"
#include "mcp/cg_listen.h"
#include "mcp/cg_mcp.h"
#include "mcp/cg_methods.h"
#include "mcp/cg_modern.h"
#include "mcp/cg_resources.h"
#include "mcp/cg_tasks.h"
#include "mcp/tools/cg_tools.h"
#include "artifacts/cg_downloads.h"
#include "artifacts/cg_execlog.h"
#include "artifacts/cg_execlog_queue.h"
#include "artifacts/cg_http.h"
#include "artifacts/cg_metrics.h"
#include "bridge/cg_adopt.h"
#include "bridge/cg_registry.h"
#include "bridge/cg_run_record.h"
#include "bridge/cg_runner_msg.h"
#include "base/cg_limits.h"
#include "base/cg_log.h"
#include "base/cg_loop.h"
#include "base/cg_util.h"

#include <errno.h>
#include <string.h>

//  How often the execution log's retention sweep runs (the first at start).
#define S_LOG_SWEEP_S 300

//  The front ends at most (MCP, the gateway).
#define S_FRONTENDS_MAX 4

typedef struct {
    const cg_frontend_ops_t *ops;
    void *self;
} s_frontend_t;

typedef struct {
    const cg_config_t *config;
    cg_loop_t *loop;
    cg_registry_t *registry;
    cg_execlog_t *execlog;    /* NULL when it could not open */
    cg_worker_t *log_worker;  /* the thread that writes it (cg_execlog_queue) */
    cg_run_record_t *records; /* the registry's run observers (cg_run_record) */
    cg_http_t *http;          /* the listener, NULL when off */
    cg_downloads_t *downloads;
    cg_admin_t *admin;
    cg_egress_t *egress;              /* --egress proxy's service (borrowed), or NULL */
    cg_loop_watch_t *egress_watch[3]; /* its access log, its relay, its squid (a pidfd) */
    s_frontend_t frontends[S_FRONTENDS_MAX];
    size_t frontends_len;
} s_process_t;

//  --------------------------------------------------------------------------
//  The execution log's handle

//  Opens the execution log CONFIG names (--log-dir, --execution-log, retention). Returns
//  it, or NULL (logged) when it cannot be opened: the server runs on without it.
static cg_execlog_t *
s_execlog_open (const cg_config_t *config)
{
    cleanup_free char *dir =
        config->log_dir ? cg_xstrdup (config->log_dir) : cg_strdupf ("%s/logs", config->state_dir);
    cg_execlog_options_t options = {
        .mode = config->execution_log == CG_EXECUTION_LOG_OFF        ? CG_EXECLOG_OFF
                : config->execution_log == CG_EXECUTION_LOG_METADATA ? CG_EXECLOG_METADATA
                                                                     : CG_EXECLOG_FULL,
        .success_days = config->log_success_days,
        .failed_days = config->log_failed_days,
        .session_days = config->log_session_days};
    cg_error_t *err = NULL;
    cg_execlog_t *log = cg_execlog_open (dir, &options, &err);
    if (!log) {
        cg_log (0, "execution log: %s (executions are not logged)", cg_error_message (err));
        cg_error_destroy (&err);
    }
    return log;
}

//  The retention sweep, every S_LOG_SWEEP_S, on the log's worker.
static int
s_execlog_sweep_cb (cg_loop_t *loop, void *arg)
{
    (void)loop;
    s_process_t *self = arg;
    cg_execlog_queue_sweep (self->log_worker, self->execlog);
    return S_LOG_SWEEP_S * 1000;
}

//  The log's worker gave works back.
static void
s_log_worker_cb (cg_loop_t *loop, short revents, void *arg)
{
    (void)loop;
    (void)revents;
    cg_worker_collect (arg);
}

//  The registry's listener (ARG: the process): session_start, or session_end with REASON,
//  in the session's log (on the log's worker).
static void
s_execlog_session (void *arg, const cg_registry_session_t *session, const char *reason)
{
    json_t *entry =
        reason ? json_pack ("{s:s, s:s, s:s, s:I, s:i}", "type", "session_end", "session_id",
                            session->id, "reason", reason, "total_duration_ms",
                            (json_int_t)((cg_now_us () - session->started_us) / 1000),
                            "executions_count", session->executions)
               : json_pack ("{s:s, s:s, s:s, s:o, s:n, s:s}", "type", "session_start", "session_id",
                            session->id, "language", session->language, "name",
                            session->name ? json_string (session->name) : json_null (), "pid",
                            "started_at", session->started_at);
    s_process_t *self = arg;
    cg_execlog_queue_session_event (self->log_worker, self->execlog, &entry);
}

//  What sees every session's life and every run end (the execution log, the notebook
//  record, the metrics, the script counters, recorded on STORE) registers here, once the
//  log, the registry and the disk worker exist, before the loop runs.
static void
s_observers (s_process_t *self, cg_worker_t *store)
{
    if (self->execlog) {
        cg_registry_set_listener (self->registry, s_execlog_session, self);
        cg_loop_timer (self->loop, 0, s_execlog_sweep_cb, self);
    }
    self->records =
        cg_run_record_new (self->registry, self->config, self->execlog, self->log_worker, store);
}

//  --------------------------------------------------------------------------
//  The front ends

static void
s_frontend_add (s_process_t *self, const cg_frontend_ops_t *ops, void *frontend)
{
    if (self->frontends_len < S_FRONTENDS_MAX)
        self->frontends[self->frontends_len++] = (s_frontend_t){ops, frontend};
}

//  A runner's event the registry did not handle itself (cg_registry_on_events: not its
//  REPORT and KERNELS, not the RESULT of a run it ends): a LOG line for every front end,
//  or what a front end asked, to that front end (nobody's: dropped, what it holds freed).
static void
s_runner_cb (void *arg, cg_runner_event_t *event)
{
    s_process_t *self = arg;
    if (event->tag == CG_RUNNER_LOG)
        for (size_t i = 0; i < self->frontends_len; i++)
            self->frontends[i].ops->runner_event (self->frontends[i].self, event);
    else
        for (size_t i = 0; i < self->frontends_len; i++)
            if (self->frontends[i].ops->owns_key (self->frontends[i].self, event->key)) {
                self->frontends[i].ops->runner_event (self->frontends[i].self, event);
                break;
            }
}

//  /admin/sessions' close: every front end answers what it has running in SESSION, then
//  the session is retired (its runner destroys the sandbox).
static void
s_session_close (void *arg, cg_registry_session_t *session, const char *why)
{
    s_process_t *self = arg;
    for (size_t i = 0; i < self->frontends_len; i++)
        if (self->frontends[i].ops->session_closing)
            self->frontends[i].ops->session_closing (self->frontends[i].self, session, why);
    cg_registry_retire (self->registry, session);
}

//  --------------------------------------------------------------------------
//  Start and end

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

//  Starts the listener per the configuration, with downloads, /admin, /metrics and the
//  gateway. Returns 0 (self->http stays NULL when it is off), or -1 when it cannot listen.
static int
s_http_start (s_process_t *self)
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
    self->admin = cg_admin_new (config, self->registry, self->http, s_session_close, self);
    cg_metrics_serve (self->http, cg_admin_token (self->admin), cg_registry_metrics_cb,
                      self->registry);
    if (config->gateway) {
        cg_gateway_t *gateway = cg_gateway_new (config, self->registry, self->http, self->loop);
        if (!gateway)
            return -1;
        s_frontend_add (self, &cg_frontend_gateway, gateway);
    }
    return 0;
}

//  Ends it all: every sandbox goes (the sessions' runners are all asked first), the front
//  ends end (MCP's one-shot runs with them), then the registry, the log and the listener.
static void
s_end (s_process_t *self)
{
    for (int i = 0; i < 3; i++)
        cg_loop_unwatch (self->loop, &self->egress_watch[i]);
    cg_egress_stop (self->egress);
    cg_registry_stop (self->registry);
    //  MCP (added last) first: its one-shot runs end before the gateway's WebSockets close.
    for (size_t i = self->frontends_len; i-- > 0;)
        self->frontends[i].ops->destroy (&self->frontends[i].self);
    cg_registry_destroy (&self->registry);
    cg_run_record_destroy (&self->records);
    //  What the log's worker has queued is written before the log closes.
    cg_loop_forget (self->loop, self->log_worker);
    cg_worker_destroy (&self->log_worker);
    cg_execlog_destroy (&self->execlog);
    cg_http_destroy (&self->http);
    cg_downloads_destroy (&self->downloads);
    cg_admin_destroy (&self->admin);
    cg_loop_destroy (&self->loop);
}

//  MCP's features and tools, as they register with its core (each its methods, hooks and
//  loop hooks).
static void
s_mcp_features (cg_server_t *server)
{
    cg_methods_register (server);
    cg_modern_register (server);
    cg_tools_register (server); /* tools/call first: tasks add their step to it */
    cg_tasks_register (server);
    cg_listen_register (server);
    cg_resources_register (server);
}

void
cg_serve_mcp_features (cg_server_t *server, cg_server_setup_fn *extra)
{
    s_mcp_features (server);
    if (extra)
        extra (server);
}

//  The egress proxy's access log or relay has something: it becomes records and counts.
static void
s_egress_cb (cg_loop_t *loop, short revents, void *arg)
{
    (void)revents;
    s_process_t *self = arg;
    cg_egress_read (self->egress);
    //  The relay ended (logged): its socket is closed, and no longer watched.
    if (cg_egress_relay_fd (self->egress) < 0)
        cg_loop_unwatch (loop, &self->egress_watch[1]);
}

//  The egress proxy's squid ended: it is restarted, and its new process watched.
static void
s_squid_cb (cg_loop_t *loop, short revents, void *arg)
{
    (void)revents;
    s_process_t *self = arg;
    cg_loop_unwatch (loop, &self->egress_watch[2]);
    int fd = cg_egress_squid_check (self->egress);
    if (fd >= 0)
        self->egress_watch[2] = cg_loop_watch_fd (loop, fd, ZMQ_POLLIN, s_squid_cb, self);
}

int
cg_serve (const cg_config_t *config, cg_backend_t *backend, cg_instance_t *instance,
          cg_egress_t *egress, int in_fd, int out_fd, cg_server_setup_fn *extra)
{
    s_process_t self = {.config = config, .loop = cg_loop_new (), .egress = egress};
    self.registry = cg_registry_new (config, backend, instance, egress);
    if (egress) {
        self.egress_watch[0] =
            cg_loop_watch_fd (self.loop, cg_egress_log_fd (egress), ZMQ_POLLIN, s_egress_cb, &self);
        self.egress_watch[1] = cg_loop_watch_fd (self.loop, cg_egress_relay_fd (egress), ZMQ_POLLIN,
                                                 s_egress_cb, &self);
        if (cg_egress_squid_fd (egress) >= 0)
            self.egress_watch[2] = cg_loop_watch_fd (self.loop, cg_egress_squid_fd (egress),
                                                     ZMQ_POLLIN, s_squid_cb, &self);
    }
    cg_adopt (self.registry, backend, instance, config);
    self.execlog = s_execlog_open (config);
    self.log_worker = cg_worker_new ("log", CG_TOOLS_LOG_JOBS_MAX); /* writes: forced past it */
    cg_worker_watch (self.log_worker, self.loop, s_log_worker_cb, self.log_worker);
    //  Before every wait, in this order: the registry (idle sessions, the pool), the
    //  gateway, MCP's own, then the listener.
    cg_registry_on_loop (self.registry, self.loop);
    cg_registry_on_events (self.registry, s_runner_cb, &self);
    int rc = s_http_start (&self) < 0 ? 1 : 0;
    if (rc == 0) {
        cg_server_setup_fn *setup[] = {s_mcp_features, extra, NULL};
        cg_mcp_env_t env = {.config = config,
                            .registry = self.registry,
                            .loop = self.loop,
                            .http = self.http,
                            .execlog = self.execlog,
                            .log_worker = self.log_worker,
                            .in_fd = in_fd,
                            .out_fd = out_fd,
                            .store_max = CG_TOOLS_JOBS_MAX,
                            .log_reads_max = CG_TOOLS_LOG_JOBS_MAX,
                            .setup = setup};
        cg_server_t *mcp = cg_mcp_new (&env);
        s_frontend_add (&self, &cg_frontend_mcp, mcp);
        s_observers (&self, cg_server_store (mcp));
        if (self.http)
            cg_http_on_loop (self.http, self.loop);
        if (cg_loop_run (self.loop) < 0) {
            cg_log (0, "the event loop failed: stopping (see the error above)");
            rc = 1;
        }
    }
    s_end (&self);
    return rc;
}
