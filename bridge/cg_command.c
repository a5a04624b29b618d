/*  cg_command — one-shot commands (bash) in a running sandbox: a new process per call,
    with stdin, a deadline, cancellation and the exit code. */
#define _GNU_SOURCE
#include "bridge/cg_command.h"
#include "containers/cg_sandbox_env.h"
#include "base/cg_util.h"
#include "base/cg_fs.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

//  After the script ends, how long output still in flight is read.
#define S_DRAIN_MS 200
//  After a kill, how long the command may take to be reaped before we stop waiting.
#define S_KILL_WAIT_MS 5000

typedef struct {
    int fd;          /* our end, -1 once closed */
    cg_text_t *text; /* where what is read goes (NULL: stdin) */
} s_pipe_t;

static void
s_close (int *fd)
{
    if (*fd >= 0)
        close (*fd);
    *fd = -1;
}

//  Kills everything in the sandbox but the kernels: the command and all it started.
static void
s_kill (cg_backend_t *backend, const cg_sandbox_t *sandbox, const pid_t *keep, size_t keep_count)
{
    cg_error_t *err = NULL;
    if (cg_container_signal_others (backend, sandbox, SIGKILL, keep, keep_count, &err) < 0)
        cg_log (1, "%s", cg_error_message (err));
    cg_error_destroy (&err);
}

