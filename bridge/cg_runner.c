/*  cg_runner — an actor that owns one session and runs its cells one at a time, so a
    long cell never blocks the server or other sessions. */
#include "bridge/cg_runner.h"
#include "bridge/cg_kept.h"
#include "base/cg_limits.h"
#include "base/cg_loop.h"
#include "bridge/cg_session.h"
#include "base/cg_utf8.h"
#include "base/cg_util.h"

#include <fcntl.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

//  The priority a pooled sandbox warms up at, so that it never slows a user's call: its
//  runner (and so its processes) at nice 10, and its cgroup, which competes with the other
//  sandboxes' as a whole, weighted as a task at nice 10 (cg_pool weighs it afresh while it
//  warms: full while none of the server's calls runs).
#define S_POOL_NICE 10
//  How long a pooled kernel's preload may take.
#define S_PRELOAD_TIMEOUT_MS 60000

typedef struct {
    cg_runner_args_t args;
    zsock_t *pipe;
    zsock_t *results;
    cg_session_t *session;
    bool terminated;
    bool keep;       /* KEEP came: the sandbox outlives the runner */
    const char *key; /* the request being handled */
    const cg_kernel_t *reported[CG_SESSION_KERNELS]; /* the kernels last told (KERNELS) */
    pid_t reported_pid[CG_SESSION_KERNELS];          /* and their pids */
    /*  The languages whose kernel a Jupyter front end restarted since this runner's last
        run in them ("" for none): the next run there says its state is gone. */
    char frontend_restarts[CG_SESSION_KERNELS][16];
    bool egress_given; /* the session has its way out (cg_session_egress) */
} s_runner_t;

//  Live output of a request that asked for progress: PROGRESS <key> <stream> <text>.
static void
s_on_output (void *arg, const char *stream, const char *text, size_t len)
{
    s_runner_t *self = arg;
    if (!self->key)
        return;
    //  Live notes carry what JSON can: a character a read split shows as U+FFFD here only.
    size_t clean_len;
    zmsg_t *msg = zmsg_new ();
    zmsg_addstr (msg, "PROGRESS");
    zmsg_addstr (msg, self->key);
    zmsg_addstr (msg, stream);
    char *clean = cg_utf8_clean (text, len, &clean_len);
    zmsg_addmem (msg, clean, clean_len);
    free (clean);
    zmsg_send (&msg, self->results);
}

//  cg_log's hook on the runner's thread: the line goes to the server's main loop as
//  LOG <level> <text>, over the socket the results take.
static void
s_log_hook (void *arg, int level, const char *message)
{
    s_runner_t *self = arg;
    zsock_send (self->results, "sis", "LOG", level, message);
}

//  The channels a kernel report names, in the connection file's order.
static const char *const s_channels[] = {"shell", "iopub", "stdin", "control", "hb"};

//  A kernel as the Jupyter gateway attaches to it: its language, pid, key and a copy of
//  each channel's endpoint fd (O_PATH, close-on-exec; the receiver owns them).
static json_t *
s_kernel_report (cg_kernel_t *kernel, const char *language)
{
    json_t *item = json_pack ("{s:s, s:I}", "language", language, "pid",
                              kernel ? (json_int_t)cg_kernel_pid (kernel) : 0);
    if (!kernel)
        return item;
    const json_t *conn = cg_kernel_connection_info (kernel);
    json_object_set (item, "key", json_object_get (conn, "key"));
    for (size_t i = 0; i < sizeof s_channels / sizeof *s_channels; i++) {
        cleanup_free char *field = cg_strdupf ("%s_port", s_channels[i]);
        int port = (int)json_integer_value (json_object_get (conn, field));
        int fd = cg_kernel_endpoint_fd (kernel, port);
        json_object_set_new (item, s_channels[i],
                             json_integer (fd >= 0 ? fcntl (fd, F_DUPFD_CLOEXEC, 3) : -1));
    }
    return item;
}

