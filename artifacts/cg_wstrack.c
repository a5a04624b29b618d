/*  cg_wstrack — a workspace's index of files, kept up to date in O(changes): fanotify
    reports each entry created, deleted, moved, written or touched on the workspace's own
    file system, and each path it names is looked at again with the walk's rules (events
    are only hints: sandboxed code makes them at will). Where events cannot be had, or
    when they overflow, a bounded full walk reconciles the index instead. */
#define _GNU_SOURCE
#include "artifacts/cg_workspace_int.h"

#include "base/cg_log.h"
#include "base/cg_util.h"

#include <czmq.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/fanotify.h>
#include <sys/stat.h>
#include <unistd.h>

//  Paths named by events and not yet looked at, before the tracker gives up and walks.
#define S_DIRTY_MAX (4 * CG_WORKSPACE_FILES_MAX)
//  Skipped names and too-deep directories the index holds before it stops following
//  events (each sync then walks, as without fanotify).
#define S_OTHERS_MAX CG_WORKSPACE_FILES_MAX
#define S_EVENTS                                                                            \
    (FAN_CREATE | FAN_DELETE | FAN_MODIFY | FAN_CLOSE_WRITE | FAN_MOVED_FROM | FAN_MOVED_TO \
     | FAN_ATTRIB | FAN_ONDIR)

static atomic_bool s_fanotify_off;

void
cg_workspace_use_fanotify (bool enabled)
{
    atomic_store (&s_fanotify_off, !enabled);
}

typedef struct {
    cg_ws_kind_t kind;
    off_t size;
    int64_t mtime_ns;
    nlink_t nlink;
    ino_t ino;
    char rel[];
} s_record_t;

//  A file's state at the mark.
typedef struct {
    bool present;
    off_t size;
    int64_t mtime_ns;
} s_old_t;

struct cg_wstrack_t {
    int fan;             /* the fanotify group, or -1: walk at each sync */
    int dir;             /* the workspace open for reading (open_by_handle_at refuses O_PATH) */
    char *root;          /* the workspace's path as /proc/self/fd shows it */
    zhashx_t *index;     /* rel -> s_record_t */
    zhashx_t *dirs;      /* directory rel -> how many records are below it (an integer) */
    zhashx_t *before;    /* rel -> s_old_t: each file changed since the mark, as it was */
    zhashx_t *dirty;     /* rel -> "": paths events named since the last sync */
    s_record_t **sorted; /* the file records by path, NULL when stale */
    size_t files, skipped, deep, linked;
    size_t walk_skipped; /* skipped names the last walk counted but did not keep */
    bool walk_deep;      /* the last walk met a too-deep directory it did not keep */
    bool capped;         /* a cap cut a walk short: listings are truncated */
    bool overflow;       /* events were lost: walk at the next sync, and say so */
    bool stale;          /* walk at the next sync (a cut-short walk may have left out files) */
    bool rescanned;      /* walked since the mark because events overflowed */
    //  The last directory handle resolved during a drain, and its rel (NULL: outside).
    char *handle;
    size_t handle_len;
    char *handle_rel;
    int handle_fd;    /* that directory (O_PATH) when it is outside the workspace, else -1 */
    zhashx_t *inodes; /* inode -> "": multiply-linked files events named outside */
};

static void
s_free_item (void **item)
{
    free (*item);
    *item = NULL;
}

static zhashx_t *
s_table (bool owned)
{
    zhashx_t *table = zhashx_new ();
    if (owned)
        zhashx_set_destructor (table, s_free_item);
    return table;
}

//  ---------------------------------------------------------------------------------------
//  The index

static void
s_dirs_add (cg_wstrack_t *self, const char *rel, int delta)
{
    for (const char *slash = strchr (rel, '/'); slash; slash = strchr (slash + 1, '/')) {
        cleanup_free char *dir = cg_xstrndup (rel, (size_t)(slash - rel));
        intptr_t count = (intptr_t)zhashx_lookup (self->dirs, dir) + delta;
        if (count > 0)
            zhashx_update (self->dirs, dir, (void *)count);
        else
            zhashx_delete (self->dirs, dir);
    }
}

