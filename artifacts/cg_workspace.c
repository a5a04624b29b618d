/*  cg_workspace — safe host-side access to a session's workspace: every path is resolved
    below one directory fd, and no symlink, magic link or mount point is ever followed. */
#define _GNU_SOURCE
#include "artifacts/cg_workspace_int.h"

#include "base/cg_util.h"
#include "base/cg_fs.h"

#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/syscall.h>

//  The longest client path looked at before anything else is checked.
#define S_INPUT_MAX 4096
#define S_RESOLVE (RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV)
#define S_LINK_MESSAGE "is a symbolic link; cellgate does not follow links in the workspace"

static atomic_bool s_openat2_off;

void
cg_workspace_use_openat2 (bool enabled)
{
    atomic_store (&s_openat2_off, !enabled);
}

//  ---------------------------------------------------------------------------------------
//  Paths

//  True when the LEN bytes at S are well-formed UTF-8 (no overlongs, surrogates or code
//  points above U+10FFFF).
static bool
s_valid_utf8 (const unsigned char *s, size_t len)
{
    size_t i = 0;
    while (i < len) {
        unsigned char c = s[i];
        size_t extra;
        uint32_t cp;
        if (c < 0x80) {
            i++;
            continue;
        }
        else if (c >= 0xc2 && c <= 0xdf)
            extra = 1, cp = c & 0x1f;
        else if (c >= 0xe0 && c <= 0xef)
            extra = 2, cp = c & 0x0f;
        else if (c >= 0xf0 && c <= 0xf4)
            extra = 3, cp = c & 0x07;
        else
            return false;
        if (len - i <= extra)
            return false;
        for (size_t k = 1; k <= extra; k++) {
            if ((s[i + k] & 0xc0) != 0x80)
                return false;
            cp = (cp << 6) | (s[i + k] & 0x3f);
        }
        if ((extra == 2 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff)))
            || (extra == 3 && (cp < 0x10000 || cp > 0x10ffff)))
            return false;
        i += extra + 1;
    }
    return true;
}

//  Index of the first byte that is NUL or a control character, or LEN when none is.
static size_t
s_find_control (const unsigned char *s, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (s[i] < 0x20 || s[i] == 0x7f)
            return i;
    return len;
}

bool
cg_ws_name_ok (const char *name, size_t len)
{
    const unsigned char *bytes = (const unsigned char *)name;
    return s_find_control (bytes, len) == len && s_valid_utf8 (bytes, len);
}

