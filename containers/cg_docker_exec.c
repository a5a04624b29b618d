/*  cg_docker_exec — exec in a Docker API sandbox: the exec made by the server, and the
    helper process that attaches to it and carries its streams and exit code. */
#define _GNU_SOURCE
#include "containers/cg_backend_ops.h"
#include "containers/cg_docker.h"
#include "containers/cg_docker_stream.h"
#include "base/cg_util.h"
#include "base/cg_fs.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#define S_ATTACH_FAILED 125   /* the helper's exit status when it could not attach */
#define S_EXIT_WAIT_TRIES 250 /* 20 ms apart: the engine notes an exit within 5 s */

//  FD is /dev/null: nothing will ever be read from it, so no stdin is attached.
static bool
s_is_dev_null (int fd)
{
    struct stat st;
    return fstat (fd, &st) == 0 && S_ISCHR (st.st_mode) && major (st.st_rdev) == 1
           && minor (st.st_rdev) == 3;
}

//  Creates the exec. Returns its id (caller owns it), or NULL with *err set.
static char *
s_exec_create (cg_docker_api_t *api, const cg_sandbox_limits_t *limits, const cg_sandbox_t *sandbox,
               const cg_exec_spec_t *spec, bool attach_stdin, cg_error_t **err)
{
    json_t *cmd = json_array (), *env = json_array ();
    for (size_t i = 0; spec->argv[i]; i++)
        json_array_append_new (cmd, json_string (spec->argv[i]));
    for (size_t i = 0; spec->env && spec->env[i]; i++)
        json_array_append_new (env, json_string (spec->env[i]));
    cleanup_free char *user = cg_strdupf ("%d:%d", limits->sandbox_uid, limits->sandbox_gid);
    json_t *body =
        json_pack ("{s:b, s:b, s:b, s:b, s:o, s:o, s:s, s:s, s:b}", "AttachStdin", attach_stdin,
                   "AttachStdout", 1, "AttachStderr", 1, "Tty", 0, "Cmd", cmd, "Env", env,
                   "WorkingDir", spec->cwd, "User", user, "Privileged", 0);
    cleanup_free char *path = cg_strdupf ("/containers/%s/exec", sandbox->id);
    json_t *reply = NULL;
    int status = cg_docker_api_call (api, "POST", path, body, &reply, err);
    json_decref (body);
    const char *id = json_string_value (json_object_get (reply, "Id"));
    char *result = status == 201 && id ? cg_xstrdup (id) : NULL;
    if (status >= 0 && !result)
        cg_docker_api_fail (status, reply, err, "exec in %s", sandbox->id);
    json_decref (reply);
    return result;
}

pid_t
cg_docker_exec_start (cg_docker_api_t *api, const cg_sandbox_limits_t *limits,
                      const cg_sandbox_t *sandbox, const cg_exec_spec_t *spec, cg_error_t **err)
{
    bool attach_stdin = !s_is_dev_null (spec->stdin_fd);
    cleanup_free char *id = s_exec_create (api, limits, sandbox, spec, attach_stdin, err);
    if (!id)
        return -1;
    if (spec->pid_file)
        unlink (spec->pid_file);
    const char *host = cg_docker_api_host (api);
    char *argv[] = {"cellgate",
                    "docker-exec",
                    CG_UNCONST (host),
                    strncmp (host, "tcp://", 6) == 0 ? "tcp" : "unix",
                    id,
                    spec->pid_file ? CG_UNCONST (spec->pid_file) : "-",
                    NULL};
    return cg_backend_spawn ("/proc/self/exe", argv, spec, -1, sandbox->id, err);
}

//  --------------------------------------------------------------------------
//  The helper

