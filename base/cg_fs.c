/*  cg_fs — file operations that are safe in trees untrusted code can write: atomic writes
    that never follow a planted link or FIFO, bounded reads, mkdir -p and a bounded-fd rm -rf. */
#define _GNU_SOURCE
#include "base/cg_fs.h"
#include "base/cg_util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int
cg_write_file_at (int dir_fd, const char *name, const void *data, size_t len, int mode, uid_t uid,
                  gid_t gid, cg_error_t **err)
{
    //  Everything happens relative to DIR_FD: the temporary name is random and created
    //  with O_EXCL and O_NOFOLLOW (a planted link or FIFO is never followed or opened,
    //  and nothing blocks), owner and mode are set through the fd, and rename replaces
    //  whatever NAME was without following it.
    char tmp[32] = ".cg-tmp-";
    cg_random_hex (tmp + 8, 8);
    cleanup_close int fd =
        openat (dir_fd, tmp,
                O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC, 0600);
    if (fd < 0)
        return cg_error_set (err, errno, "create a temporary file for %s: %s", name,
                             strerror (errno));
    int rc = 0;
    if ((uid != (uid_t)-1 && fchown (fd, uid, gid) < 0) || fchmod (fd, (mode_t)mode) < 0)
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
            left -= (size_t)n;
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
    if (cg_write_file_at (dir_fd, name, data, len, mode, (uid_t)-1, (gid_t)-1, err) < 0)
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
        len += (size_t)n;
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

/*  A directory on the path from the top of a removal down to the one being read. */
typedef struct {
    dev_t dev;
    ino_t ino;
    char *name;     /* its name in the directory above; NULL for the top */
    long resume;    /* telldir position just past it in the directory above */
    bool resuming;  /* this pass began at a child's resume position, not at the start */
    char **skipped; /* open-addressing set of names here that could not be removed */
    size_t skipped_count;
    size_t skipped_size; /* slots in skipped: 0 or a power of two */
} s_level_t;

/*  One cg_rm_rf: the directories from the top down to the current one. */
typedef struct {
    int parent_fd;     /* the directory holding the top */
    const char *top;   /* the top's name in it */
    dev_t dev;         /* the top's device: a directory on another one is a mount */
    s_level_t *levels; /* levels[0] is the top, levels[depth] the directory being read */
    size_t depth;
    size_t levels_size;
    bool failed; /* something could not be removed */
    cg_error_t **err;
} s_rm_t;

static size_t
s_name_hash (const char *name)
{
    uint64_t hash = 14695981039346656037ULL; /* FNV-1a */
    for (const unsigned char *p = (const unsigned char *)name; *p; p++)
        hash = (hash ^ *p) * 1099511628211ULL;
    return (size_t)hash;
}

static bool
s_level_skips (const s_level_t *level, const char *name)
{
    if (level->skipped_count == 0)
        return false;
    size_t mask = level->skipped_size - 1;
    for (size_t i = s_name_hash (name) & mask; level->skipped[i]; i = (i + 1) & mask)
        if (strcmp (level->skipped[i], name) == 0)
            return true;
    return false;
}

/*  Adds NAME to the names LEVEL passes over when its directory is read again. */
static void
s_level_skip (s_level_t *level, const char *name)
{
    if (s_level_skips (level, name))
        return;
    if (2 * (level->skipped_count + 1) > level->skipped_size) {
        size_t size = level->skipped_size ? 2 * level->skipped_size : 16;
        char **slots = cg_xcalloc (size, sizeof *slots);
        for (size_t i = 0; i < level->skipped_size; i++) {
            if (!level->skipped[i])
                continue;
            size_t j = s_name_hash (level->skipped[i]) & (size - 1);
            while (slots[j])
                j = (j + 1) & (size - 1);
            slots[j] = level->skipped[i];
        }
        free (level->skipped);
        level->skipped = slots;
        level->skipped_size = size;
    }
    size_t mask = level->skipped_size - 1, i = s_name_hash (name) & mask;
    while (level->skipped[i])
        i = (i + 1) & mask;
    level->skipped[i] = cg_xstrdup (name);
    level->skipped_count++;
}

static void
s_level_clear (s_level_t *level)
{
    for (size_t i = 0; i < level->skipped_size; i++)
        free (level->skipped[i]);
    free (level->skipped);
    free (level->name);
    *level = (s_level_t){0};
}

/*  Records a failure (CODE, and WHAT or else strerror (CODE)) at NAME in the directory being
    read, or at that directory itself when NAME is NULL. Only the first one becomes *err,
    named by its path below the top. Returns -1. */
static int
s_rm_fail (s_rm_t *self, const char *name, int code, const char *what)
{
    self->failed = true;
    if (!self->err || *self->err)
        return -1;
    size_t len = name ? strlen (name) + 1 : 1;
    for (size_t i = 1; i <= self->depth; i++)
        len += strlen (self->levels[i].name) + 1;
    cleanup_free char *where = cg_xmalloc (len);
    char *end = where;
    for (size_t i = 1; i <= self->depth; i++)
        end += sprintf (end, "%s%s", end == where ? "" : "/", self->levels[i].name);
    if (name)
        sprintf (end, "%s%s", end == where ? "" : "/", name);
    return cg_error_set (self->err, code, "%s%s%s", where, *where ? ": " : "",
                         what ? what : strerror (code));
}

/*  Records a failure at NAME in the directory being read and passes over NAME from now on. */
static void
s_rm_skip (s_rm_t *self, const char *name, int code, const char *what)
{
    s_rm_fail (self, name, code, what);
    s_level_skip (&self->levels[self->depth], name);
}

static void
s_rm_push (s_rm_t *self, const char *name, const struct stat *st, long resume)
{
    if (self->depth + 1 == self->levels_size) {
        self->levels_size *= 2;
        self->levels = cg_xrealloc (self->levels, self->levels_size * sizeof *self->levels);
    }
    self->depth++;
    self->levels[self->depth] = (s_level_t){
        .dev = st->st_dev, .ino = st->st_ino, .name = cg_xstrdup (name), .resume = resume};
}

/*  Opens NAME in DIR_FD as a directory to descend into, never through a link; NULL when
    it is gone, is no longer a directory (then it is unlinked) or is not to be entered
    (then the failure is recorded). Sets *st. */
static DIR *
s_rm_open (s_rm_t *self, int dir_fd, const char *name, struct stat *st)
{
    int fd = openat (dir_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT)
            return NULL;
        /* A file or a link took its place since it was read. */
        if ((errno == ENOTDIR || errno == ELOOP)
            && (unlinkat (dir_fd, name, 0) == 0 || errno == ENOENT))
            return NULL;
        s_rm_skip (self, name, errno, NULL);
        return NULL;
    }
    if (fstat (fd, st) < 0) {
        s_rm_skip (self, name, errno, NULL);
        close (fd);
        return NULL;
    }
    if (st->st_dev != self->dev) {
        s_rm_skip (self, name, EXDEV, "a mount point: not crossed");
        close (fd);
        return NULL;
    }
    DIR *dir = fdopendir (fd);
    if (!dir) {
        s_rm_skip (self, name, errno, NULL);
        close (fd);
    }
    return dir;
}