//  The rules shared by cg_workspace_normalize and cg_workspace_sanitize_filename. WHAT
//  names the input in messages; FOR_UPLOAD also refuses a name that ends in a directory.
static char *
s_normalize (const char *path, size_t len, const char *what, bool for_upload, cg_error_t **err)
{
    //  Untrusted: PATH comes from an MCP client (a model). Nothing of it is quoted in a
    //  message until it is known to be short, free of control characters and UTF-8.
    const unsigned char *bytes = (const unsigned char *)path;
    if (len == 0) {
        cg_error_set (err, EINVAL, "%s is empty", what);
        return NULL;
    }
    if (len > S_INPUT_MAX) {
        cg_error_set (err, EINVAL, "%s is longer than %d bytes", what, CG_WORKSPACE_PATH_MAX);
        return NULL;
    }
    size_t bad = s_find_control (bytes, len);
    if (bad < len) {
        if (bytes[bad] == 0)
            cg_error_set (err, EINVAL, "%s contains a NUL byte at offset %zu", what, bad);
        else
            cg_error_set (err, EINVAL, "%s contains a control character (0x%02x) at offset %zu",
                          what, bytes[bad], bad);
        return NULL;
    }
    if (!s_valid_utf8 (bytes, len)) {
        cg_error_set (err, EINVAL, "%s is not valid UTF-8", what);
        return NULL;
    }
    const char *p = path, *end = path + len;
    const size_t mount_len = strlen (CG_WORKSPACE_MOUNT);
    if (*p == '/') {
        if (len >= mount_len && memcmp (p, CG_WORKSPACE_MOUNT, mount_len) == 0
            && (len == mount_len || p[mount_len] == '/'))
            p += mount_len;
        else {
            cg_error_set (
                err, EINVAL,
                "%s \"%.*s\" is absolute and outside %s; use %s/<name> or a relative path", what,
                (int)len, path, CG_WORKSPACE_MOUNT, CG_WORKSPACE_MOUNT);
            return NULL;
        }
    }
    cleanup_free char *out = cg_xmalloc (len + 1);
    size_t out_len = 0;
    bool names_directory = false; /* the last component was empty or "." */
    while (p < end) {
        const char *slash = memchr (p, '/', (size_t)(end - p));
        const char *stop = slash ? slash : end;
        size_t name_len = (size_t)(stop - p);
        names_directory = name_len == 0 || (name_len == 1 && p[0] == '.');
        if (name_len == 2 && p[0] == '.' && p[1] == '.') {
            cg_error_set (err, EINVAL,
                          "%s \"%.*s\" has a \"..\" component; paths must stay inside %s", what,
                          (int)len, path, CG_WORKSPACE_MOUNT);
            return NULL;
        }
        if (name_len > CG_WORKSPACE_NAME_MAX) {
            cg_error_set (err, EINVAL, "%s has a component longer than %d bytes", what,
                          CG_WORKSPACE_NAME_MAX);
            return NULL;
        }
        if (!names_directory) {
            if (out_len > 0)
                out[out_len++] = '/';
            memcpy (out + out_len, p, name_len);
            out_len += name_len;
        }
        if (!slash)
            break;
        p = slash + 1;
        if (p == end)
            names_directory = true;
    }
    out[out_len] = '\0';
    if (out_len == 0) {
        cg_error_set (err, EINVAL, "%s \"%.*s\" names %s itself, not a file in it", what, (int)len,
                      path, CG_WORKSPACE_MOUNT);
        return NULL;
    }
    if (out_len > CG_WORKSPACE_PATH_MAX) {
        cg_error_set (err, EINVAL, "%s is longer than %d bytes", what, CG_WORKSPACE_PATH_MAX);
        return NULL;
    }
    if (for_upload && names_directory) {
        cg_error_set (err, EINVAL,
                      "%s \"%.*s\" ends in \"/\"; it must name a file, not a directory", what,
                      (int)len, path);
        return NULL;
    }
    char *result = out;
    out = NULL;
    return result;
}

char *
cg_workspace_normalize_len (const char *path, size_t len, cg_error_t **err)
{
    assert (path || len == 0);
    return s_normalize (path ? path : "", len, "path", false, err);
}

char *
cg_workspace_normalize (const char *path, cg_error_t **err)
{
    assert (path);
    return s_normalize (path, strlen (path), "path", false, err);
}

char *
cg_workspace_sanitize_filename (const char *name, cg_error_t **err)
{
    assert (name);
    return s_normalize (name, strlen (name), "file name", true, err);
}

//  Refuses a REL that is not already canonical, so no caller can slip "..", an absolute
//  path or a control character past the resolution below.
static int
s_check_rel (const char *rel, cg_error_t **err)
{
    cleanup_free char *canonical = s_normalize (rel, strlen (rel), "path", false, NULL);
    if (!canonical || rel[0] == '/' || strcmp (canonical, rel) != 0)
        return cg_error_set (err, EINVAL, "not a canonical workspace path (normalize it first)");
    return 0;
}

//  ---------------------------------------------------------------------------------------
//  Resolution below a directory fd