//  True when a kernel of the session started, restarted or went since the last KERNELS.
static bool
s_kernels_changed (s_runner_t *self)
{
    if (!self->session || self->args.oneshot || self->args.pooled)
        return false;
    bool changed = false;
    for (int i = 0; i < CG_SESSION_KERNELS; i++) {
        const char *language = NULL;
        cg_kernel_t *kernel = cg_session_kernel_at (self->session, i, &language);
        changed |= kernel != self->reported[i]
                   || (kernel && cg_kernel_pid (kernel) != self->reported_pid[i]);
    }
    return changed;
}

//  Tells the server the session's kernels when one started, restarted or went since the
//  last time: KERNELS <slot> <report> (a json_t array of s_kernel_report's, which the
//  receiver owns, fds included).
static void
s_report_kernels (s_runner_t *self)
{
    if (!s_kernels_changed (self))
        return;
    for (int i = 0; i < CG_SESSION_KERNELS; i++) {
        const char *language = NULL;
        cg_kernel_t *kernel = cg_session_kernel_at (self->session, i, &language);
        self->reported[i] = kernel;
        self->reported_pid[i] = kernel ? cg_kernel_pid (kernel) : 0;
    }
    json_t *report = json_array ();
    for (int i = 0; i < CG_SESSION_KERNELS; i++) {
        const char *language = NULL;
        cg_kernel_t *kernel = cg_session_kernel_at (self->session, i, &language);
        if (language)
            json_array_append_new (report, s_kernel_report (kernel, language));
    }
    if (zsock_send (self->results, "ssp", "KERNELS", self->args.slot, report) == 0)
        return;
    size_t i;
    json_t *item;
    json_array_foreach (
        report, i,
        item) for (size_t c = 0; c < sizeof s_channels / sizeof *s_channels;
                   c++) if (json_integer_value (json_object_get (item, s_channels[c])) > 0)
        close ((int)json_integer_value (json_object_get (item, s_channels[c])));
    json_decref (report);
}

//  What list_sessions shows of the sandbox: REPORT <slot> <kernel pid> <memory in KiB>
//  (0 and -1 when unknown), sent before each STARTED and RESULT.
static void
s_report (s_runner_t *self)
{
    if (!self->session || self->args.oneshot)
        return;
    long pid = 0;
    double memory_mb = -1;
    cg_session_report (self->session, self->args.language, &pid, &memory_mb);
    zsock_send (self->results, "ssii", "REPORT", self->args.slot, (int)pid,
                memory_mb < 0 ? -1 : (int)(memory_mb * 1024));
    s_report_kernels (self);
}

//  The running cell asks the user for a line: INPUT <key> <prompt> <password 0|1>. The
//  answer comes back on the pipe as INPUT <line> (s_control_cb).
static void
s_ask (void *arg, const char *prompt, bool password)
{
    s_runner_t *self = arg;
    if (self->key)
        zsock_send (self->results, "ssss", "INPUT", self->key, prompt, password ? "1" : "0");
}

//  Remembers that a Jupyter front end restarted LANGUAGE's kernel, for the next run in it.
static void
s_frontend_restarted (s_runner_t *self, const char *language)
{
    int free_at = -1;
    for (int i = 0; i < CG_SESSION_KERNELS; i++) {
        if (strcmp (self->frontend_restarts[i], language) == 0)
            return;
        if (free_at < 0 && !self->frontend_restarts[i][0])
            free_at = i;
    }
    if (free_at >= 0)
        snprintf (self->frontend_restarts[free_at], sizeof self->frontend_restarts[free_at], "%s",
                  language);
}

//  A run in a kernel a front end restarted since the last one (s_frontend_restarted) says
//  so in OUTCOME: kernel_restarted and a notice, as for a kernel that died between calls.
static void
s_tell_frontend_restart (s_runner_t *self, cg_outcome_t *outcome)
{
    for (int i = 0; outcome->language && i < CG_SESSION_KERNELS; i++)
        if (self->frontend_restarts[i][0]
            && strcmp (self->frontend_restarts[i], outcome->language) == 0) {
            self->frontend_restarts[i][0] = '\0';
            outcome->kernel_restarted = true;
            cleanup_free char *notice = cg_strdupf (
                "The %s kernel was restarted from a Jupyter front end attached through the "
                "gateway since the last call: variables and imports from earlier calls are "
                "gone; files in " CG_WORKSPACE_MOUNT " remain.",
                outcome->language);
            cg_outcome_add_notice (outcome, notice);
        }
}

