/*  cg_wswalk — walks of a workspace (never following a link, staying on its file system,
    within the file, entry and depth limits), the listings and change reports served from
    its tracker's index, and the full-walk snapshots and diffs they must match. */
#define _GNU_SOURCE
#include "artifacts/cg_workspace_int.h"

#include "base/cg_util.h"

#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

//  ---------------------------------------------------------------------------------------
//  Walks

//  Appends an entry of KIND for *REL (taken over) to WALK, with ST's size and time for a
//  file. Skipped names and deep directories are kept only when WALK->keep_all is set.
static void
s_record (cg_ws_walk_t *walk, char **rel, cg_ws_kind_t kind, const struct stat *st)
{
    if (kind != CG_WS_FILE && !walk->keep_all)
        return;
    if (walk->count == walk->capacity) {
        walk->capacity = walk->capacity ? walk->capacity * 2 : 64;
        walk->entries = cg_xrealloc (walk->entries, walk->capacity * sizeof *walk->entries);
    }
    cg_ws_entry_t *item = &walk->entries[walk->count++];
    *item = (cg_ws_entry_t){.rel = *rel, .kind = kind};
    *rel = NULL;
    if (st) {
        item->size = st->st_size;
        item->mtime_ns = (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
        item->nlink = st->st_nlink;
        item->ino = st->st_ino;
    }
}

void
cg_ws_walk_entry (cg_ws_walk_t *walk, int dirfd, const char *prefix, const char *name, int depth)
{
    //  Untrusted: names come from sandboxed code and end up in JSON and messages.
    size_t name_len = strlen (name);
    cleanup_free char *rel = *prefix ? cg_strdupf ("%s/%s", prefix, name) : cg_xstrdup (name);
    if (!cg_ws_name_ok (name, name_len)) {
        walk->skipped++;
        s_record (walk, &rel, CG_WS_SKIPPED, NULL);
        return;
    }
    struct stat st;
    if (fstatat (dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 || st.st_dev != walk->dev)
        return;
    if (!S_ISREG (st.st_mode) && !S_ISDIR (st.st_mode))
        return;
    if (strlen (rel) > CG_WORKSPACE_PATH_MAX) {
        walk->skipped++;
        s_record (walk, &rel, CG_WS_SKIPPED, NULL);
        return;
    }
    if (S_ISDIR (st.st_mode)) {
        if (depth + 1 >= CG_WORKSPACE_DEPTH_MAX) {
            walk->deep = true;
            s_record (walk, &rel, CG_WS_DEEP, NULL);
            return;
        }
        int child =
            openat (dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        if (child >= 0)
            cg_ws_walk_dir (walk, child, rel, depth + 1);
        return;
    }
    if (walk->files >= CG_WORKSPACE_FILES_MAX) {
        walk->capped = walk->stop = true;
        return;
    }
    walk->files++;
    s_record (walk, &rel, CG_WS_FILE, &st);
}

void
cg_ws_walk_dir (cg_ws_walk_t *walk, int fd, const char *prefix, int depth)
{
    DIR *dir = fdopendir (fd);
    if (!dir) {
        close (fd);
        return;
    }
    struct dirent *entry;
    while (!walk->stop && (entry = readdir (dir))) {
        const char *name = entry->d_name;
        if (strcmp (name, ".") == 0 || strcmp (name, "..") == 0)
            continue;
        if (++walk->scanned > CG_WS_SCAN_MAX) {
            walk->capped = walk->stop = true;
            break;
        }
        cg_ws_walk_entry (walk, dirfd (dir), prefix, name, depth);
    }
    closedir (dir);
}

static int
s_compare_entries (const void *a, const void *b)
{
    return strcmp (((const cg_ws_entry_t *)a)->rel, ((const cg_ws_entry_t *)b)->rel);
}

int
cg_ws_walk (cg_workspace_t *self, cg_ws_walk_t *walk, cg_error_t **err)
{
    int fd = openat (self->fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return cg_error_set (err, errno, "open workspace %s: %s", self->host_dir, strerror (errno));
    cg_ws_walk_dir (walk, fd, "", 0);
    if (walk->count > 1)
        qsort (walk->entries, walk->count, sizeof *walk->entries, s_compare_entries);
    return 0;
}

void
cg_ws_walk_free (cg_ws_walk_t *walk)
{
    for (size_t i = 0; i < walk->count; i++)
        free (walk->entries[i].rel);
    free (walk->entries);
    walk->entries = NULL;
    walk->count = walk->capacity = 0;
}

json_t *
cg_ws_artifact (const char *rel, off_t size, int64_t mtime_ns)
{
    const char *slash = strrchr (rel, '/');
    const char *filename = slash ? slash + 1 : rel;
    cleanup_free char *path = cg_strdupf ("%s/%s", CG_WORKSPACE_MOUNT, rel);
    json_t *artifact = json_object ();
    json_object_set_new (artifact, "path", json_string (path));
    json_object_set_new (artifact, "filename", json_string (filename));
    json_object_set_new (artifact, "size_bytes", json_integer ((json_int_t)size));
    json_object_set_new (artifact, "mime_type", json_string (cg_mime_type (filename)));
    json_object_set_new (artifact, "mtime_ns", json_integer ((json_int_t)mtime_ns));
    return artifact;
}

//  ---------------------------------------------------------------------------------------
//  Listings and changes, from the tracker's index

//  The tracker of SELF (lock held), made on first use. Returns NULL with *err set when the
//  workspace cannot be read.
static cg_wstrack_t *
s_track (cg_workspace_t *self, cg_error_t **err)
{
    if (!self->track)
        self->track = cg_wstrack_new (self, err);
    else if (cg_wstrack_sync (self->track, self, err) < 0)
        return NULL;
    return self->track;
}

json_t *
cg_workspace_list_page (cg_workspace_t *self, size_t offset, size_t limit, cg_error_t **err)
{
    assert (self);
    pthread_mutex_lock (&self->lock);
    cg_wstrack_t *track = s_track (self, err);
    json_t *result = track ? cg_wstrack_list (track, offset, limit) : NULL;
    pthread_mutex_unlock (&self->lock);
    return result;
}

json_t *
cg_workspace_list (cg_workspace_t *self, cg_error_t **err)
{
    json_t *result = cg_workspace_list_page (self, 0, SIZE_MAX, err);
    json_object_del (result, "total");
    return result;
}

int
cg_workspace_mark (cg_workspace_t *self, cg_error_t **err)
{
    assert (self);
    pthread_mutex_lock (&self->lock);
    cg_wstrack_t *track = s_track (self, err);
    if (track)
        cg_wstrack_mark (track);
    pthread_mutex_unlock (&self->lock);
    return track ? 0 : -1;
}

json_t *
cg_workspace_changes (cg_workspace_t *self, json_t **after, char **notice, cg_error_t **err)
{
    assert (self && after && notice);
    *after = NULL;
    *notice = NULL;
    pthread_mutex_lock (&self->lock);
    cg_wstrack_t *track = s_track (self, err);
    json_t *result = track ? cg_wstrack_changes (track, after, notice) : NULL;
    pthread_mutex_unlock (&self->lock);
    return result;
}

bool
cg_workspace_tracked (cg_workspace_t *self)
{
    assert (self);
    pthread_mutex_lock (&self->lock);
    bool live = self->track && cg_wstrack_live (self->track);
    pthread_mutex_unlock (&self->lock);
    return live;
}

//  ---------------------------------------------------------------------------------------
//  Full-walk snapshots and diffs

json_t *
cg_workspace_snapshot (cg_workspace_t *self, cg_error_t **err)
{
    assert (self);
    cg_ws_walk_t walk = {.dev = self->dev};
    if (cg_ws_walk (self, &walk, err) < 0)
        return NULL;
    json_t *result = json_object ();
    for (size_t i = 0; i < walk.count; i++) {
        const cg_ws_entry_t *item = &walk.entries[i];
        json_object_set_new (
            result, item->rel,
            json_pack ("[I,I]", (json_int_t)item->size, (json_int_t)item->mtime_ns));
    }
    cg_ws_walk_free (&walk);
    return result;
}

static int
s_compare_strings (const void *a, const void *b)
{
    return strcmp (*(const char *const *)a, *(const char *const *)b);
}

json_t *
cg_ws_sorted_array (const char **names, size_t count)
{
    if (count > 1)
        qsort (names, count, sizeof *names, s_compare_strings);
    json_t *array = json_array ();
    for (size_t i = 0; i < count; i++)
        json_array_append_new (array, json_string (names[i]));
    return array;
}

json_t *
cg_workspace_diff (json_t *before, json_t *after)
{
    size_t room = json_object_size (before) + json_object_size (after);
    cleanup_free const char **created = cg_xcalloc (room, sizeof *created);
    cleanup_free const char **modified = cg_xcalloc (room, sizeof *modified);
    cleanup_free const char **deleted = cg_xcalloc (room, sizeof *deleted);
    size_t created_count = 0, modified_count = 0, deleted_count = 0;
    const char *key;
    json_t *value;
    json_object_foreach (after, key, value)
    {
        json_t *old = json_object_get (before, key);
        if (!old)
            created[created_count++] = key;
        else if (!json_equal (old, value))
            modified[modified_count++] = key;
    }
    json_object_foreach (before, key, value)
    {
        if (!json_object_get (after, key))
            deleted[deleted_count++] = key;
    }
    json_t *result = json_object ();
    json_object_set_new (result, "created", cg_ws_sorted_array (created, created_count));
    json_object_set_new (result, "modified", cg_ws_sorted_array (modified, modified_count));
    json_object_set_new (result, "deleted", cg_ws_sorted_array (deleted, deleted_count));
    return result;
}