//  Opens REL below DIRFD the way openat2 with S_RESOLVE does, for kernels without it: one
//  O_PATH|O_NOFOLLOW step per directory, each checked to be a real directory on DEV, then
//  the last component with O_NOFOLLOW. Returns an fd or -errno.
static int
s_walk_open (int dirfd, dev_t dev, const char *rel, int flags, mode_t mode)
{
    cleanup_close int cur = -1;
    int base = dirfd;
    const char *p = rel;
    if (*p == '/')
        return -EXDEV;
    for (;;) {
        const char *slash = strchr (p, '/');
        size_t name_len = slash ? (size_t)(slash - p) : strlen (p);
        if (name_len == 0 || (name_len == 2 && p[0] == '.' && p[1] == '.'))
            return -EINVAL;
        if (!slash)
            break;
        cleanup_free char *name = cg_xstrndup (p, name_len);
        int fd = openat (base, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
            return -errno;
        struct stat st;
        int bad = fstat (fd, &st) < 0     ? errno
                  : S_ISLNK (st.st_mode)  ? ELOOP
                  : !S_ISDIR (st.st_mode) ? ENOTDIR
                  : st.st_dev != dev      ? EXDEV
                                          : 0;
        if (bad) {
            close (fd);
            return -bad;
        }
        if (cur >= 0)
            close (cur);
        cur = base = fd;
        p = slash + 1;
    }
    int fd = openat (base, p, flags | O_NOFOLLOW | O_CLOEXEC, mode);
    if (fd < 0)
        return -errno;
    struct stat st;
    int bad = fstat (fd, &st) < 0 ? errno : st.st_dev != dev ? EXDEV : 0;
    if (bad) {
        close (fd);
        return -bad;
    }
    return fd;
}

//  Opens REL below DIRFD without following any symlink or leaving DEV: openat2 with
//  S_RESOLVE, or s_walk_open when the kernel lacks openat2. Returns an fd or -errno.
static int
s_open_beneath (int dirfd, dev_t dev, const char *rel, int flags, mode_t mode)
{
    flags |= O_NOFOLLOW | O_CLOEXEC;
    if (!atomic_load (&s_openat2_off)) {
        struct open_how how = {
            .flags = (uint64_t)flags,
            .mode = (flags & O_CREAT) ? mode : 0,
            .resolve = S_RESOLVE,
        };
        //  EAGAIN means a concurrent rename raced the lookup; it is safe to retry.
        for (int attempt = 0; attempt < 16; attempt++) {
            long fd = syscall (SYS_openat2, dirfd, rel, &how, sizeof how);
            if (fd >= 0)
                return (int)fd;
            if (errno == EAGAIN || errno == EINTR)
                continue;
            if (errno != ENOSYS)
                return -errno;
            atomic_store (&s_openat2_off, true);
            break;
        }
        if (!atomic_load (&s_openat2_off))
            return -EAGAIN;
    }
    return s_walk_open (dirfd, dev, rel, flags, mode);
}

//  Returns the first prefix of REL that is a symbolic link (a new string the caller owns),
//  or NULL when none is (any more).
static char *
s_find_link (cg_workspace_t *self, const char *rel)
{
    const char *p = rel;
    for (;;) {
        const char *slash = strchr (p, '/');
        cleanup_free char *prefix =
            slash ? cg_xstrndup (rel, (size_t)(slash - rel)) : cg_xstrdup (rel);
        cleanup_close int fd = s_open_beneath (self->fd, self->dev, prefix, O_PATH, 0);
        struct stat st;
        if (fd < 0 || fstat (fd, &st) < 0)
            return NULL;
        if (S_ISLNK (st.st_mode)) {
            char *result = prefix;
            prefix = NULL;
            return result;
        }
        if (!slash)
            return NULL;
        p = slash + 1;
    }
}

//  Fills *err for a failure CODE (an errno) to open REL, naming the symlink when one is
//  to blame. Returns -1.
static int
s_open_error (cg_workspace_t *self, const char *rel, int code, cg_error_t **err)
{
    const char *mount = CG_WORKSPACE_MOUNT;
    switch (code) {
        case ELOOP: {
            cleanup_free char *link = s_find_link (self, rel);
            return cg_error_set (err, ELOOP, "%s/%s %s", mount, link ? link : rel, S_LINK_MESSAGE);
        }
        case ENOENT:
            return cg_error_set (err, ENOENT, "%s/%s does not exist", mount, rel);
        case ENOTDIR:
            return cg_error_set (err, ENOTDIR, "%s/%s: a directory on its path is not a directory",
                                 mount, rel);
        case EISDIR:
            return cg_error_set (err, EISDIR, "%s/%s is a directory", mount, rel);
        case ENXIO:
            return cg_error_set (err, EINVAL, "%s/%s is not a regular file", mount, rel);
        case EXDEV:
            return cg_error_set (
                err, EXDEV,
                "%s/%s crosses a mount point; cellgate stays on the workspace's file system", mount,
                rel);
        default:
            return cg_error_set (err, code, "open %s/%s: %s", mount, rel, strerror (code));
    }
}

//  ---------------------------------------------------------------------------------------
//  Workspace

cg_workspace_t *
cg_workspace_open (const char *host_dir, cg_error_t **err)
{
    assert (host_dir);
    cleanup_close int fd = open (host_dir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        int code = errno;
        struct stat st;
        if (code == ENOTDIR && lstat (host_dir, &st) == 0 && S_ISLNK (st.st_mode))
            cg_error_set (err, ELOOP, "workspace %s is a symbolic link", host_dir);
        else
            cg_error_set (err, code, "open workspace %s: %s", host_dir, strerror (code));
        return NULL;
    }
    struct stat st;
    if (fstat (fd, &st) < 0) {
        cg_error_set (err, errno, "stat workspace %s: %s", host_dir, strerror (errno));
        return NULL;
    }
    cg_workspace_t *self = cg_xcalloc (1, sizeof *self);
    self->fd = fd;
    fd = -1;
    self->dev = st.st_dev;
    self->host_dir = cg_xstrdup (host_dir);
    pthread_mutex_init (&self->lock, NULL);
    return self;
}

void
cg_workspace_destroy (cg_workspace_t **self_p)
{
    assert (self_p);
    cg_workspace_t *self = *self_p;
    if (!self)
        return;
    cg_wstrack_destroy (&self->track);
    pthread_mutex_destroy (&self->lock);
    close (self->fd);
    free (self->host_dir);
    free (self);
    *self_p = NULL;
}

int
cg_workspace_open_file (cg_workspace_t *self, const char *rel, int flags, struct stat *st,
                        cg_error_t **err)
{
    assert (self && rel);
    assert ((flags & (O_CREAT | O_TMPFILE | O_PATH | O_DIRECTORY)) == 0);
    if (s_check_rel (rel, err) < 0)
        return -1;
    //  Untrusted: everything below the workspace fd was made by sandboxed code.
    cleanup_close int fd =
        s_open_beneath (self->fd, self->dev, rel, flags | O_NOCTTY | O_NONBLOCK, 0);
    if (fd < 0)
        return s_open_error (self, rel, -fd, err);
    struct stat local;
    if (!st)
        st = &local;
    if (fstat (fd, st) < 0)
        return cg_error_set (err, errno, "stat %s/%s: %s", CG_WORKSPACE_MOUNT, rel,
                             strerror (errno));
    if (S_ISDIR (st->st_mode))
        return s_open_error (self, rel, EISDIR, err);
    if (!S_ISREG (st->st_mode))
        return s_open_error (self, rel, ENXIO, err);
    if (!(flags & O_NONBLOCK)) {
        int status = fcntl (fd, F_GETFL);
        if (status < 0 || fcntl (fd, F_SETFL, status & ~O_NONBLOCK) < 0)
            return cg_error_set (err, errno, "open %s/%s: %s", CG_WORKSPACE_MOUNT, rel,
                                 strerror (errno));
    }
    int result = fd;
    fd = -1;
    return result;
}

char *
cg_workspace_read (cg_workspace_t *self, const char *rel, size_t max, size_t *len, struct stat *st,
                   cg_error_t **err)
{
    struct stat local;
    if (!st)
        st = &local;
    cleanup_close int fd = cg_workspace_open_file (self, rel, O_RDONLY, st, err);
    if (fd < 0)
        return NULL;
    if (max > SIZE_MAX - 2)
        max = SIZE_MAX - 2;
    if ((uintmax_t)st->st_size > max) {
        cg_error_set (err, EFBIG, "%s/%s is %jd bytes, more than the limit of %zu bytes",
                      CG_WORKSPACE_MOUNT, rel, (intmax_t)st->st_size, max);
        return NULL;
    }
    //  One byte more than the size so that a file growing behind our back is noticed.
    size_t cap = (size_t)st->st_size + 1, used = 0;
    cleanup_free char *buf = cg_xmalloc (cap + 1);
    for (;;) {
        if (used == cap) {
            if (used > max) {
                cg_error_set (err, EFBIG, "%s/%s grew past the limit of %zu bytes while being read",
                              CG_WORKSPACE_MOUNT, rel, max);
                return NULL;
            }
            cap = cap > (max + 1) / 2 ? max + 1 : cap * 2;
            buf = cg_xrealloc (buf, cap + 1);
        }
        ssize_t n = read (fd, buf + used, cap - used);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            cg_error_set (err, errno, "read %s/%s: %s", CG_WORKSPACE_MOUNT, rel, strerror (errno));
            return NULL;
        }
        if (n == 0)
            break;
        used += (size_t)n;
    }
    buf[used] = '\0';
    if (len)
        *len = used;
    char *result = buf;
    buf = NULL;
    return result;
}