//  The Jupyter gateway's commands: INTERRUPT <language> interrupts that kernel (a cell
//  of this runner's included: it ends as interrupted); RESTART <key> <language> replaces
//  it with a fresh one and answers RESTARTED <key> <why it failed, or "">, refused while
//  a call runs (BUSY).
static void
s_gateway_command (s_runner_t *self, const char *command, zmsg_t *msg, bool busy)
{
    char *first = zmsg_popstr (msg);
    if (strcmp (command, "INTERRUPT") == 0) {
        if (first && self->session)
            cg_session_interrupt (self->session, first);
        zstr_free (&first);
        return;
    }
    char *language = zmsg_popstr (msg);
    cg_error_t *err = NULL;
    const char *why = "";
    if (busy)
        why = "the session is running a call; interrupt it first";
    else if (!self->session || !language)
        why = "the kernel does not run";
    else if (cg_session_restart (self->session, language, &err) < 0)
        why = cg_error_message (err);
    else
        s_frontend_restarted (self, language);
    if (!busy)
        s_report (self);
    if (first)
        zsock_send (self->results, "sss", "RESTARTED", first, why);
    cg_error_destroy (&err);
    zstr_free (&first);
    zstr_free (&language);
}

static cg_control_t
s_control_cb (zsock_t *control, void *arg, char **input)
{
    s_runner_t *self = arg;
    zmsg_t *msg = zmsg_recv (control);
    char *command = msg ? zmsg_popstr (msg) : NULL;
    cg_control_t action = CG_CONTROL_NONE;
    if (command && strcmp (command, "INPUT") == 0) {
        *input = zmsg_popstr (msg);
        action = *input ? CG_CONTROL_INPUT : CG_CONTROL_NONE;
    }
    else if (command && (strcmp (command, "INTERRUPT") == 0 || strcmp (command, "RESTART") == 0))
        s_gateway_command (self, command, msg, true);
    zmsg_destroy (&msg);
    if (!command || strcmp (command, "$TERM") == 0) {
        self->terminated = true;
        action = CG_CONTROL_ABORT;
    }
    else if (strcmp (command, "KEEP") == 0)
        self->keep = true;
    else if (strcmp (command, "CANCEL") == 0)
        action = CG_CONTROL_CANCEL;
    //  Anything else (an EXEC while busy) is the server's mistake; it is dropped.
    zstr_free (&command);
    return action;
}

//  Creates the session on first use. Returns 0, or -1 with *err set.
static int
s_ensure_session (s_runner_t *self, cg_error_t **err)
{
    if (!self->session && self->args.shared_installer)
        self->session = cg_session_new_shared_installer (self->args.backend, self->args.config,
                                                         self->args.sessions_dir,
                                                         self->args.container_prefix, err);
    else if (!self->session)
        self->session = cg_session_new_as (
            self->args.backend, self->args.config, self->args.sessions_dir,
            self->args.container_prefix, self->args.slot[0] ? self->args.slot : NULL,
            self->args.pooled    ? CG_SANDBOX_POOL
            : self->args.slot[0] ? CG_SANDBOX_SESSION
                                 : CG_SANDBOX_ONESHOT,
            self->args.client_session[0] ? self->args.client_session : NULL, err);
    if (!self->session)
        return -1;
    if (self->args.egress && !self->egress_given) {
        self->egress_given = true;
        if (cg_session_egress (self->session, self->args.egress, self->args.egress_allow, err)
            < 0) {
            cg_session_destroy (&self->session);
            return -1;
        }
    }
    return 0;
}

//  Starts the sandbox and LANGUAGE's kernel now, with ENV (KEY=VALUE strings, or NULL)
//  added to the kernel's environment. Returns NULL, or why it failed (caller frees).
static char *
s_start (s_runner_t *self, const char *language, const char *const *env)
{
    cg_error_t *err = NULL;
    char *why = NULL;
    if (s_ensure_session (self, &err) < 0
        || (env && cg_session_kernel_env (self->session, language, env, &err) < 0)
        || !cg_session_kernel (self->session, language, &err))
        why = cg_xstrdup (cg_error_message (err));
    cg_error_destroy (&err);
    return why;
}