//  Forgets the paths that were no file at the mark and are none now (made and removed
//  since): what is left is bounded by the files then and now.
static void
s_prune (cg_wstrack_t *self)
{
    zlistx_t *none = zlistx_new ();
    for (s_old_t *old = zhashx_first (self->before); old; old = zhashx_next (self->before)) {
        s_record_t *now = zhashx_lookup (self->index, zhashx_cursor (self->before));
        if (!old->present && (!now || now->kind != CG_WS_FILE))
            zlistx_add_end (none, cg_xstrdup (zhashx_cursor (self->before)));
    }
    for (char *rel = zlistx_first (none); rel; rel = zlistx_next (none)) {
        zhashx_delete (self->before, rel);
        free (rel);
    }
    zlistx_destroy (&none);
}

//  Remembers REL's state at the mark, before it first changes.
static void
s_old (cg_wstrack_t *self, const char *rel)
{
    if (zhashx_lookup (self->before, rel))
        return;
    if (zhashx_size (self->before) >= S_DIRTY_MAX)
        s_prune (self);
    s_record_t *record = zhashx_lookup (self->index, rel);
    s_old_t *old = cg_xcalloc (1, sizeof *old);
    if (record && record->kind == CG_WS_FILE)
        *old = (s_old_t){true, record->size, record->mtime_ns};
    zhashx_insert (self->before, rel, old);
}

static void
s_drop (cg_wstrack_t *self, const char *rel)
{
    s_record_t *record = zhashx_lookup (self->index, rel);
    if (!record)
        return;
    if (record->kind == CG_WS_FILE) {
        s_old (self, rel);
        self->files--;
        self->linked -= record->nlink > 1;
        free (self->sorted);
        self->sorted = NULL;
    }
    else if (record->kind == CG_WS_SKIPPED)
        self->skipped--;
    else
        self->deep--;
    s_dirs_add (self, rel, -1);
    zhashx_delete (self->index, rel);
}

//  Removes REL and everything below it from the index.
static void
s_drop_tree (cg_wstrack_t *self, const char *rel)
{
    s_drop (self, rel);
    if (!zhashx_lookup (self->dirs, rel))
        return;
    size_t len = strlen (rel);
    zlistx_t *below = zlistx_new ();
    for (void *item = zhashx_first (self->index); item; item = zhashx_next (self->index)) {
        const char *key = zhashx_cursor (self->index);
        if (strncmp (key, rel, len) == 0 && key[len] == '/')
            zlistx_add_end (below, cg_xstrdup (key));
    }
    for (char *key = zlistx_first (below); key; key = zlistx_next (below)) {
        s_drop (self, key);
        free (key);
    }
    zlistx_destroy (&below);
}

//  Records ENTRY (a walk's) in the index, replacing what was there.
static void
s_put (cg_wstrack_t *self, const cg_ws_entry_t *entry)
{
    s_record_t *record = zhashx_lookup (self->index, entry->rel);
    if (record && record->kind == CG_WS_FILE && entry->kind == CG_WS_FILE) {
        s_old (self, entry->rel);
        self->linked += (entry->nlink > 1) - (record->nlink > 1);
        record->size = entry->size;
        record->mtime_ns = entry->mtime_ns;
        record->nlink = entry->nlink;
        record->ino = entry->ino;
        return;
    }
    if (record)
        s_drop (self, entry->rel);
    if (entry->kind == CG_WS_FILE) {
        if (self->files >= CG_WORKSPACE_FILES_MAX) {
            self->capped = true;
            return;
        }
        s_old (self, entry->rel);
        self->files++;
        self->linked += entry->nlink > 1;
        free (self->sorted);
        self->sorted = NULL;
    }
    else if (entry->kind == CG_WS_SKIPPED)
        self->skipped++;
    else
        self->deep++;
    if (self->skipped + self->deep > S_OTHERS_MAX)
        self->stale = true;
    size_t len = strlen (entry->rel);
    record = cg_xmalloc (sizeof *record + len + 1);
    *record = (s_record_t){entry->kind, entry->size, entry->mtime_ns, entry->nlink, entry->ino};
    memcpy (record->rel, entry->rel, len + 1);
    zhashx_insert (self->index, entry->rel, record);
    s_dirs_add (self, entry->rel, 1);
}

