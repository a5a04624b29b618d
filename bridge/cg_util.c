/*  cg_util — small helpers shared by every module: memory, strings, time, ids, files. */
#define _GNU_SOURCE
#include "cg_util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

void *
cg_xmalloc (size_t size)
{
    void *ptr = malloc (size ? size : 1);
    if (!ptr)
        abort ();
    return ptr;
}

void *
cg_xcalloc (size_t count, size_t size)
{
    void *ptr = calloc (count ? count : 1, size ? size : 1);
    if (!ptr)
        abort ();
    return ptr;
}

void *
cg_xrealloc (void *ptr, size_t size)
{
    void *out = realloc (ptr, size ? size : 1);
    if (!out)
        abort ();
    return out;
}

char *
cg_xstrdup (const char *s)
{
    char *out = strdup (s);
    if (!out)
        abort ();
    return out;
}

char *
cg_xstrndup (const char *s, size_t n)
{
    char *out = strndup (s, n);
    if (!out)
        abort ();
    return out;
}

char *
cg_vstrdupf (const char *fmt, va_list args)
{
    char *out = NULL;
    if (vasprintf (&out, fmt, args) < 0)
        abort ();
    return out;
}

char *
cg_strdupf (const char *fmt, ...)
{
    va_list args;
    va_start (args, fmt);
    char *out = cg_vstrdupf (fmt, args);
    va_end (args);
    return out;
}

int64_t
cg_now_us (void)
{
    struct timespec ts;
    clock_gettime (CLOCK_MONOTONIC, &ts);
    return (int64_t) ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

void
cg_random_hex (char *buf, size_t nbytes)
{
    unsigned char raw[64];
    size_t done = 0;
    while (done < nbytes) {
        size_t chunk = nbytes - done < sizeof raw ? nbytes - done : sizeof raw;
        randombytes_buf (raw, chunk);
        sodium_bin2hex (buf + 2 * done, 2 * chunk + 1, raw, chunk);
        done += chunk;
    }
    buf[2 * nbytes] = '\0';
}

int
cg_write_file_at (int dir_fd, const char *name, const void *data, size_t len, int mode,
                  uid_t uid, gid_t gid, cg_error_t **err)
{
    //  Everything happens relative to DIR_FD: the temporary name is random and created
    //  with O_EXCL and O_NOFOLLOW (a planted link or FIFO is never followed or opened,
    //  and nothing blocks), owner and mode are set through the fd, and rename replaces
    //  whatever NAME was without following it.
    char tmp[32] = ".cg-tmp-";
    cg_random_hex (tmp + 8, 8);
    cleanup_close int fd = openat (dir_fd, tmp,
                                   O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK
                                       | O_NOCTTY | O_CLOEXEC,
                                   0600);
    if (fd < 0)
        return cg_error_set (err, errno, "create a temporary file for %s: %s", name,
                             strerror (errno));
    int rc = 0;
    if ((uid != (uid_t) -1 && fchown (fd, uid, gid) < 0) || fchmod (fd, (mode_t) mode) < 0)
        rc = cg_error_set (err, errno, "set owner and mode of %s: %s", name, strerror (errno));
    const char *p = data;
    size_t left = len;
    while (rc == 0 && left > 0) {
        ssize_t n = write (fd, p, left);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            rc = cg_error_set (err, errno, "write %s: %s", name, strerror (errno));
        else {
            p += n;
            left -= (size_t) n;
        }
    }
    if (rc == 0 && renameat (dir_fd, tmp, dir_fd, name) < 0)
        rc = cg_error_set (err, errno, "rename to %s: %s", name, strerror (errno));
    if (rc < 0)
        unlinkat (dir_fd, tmp, 0);
    return rc;
}

int
cg_write_file (const char *path, const void *data, size_t len, int mode, cg_error_t **err)
{
    cleanup_free char *dir = cg_xstrdup (path);
    char *slash = strrchr (dir, '/');
    const char *name = slash ? slash + 1 : path;
    if (slash)
        *slash = '\0';
    const char *dir_path = !slash ? "." : *dir ? dir : "/";
    cleanup_close int dir_fd = open (dir_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir_fd < 0)
        return cg_error_set (err, errno, "open %s: %s", dir_path, strerror (errno));
    if (cg_write_file_at (dir_fd, name, data, len, mode, (uid_t) -1, (gid_t) -1, err) < 0)
        return cg_error_wrap (err, "write %s", path);
    return 0;
}

char *
cg_read_file (const char *path, size_t max, size_t *len_p, cg_error_t **err)
{
    cleanup_close int fd = open (path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        cg_error_set (err, errno, "open %s: %s", path, strerror (errno));
        return NULL;
    }
    size_t cap = 4096, len = 0;
    char *buf = cg_xmalloc (cap + 1);
    for (;;) {
        if (len == cap) {
            if (cap >= max) {
                free (buf);
                cg_error_set (err, EFBIG, "read %s: larger than %zu bytes", path, max);
                return NULL;
            }
            cap = cap * 2 > max ? max : cap * 2;
            buf = cg_xrealloc (buf, cap + 1);
        }
        ssize_t n = read (fd, buf + len, cap - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            int saved = errno;
            free (buf);
            cg_error_set (err, saved, "read %s: %s", path, strerror (saved));
            return NULL;
        }
        if (n == 0)
            break;
        len += (size_t) n;
    }
    buf[len] = '\0';
    if (len_p)
        *len_p = len;
    return buf;
}

int
cg_mkdir_p (const char *dir, int mode, cg_error_t **err)
{
    cleanup_free char *copy = cg_xstrdup (dir);
    for (char *p = copy + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir (copy, mode) < 0 && errno != EEXIST)
            return cg_error_set (err, errno, "mkdir %s: %s", copy, strerror (errno));
        *p = '/';
    }
    if (mkdir (copy, mode) < 0 && errno != EEXIST)
        return cg_error_set (err, errno, "mkdir %s: %s", copy, strerror (errno));
    return 0;
}

