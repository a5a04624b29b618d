/*  cg_proc — running a host helper program to completion, its output captured. */
#define _GNU_SOURCE
#include "base/cg_proc.h"
#include "base/cg_util.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int
cg_run (char *const argv[], char *const envp[], char **out, char **err_text, cg_error_t **err)
{
    extern char **environ;
    bool capture = out || err_text;
    int pipes[2][2] = {{-1, -1}, {-1, -1}};
    for (int i = 0; capture && i < 2; i++)
        if (pipe2 (pipes[i], O_CLOEXEC) < 0) {
            int code = errno;
            for (int j = 0; j < 4; j++)
                if (pipes[j / 2][j % 2] >= 0)
                    close (pipes[j / 2][j % 2]);
            return cg_error_set (err, code, "pipe: %s", strerror (code));
        }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init (&actions);
    posix_spawn_file_actions_addopen (&actions, 0, "/dev/null", O_RDONLY, 0);
    for (int i = 0; i < 2; i++) {
        if (capture)
            posix_spawn_file_actions_adddup2 (&actions, pipes[i][1], i + 1);
        else
            posix_spawn_file_actions_addopen (&actions, i + 1, "/dev/null", O_WRONLY, 0);
    }
    pid_t pid;
    int rc = posix_spawn (&pid, argv[0], &actions, NULL, argv, envp ? envp : environ);
    posix_spawn_file_actions_destroy (&actions);
    for (int i = 0; capture && i < 2; i++)
        close (pipes[i][1]);
    if (rc != 0) {
        for (int i = 0; capture && i < 2; i++)
            close (pipes[i][0]);
        return cg_error_set (err, rc, "%s: %s", argv[0], strerror (rc));
    }
    char *bufs[2] = {NULL, NULL};
    size_t lens[2] = {0, 0};
    struct pollfd fds[2] = {{pipes[0][0], POLLIN, 0}, {pipes[1][0], POLLIN, 0}};
    int open_count = capture ? 2 : 0;
    for (int i = 0; capture && i < 2; i++)
        bufs[i] = cg_xcalloc (1, 1);
    while (open_count > 0) {
        if (poll (fds, 2, -1) < 0 && errno != EINTR)
            break;
        for (int i = 0; i < 2; i++) {
            if (fds[i].fd < 0 || !fds[i].revents)
                continue;
            char chunk[8192];
            ssize_t n = read (fds[i].fd, chunk, sizeof chunk);
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0) {
                close (fds[i].fd);
                fds[i].fd = -1;
                open_count--;
                continue;
            }
            if (lens[i] + (size_t)n <= CG_RUN_CAPTURE_MAX) {
                bufs[i] = cg_xrealloc (bufs[i], lens[i] + (size_t)n + 1);
                memcpy (bufs[i] + lens[i], chunk, (size_t)n);
                lens[i] += (size_t)n;
                bufs[i][lens[i]] = '\0';
            }
        }
    }
    for (int i = 0; i < 2; i++)
        if (fds[i].fd >= 0 && capture)
            close (fds[i].fd);
    int status = 0;
    while (waitpid (pid, &status, 0) < 0)
        if (errno != EINTR) {
            free (bufs[0]), free (bufs[1]);
            return cg_error_set (err, errno, "wait for %s: %s", argv[0], strerror (errno));
        }
    char **wanted[2] = {out, err_text};
    for (int i = 0; i < 2; i++) {
        if (wanted[i])
            *wanted[i] = bufs[i];
        else
            free (bufs[i]);
    }
    return status;
}