//  cg_control_cb while a pooled sandbox's preload runs: $TERM (the pool or the server
//  stops) ends the wait at once, so that a server told to stop is not held by a warm-up
//  for as long as the preload takes (and killed for it, leaving the sandbox behind). The
//  pool sends nothing else to a sandbox it has not seen ready.
static cg_control_t
s_warm_control_cb (zsock_t *control, void *arg, char **input)
{
    s_runner_t *self = arg;
    (void)input;
    zmsg_t *msg = zmsg_recv (control);
    char *command = msg ? zmsg_popstr (msg) : NULL;
    if (!command || strcmp (command, "$TERM") == 0)
        self->terminated = true;
    else
        cg_log (1, "pool: %s while warming up, dropped", command);
    zstr_free (&command);
    zmsg_destroy (&msg);
    return self->terminated ? CG_CONTROL_ABORT : CG_CONTROL_NONE;
}

//  A pooled runner's warm-up (cg_runner.h): the sandbox and its kernel, handshaken and
//  preloaded before anyone claims it, at a low priority. No user code runs in it here.
//  Told to stop during the preload, it says nothing more (self->terminated).
static void
s_warm (s_runner_t *self)
{
    //  Linux: PRIO_PROCESS 0 is this thread; the sandbox's processes inherit it.
    setpriority (PRIO_PROCESS, 0, S_POOL_NICE);
    cg_error_t *err = NULL;
    int rc = s_ensure_session (self, &err);
    if (rc == 0)
        cg_session_renice (self->session, S_POOL_NICE);
    if (rc == 0 && strcmp (self->args.language, "bash") == 0)
        rc = cg_session_prestart_command (self->session, &err);
    else if (rc == 0) {
        cg_kernel_t *kernel = cg_session_kernel (self->session, self->args.language, &err);
        rc = kernel ? 0 : -1;
        if (kernel && self->args.preload)
            cg_log (3, "pool: sandbox %s runs its preload", self->args.slot);
        if (kernel && self->args.preload
            && cg_kernel_run_silent_ctl (kernel, self->args.preload, S_PRELOAD_TIMEOUT_MS,
                                         self->pipe, s_warm_control_cb, self)
                   < 0
            && !self->terminated)
            cg_log (1, "pool: the preload failed in sandbox %s (it waits without it)",
                    self->args.slot);
    }
    if (self->terminated) {
        cg_log (2, "pool: sandbox %s stopped during its warm-up", self->args.slot);
        cg_error_destroy (&err);
        return;
    }
    if (rc == 0) {
        long pid = 0;
        double memory_mb = -1;
        cg_session_report (self->session, self->args.language, &pid, &memory_mb);
        zsock_send (self->pipe, "si", "READY", memory_mb < 0 ? -1 : (int)(memory_mb * 1024));
    }
    else
        zsock_send (self->pipe, "ss", "FAILED", cg_error_message (err));
    cg_error_destroy (&err);
}

//  CLAIM <oneshot>: the pool hands this runner over; it runs at normal priority now.
static void
s_claim (s_runner_t *self, zmsg_t *msg)
{
    char *oneshot = zmsg_popstr (msg);
    self->args.oneshot = oneshot && strcmp (oneshot, "1") == 0;
    self->args.pooled = false; /* a session's now, or a one-shot run's */
    self->args.preload = NULL;
    setpriority (PRIO_PROCESS, 0, 0);
    if (self->session)
        cg_session_renice (self->session, 0);
    s_report_kernels (self);
    zstr_free (&oneshot);
}