//  Opens (creating where missing) each directory of the first PARENT_LEN bytes of REL, one
//  component at a time below the workspace fd. Returns the fd of the last one (or a
//  duplicate of the workspace fd when PARENT_LEN is 0), or -1 with *err set.
static int
s_make_parents (cg_workspace_t *self, const char *rel, size_t parent_len, uid_t uid, gid_t gid,
                cg_error_t **err)
{
    cleanup_close int cur = fcntl (self->fd, F_DUPFD_CLOEXEC, 0);
    if (cur < 0)
        return cg_error_set (err, errno, "duplicate workspace fd: %s", strerror (errno));
    size_t start = 0;
    while (start < parent_len) {
        const char *slash = memchr (rel + start, '/', parent_len - start);
        size_t stop = slash ? (size_t)(slash - rel) : parent_len;
        cleanup_free char *name = cg_xstrndup (rel + start, stop - start);
        cleanup_free char *shown = cg_strdupf ("%s/%.*s", CG_WORKSPACE_MOUNT, (int)stop, rel);
        bool created = mkdirat (cur, name, 0755) == 0;
        if (!created && errno != EEXIST)
            return cg_error_set (err, errno, "create directory %s: %s", shown, strerror (errno));
        int fd = s_open_beneath (cur, self->dev, name, O_RDONLY | O_DIRECTORY | O_NONBLOCK, 0);
        struct stat st;
        //  O_DIRECTORY reports a symlink as "not a directory"; say what it is.
        if (fd == -ENOTDIR && fstatat (cur, name, &st, AT_SYMLINK_NOFOLLOW) == 0
            && S_ISLNK (st.st_mode))
            fd = -ELOOP;
        if (fd == -ELOOP)
            return cg_error_set (err, ELOOP, "%s %s", shown, S_LINK_MESSAGE);
        if (fd == -ENOTDIR)
            return cg_error_set (err, ENOTDIR, "%s is not a directory", shown);
        if (fd < 0)
            return cg_error_set (err, -fd, "open directory %s: %s", shown, strerror (-fd));
        close (cur);
        cur = fd;
        if (created && (fchown (cur, uid, gid) < 0 || fchmod (cur, 0755) < 0))
            return cg_error_set (err, errno, "set owner of directory %s: %s", shown,
                                 strerror (errno));
        start = stop + 1;
    }
    int result = cur;
    cur = -1;
    return result;
}