static int
s_rm_rf_at (int parent_fd, const char *name, cg_error_t **err)
{
    if (unlinkat (parent_fd, name, 0) == 0 || errno == ENOENT)
        return 0;
    if (errno != EISDIR && errno != EPERM)
        return cg_error_set (err, errno, "unlink %s: %s", name, strerror (errno));
    int fd = openat (parent_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return cg_error_set (err, errno, "open %s: %s", name, strerror (errno));
    DIR *dir = fdopendir (fd);
    if (!dir) {
        close (fd);
        return cg_error_set (err, errno, "opendir %s: %s", name, strerror (errno));
    }
    int rc = 0;
    struct dirent *entry;
    while (rc == 0 && (entry = readdir (dir))) {
        if (strcmp (entry->d_name, ".") == 0 || strcmp (entry->d_name, "..") == 0)
            continue;
        rc = s_rm_rf_at (dirfd (dir), entry->d_name, err);
    }
    closedir (dir);
    if (rc == 0 && unlinkat (parent_fd, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
        rc = cg_error_set (err, errno, "rmdir %s: %s", name, strerror (errno));
    return rc;
}

int
cg_rm_rf (const char *path, cg_error_t **err)
{
    if (s_rm_rf_at (AT_FDCWD, path, err) < 0)
        return cg_error_wrap (err, "remove %s", path);
    return 0;
}

void
cg_cleanup_free (void *ptr)
{
    free (*(void **) ptr);
}

void
cg_cleanup_close (int *fd)
{
    if (*fd >= 0)
        close (*fd);
}

static atomic_int s_log_level = 2;

static _Atomic (cg_log_hook_fn *) s_hook;
static _Atomic (void *) s_hook_arg;
static atomic_int s_hook_level = -1;

void
cg_log_set_level (int level)
{
    atomic_store (&s_log_level, level);
}

int
cg_log_level_from_name (const char *name)
{
    static const char *names[] = {"error", "warn", "info", "debug"};
    for (int i = 0; i < 4; i++)
        if (strcmp (name, names[i]) == 0)
            return i;
    return -1;
}

void
cg_log (int level, const char *fmt, ...)
{
    bool to_stderr = level <= atomic_load (&s_log_level);
    bool to_hook = level <= atomic_load (&s_hook_level);
    if (!to_stderr && !to_hook)
        return;
    static const char *names[] = {"error", "warn", "info", "debug"};
    char line[4096];
    va_list args;
    va_start (args, fmt);
    vsnprintf (line, sizeof line, fmt, args);
    va_end (args);
    if (to_stderr)
        fprintf (stderr, "cellgate %s: %s\n", names[level < 0 ? 0 : level > 3 ? 3 : level], line);
    cg_log_hook_fn *hook = atomic_load (&s_hook);
    if (to_hook && hook)
        hook (atomic_load (&s_hook_arg), level, line);
}

void
cg_log_set_hook (cg_log_hook_fn *fn, void *arg, int level)
{
    atomic_store (&s_hook_arg, arg);
    atomic_store (&s_hook, fn);
    atomic_store (&s_hook_level, fn ? level : -1);
}