static cg_outcome_t *
s_run (s_runner_t *self, json_t *request_json)
{
    cg_exec_request_t request = {
        .language = json_string_value (json_object_get (request_json, "language")),
        .code = json_string_value (json_object_get (request_json, "code")),
        .stdin_text = json_string_value (json_object_get (request_json, "stdin")),
        .timeout_s = json_number_value (json_object_get (request_json, "timeout")),
        .execution_id = json_string_value (json_object_get (request_json, "execution_id")),
        .session_id = json_string_value (json_object_get (request_json, "session_id")),
        .files = json_object_get (request_json, "files"),
        .on_output = json_is_true (json_object_get (request_json, "progress")) ? s_on_output : NULL,
        .on_output_arg = self,
        .ask = json_is_true (json_object_get (request_json, "elicit")) ? s_ask : NULL,
        .ask_arg = self,
    };
    if (!self->session) {
        cg_error_t *err = NULL;
        if (s_ensure_session (self, &err) < 0) {
            cg_outcome_t *outcome = cg_outcome_setup_failure (
                request.language, request.execution_id, request.session_id,
                CG_OUTCOME_ERROR_SANDBOX, cg_error_message (err));
            cg_error_destroy (&err);
            return outcome;
        }
    }
    //  A one-shot sandbox is destroyed after its outcome went out (s_exec).
    cg_outcome_t *outcome =
        cg_session_execute (self->session, &request, self->pipe, s_control_cb, self);
    s_tell_frontend_restart (self, outcome);
    if (self->args.note[0]) {
        outcome->kernel_restarted = true;
        cg_outcome_add_notice (outcome, self->args.note);
        self->args.note[0] = '\0';
    }
    return outcome;
}

//  Hands the outcome over (*OUTCOME_P is taken): RESULT <key> <pointer>, with the
//  session's REPORT when WITH_REPORT (one message, so the main thread wakes once for
//  both). A runner told to stop while it ran sends nothing: the server forgot the call
//  before it said so.
static void
s_send_outcome (s_runner_t *self, const char *key, cg_outcome_t **outcome_p, bool with_report)
{
    int rc = -1;
    if (!self->terminated && with_report) {
        long pid = 0;
        double memory_mb = -1;
        cg_session_report (self->session, self->args.language, &pid, &memory_mb);
        rc = zsock_send (self->results, "sspsii", "RESULT", key, *outcome_p, self->args.slot,
                         (int)pid, memory_mb < 0 ? -1 : (int)(memory_mb * 1024));
    }
    else if (!self->terminated)
        rc = zsock_send (self->results, "ssp", "RESULT", key, *outcome_p);
    if (rc == 0)
        *outcome_p = NULL;
    cg_outcome_destroy (outcome_p);
}

//  EXEC <key> <request>: runs REQUEST (a json_t the message hands over) and sends
//  RESULT <key> <outcome>.
static void
s_exec (s_runner_t *self, zmsg_t *msg)
{
    char *key = zmsg_popstr (msg);
    zframe_t *frame = zmsg_pop (msg);
    json_t *request =
        frame && zframe_size (frame) == sizeof (void *) ? *(json_t **)zframe_data (frame) : NULL;
    zframe_destroy (&frame);
    if (key && request) {
        self->key = key;
        cg_outcome_t *outcome = s_run (self, request);
        self->key = NULL;
        if (outcome && self->session)
            outcome->egress = cg_session_egress_take (self->session);
        //  The REPORT rides on the RESULT, unless a KERNELS must go between them.
        bool with_report = self->session && !self->args.oneshot && !s_kernels_changed (self);
        if (!with_report)
            s_report (self);
        //  A one-shot sandbox goes next, its workspace too: its files are copied out first
        //  so that the downloads its result lists outlive it (cg_kept).
        if (self->args.oneshot && self->session && self->args.config->oneshot_keep_s > 0) {
            cleanup_free char *root = cg_kept_root (self->args.sessions_dir);
            cg_kept_copy (cg_session_workspace (self->session), outcome, root,
                          self->args.config->oneshot_keep_bytes);
        }
        s_send_outcome (self, key, &outcome, with_report);
        if (self->args.oneshot && self->session) {
            int64_t t0 = cg_now_us ();
            cleanup_free char *dir = cg_xstrdup (cg_session_dir (self->session));
            cg_session_destroy (&self->session);
            cg_log (3, "one-shot sandbox %s: torn down after its answer in %.1f ms", dir,
                    (double)(cg_now_us () - t0) / 1000);
        }
    }
    json_decref (request);
    zstr_free (&key);
}