//  Stops following events: each sync walks from now on.
static void
s_stop_events (cg_wstrack_t *self, const char *why)
{
    if (self->fan < 0)
        return;
    cg_log (1, "workspace %s: %s; its changes are found by walking it from now on", self->root,
            why);
    close (self->fan);
    close (self->dir);
    self->fan = self->dir = -1;
}

//  Walks the whole workspace and makes the index what the walk found. Returns 0, or -1
//  with *err set.
static int
s_rescan (cg_wstrack_t *self, cg_workspace_t *ws, cg_error_t **err)
{
    cg_ws_walk_t walk = {.dev = ws->dev, .keep_all = self->fan >= 0};
    if (cg_ws_walk (ws, &walk, err) < 0)
        return -1;
    if (self->fan >= 0 && walk.count - walk.files > S_OTHERS_MAX)
        s_stop_events (self, "too many unlisted names (control characters, too deep)");
    bool all = self->fan >= 0;
    zhashx_t *seen = zhashx_new ();
    for (size_t i = 0; i < walk.count; i++)
        if (all || walk.entries[i].kind == CG_WS_FILE)
            zhashx_insert (seen, walk.entries[i].rel, &walk.entries[i]);
    zlistx_t *gone = zlistx_new ();
    for (void *item = zhashx_first (self->index); item; item = zhashx_next (self->index))
        if (!zhashx_lookup (seen, zhashx_cursor (self->index)))
            zlistx_add_end (gone, cg_xstrdup (zhashx_cursor (self->index)));
    for (char *rel = zlistx_first (gone); rel; rel = zlistx_next (gone)) {
        s_drop (self, rel);
        free (rel);
    }
    zlistx_destroy (&gone);
    zhashx_destroy (&seen);
    for (size_t i = 0; i < walk.count; i++)
        if (all || walk.entries[i].kind == CG_WS_FILE)
            s_put (self, &walk.entries[i]);
    self->capped = walk.capped;
    self->walk_skipped = all ? 0 : walk.skipped;
    self->walk_deep = all ? false : walk.deep;
    self->overflow = self->stale = false;
    zhashx_purge (self->dirty);
    zhashx_purge (self->inodes);
    cg_ws_walk_free (&walk);
    return 0;
}