/*  Opens the directory above the one being read by its names from the top down, each
    checked against the one recorded (for a directory that cannot be searched, so has no
    usable ".."). Holds two fds at a time. Returns the fd, or -1 with errno set. */
static int
s_rm_reopen_above (s_rm_t *self)
{
    int fd = -1;
    for (size_t i = 0; i < self->depth; i++) {
        const s_level_t *level = &self->levels[i];
        int next = openat (i ? fd : self->parent_fd, i ? level->name : self->top,
                           O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        int code = errno;
        if (fd >= 0)
            close (fd);
        fd = next;
        struct stat st;
        if (fd < 0 || fstat (fd, &st) < 0) {
            code = fd < 0 ? code : errno;
            if (fd >= 0)
                close (fd);
            errno = code;
            return -1;
        }
        if (st.st_dev != level->dev || st.st_ino != level->ino)
            break; /* moved: the caller sees the mismatch on the last one */
    }
    return fd;
}

/*  Leaves DIR, the directory being read, for the one above: opens ".." from it and checks
    that it is still the directory recorded on the way down, then removes DIR (which
    fails, and is recorded, when something in it could not be removed). Returns the
    directory above, or NULL with the failure recorded when it is not the one expected. */
static DIR *
s_rm_up (s_rm_t *self, DIR *dir)
{
    s_level_t *above = &self->levels[self->depth - 1];
    int fd = openat (dirfd (dir), "..", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 && errno == EACCES)
        fd = s_rm_reopen_above (self);
    struct stat st;
    if (fd < 0 || fstat (fd, &st) < 0) {
        s_rm_fail (self, NULL, errno, NULL);
        if (fd >= 0)
            close (fd);
        return NULL;
    }
    if (st.st_dev != above->dev || st.st_ino != above->ino) {
        /* Something moved the tree while it was being removed: going on could remove
           what is not ours. */
        s_rm_fail (self, NULL, ESTALE, "moved during removal: stopped");
        close (fd);
        return NULL;
    }
    DIR *up = fdopendir (fd);
    if (!up) {
        s_rm_fail (self, NULL, errno, NULL);
        close (fd);
        return NULL;
    }
    s_level_t child = self->levels[self->depth];
    self->levels[self->depth] = (s_level_t){0};
    self->depth--;
    /* Only the directory just emptied, not whatever has taken its name since. */
    if (fstatat (fd, child.name, &st, AT_SYMLINK_NOFOLLOW) == 0 && st.st_dev == child.dev
        && st.st_ino == child.ino && unlinkat (fd, child.name, AT_REMOVEDIR) < 0 && errno != ENOENT)
        s_rm_skip (self, child.name, errno, NULL);
    seekdir (up, child.resume);
    above->resuming = true;
    s_level_clear (&child);
    return up;
}

/*  Empties the top directory DIR (owned): depth first, holding one directory open at a
    time, and going back up through "..". Returns 0, or -1 when it had to stop early. */
static int
s_rm_walk (s_rm_t *self, DIR *dir)
{
    while (true) {
        s_level_t *level = &self->levels[self->depth];
        errno = 0;
        struct dirent *entry = readdir (dir);
        if (!entry) {
            /* What was before the resume position may have shifted past it: once more
               from the start before calling the directory done. */
            if (level->resuming) {
                level->resuming = false;
                rewinddir (dir);
                continue;
            }
            if (errno != 0)
                s_rm_fail (self, NULL, errno, NULL);
            if (self->depth == 0)
                break;
            DIR *up = s_rm_up (self, dir);
            closedir (dir);
            if (!up)
                return -1;
            dir = up;
            continue;
        }
        /* Untrusted: the names, their types and the tree's shape are made by whatever
           ran in the tree, possibly still changing it. */
        const char *name = entry->d_name;
        if (strcmp (name, ".") == 0 || strcmp (name, "..") == 0 || s_level_skips (level, name))
            continue;
        if (entry->d_type != DT_DIR) {
            if (unlinkat (dirfd (dir), name, 0) == 0 || errno == ENOENT)
                continue;
            if (errno != EISDIR && errno != EPERM) { /* EPERM: a directory, on some systems */
                s_rm_skip (self, name, errno, NULL);
                continue;
            }
        }
        struct stat st;
        DIR *sub = s_rm_open (self, dirfd (dir), name, &st);
        if (!sub)
            continue;
        s_rm_push (self, name, &st, telldir (dir));
        closedir (dir);
        dir = sub;
    }
    closedir (dir);
    return 0;
}

int
cg_rm_rf (const char *path, cg_error_t **err)
{
    if (!path || !*path)
        return cg_error_set (err, EINVAL, "remove: refusing an empty path");
    size_t len = strlen (path);
    while (len > 0 && path[len - 1] == '/')
        len--;
    if (len == 0)
        return cg_error_set (err, EINVAL, "remove %s: refusing to remove /", path);
    size_t start = len;
    while (start > 0 && path[start - 1] != '/')
        start--;
    cleanup_free char *name = cg_xstrndup (path + start, len - start);
    if (strcmp (name, ".") == 0 || strcmp (name, "..") == 0)
        return cg_error_set (err, EINVAL, "remove %s: refusing a path that ends in . or ..", path);

    /* The caller's path up to the last component is trusted and resolved as usual;
       the last component is never followed. */
    cleanup_free char *parent = start ? cg_xstrndup (path, start) : cg_xstrdup (".");
    cleanup_close int parent_fd = open (parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (parent_fd < 0 && errno == ENOENT)
        return 0;
    if (parent_fd < 0)
        return cg_error_set (err, errno, "remove %s: open %s: %s", path, parent, strerror (errno));
    struct stat st;
    if (fstatat (parent_fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
        if (errno == ENOENT)
            return 0;
        return cg_error_set (err, errno, "remove %s: %s", path, strerror (errno));
    }
    if (!S_ISDIR (st.st_mode)) {
        if (unlinkat (parent_fd, name, 0) == 0 || errno == ENOENT)
            return 0;
        return cg_error_set (err, errno, "remove %s: %s", path, strerror (errno));
    }
    int fd = openat (parent_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT)
        return 0;
    struct stat root;
    if (fd < 0 || fstat (fd, &st) < 0 || stat ("/", &root) < 0) {
        int code = errno;
        if (fd >= 0)
            close (fd);
        return cg_error_set (err, code, "remove %s: %s", path, strerror (code));
    }
    if (st.st_dev == root.st_dev && st.st_ino == root.st_ino) {
        close (fd);
        return cg_error_set (err, EINVAL, "remove %s: refusing to remove /", path);
    }
    DIR *dir = fdopendir (fd);
    if (!dir) {
        int code = errno;
        close (fd);
        return cg_error_set (err, code, "remove %s: %s", path, strerror (code));
    }

    s_rm_t self = {
        .parent_fd = parent_fd, .top = name, .dev = st.st_dev, .levels_size = 16, .err = err};
    self.levels = cg_xcalloc (self.levels_size, sizeof *self.levels);
    self.levels[0] = (s_level_t){.dev = st.st_dev, .ino = st.st_ino};
    if (s_rm_walk (&self, dir) == 0) {
        struct stat now;
        if (fstatat (parent_fd, name, &now, AT_SYMLINK_NOFOLLOW) < 0) {
            if (errno != ENOENT)
                s_rm_fail (&self, NULL, errno, NULL);
        }
        else if (now.st_dev != st.st_dev || now.st_ino != st.st_ino)
            s_rm_fail (&self, NULL, ESTALE, "moved during removal: stopped");
        else if (unlinkat (parent_fd, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
            s_rm_fail (&self, NULL, errno, NULL);
    }
    for (size_t i = 0; i <= self.depth; i++)
        s_level_clear (&self.levels[i]);
    free (self.levels);
    if (self.failed)
        return cg_error_wrap (err, "remove %s", path);
    return 0;
}

int
cg_write_all (int fd, const void *data, size_t len)
{
    const char *p = data;
    while (len > 0) {
        ssize_t n = write (fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -errno;
        if (n == 0)
            return -EIO;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

json_t *
cg_read_json_object (const char *path, size_t max)
{
    cleanup_free char *text = cg_read_file (path, max, NULL, NULL);
    json_t *json = text ? json_loads (text, 0, NULL) : NULL;
    if (json && !json_is_object (json))
        json_decref (json);
    return json && json_is_object (json) ? json : NULL;
}

int
cg_write_json (const char *dir, const char *name, json_t *json, int mode, cg_error_t **err)
{
    cleanup_free char *text = json_dumps (json, JSON_COMPACT);
    json_decref (json);
    cleanup_free char *path = cg_strdupf ("%s/%s", dir, name);
    if (!text)
        return cg_error_set (err, ENOMEM, "write %s: cannot encode", path);
    return cg_write_file (path, text, strlen (text), mode, err);
}
