/*  cg_preview — image previews made in a locked-down helper process, never in the server. */
#define _GNU_SOURCE
#include "artifacts/cg_preview.h"
#include "artifacts/cg_image.h"

#include "base/cg_util.h"
#include "base/cg_fs.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <signal.h>
#include <sodium.h>
#include <spawn.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

//  The user the helper runs as when started by root (Debian's nobody).
#define S_NOBODY 65534
//  The most the helper's answer may hold besides the preview: its tag and message.
#define S_MESSAGE_MAX 512

//  --------------------------------------------------------------------------
//  The helper

#if defined(__x86_64__)
#define S_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define S_AUDIT_ARCH AUDIT_ARCH_AARCH64
#else
#error "cg_preview: no seccomp architecture for this target"
#endif

//  Installs the helper's seccomp filter: the native ABI only, and only the system calls
//  a decoder needs once its input is read (the pipes, memory, exit); anything else kills
//  the process. Returns 0, or -1 with errno set.
static int
s_seccomp (void)
{
    static const int allowed[] = {
        SYS_read,         SYS_write, SYS_close,          SYS_mmap,      SYS_munmap,
        SYS_mremap,       SYS_brk,   SYS_madvise,        SYS_exit,      SYS_exit_group,
        SYS_rt_sigreturn, SYS_futex, SYS_clock_gettime,  SYS_getrandom, SYS_newfstatat,
        SYS_fstat,        SYS_lseek, SYS_rt_sigprocmask,
    };
    enum { N = sizeof allowed / sizeof *allowed };
    struct sock_filter prog[N + 8];
    size_t n = 0;
    prog[n++] = (struct sock_filter)BPF_STMT (BPF_LD | BPF_W | BPF_ABS,
                                              offsetof (struct seccomp_data, arch));
    prog[n++] = (struct sock_filter)BPF_JUMP (BPF_JMP | BPF_JEQ | BPF_K, S_AUDIT_ARCH, 1, 0);
    prog[n++] = (struct sock_filter)BPF_STMT (BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS);
    prog[n++] =
        (struct sock_filter)BPF_STMT (BPF_LD | BPF_W | BPF_ABS, offsetof (struct seccomp_data, nr));
#if defined(__x86_64__)
    //  The x32 ABI shares the architecture tag: its numbers have bit 30 set.
    prog[n++] = (struct sock_filter)BPF_JUMP (BPF_JMP | BPF_JGE | BPF_K, 0x40000000, N + 1, 0);
#endif
    for (size_t i = 0; i < N; i++)
        prog[n++] = (struct sock_filter)BPF_JUMP (BPF_JMP | BPF_JEQ | BPF_K, (unsigned)allowed[i],
                                                  (unsigned char)(N - i), 0);
    prog[n++] = (struct sock_filter)BPF_STMT (BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS);
    prog[n++] = (struct sock_filter)BPF_STMT (BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
    struct sock_fprog fprog = {.len = (unsigned short)n, .filter = prog};
    return prctl (PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &fprog, 0, 0);
}

static int
s_limit (int resource, rlim_t soft, rlim_t hard)
{
    struct rlimit limit = {soft, hard};
    return setrlimit (resource, &limit);
}

//  AddressSanitizer reserves terabytes of address space and makes system calls of its own
//  (its leak check at exit starts a thread): a sanitized build (tests only) runs the
//  helper without the address-space limit and the seccomp filter (CG_SANITIZED).

//  Everything the helper gives up before it reads untrusted bytes. Returns NULL, or what
//  failed.
static const char *
s_lock_down (long memory_mb, long cpu_s)
{
    //  Only stdin, stdout and stderr stay open (the spawner closed the rest too).
    if (syscall (SYS_close_range, 3, ~0U, 0) < 0 && errno != ENOSYS)
        return "close_range";
    if (prctl (PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || prctl (PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
        return "prctl";
    if (geteuid () == 0
        && (setgroups (0, NULL) < 0 || setgid (S_NOBODY) < 0 || setuid (S_NOBODY) < 0))
        return "setuid nobody";
    rlim_t memory = (rlim_t)memory_mb << 20;
    if ((!CG_SANITIZED
         && (s_limit (RLIMIT_AS, memory, memory) < 0 || s_limit (RLIMIT_DATA, memory, memory) < 0
             || s_limit (RLIMIT_NPROC, 0, 0) < 0))
        || s_limit (RLIMIT_CPU, (rlim_t)cpu_s, (rlim_t)cpu_s + 1) < 0
        || s_limit (RLIMIT_FSIZE, 0, 0) < 0 || s_limit (RLIMIT_NOFILE, 3, 3) < 0
        || s_limit (RLIMIT_CORE, 0, 0) < 0)
        return "setrlimit";
    if (!CG_SANITIZED && s_seccomp () < 0)
        return "seccomp";
    return NULL;
}

//  The helper's "E" answer: WHAT, then the error's message when there is one.
static int
s_answer_error (const char *what, cg_error_t *err)
{
    char line[S_MESSAGE_MAX];
    int len = snprintf (line, sizeof line, "E%s%s%s", what, err ? ": " : "",
                        err ? cg_error_message (err) : "");
    cg_write_all (STDOUT_FILENO, line,
                  len < 0                     ? 0
                  : (size_t)len < sizeof line ? (size_t)len
                                              : sizeof line - 1);
    return 1;
}

static long
s_arg (const char *text, long min, long max)
{
    char *end = NULL;
    errno = 0;
    long value = strtol (text, &end, 10);
    return errno || end == text || *end || value < min || value > max ? -1 : value;
}

static int
s_helper_main (int argc, char **argv)
{
    long len = argc == 7 ? s_arg (argv[3], 1, CG_PREVIEW_INPUT_MAX) : -1;
    long max = argc == 7 ? s_arg (argv[4], 1, INT_MAX) : -1;
    long memory_mb = argc == 7 ? s_arg (argv[5], 16, 1 << 20) : -1;
    long cpu_s = argc == 7 ? s_arg (argv[6], 1, 3600) : -1;
    if (len < 0 || max < 0 || memory_mb < 0 || cpu_s < 0
        || (strcmp (argv[2], "image/png") != 0 && strcmp (argv[2], "image/jpeg") != 0)) {
        fprintf (stderr, "usage: cellgate preview image/png|image/jpeg LEN MAX MEMORY_MB "
                         "CPU_S (started by the server itself)\n");
        return 2;
    }
    const char *failed = s_lock_down (memory_mb, cpu_s);
    if (failed)
        return s_answer_error (failed, NULL);
    //  Untrusted from here on: the image's bytes, a sandbox's making.
    cleanup_free unsigned char *bytes = malloc ((size_t)len);
    size_t got = 0;
    while (bytes && got < (size_t)len) {
        ssize_t n = read (STDIN_FILENO, bytes + got, (size_t)len - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    if (!bytes || got < (size_t)len)
        return s_answer_error (bytes ? "the image was cut short" : "out of memory", NULL);
    size_t made_len = 0;
    const char *made_mime = NULL;
    int w = 0, h = 0;
    cg_error_t *err = NULL;
    //  The caps on chunks and scans hold here too: a file from the workspace reaches the
    //  helper unchecked (the server reads no more of it than its signature).
    cleanup_free unsigned char *made = cg_image_check (bytes, got, argv[2], &w, &h, &err) < 0
                                           ? NULL
                                           : cg_image_preview (bytes, got, argv[2], (size_t)max,
                                                               &made_len, &made_mime, &w, &h, &err);
    if (!made) {
        s_answer_error ("no preview", err);
        cg_error_destroy (&err);
        return 1;
    }
    return cg_write_all (STDOUT_FILENO, "P", 1) < 0
                   || cg_write_all (STDOUT_FILENO, made, made_len) < 0
               ? 1
               : 0;
}

void
cg_preview_main (int argc, char **argv)
{
    //  _exit: nothing is buffered, and no exit handler (a sanitizer's leak check, which
    //  cannot stop the world in a process that is not dumpable) runs in the helper.
    _exit (s_helper_main (argc, argv));
}

//  --------------------------------------------------------------------------
//  The spawner (a runner thread)

extern char **environ;

//  Starts the helper with its stdin from IN and stdout to OUT, stderr to /dev/null and no
//  other descriptor, every signal at its default and unblocked, an empty environment.
static pid_t
s_spawn (char *const argv[], int in, int out, cg_error_t **err)
{
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init (&actions);
    posix_spawn_file_actions_adddup2 (&actions, in, STDIN_FILENO);
    posix_spawn_file_actions_adddup2 (&actions, out, STDOUT_FILENO);
    posix_spawn_file_actions_addopen (&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addclosefrom_np (&actions, 3);
    posix_spawnattr_t attr;
    posix_spawnattr_init (&attr);
    posix_spawnattr_setflags (&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK
                                         | POSIX_SPAWN_SETSIGDEF);
    sigset_t none, all;
    sigemptyset (&none);
    sigfillset (&all);
    posix_spawnattr_setsigmask (&attr, &none);
    posix_spawnattr_setsigdefault (&attr, &all);
    char *const env[] = {NULL};
    pid_t pid = -1;
    int rc = posix_spawn (&pid, "/proc/self/exe", &actions, &attr, argv, env);
    posix_spawn_file_actions_destroy (&actions);
    posix_spawnattr_destroy (&attr);
    if (rc != 0)
        return cg_error_set (err, rc, "start the preview helper: %s", strerror (rc));
    return pid;
}

typedef struct {
    unsigned char *buf; /* what the helper wrote */
    size_t len;
    size_t cap;      /* the most it may write */
    bool overflowed; /* it wrote more */
    bool timed_out;  /* the deadline passed first */
} s_exchange_t;

//  Feeds BYTES to the helper on IN (closed when done) and reads its answer from OUT until
//  it closes it, the answer passes its cap, or DEADLINE_US.
static void
s_exchange (int in, int out, const unsigned char *bytes, size_t len, int64_t deadline_us,
            s_exchange_t *ex)
{
    size_t sent = 0;
    fcntl (in, F_SETFL, O_NONBLOCK);
    fcntl (out, F_SETFL, O_NONBLOCK);
    for (;;) {
        int64_t left_ms = (deadline_us - cg_now_us ()) / 1000;
        if (left_ms <= 0) {
            ex->timed_out = true;
            break;
        }
        struct pollfd fds[2] = {{out, POLLIN, 0}, {in, POLLOUT, 0}};
        int rc = poll (fds, in >= 0 ? 2 : 1, left_ms > INT_MAX ? INT_MAX : (int)left_ms);
        if (rc < 0 && errno != EINTR)
            break;
        if (in >= 0 && fds[1].revents) {
            ssize_t n = write (in, bytes + sent, len - sent);
            if (n > 0)
                sent += (size_t)n;
            if ((n < 0 && errno != EAGAIN && errno != EINTR) || sent == len) {
                close (in); //  done, or the helper stopped reading
                in = -1;
            }
        }
        if (fds[0].revents) {
            ssize_t n = read (out, ex->buf + ex->len, ex->cap + 1 - ex->len);
            if (n < 0 && (errno == EAGAIN || errno == EINTR))
                continue;
            if (n <= 0)
                break;
            ex->len += (size_t)n;
            if (ex->len > ex->cap) {
                ex->overflowed = true;
                break;
            }
        }
    }
    if (in >= 0)
        close (in);
}

//  Waits for the helper PID until DEADLINE_US, then kills it; returns its wait status.
static int
s_reap (pid_t pid, int64_t deadline_us, bool kill_now)
{
    int status = 0;
    while (!kill_now && cg_now_us () < deadline_us) {
        pid_t done = waitpid (pid, &status, WNOHANG);
        if (done == pid || (done < 0 && errno != EINTR))
            return status;
        usleep (1000);
    }
    kill (pid, SIGKILL);
    while (waitpid (pid, &status, 0) < 0 && errno == EINTR)
        ;
    return status;
}

//  The helper's answer EX (exit STATUS) as a preview of at most MAX bytes, checked by its
//  header; or NULL with *err set.
static unsigned char *
s_answer (const s_exchange_t *ex, int status, size_t max, size_t *out_len, const char **out_mime,
          int *out_width, int *out_height, cg_error_t **err)
{
    if (ex->timed_out) {
        cg_error_set (err, ETIMEDOUT,
                      "the preview took too long and was stopped "
                      "(--preview-timeout-ms)");
        return NULL;
    }
    if (ex->overflowed) {
        cg_error_set (err, EFBIG, "the preview helper wrote more than %zu bytes", max);
        return NULL;
    }
    if (WIFSIGNALED (status)) {
        int sig = WTERMSIG (status);
        cg_error_set (err, EIO, "the preview helper was killed by signal %d%s", sig,
                      sig == SIGXCPU   ? " (out of CPU time)"
                      : sig == SIGSYS  ? " (a system call it may not make)"
                      : sig == SIGSEGV ? " (out of memory, or a decoder fault)"
                                       : "");
        return NULL;
    }
    if (ex->len > 0 && ex->buf[0] == 'E') {
        //  The helper read the untrusted image: its message is printable ASCII here.
        char message[S_MESSAGE_MAX];
        size_t n = 0;
        for (size_t i = 1; i < ex->len && n < sizeof message - 1; i++)
            message[n++] = ex->buf[i] >= 0x20 && ex->buf[i] < 0x7f ? (char)ex->buf[i] : '?';
        message[n] = '\0';
        cg_error_set (err, EINVAL, "%s", message);
        return NULL;
    }
    const unsigned char *made = ex->buf + 1;
    size_t len = ex->len > 0 ? ex->len - 1 : 0;
    const char *mime = len >= 8 && made[0] == 0x89 ? "image/png" : "image/jpeg";
    int w = 0, h = 0;
    if (!WIFEXITED (status) || WEXITSTATUS (status) != 0 || ex->len == 0 || ex->buf[0] != 'P'
        || len > max || cg_image_size (made, len, mime, &w, &h, NULL) < 0
        || w > CG_IMAGE_PREVIEW_SIDE || h > CG_IMAGE_PREVIEW_SIDE) {
        cg_error_set (err, EIO, "the preview helper gave no usable preview");
        return NULL;
    }
    unsigned char *copy = cg_xmalloc (len);
    memcpy (copy, made, len);
    *out_len = len;
    *out_mime = mime;
    *out_width = w;
    *out_height = h;
    return copy;
}

//  Runs the helper on the image of LEN bytes (MIME) that it reads from FILE_FD, or, when
//  FILE_FD is -1, from a pipe fed with BYTES; as cg_preview_make otherwise.
static unsigned char *
s_run_helper (int file_fd, const unsigned char *bytes, size_t len, const char *mime, size_t max,
              const cg_preview_limits_t *limits, int64_t deadline_us, size_t *out_len,
              const char **out_mime, int *out_width, int *out_height, cg_error_t **err)
{
    if (len > CG_PREVIEW_INPUT_MAX) {
        cg_error_set (err, EFBIG, "%zu bytes: previews are made of images up to %d bytes", len,
                      CG_PREVIEW_INPUT_MAX);
        return NULL;
    }
    int64_t left_us = deadline_us - cg_now_us ();
    if (left_us <= 0) {
        cg_error_set (err, ETIMEDOUT, "no time was left for it (--preview-timeout-ms)");
        return NULL;
    }
    char name[] = "cellgate", command[] = "preview", mime_text[16];
    char len_text[24], max_text[24], memory_text[24], cpu_text[24];
    snprintf (mime_text, sizeof mime_text, "%s", mime);
    snprintf (len_text, sizeof len_text, "%zu", len);
    snprintf (max_text, sizeof max_text, "%zu", max > INT_MAX ? (size_t)INT_MAX : max);
    snprintf (memory_text, sizeof memory_text, "%d", limits->memory_mb);
    snprintf (cpu_text, sizeof cpu_text, "%" PRId64, (left_us + 999999) / 1000000);
    char *const argv[] = {name,     command,     mime_text, len_text,
                          max_text, memory_text, cpu_text,  NULL};
    int in[2] = {file_fd, -1}, out[2];
    if (file_fd < 0 && pipe2 (in, O_CLOEXEC) < 0) {
        cg_error_set (err, errno, "pipe: %s", strerror (errno));
        return NULL;
    }
    if (pipe2 (out, O_CLOEXEC) < 0) {
        cg_error_set (err, errno, "pipe: %s", strerror (errno));
        if (file_fd < 0) {
            close (in[0]);
            close (in[1]);
        }
        return NULL;
    }
    pid_t pid = s_spawn (argv, in[0], out[1], err);
    if (file_fd < 0)
        close (in[0]);
    close (out[1]);
    if (pid < 0) {
        if (in[1] >= 0)
            close (in[1]);
        close (out[0]);
        return NULL;
    }
    s_exchange_t ex = {.cap = max + S_MESSAGE_MAX};
    ex.buf = cg_xmalloc (ex.cap + 1);
    s_exchange (in[1], out[0], bytes, len, deadline_us, &ex);
    close (out[0]);
    int status = s_reap (pid, deadline_us, ex.timed_out || ex.overflowed);
    unsigned char *made =
        s_answer (&ex, status, max, out_len, out_mime, out_width, out_height, err);
    free (ex.buf);
    return made;
}

unsigned char *
cg_preview_make (const unsigned char *bytes, size_t len, const char *mime, size_t max,
                 const cg_preview_limits_t *limits, int64_t deadline_us, size_t *out_len,
                 const char **out_mime, int *out_width, int *out_height, cg_error_t **err)
{
    int w = 0, h = 0;
    if (cg_image_check (bytes, len, mime, &w, &h, err) < 0)
        return NULL;
    return s_run_helper (-1, bytes, len, mime, max, limits, deadline_us, out_len, out_mime,
                         out_width, out_height, err);
}

//  --------------------------------------------------------------------------
//  A run's previews

typedef struct {
    const cg_preview_limits_t *limits;
    int64_t deadline_us;
    size_t sent; /* image bytes inline so far, previews included */
} s_plan_t;

//  A preview of the image of LEN bytes (MIME) in the file FILE_FD, or at BYTES when FILE_FD
//  is -1, that fits what is left of the budget, as a plan entry
//  (PREVIEW or {"error": why}); the budget is charged for it.
static json_t *
s_entry (s_plan_t *plan, int file_fd, const unsigned char *bytes, size_t len, const char *mime)
{
    size_t left = plan->limits->budget > plan->sent ? plan->limits->budget - plan->sent : 0;
    cg_error_t *err = NULL;
    size_t made_len = 0;
    const char *made_mime = NULL;
    int w = 0, h = 0;
    cleanup_free unsigned char *made =
        left < 1024    ? NULL
        : file_fd >= 0 ? s_run_helper (file_fd, NULL, len, mime, left, plan->limits,
                                       plan->deadline_us, &made_len, &made_mime, &w, &h, &err)
                       : cg_preview_make (bytes, len, mime, left, plan->limits, plan->deadline_us,
                                          &made_len, &made_mime, &w, &h, &err);
    if (!made) {
        json_t *entry =
            json_pack ("{s:s}", "error",
                       err ? cg_error_message (err) : "the result's image budget is used up");
        cg_error_destroy (&err);
        return entry;
    }
    plan->sent += made_len;
    size_t cap = sodium_base64_ENCODED_LEN (made_len, sodium_base64_VARIANT_ORIGINAL);
    cleanup_free char *encoded = cg_xmalloc (cap);
    sodium_bin2base64 (encoded, cap, made, made_len, sodium_base64_VARIANT_ORIGINAL);
    return json_pack ("{s:s, s:s, s:i, s:i, s:I}", "mime_type", made_mime, "data", encoded, "width",
                      w, "height", h, "size_bytes", (json_int_t)made_len);
}

//  The plan entry of one output's image (base64 B64 of MIME), or NULL when it goes inline.
static json_t *
s_output_entry (s_plan_t *plan, const char *b64, const char *mime)
{
    size_t size = cg_image_base64_size (b64);
    if (plan->sent + size <= plan->limits->budget) {
        plan->sent += size;
        return NULL;
    }
    size_t b64_len = strlen (b64), len = 0;
    cleanup_free unsigned char *bytes = cg_xmalloc (b64_len / 4 * 3 + 3);
    if (sodium_base642bin (bytes, b64_len / 4 * 3 + 3, b64, b64_len, " \r\n", &len, NULL,
                           sodium_base64_VARIANT_ORIGINAL)
        != 0)
        return json_pack ("{s:s}", "error", "the image's base64 is not valid");
    return s_entry (plan, -1, bytes, len, mime);
}

//  The plan entry of the workspace image file PATH (MIME), opened in WS. Its bytes never
//  enter the server: the server reads its signature, the helper the rest (and checks it).
static json_t *
s_file_entry (s_plan_t *plan, cg_workspace_t *ws, const char *path, const char *mime)
{
    cg_error_t *err = NULL;
    struct stat st;
    cleanup_close int fd =
        cg_workspace_open_file (ws, path + strlen (CG_WORKSPACE_MOUNT "/"), O_RDONLY, &st, &err);
    unsigned char head[8] = {0};
    bool png = strcmp (mime, "image/png") == 0;
    if (fd >= 0 && !S_ISREG (st.st_mode))
        cg_error_set (&err, EINVAL, "not a regular file");
    else if (fd >= 0 && st.st_size > CG_PREVIEW_INPUT_MAX)
        cg_error_set (&err, EFBIG, "the file is %lld bytes; previews are made of images up to %d",
                      (long long)st.st_size, CG_PREVIEW_INPUT_MAX);
    else if (fd >= 0
             && (pread (fd, head, sizeof head, 0) != (ssize_t)sizeof head
                 || (png ? memcmp (head, "\x89PNG\r\n\x1a\n", 8) != 0
                         : head[0] != 0xFF || head[1] != 0xD8 || head[2] != 0xFF)))
        cg_error_set (&err, EINVAL, "the file is not a %s image", png ? "PNG" : "JPEG");
    if (err) {
        json_t *entry = json_pack ("{s:s}", "error", cg_error_message (err));
        cg_error_destroy (&err);
        return entry;
    }
    return s_entry (plan, fd, NULL, (size_t)st.st_size, mime);
}

json_t *
cg_preview_plan (json_t *outputs, json_t *artifacts, cg_workspace_t *ws,
                 const cg_preview_limits_t *limits)
{
    s_plan_t plan = {limits, cg_now_us () + (int64_t)limits->timeout_ms * 1000, 0};
    json_t *entries = json_array ();
    bool any = false;
    size_t i;
    json_t *item;
    json_array_foreach (outputs, i, item)
    {
        const char *mime = NULL;
        const char *image = cg_image_of_output (item, &mime);
        json_t *entry = image ? s_output_entry (&plan, image, mime) : NULL;
        any |= entry != NULL;
        json_array_append_new (entries, entry ? entry : json_null ());
    }
    json_t *files = json_object ();
    json_array_foreach (ws ? artifacts : NULL, i, item)
    {
        const char *path = json_string_value (json_object_get (item, "path"));
        const char *mime = json_string_value (json_object_get (item, "mime_type"));
        if (!path || !mime
            || strncmp (path, CG_PREVIEW_LARGE_PREFIX, strlen (CG_PREVIEW_LARGE_PREFIX)) != 0
            || (strcmp (mime, "image/png") != 0 && strcmp (mime, "image/jpeg") != 0))
            continue;
        json_object_set_new (files, path, s_file_entry (&plan, ws, path, mime));
        any = true;
    }
    if (!any) {
        json_decref (entries);
        json_decref (files);
        return NULL;
    }
    return json_pack ("{s:o, s:o}", "outputs", entries, "files", files);
}