static int
s_write_all (int fd, const char *data, size_t len)
{
    while (len > 0) {
        ssize_t n = write (fd, data, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        data += n;
        len -= (size_t)n;
    }
    return 0;
}

//  A frame's payload: stdout to fd 1, stderr to fd 2. A reader that went away is not
//  an error: the process still runs to its end.
static int
s_frame_cb (int stream, const char *data, size_t len, void *arg)
{
    (void)arg;
    if (stream == 1 || stream == 2)
        s_write_all (stream, data, len);
    return 0;
}

//  Sends the start request on FD and reads the answer's head. Leaves what followed the
//  head in BUF (*LEN bytes). Returns 0, or -1 (said on stderr).
static int
s_start (int fd, const char *exec_id, char *buf, size_t size, size_t *len)
{
    const char *body = "{\"Detach\":false,\"Tty\":false}";
    cleanup_free char *request =
        cg_strdupf ("POST /" CG_DOCKER_API_VERSION "/exec/%s/start HTTP/1.1\r\nHost: docker\r\n"
                    "Content-Type: application/json\r\nConnection: Upgrade\r\nUpgrade: tcp\r\n"
                    "Content-Length: %zu\r\n\r\n%s",
                    exec_id, strlen (body), body);
    if (s_write_all (fd, request, strlen (request)) < 0) {
        fprintf (stderr, "cellgate docker-exec: send: %s\n", strerror (errno));
        return -1;
    }
    *len = 0;
    for (;;) {
        ssize_t n = recv (fd, buf + *len, size - *len, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            fprintf (stderr, "cellgate docker-exec: the engine closed the attach\n");
            return -1;
        }
        *len += (size_t)n;
        int status = 0;
        long head = cg_docker_head_parse (buf, *len, &status);
        if (head == 0)
            continue;
        if (head < 0 || (status != 101 && status != 200)) {
            fprintf (stderr, "cellgate docker-exec: exec start refused: %.*s\n",
                     (int)(*len > 300 ? 300 : *len), buf);
            return -1;
        }
        memmove (buf, buf + head, *len - (size_t)head);
        *len -= (size_t)head;
        return 0;
    }
}

//  GETs the exec's inspect. Returns it (caller owns it), or NULL.
static json_t *
s_inspect (cg_docker_api_t *api, const char *exec_id)
{
    cleanup_free char *path = cg_strdupf ("/exec/%s/json", exec_id);
    json_t *reply = NULL;
    if (cg_docker_api_call (api, "GET", path, NULL, &reply, NULL) != 200) {
        json_decref (reply);
        return NULL;
    }
    return reply;
}

//  The host pid of exec EXEC_ID, or 0 when it ended first or the engine does not say. Podman
//  starts the process before it answers the start with 101; dockerd answers first and starts
//  it after, so its inspect says Pid 0 for a moment.
static json_int_t
s_started_pid (cg_docker_api_t *api, const char *exec_id)
{
    for (int i = 0; i < S_EXIT_WAIT_TRIES; i++) {
        json_t *info = s_inspect (api, exec_id);
        if (!info)
            return 0;
        json_int_t pid = json_integer_value (json_object_get (info, "Pid"));
        bool ended = json_is_false (json_object_get (info, "Running"))
                     && json_is_integer (json_object_get (info, "ExitCode"));
        json_decref (info);
        if (pid > 0 || ended)
            return pid;
        nanosleep (&(struct timespec){0, 20 * 1000 * 1000}, NULL);
    }
    return 0;
}

//  Copies fd 0 to FD's write side and FD's frames to fds 1 and 2 until the engine closes.
static void
s_pump (int fd, char *buf, size_t size, size_t pending)
{
    cg_docker_demux_t demux = {0};
    if (pending > 0 && cg_docker_demux_feed (&demux, buf, pending, s_frame_cb, NULL) < 0)
        return;
    bool in_open = true;
    for (;;) {
        struct pollfd items[2] = {{fd, POLLIN, 0}, {0, POLLIN, 0}};
        if (poll (items, in_open ? 2 : 1, -1) < 0) {
            if (errno == EINTR)
                continue;
            return;
        }
        if (in_open && items[1].revents) {
            ssize_t n = read (0, buf, size);
            if (n > 0 && s_write_all (fd, buf, (size_t)n) == 0)
                continue;
            if (n < 0 && errno == EINTR)
                continue;
            //  EOF (or a stdin that failed): the process's stdin is closed.
            shutdown (fd, SHUT_WR);
            in_open = false;
        }
        if (items[0].revents) {
            ssize_t n = recv (fd, buf, size, 0);
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0 || cg_docker_demux_feed (&demux, buf, (size_t)n, s_frame_cb, NULL) < 0)
                return;
        }
    }
}

int
cg_docker_exec_main (int argc, char **argv)
{
    if (argc != 6) {
        fprintf (stderr, "usage: cellgate docker-exec HOST unix|tcp EXEC_ID PID_FILE|-\n");
        return 2;
    }
    signal (SIGPIPE, SIG_IGN);
    const char *exec_id = argv[4], *pid_file = argv[5];
    cg_error_t *err = NULL;
    cg_docker_api_t *api = cg_docker_api_new (argv[2], strcmp (argv[3], "tcp") == 0, &err);
    int fd = api ? cg_docker_api_connect (api, &err) : -1;
    if (fd < 0) {
        fprintf (stderr, "cellgate docker-exec: %s\n", cg_error_message (err));
        cg_error_destroy (&err);
        cg_docker_api_destroy (&api);
        return S_ATTACH_FAILED;
    }
    static char buf[CG_DOCKER_HEAD_MAX + 65536];
    size_t pending = 0;
    if (s_start (fd, exec_id, buf, sizeof buf, &pending) < 0) {
        cg_docker_api_destroy (&api);
        return S_ATTACH_FAILED;
    }
    json_int_t pid = strcmp (pid_file, "-") ? s_started_pid (api, exec_id) : 0;
    if (pid > 0) {
        cleanup_free char *text = cg_strdupf ("%lld\n", (long long)pid);
        cg_write_file (pid_file, text, strlen (text), 0644, NULL);
    }
    s_pump (fd, buf, sizeof buf, pending);
    //  The stream ends as the process exits; the engine may note the exit a little later.
    int code = S_ATTACH_FAILED;
    for (int i = 0; i < S_EXIT_WAIT_TRIES; i++) {
        json_t *info = s_inspect (api, exec_id);
        json_t *running = json_object_get (info, "Running");
        json_t *exit_code = json_object_get (info, "ExitCode");
        if (info && json_is_false (running) && json_is_integer (exit_code)) {
            code = (int)(json_integer_value (exit_code) & 0xff);
            json_decref (info);
            break;
        }
        json_decref (info);
        nanosleep (&(struct timespec){0, 20 * 1000 * 1000}, NULL);
    }
    cg_docker_api_destroy (&api);
    return code;
}