//  START <key> <language>: sends STARTED <key> <why it failed, or "">.
static void
s_start_now (s_runner_t *self, zmsg_t *msg)
{
    char *key = zmsg_popstr (msg);
    char *language = zmsg_popstr (msg);
    char *env_text = zmsg_popstr (msg); /* optional: a JSON object of strings */
    json_t *env_json = env_text ? json_loads (env_text, 0, NULL) : NULL;
    char **env = NULL;
    if (json_is_object (env_json)) {
        env = cg_strv_new (json_object_size (env_json));
        size_t i = 0;
        const char *name;
        json_t *value;
        json_object_foreach (env_json, name, value) if (json_is_string (value)) env[i++] =
            cg_strdupf ("%s=%s", name, json_string_value (value));
    }
    json_decref (env_json);
    zstr_free (&env_text);
    if (key && language) {
        cleanup_free char *why = s_start (self, language, (const char *const *)env);
        s_report (self);
        zsock_send (self->results, "sss", "STARTED", key, why ? why : "");
    }
    cg_strv_free (env);
    zstr_free (&key);
    zstr_free (&language);
}

void
cg_runner_actor (zsock_t *pipe, void *args)
{
    s_runner_t self = {.args = *(cg_runner_args_t *)args, .pipe = pipe};
    free (args);
    self.results = zsock_new_push (NULL);
    zsock_set_linger (self.results, -1);
    zsock_connect (self.results, "%s", self.args.results_endpoint);
    cg_log_set_hook (s_log_hook, &self);
    zsock_signal (pipe, 0);
    if (self.args.pooled)
        s_warm (&self);
    if (self.args.adopt) {
        self.session = cg_session_adopt (self.args.backend, self.args.config,
                                         self.args.sessions_dir, self.args.container_prefix,
                                         self.args.slot, self.args.note, sizeof self.args.note);
        cg_error_t *err = NULL;
        if (self.session && self.args.egress) {
            self.egress_given = true;
            if (cg_session_egress (self.session, self.args.egress, self.args.egress_allow, &err)
                < 0) {
                cg_log (1, "%s: the kept sandbox gets no way out: %s", self.args.slot,
                        cg_error_message (err));
                cg_session_destroy (&self.session);
            }
        }
        cg_error_destroy (&err);
        s_report (&self);
    }

    while (!self.terminated) {
        //  Idle: wait for a command, draining the kernels' own output meanwhile and
        //  dropping whatever they send between cells (nothing of it is held).
        zmq_pollitem_t items[1 + 4 * 12] = {{zsock_resolve (pipe), 0, ZMQ_POLLIN, 0}};
        int count = self.session ? cg_session_idle_items (self.session, items + 1, 4 * 12) : 0;
        if (cg_zpoll (items, count + 1, -1) < 0)
            continue;
        //  Only when a kernel's item woke us: a command alone finds nothing to drop (and
        //  draining costs each socket's and monitor's ZeroMQ events, per cell).
        bool kernel_woke = false;
        for (int i = 1; i <= count; i++)
            kernel_woke |= items[i].revents != 0;
        if (kernel_woke && self.session)
            cg_session_drain (self.session);
        if (!items[0].revents)
            continue;
        zmsg_t *msg = zmsg_recv (pipe);
        if (!msg)
            break;
        char *command = zmsg_popstr (msg);
        if (command && strcmp (command, "EXEC") == 0)
            s_exec (&self, msg);
        else if (command && strcmp (command, "START") == 0)
            s_start_now (&self, msg);
        else if (command && strcmp (command, "CLAIM") == 0)
            s_claim (&self, msg);
        else if (command && strcmp (command, "KEEP") == 0)
            self.keep = true;
        else if (command
                 && (strcmp (command, "INTERRUPT") == 0 || strcmp (command, "RESTART") == 0))
            s_gateway_command (&self, command, msg, false);
        else if (!command || strcmp (command, "$TERM") == 0)
            self.terminated = true;
        //  CANCEL while idle: nothing runs, nothing to do.
        zstr_free (&command);
        zmsg_destroy (&msg);
    }
    if (self.keep)
        cg_session_keep (&self.session);
    else
        cg_session_destroy (&self.session);
    cg_log_set_hook (NULL, NULL);
    zsock_destroy (&self.results);
    json_decref (self.args.egress_allow);
}
