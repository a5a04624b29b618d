/*  cg_kept — one-shot runs' files, kept for download after their sandbox is gone. */
#define _GNU_SOURCE
#include "bridge/cg_kept.h"
#include "base/cg_limits.h"
#include "base/cg_log.h"
#include "base/cg_util.h"
#include "base/cg_fs.h"

#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <unistd.h>

//  The most runs kept at once; the oldest goes first past it.
#define S_KEPT_MAX 64

typedef struct {
    char id[32];    /* "oneshot_<16 hex>" */
    char token[33]; /* 32 hex */
    char *dir;
    cg_workspace_t *ws;
    size_t bytes;
    int64_t expires_us;
} s_entry_t;

struct cg_kept_t {
    int ttl_s;
    size_t max_bytes;
    s_entry_t entries[S_KEPT_MAX]; /* the oldest first */
    size_t count;
    size_t bytes;
};

char *
cg_kept_root (const char *sessions_dir)
{
    const char *slash = strrchr (sessions_dir, '/');
    int len = slash ? (int)(slash - sessions_dir) : 0;
    return slash ? cg_strdupf ("%.*s/kept", len, sessions_dir) : cg_xstrdup ("kept");
}

//  --------------------------------------------------------------------------
//  The copy (a one-shot runner's thread)