//  Fills the new file FD by FILL (ARG) and hands it to UID:GID. Returns 0 or -errno.
static int
s_fill (int fd, cg_workspace_fill_fn *fill, void *arg, uid_t uid, gid_t gid)
{
    int rc = fill (fd, arg);
    if (rc == 0 && (fchown (fd, uid, gid) < 0 || fchmod (fd, 0644) < 0))
        rc = -errno;
    return rc;
}

typedef struct {
    const void *data;
    size_t len;
} s_bytes_t;

static int
s_fill_bytes (int fd, void *arg)
{
    s_bytes_t *bytes = arg;
    return cg_write_all (fd, bytes->data, bytes->len);
}

int
cg_workspace_write (cg_workspace_t *self, const char *rel, const void *data, size_t len,
                    bool overwrite, uid_t uid, gid_t gid, cg_error_t **err)
{
    assert (data || len == 0);
    s_bytes_t bytes = {data, len};
    return cg_workspace_write_with (self, rel, s_fill_bytes, &bytes, overwrite, uid, gid, err);
}

int
cg_workspace_write_with (cg_workspace_t *self, const char *rel, cg_workspace_fill_fn *fill,
                         void *arg, bool overwrite, uid_t uid, gid_t gid, cg_error_t **err)
{
    assert (self && rel && fill);
    if (s_check_rel (rel, err) < 0)
        return -1;
    const char *last_slash = strrchr (rel, '/');
    const char *base = last_slash ? last_slash + 1 : rel;
    cleanup_close int parent =
        s_make_parents (self, rel, last_slash ? (size_t)(last_slash - rel) : 0, uid, gid, err);
    if (parent < 0)
        return -1;
    const char *mount = CG_WORKSPACE_MOUNT;
    const int create = O_WRONLY | O_CREAT | O_EXCL | O_NOCTTY;
    if (!overwrite) {
        cleanup_close int fd = s_open_beneath (parent, self->dev, base, create, 0644);
        struct stat st;
        if (fd == -EEXIST && fstatat (parent, base, &st, AT_SYMLINK_NOFOLLOW) == 0
            && S_ISDIR (st.st_mode))
            return cg_error_set (err, EISDIR, "%s/%s is a directory", mount, rel);
        if (fd == -EEXIST)
            return cg_error_set (
                err, EEXIST, "%s/%s already exists. Set overwrite=true to replace.", mount, rel);
        if (fd < 0)
            return cg_error_set (err, -fd, "create %s/%s: %s", mount, rel, strerror (-fd));
        int rc = s_fill (fd, fill, arg, uid, gid);
        if (rc == 0 && close (fd) < 0)
            rc = -errno;
        fd = -1;
        if (rc < 0) {
            unlinkat (parent, base, 0);
            return cg_error_set (err, -rc, "write %s/%s: %s", mount, rel, strerror (-rc));
        }
        return 0;
    }
    //  Write a temporary file beside the target and rename it over: a symlink planted at
    //  REL is replaced, never followed. The name is random so the sandbox cannot claim it.
    char tmp[64];
    cleanup_close int fd = -EEXIST;
    for (int attempt = 0; attempt < 16 && fd == -EEXIST; attempt++) {
        char hex[17];
        cg_random_hex (hex, 8);
        snprintf (tmp, sizeof tmp, ".cg-write-%s.tmp", hex);
        fd = s_open_beneath (parent, self->dev, tmp, create, 0644);
    }
    if (fd < 0)
        return cg_error_set (err, -fd, "create a temporary file for %s/%s: %s", mount, rel,
                             strerror (-fd));
    int rc = s_fill (fd, fill, arg, uid, gid);
    if (rc == 0 && close (fd) < 0)
        rc = -errno;
    fd = -1;
    if (rc == 0 && renameat (parent, tmp, parent, base) < 0)
        rc = -errno;
    if (rc < 0) {
        unlinkat (parent, tmp, 0);
        if (rc == -EISDIR)
            return cg_error_set (err, EISDIR, "%s/%s is a directory", mount, rel);
        return cg_error_set (err, -rc, "write %s/%s: %s", mount, rel, strerror (-rc));
    }
    return 0;
}