//  Reads what FD has now into TEXT, telling RUN's output callback as STREAM. Returns false
//  at EOF or on an error.
static bool
s_read (int fd, cg_text_t *text, cg_run_t *run, const char *stream)
{
    char buf[65536];
    for (;;) {
        ssize_t n = read (fd, buf, sizeof buf);
        if (n > 0) {
            cg_text_append (text, buf, (size_t)n);
            if (run->on_output)
                run->on_output (run->on_output_arg, stream, buf, (size_t)n);
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        return n < 0 && errno == EAGAIN;
    }
}

//  Writes what the pipe takes of STDIN from *SENT on. Returns false when all is written
//  or the reader has gone.
static bool
s_write (int fd, const char *data, size_t len, size_t *sent)
{
    while (*sent < len) {
        ssize_t n = write (fd, data + *sent, len - *sent);
        if (n > 0)
            *sent += (size_t)n;
        else if (n < 0 && errno == EINTR)
            continue;
        else
            return n < 0 && errno == EAGAIN;
    }
    return false;
}

typedef struct {
    cg_backend_t *backend;
    const cg_sandbox_t *sandbox;
    const pid_t *keep;
    size_t keep_count;
    pid_t helper;      /* the runtime's exec process */
    int pidfd;         /* its pidfd, or -1 */
    int in_fd;         /* the command's stdin, -1 once closed */
    s_pipe_t pipes[2]; /* its stdout and stderr */
    const char *stdin_text;
    size_t stdin_len, sent;
    int64_t deadline_us;
    zsock_t *control;
    cg_control_cb *control_cb;
    void *arg;
    cg_run_t *run;
    cg_exec_end_t end;
    bool exited, killed;
    int status; /* waitpid's, once exited */
    int64_t stop_reading_us, give_up_us;
} s_command_t;

//  Feeds stdin, collects output and waits for the command until it exits (then drains its
//  pipes a little longer), the deadline passes, or the control callback cancels it.
static void
s_wait (s_command_t *c)
{
    for (;;) {
        if (!c->exited && (c->pidfd < 0 || c->killed)) {
            //  No pidfd (old kernel) or killed: ask directly, without blocking.
            if (waitpid (c->helper, &c->status, WNOHANG) == c->helper)
                c->exited = true;
        }
        int64_t now = cg_now_us ();
        if (c->exited && !c->stop_reading_us)
            c->stop_reading_us = now + S_DRAIN_MS * 1000;
        bool reading = c->pipes[0].fd >= 0 || c->pipes[1].fd >= 0;
        if (c->exited && (!reading || now >= c->stop_reading_us))
            break;
        if (c->killed && !c->exited && now >= c->give_up_us) {
            cg_log (1, "command in %s did not end %d ms after it was killed", c->sandbox->id,
                    S_KILL_WAIT_MS);
            break;
        }
        if (!c->killed && now >= c->deadline_us) {
            c->run->timed_out = true;
            s_kill (c->backend, c->sandbox, c->keep, c->keep_count);
            c->killed = true;
            c->give_up_us = now + S_KILL_WAIT_MS * 1000;
            continue;
        }
        zmq_pollitem_t items[5];
        int count = 0, control_at = -1, pid_at = -1, in_at = -1;
        int pipe_at[2] = {-1, -1};
        if (c->control && !c->killed) {
            control_at = count;
            items[count++] = (zmq_pollitem_t){zsock_resolve (c->control), 0, ZMQ_POLLIN, 0};
        }
        if (c->pidfd >= 0 && !c->exited) {
            pid_at = count;
            items[count++] = (zmq_pollitem_t){NULL, c->pidfd, ZMQ_POLLIN, 0};
        }
        for (int k = 0; k < 2; k++)
            if (c->pipes[k].fd >= 0) {
                pipe_at[k] = count;
                items[count++] = (zmq_pollitem_t){NULL, c->pipes[k].fd, ZMQ_POLLIN, 0};
            }
        if (c->in_fd >= 0 && !c->killed) {
            in_at = count;
            items[count++] = (zmq_pollitem_t){NULL, c->in_fd, ZMQ_POLLOUT, 0};
        }
        int64_t until = c->killed ? c->give_up_us : c->deadline_us;
        if (c->exited)
            until = c->stop_reading_us;
        long wait_ms = (long)((until - now) / 1000) + 1;
        if (c->pidfd < 0 || c->killed)
            wait_ms = wait_ms > 50 ? 50 : wait_ms; /* waitpid is polled */
        if (zmq_poll (items, count, wait_ms) < 0 && errno != EINTR)
            break;
        for (int k = 0; k < 2; k++)
            if (pipe_at[k] >= 0 && items[pipe_at[k]].revents
                && !s_read (c->pipes[k].fd, c->pipes[k].text, c->run, k == 0 ? "stdout" : "stderr"))
                s_close (&c->pipes[k].fd);
        if (in_at >= 0 && items[in_at].revents
            && !s_write (c->in_fd, c->stdin_text, c->stdin_len, &c->sent))
            s_close (&c->in_fd);
        if (pid_at >= 0 && items[pid_at].revents
            && waitpid (c->helper, &c->status, WNOHANG) == c->helper)
            c->exited = true;
        if (control_at >= 0 && items[control_at].revents) {
            cleanup_free char *input = NULL; /* a command's stdin is not asked for */
            cg_control_t action = c->control_cb (c->control, c->arg, &input);
            if (action == CG_CONTROL_CANCEL || action == CG_CONTROL_ABORT) {
                c->run->cancelled = action == CG_CONTROL_CANCEL;
                if (action == CG_CONTROL_ABORT)
                    c->end = CG_EXEC_ABORTED;
                s_kill (c->backend, c->sandbox, c->keep, c->keep_count);
                c->killed = true;
                c->give_up_us = cg_now_us () + S_KILL_WAIT_MS * 1000;
            }
        }
    }
}

struct cg_command_waiter_t {
    pid_t helper;              /* the runtime's exec process */
    int in_fd, out_fd, err_fd; /* our ends of its stdin, stdout and stderr */
};

//  Starts ARGV in SANDBOX as a command with pipes for its standard streams. Returns the
//  runtime's process and sets *W's fds, or -1 with *err set.
static pid_t
s_start (cg_backend_t *backend, const cg_sandbox_t *sandbox, const char *const *argv,
         cg_command_waiter_t *w, cg_error_t **err)
{
    int in[2] = {-1, -1}, out[2] = {-1, -1}, errp[2] = {-1, -1};
    if (pipe2 (in, O_CLOEXEC) < 0 || pipe2 (out, O_CLOEXEC) < 0 || pipe2 (errp, O_CLOEXEC) < 0) {
        cg_error_set (err, errno, "pipe: %s", strerror (errno));
        s_close (&in[0]), s_close (&in[1]), s_close (&out[0]), s_close (&out[1]),
            s_close (&errp[0]);
        return -1;
    }
    cg_exec_spec_t spec = {.argv = argv,
                           .env = cg_sandbox_base_env (),
                           .cwd = CG_WORKSPACE_MOUNT,
                           .stdin_fd = in[0],
                           .stdout_fd = out[1],
                           .stderr_fd = errp[1]};
    pid_t helper = cg_container_exec (backend, sandbox, &spec, err);
    s_close (&in[0]), s_close (&out[1]), s_close (&errp[1]);
    if (helper < 0) {
        s_close (&in[1]), s_close (&out[0]), s_close (&errp[0]);
        return -1;
    }
    fcntl (in[1], F_SETFL, O_NONBLOCK);
    fcntl (out[0], F_SETFL, O_NONBLOCK);
    fcntl (errp[0], F_SETFL, O_NONBLOCK);
    *w = (cg_command_waiter_t){helper, in[1], out[0], errp[0]};
    return helper;
}

cg_command_waiter_t *
cg_command_prestart (cg_backend_t *backend, const cg_sandbox_t *sandbox, cg_error_t **err)
{
    //  `read` takes the line byte by byte from the pipe: the rest is the script's stdin.
    const char *argv[] = {"/bin/bash", "-c", "IFS= read -r script && exec /bin/bash \"$script\"",
                          NULL};
    cg_command_waiter_t w;
    if (s_start (backend, sandbox, argv, &w, err) < 0)
        return NULL;
    cg_command_waiter_t *self = cg_xmalloc (sizeof *self);
    *self = w;
    return self;
}

void
cg_command_waiter_destroy (cg_command_waiter_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    cg_command_waiter_t *self = *self_p;
    s_close (&self->in_fd), s_close (&self->out_fd), s_close (&self->err_fd);
    int status;
    if (waitpid (self->helper, &status, WNOHANG) == 0) {
        kill (self->helper, SIGKILL);
        waitpid (self->helper, &status, 0);
    }
    free (self);
    *self_p = NULL;
}

cg_exec_end_t
cg_command_run (cg_backend_t *backend, const cg_sandbox_t *sandbox, const pid_t *keep,
                size_t keep_count, const char *code, const char *stdin_text, int64_t deadline_us,
                zsock_t *control, cg_control_cb *control_cb, void *arg, cg_run_t *run,
                cg_command_waiter_t **waiter, int *exit_code, cg_error_t **err)
{
    *exit_code = -1;
    //  The script goes through a file in the run dir (read-only inside; read by bash,
    //  never executed from there): an argument would be limited to 128 KiB.
    char name[32] = "command-";
    cg_random_hex (name + 8, 8);
    cleanup_free char *host_script = cg_strdupf ("%s/%s.sh", sandbox->run_dir, name);
    cleanup_free char *inside_script = cg_strdupf (CG_RUN_MOUNT "/%s.sh", name);
    if (cg_write_file (host_script, code, strlen (code), 0644, err) < 0)
        return CG_EXEC_FAILED;
    cg_command_waiter_t w;
    cleanup_free char *input = NULL;
    run->started_us = cg_now_us ();
    if (waiter && *waiter) {
        //  The prestarted bash reads the script's path first, then the script's stdin.
        w = **waiter;
        cg_log (3, "one-shot bash in %s: the prestarted bash runs it", sandbox->id);
        free (*waiter);
        *waiter = NULL;
        input = cg_strdupf ("%s\n%s", inside_script, stdin_text ? stdin_text : "");
        stdin_text = input;
    }
    else {
        const char *argv[] = {"/bin/bash", inside_script, NULL};
        if (s_start (backend, sandbox, argv, &w, err) < 0) {
            unlink (host_script);
            return CG_EXEC_FAILED;
        }
        //  A command that stops reading its stdin gives EPIPE (cg_main ignores SIGPIPE).
        if (!stdin_text)
            s_close (&w.in_fd);
    }
    int pidfd = (int)syscall (SYS_pidfd_open, w.helper, 0);
    s_command_t c = {.backend = backend,
                     .sandbox = sandbox,
                     .keep = keep,
                     .keep_count = keep_count,
                     .helper = w.helper,
                     .pidfd = pidfd,
                     .in_fd = w.in_fd,
                     .pipes = {{w.out_fd, &run->out}, {w.err_fd, &run->err}},
                     .stdin_text = stdin_text,
                     .stdin_len = stdin_text ? strlen (stdin_text) : 0,
                     .deadline_us = deadline_us,
                     .control = control,
                     .control_cb = control_cb,
                     .arg = arg,
                     .run = run,
                     .end = CG_EXEC_DONE};
    s_wait (&c);
    run->ended_us = cg_now_us ();
    s_close (&c.in_fd), s_close (&c.pipes[0].fd), s_close (&c.pipes[1].fd);
    if (pidfd >= 0)
        close (pidfd);
    if (!c.exited) {
        kill (w.helper, SIGKILL);
        waitpid (w.helper, &c.status, 0);
    }
    unlink (host_script);
    if (WIFEXITED (c.status))
        *exit_code = WEXITSTATUS (c.status);
    else if (WIFSIGNALED (c.status))
        *exit_code = 128 + WTERMSIG (c.status);
    return c.end;
}