//  Records in the index what is at REL now (REL and what is below it), looked at with the
//  walk's rules for each directory on its way: a valid name, not a link, on the
//  workspace's device, neither too long nor too deep.
static void
s_look (cg_wstrack_t *self, cg_workspace_t *ws, const char *rel)
{
    cleanup_close int dir = openat (ws->fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    const char *start = rel, *slash;
    int depth = 0;
    while (dir >= 0 && (slash = strchr (start, '/'))) {
        cleanup_free char *name = cg_xstrndup (start, (size_t)(slash - start));
        struct stat st;
        if (!cg_ws_name_ok (name, strlen (name)) || (size_t)(slash - rel) > CG_WORKSPACE_PATH_MAX
            || depth + 1 >= CG_WORKSPACE_DEPTH_MAX)
            return;
        int child =
            openat (dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        close (dir);
        dir = child;
        if (dir >= 0 && (fstat (dir, &st) < 0 || st.st_dev != ws->dev))
            return;
        depth++;
        start = slash + 1;
    }
    if (dir < 0)
        return;
    cleanup_free char *prefix = cg_xstrndup (rel, start > rel ? (size_t)(start - rel - 1) : 0);
    cg_ws_walk_t walk = {.dev = ws->dev, .keep_all = true, .files = self->files};
    cg_ws_walk_entry (&walk, dir, prefix, start, depth);
    for (size_t i = 0; i < walk.count; i++)
        s_put (self, &walk.entries[i]);
    if (walk.capped)
        self->capped = true;
    cg_ws_walk_free (&walk);
}

//  Looks at REL again (s_look) after forgetting what the index said of it.
static void
s_refresh (cg_wstrack_t *self, cg_workspace_t *ws, const char *rel)
{
    size_t files = self->files;
    s_drop_tree (self, rel);
    s_look (self, ws, rel);
    //  A walk cut short at the file cap would now find a file it left out: walk again.
    if (self->capped && self->files < files)
        self->stale = true;
}

//  ---------------------------------------------------------------------------------------
//  Events

static void
s_forget_handle (cg_wstrack_t *self)
{
    free (self->handle);
    free (self->handle_rel);
    self->handle = self->handle_rel = NULL;
    if (self->handle_fd >= 0)
        close (self->handle_fd);
    self->handle_fd = -1;
}

//  The workspace-relative path of the directory HANDLE names ("" for the workspace), or
//  NULL when it is gone or outside the workspace (the package layer beside it).
static const char *
s_dir_rel (cg_wstrack_t *self, cg_workspace_t *ws, const struct file_handle *handle)
{
    size_t len = sizeof *handle + handle->handle_bytes;
    if (self->handle && len == self->handle_len && memcmp (self->handle, handle, len) == 0)
        return self->handle_rel;
    s_forget_handle (self);
    self->handle = cg_xmalloc (len);
    memcpy (self->handle, handle, len);
    self->handle_len = len;
    cleanup_close int fd =
        open_by_handle_at (self->dir, (struct file_handle *)self->handle, O_PATH | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat (fd, &st) < 0 || st.st_nlink == 0 || st.st_dev != ws->dev)
        return NULL;
    char link[64], path[8192];
    snprintf (link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink (link, path, sizeof path - 1);
    if (n <= 0 || (size_t)n == sizeof path - 1)
        return NULL;
    path[n] = '\0';
    size_t root_len = strlen (self->root);
    if (strncmp (path, self->root, root_len) != 0 || (path[root_len] && path[root_len] != '/')) {
        //  The package layer beside the workspace: a link made there to a workspace file
        //  writes it under a name outside (s_note).
        self->handle_fd = fd;
        fd = -1;
        return NULL;
    }
    if (path[root_len] == '\0')
        self->handle_rel = cg_xstrdup ("");
    else if (path[root_len] == '/')
        self->handle_rel = cg_xstrdup (path + root_len + 1);
    return self->handle_rel;
}

//  Notes the path an event names: NAME in the directory HANDLE.
static void
s_note (cg_wstrack_t *self, cg_workspace_t *ws, const struct file_handle *handle, const char *name)
{
    if (!*name || strcmp (name, ".") == 0)
        return;
    //  Untrusted: NAME is whatever sandboxed code named a file; it only says where to look
    //  again (s_look applies the walk's rules), and the pending paths are bounded.
    const char *dir = s_dir_rel (self, ws, handle);
    struct stat st;
    if (!dir && self->handle_fd >= 0
        && fstatat (self->handle_fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG (st.st_mode)
        && st.st_nlink > 1 && st.st_dev == ws->dev) {
        char key[32];
        snprintf (key, sizeof key, "%ju", (uintmax_t)st.st_ino);
        static char s_seen;
        zhashx_update (self->inodes, key, &s_seen);
        if (zhashx_size (self->inodes) > S_DIRTY_MAX)
            self->overflow = true;
    }
    if (!dir)
        return;
    cleanup_free char *rel = *dir ? cg_strdupf ("%s/%s", dir, name) : cg_xstrdup (name);
    static char s_mark;
    zhashx_update (self->dirty, rel, &s_mark);
    if (zhashx_size (self->dirty) > S_DIRTY_MAX)
        self->overflow = true;
}

//  Notes the paths the event of LEN bytes at EVENT names (its directory-handle-and-name
//  records; the event's metadata was checked by the caller).
static void
s_event (cg_wstrack_t *self, cg_workspace_t *ws, const char *event, size_t len)
{
    const char *at = event + FAN_EVENT_METADATA_LEN, *end = event + len;
    while (at + sizeof (struct fanotify_event_info_header) <= end) {
        const struct fanotify_event_info_header *header = (const void *)at;
        if (header->len < sizeof *header || at + header->len > end)
            break;
        if (header->info_type == FAN_EVENT_INFO_TYPE_DFID_NAME
            && header->len
                   > sizeof (struct fanotify_event_info_fid) + sizeof (struct file_handle)) {
            const struct fanotify_event_info_fid *fid = (const void *)at;
            const struct file_handle *handle = (const void *)fid->handle;
            const char *name = (const char *)handle->f_handle + handle->handle_bytes;
            if (name < at + header->len && memchr (name, '\0', (size_t)(at + header->len - name)))
                s_note (self, ws, handle, name);
        }
        at += header->len;
    }
}

//  Reads every event queued so far into the dirty paths (or the overflow flag).
static void
s_drain (cg_wstrack_t *self, cg_workspace_t *ws)
{
    char buffer[32768];
    s_forget_handle (self);
    for (;;) {
        ssize_t n = read (self->fan, buffer, sizeof buffer);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        //  Each event's metadata is copied out: the kernel aligns events to 4 bytes, and
        //  the metadata (a 64-bit mask) needs 8 (UBSan: a misaligned member access).
        size_t got = (size_t)n;
        for (size_t off = 0; got - off >= FAN_EVENT_METADATA_LEN;) {
            struct fanotify_event_metadata meta;
            memcpy (&meta, buffer + off, sizeof meta);
            if (meta.event_len < FAN_EVENT_METADATA_LEN || meta.event_len > got - off)
                break;
            if (meta.fd >= 0)
                close (meta.fd);
            if (meta.vers != FANOTIFY_METADATA_VERSION || (meta.mask & FAN_Q_OVERFLOW))
                self->overflow = true;
            else if (!self->overflow)
                s_event (self, ws, buffer + off, meta.event_len);
            off += meta.event_len;
        }
    }
}

//  Starts following WS's events when the kernel allows it: WS (or its parent) is the root
//  of a file system of its own (a filesystem mark on a shared one would see every other
//  writer's events too), and the server may mark it.
static void
s_start_events (cg_wstrack_t *self, cg_workspace_t *ws)
{
    if (atomic_load (&s_fanotify_off))
        return;
    struct statx self_x, parent_x;
    if (statx (ws->fd, "", AT_EMPTY_PATH, STATX_BASIC_STATS, &self_x) < 0
        || statx (ws->fd, "..", AT_SYMLINK_NOFOLLOW, STATX_BASIC_STATS, &parent_x) < 0)
        return;
    bool parent_same = parent_x.stx_dev_major == self_x.stx_dev_major
                       && parent_x.stx_dev_minor == self_x.stx_dev_minor;
    bool own = (self_x.stx_attributes & STATX_ATTR_MOUNT_ROOT)
               || (parent_same && (parent_x.stx_attributes & STATX_ATTR_MOUNT_ROOT));
    if (!own)
        return;
    int fan = fanotify_init (FAN_CLASS_NOTIF | FAN_CLOEXEC | FAN_NONBLOCK | FAN_REPORT_DFID_NAME,
                             O_RDONLY | O_CLOEXEC);
    cleanup_close int dir = openat (ws->fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    char link[64], path[4096];
    snprintf (link, sizeof link, "/proc/self/fd/%d", ws->fd);
    ssize_t n = readlink (link, path, sizeof path - 1);
    if (fan < 0 || dir < 0 || n <= 0 || (size_t)n == sizeof path - 1
        || fanotify_mark (fan, FAN_MARK_ADD | FAN_MARK_FILESYSTEM, S_EVENTS, dir, NULL) < 0) {
        cg_log (2, "workspace %s: no fanotify (%s); its changes are found by walking it",
                ws->host_dir, strerror (errno));
        if (fan >= 0)
            close (fan);
        return;
    }
    path[n] = '\0';
    self->root = cg_xstrdup (path);
    self->fan = fan;
    self->dir = dir;
    dir = -1;
}

//  ---------------------------------------------------------------------------------------
//  The tracker

cg_wstrack_t *
cg_wstrack_new (cg_workspace_t *ws, cg_error_t **err)
{
    cg_wstrack_t *self = cg_xcalloc (1, sizeof *self);
    self->fan = self->dir = self->handle_fd = -1;
    self->inodes = s_table (false);
    self->index = s_table (true);
    self->dirs = s_table (false);
    self->before = s_table (true);
    self->dirty = s_table (false);
    s_start_events (self, ws);
    if (!self->root)
        self->root = cg_xstrdup (ws->host_dir);
    if (s_rescan (self, ws, err) < 0) {
        cg_wstrack_destroy (&self);
        return NULL;
    }
    cg_wstrack_mark (self);
    return self;
}

void
cg_wstrack_destroy (cg_wstrack_t **self_p)
{
    cg_wstrack_t *self = *self_p;
    if (!self)
        return;
    if (self->fan >= 0) {
        close (self->fan);
        close (self->dir);
    }
    zhashx_destroy (&self->index);
    zhashx_destroy (&self->dirs);
    zhashx_destroy (&self->before);
    zhashx_destroy (&self->dirty);
    free (self->sorted);
    s_forget_handle (self);
    zhashx_destroy (&self->inodes);
    free (self->root);
    free (self);
    *self_p = NULL;
}

bool
cg_wstrack_live (const cg_wstrack_t *self)
{
    return self->fan >= 0;
}

//  Looks again at every file that shares its inode with a file of more than one link (or
//  one events named outside the workspace): a write through one name reports that name
//  only.
static void
s_refresh_linked (cg_wstrack_t *self, cg_workspace_t *ws)
{
    zhashx_t *inodes = self->inodes;
    static char s_mark;
    for (s_record_t *r = zhashx_first (self->index); r; r = zhashx_next (self->index))
        if (r->kind == CG_WS_FILE && r->nlink > 1) {
            char key[32];
            snprintf (key, sizeof key, "%ju", (uintmax_t)r->ino);
            zhashx_update (inodes, key, &s_mark);
        }
    zlistx_t *paths = zlistx_new ();
    for (s_record_t *r = zhashx_first (self->index); r; r = zhashx_next (self->index)) {
        char key[32];
        snprintf (key, sizeof key, "%ju", (uintmax_t)r->ino);
        if (r->kind == CG_WS_FILE && zhashx_lookup (inodes, key))
            zlistx_add_end (paths, cg_xstrdup (r->rel));
    }
    for (char *rel = zlistx_first (paths); rel; rel = zlistx_next (paths)) {
        if (!self->stale)
            s_refresh (self, ws, rel);
        free (rel);
    }
    zlistx_destroy (&paths);
    zhashx_purge (inodes);
}

//  Looks again at every path events named.
static void
s_refresh_dirty (cg_wstrack_t *self, cg_workspace_t *ws)
{
    zlistx_t *paths = zlistx_new ();
    for (void *item = zhashx_first (self->dirty); item; item = zhashx_next (self->dirty))
        zlistx_add_end (paths, cg_xstrdup (zhashx_cursor (self->dirty)));
    zhashx_purge (self->dirty);
    for (char *rel = zlistx_first (paths); rel; rel = zlistx_next (paths)) {
        if (!self->stale)
            s_refresh (self, ws, rel);
        free (rel);
    }
    zlistx_destroy (&paths);
    if ((self->linked > 0 || zhashx_size (self->inodes) > 0) && !self->stale)
        s_refresh_linked (self, ws);
}

int
cg_wstrack_sync (cg_wstrack_t *self, cg_workspace_t *ws, cg_error_t **err)
{
    if (self->fan >= 0) {
        s_drain (self, ws);
        if (!self->overflow)
            s_refresh_dirty (self, ws);
    }
    if (self->fan >= 0 && !self->overflow && !self->stale)
        return 0;
    bool overflowed = self->fan >= 0 && self->overflow;
    if (s_rescan (self, ws, err) < 0)
        return -1;
    if (overflowed) {
        self->rescanned = true;
        cg_log (2, "workspace %s: change tracking overflowed; walked it in full", self->root);
    }
    return 0;
}

void
cg_wstrack_mark (cg_wstrack_t *self)
{
    zhashx_purge (self->before);
    self->rescanned = false;
}

json_t *
cg_wstrack_changes (cg_wstrack_t *self, json_t **after, char **notice)
{
    size_t room = zhashx_size (self->before);
    const char **lists[3];
    size_t counts[3] = {0, 0, 0};
    for (int k = 0; k < 3; k++)
        lists[k] = cg_xcalloc (room ? room : 1, sizeof *lists[k]);
    *after = json_object ();
    for (s_old_t *old = zhashx_first (self->before); old; old = zhashx_next (self->before)) {
        const char *rel = zhashx_cursor (self->before);
        s_record_t *now = zhashx_lookup (self->index, rel);
        if (now && now->kind != CG_WS_FILE)
            now = NULL;
        int k = !old->present && now ? 0
                : old->present && now && (old->size != now->size || old->mtime_ns != now->mtime_ns)
                    ? 1
                : old->present && !now ? 2
                                       : -1;
        if (k < 0)
            continue;
        lists[k][counts[k]++] = rel;
        if (now)
            json_object_set_new (
                *after, rel, json_pack ("[I,I]", (json_int_t)now->size, (json_int_t)now->mtime_ns));
    }
    json_t *result = json_object ();
    json_object_set_new (result, "created", cg_ws_sorted_array (lists[0], counts[0]));
    json_object_set_new (result, "modified", cg_ws_sorted_array (lists[1], counts[1]));
    json_object_set_new (result, "deleted", cg_ws_sorted_array (lists[2], counts[2]));
    for (int k = 0; k < 3; k++)
        free (lists[k]);
    *notice = self->rescanned
                  ? cg_strdupf ("Files changed faster than cellgate could follow them one by one "
                                "(its event queue overflowed), so it walked " CG_WORKSPACE_MOUNT
                                " in full to find the created, modified and deleted files (at "
                                "most %d files are listed).",
                                CG_WORKSPACE_FILES_MAX)
                  : NULL;
    return result;
}

static int
s_compare_records (const void *a, const void *b)
{
    return strcmp ((*(s_record_t *const *)a)->rel, (*(s_record_t *const *)b)->rel);
}

json_t *
cg_wstrack_list (cg_wstrack_t *self, size_t offset, size_t limit)
{
    if (!self->sorted && offset < self->files && limit > 0) {
        self->sorted = cg_xcalloc (self->files ? self->files : 1, sizeof *self->sorted);
        size_t count = 0;
        for (s_record_t *r = zhashx_first (self->index); r; r = zhashx_next (self->index))
            if (r->kind == CG_WS_FILE)
                self->sorted[count++] = r;
        qsort (self->sorted, count, sizeof *self->sorted, s_compare_records);
    }
    json_t *artifacts = json_array ();
    for (size_t i = offset; i < self->files && i - offset < limit; i++)
        json_array_append_new (artifacts,
                               cg_ws_artifact (self->sorted[i]->rel, self->sorted[i]->size,
                                               self->sorted[i]->mtime_ns));
    bool truncated = self->capped || self->deep > 0 || self->walk_deep;
    return json_pack ("{s:o, s:b, s:I, s:I}", "artifacts", artifacts, "truncated", truncated,
                      "skipped", (json_int_t)(self->skipped + self->walk_skipped), "total",
                      (json_int_t)self->files);
}