//  Copies LEN bytes of IN to the new file DIR/REL (its directories made). Returns 0, or -1
//  with *err set.
static int
s_copy_file (int in, const char *dir, const char *rel, size_t len, cg_error_t **err)
{
    cleanup_free char *path = cg_strdupf ("%s/%s", dir, rel);
    char *slash = strrchr (path, '/');
    *slash = '\0';
    if (cg_mkdir_p (path, 0700, err) < 0)
        return -1;
    *slash = '/';
    cleanup_close int out = open (path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (out < 0)
        return cg_error_set (err, errno, "create %s: %s", path, strerror (errno));
    for (size_t done = 0; done < len;) {
        ssize_t n = sendfile (out, in, NULL, len - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return cg_error_set (err, errno, "copy %s: %s", rel, strerror (errno));
        if (n == 0)
            break; //  the file shrank: what there is
        done += (size_t)n;
    }
    return 0;
}

//  Copies the artifact ITEM out of WS into DIR when it fits what is left of MAX_BYTES after
//  *TOTAL. Returns 1 when copied, 0 when not.
static int
s_keep_one (cg_workspace_t *ws, json_t *item, const char *dir, size_t max_bytes, size_t *total)
{
    const char *path = json_string_value (json_object_get (item, "path"));
    size_t mount = strlen (CG_WORKSPACE_MOUNT "/");
    if (!path || strncmp (path, CG_WORKSPACE_MOUNT "/", mount) != 0)
        return 0;
    cg_error_t *err = NULL;
    struct stat st;
    //  Untrusted: the sandbox made the file, and may have made it a link or a FIFO; the
    //  workspace refuses those.
    cleanup_close int fd = cg_workspace_open_file (ws, path + mount, O_RDONLY, &st, &err);
    if (fd >= 0 && (size_t)st.st_size > max_bytes - *total)
        cg_error_set (&err, EFBIG, "%lld bytes are more than the %zu left to keep",
                      (long long)st.st_size, max_bytes - *total);
    if (fd >= 0 && !err && mkdir (dir, 0700) < 0 && errno != EEXIST)
        cg_error_set (&err, errno, "mkdir %s: %s", dir, strerror (errno));
    if (fd >= 0 && !err)
        s_copy_file (fd, dir, path + mount, (size_t)st.st_size, &err);
    if (err) {
        cg_log (2, "one-shot run: %s not kept: %s", path, cg_error_message (err));
        cg_error_destroy (&err);
        return 0;
    }
    *total += (size_t)st.st_size;
    return 1;
}

void
cg_kept_copy (cg_workspace_t *ws, cg_outcome_t *outcome, const char *root, size_t max_bytes)
{
    if (!ws || json_array_size (outcome->artifacts) == 0)
        return;
    cg_error_t *err = NULL;
    if (cg_mkdir_p (root, 0700, &err) < 0) {
        cg_log (1, "one-shot run: its files are not kept: %s", cg_error_message (err));
        cg_error_destroy (&err);
        return;
    }
    char name[17];
    cg_random_hex (name, 8);
    char *dir = cg_strdupf ("%s/%s", root, name);
    size_t total = 0, copied = 0, i;
    json_t *item;
    json_array_foreach (outcome->artifacts, i, item)
    {
        if (copied < CG_KEPT_FILES_MAX && s_keep_one (ws, item, dir, max_bytes, &total))
            copied++;
        else
            json_object_set_new (item, "kept", json_false ());
    }
    if (copied == 0) {
        cg_rm_rf (dir, NULL);
        free (dir);
        return;
    }
    outcome->kept_dir = dir;
    outcome->kept_bytes = total;
}

//  --------------------------------------------------------------------------
//  The table (the main loop)

cg_kept_t *
cg_kept_new (int ttl_s, size_t max_bytes)
{
    cg_kept_t *self = cg_xcalloc (1, sizeof *self);
    self->ttl_s = ttl_s;
    self->max_bytes = max_bytes;
    return self;
}

//  Removes the oldest entry, its files too.
static void
s_drop_oldest (cg_kept_t *self)
{
    s_entry_t *entry = &self->entries[0];
    cg_error_t *err = NULL;
    if (cg_rm_rf (entry->dir, &err) < 0)
        cg_log (1, "remove kept one-shot files %s: %s", entry->dir, cg_error_message (err));
    cg_error_destroy (&err);
    cg_workspace_destroy (&entry->ws);
    free (entry->dir);
    self->bytes -= entry->bytes;
    self->count--;
    memmove (self->entries, self->entries + 1, self->count * sizeof *entry);
}

static void
s_expire (cg_kept_t *self)
{
    int64_t now = cg_now_us ();
    while (self->count > 0 && self->entries[0].expires_us <= now)
        s_drop_oldest (self);
}

void
cg_kept_destroy (cg_kept_t **self_p)
{
    cg_kept_t *self = *self_p;
    if (!self)
        return;
    while (self->count > 0)
        s_drop_oldest (self);
    free (self);
    *self_p = NULL;
}

int
cg_kept_add (cg_kept_t *self, char **dir_p, size_t bytes, const char **id, const char **token)
{
    char *dir = *dir_p;
    *dir_p = NULL;
    s_expire (self);
    cg_error_t *err = NULL;
    cg_workspace_t *ws = bytes <= self->max_bytes ? cg_workspace_open (dir, &err) : NULL;
    if (!ws) {
        cg_log (1, "one-shot files in %s not kept: %s", dir,
                err ? cg_error_message (err) : "over --oneshot-keep-mb");
        cg_error_destroy (&err);
        cg_rm_rf (dir, NULL);
        free (dir);
        return -1;
    }
    while (self->count > 0 && (self->count == S_KEPT_MAX || self->bytes + bytes > self->max_bytes))
        s_drop_oldest (self);
    s_entry_t *entry = &self->entries[self->count++];
    *entry = (s_entry_t){.dir = dir,
                         .ws = ws,
                         .bytes = bytes,
                         .expires_us = cg_now_us () + (int64_t)self->ttl_s * 1000000};
    memcpy (entry->id, "oneshot_", 8);
    cg_random_hex (entry->id + 8, 8);
    cg_random_hex (entry->token, 16);
    self->bytes += bytes;
    *id = entry->id;
    *token = entry->token;
    return 0;
}

cg_workspace_t *
cg_kept_download (void *arg, const char *id, const char *token, size_t token_len)
{
    cg_kept_t *self = arg;
    s_expire (self);
    for (size_t i = 0; i < self->count; i++) {
        s_entry_t *entry = &self->entries[i];
        if (strcmp (entry->id, id) == 0 && token_len == strlen (entry->token)
            && sodium_memcmp (entry->token, token, token_len) == 0)
            return entry->ws;
    }
    return NULL;
}

size_t
cg_kept_count (cg_kept_t *self, size_t *bytes)
{
    s_expire (self);
    if (bytes)
        *bytes = self->bytes;
    return self->count;
}