//  ---------------------------------------------------------------------------------------
//  MIME types

static const struct {
    const char *extension;
    const char *mime_type;
} s_mime_types[] = {
    {"csv", "text/csv"},
    {"txt", "text/plain"},
    {"json", "application/json"},
    {"png", "image/png"},
    {"jpg", "image/jpeg"},
    {"jpeg", "image/jpeg"},
    {"gif", "image/gif"},
    {"svg", "image/svg+xml"},
    {"pdf", "application/pdf"},
    {"html", "text/html"},
    {"htm", "text/html"},
    {"xlsx", "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"},
    {"xls", "application/vnd.ms-excel"},
    {"parquet", "application/vnd.apache.parquet"},
    {"md", "text/markdown"},
    {"py", "text/x-python"},
    {"js", "text/javascript"},
    {"zip", "application/zip"},
    {"tsv", "text/tab-separated-values"},
    {"xml", "application/xml"},
};

const char *
cg_mime_type (const char *filename)
{
    assert (filename);
    const char *slash = strrchr (filename, '/');
    const char *base = slash ? slash + 1 : filename;
    const char *dot = strrchr (base, '.');
    if (dot && dot != base) {
        for (size_t i = 0; i < sizeof s_mime_types / sizeof s_mime_types[0]; i++)
            if (strcasecmp (dot + 1, s_mime_types[i].extension) == 0)
                return s_mime_types[i].mime_type;
    }
    return "application/octet-stream";
}
