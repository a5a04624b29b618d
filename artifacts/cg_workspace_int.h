/*  cg_workspace_int — what cg_workspace.c, cg_wswalk.c (walks and listings) and
    cg_wstrack.c (the change tracker) share; not for other files. */
#ifndef CG_WORKSPACE_INT_H
#define CG_WORKSPACE_INT_H

#include "artifacts/cg_workspace.h"

#include <pthread.h>
#include <stdint.h>

typedef struct cg_wstrack_t cg_wstrack_t;

struct cg_workspace_t {
    int fd;               /* O_PATH fd of the workspace directory */
    dev_t dev;            /* its device; nothing below it may be on another */
    char *host_dir;       /* for messages */
    pthread_mutex_t lock; /* guards track */
    cg_wstrack_t *track;  /* its index of files, made on first use (NULL until then) */
};

//  Directory entries a walk examines before it gives up (bounds hostile trees of empty
//  directories, which the file cap alone would not).
#define CG_WS_SCAN_MAX 200000

//  What a walk records of a directory entry.
typedef enum {
    CG_WS_FILE,    /* a regular file, listed */
    CG_WS_SKIPPED, /* a name that cannot be shown safely (counted as skipped) */
    CG_WS_DEEP,    /* a directory too deep to enter (makes the listing truncated) */
} cg_ws_kind_t;

typedef struct {
    char *rel;
    cg_ws_kind_t kind;
    off_t size;
    int64_t mtime_ns;
    nlink_t nlink;
    ino_t ino;
} cg_ws_entry_t;

typedef struct {
    cg_ws_entry_t *entries;
    size_t count, capacity;
    size_t files;   /* regular files recorded (the cap counts these) */
    size_t scanned; /* directory entries examined */
    size_t skipped; /* names that cannot be shown safely */
    bool capped;    /* the file or scan cap cut the walk short */
    bool deep;      /* a directory was too deep to enter */
    bool stop;      /* stop walking (a cap was reached) */
    bool keep_all;  /* record CG_WS_SKIPPED and CG_WS_DEEP entries too */
    dev_t dev;
} cg_ws_walk_t;

/*  True when the LEN bytes at NAME may be shown: valid UTF-8 without control characters. */
bool cg_ws_name_ok (const char *name, size_t len);

/*  Classifies the entry NAME of the directory open at DIRFD whose path is PREFIX ("" for
    the workspace), DEPTH levels below the workspace, with the walk's rules (never
    following a link, staying on WALK->dev): records it in WALK and, for a directory that
    may be entered, walks it. */
void cg_ws_walk_entry (cg_ws_walk_t *walk, int dirfd, const char *prefix, const char *name,
                       int depth);

/*  Walks the directory open at FD (taken over and closed), whose path is PREFIX, DEPTH
    levels below the workspace. */
void cg_ws_walk_dir (cg_ws_walk_t *walk, int fd, const char *prefix, int depth);

/*  Walks the whole workspace into WALK (set up by the caller: dev, keep_all), its entries
    sorted by path. Returns 0, or -1 with *err set when the workspace cannot be read. */
int cg_ws_walk (cg_workspace_t *self, cg_ws_walk_t *walk, cg_error_t **err);

void cg_ws_walk_free (cg_ws_walk_t *walk);

/*  A listing's entry for file REL: {"path", "filename", "size_bytes", "mime_type",
    "mtime_ns"}. */
json_t *cg_ws_artifact (const char *rel, off_t size, int64_t mtime_ns);

/*  Sorts the COUNT strings at NAMES and returns them as a new JSON array. */
json_t *cg_ws_sorted_array (const char **names, size_t count);

//  The tracker (cg_wstrack.c); every call with SELF->lock held.

/*  Starts tracking SELF: an index of its files from one walk, kept up to date from
    fanotify events when the kernel allows it, else by a walk at each sync. Returns the
    tracker, or NULL with *err set when the workspace cannot be read. */
cg_wstrack_t *cg_wstrack_new (cg_workspace_t *self, cg_error_t **err);

void cg_wstrack_destroy (cg_wstrack_t **self_p);

/*  Brings TRACK's index up to date with what changed in SELF. Returns 0, or -1 with *err
    set. */
int cg_wstrack_sync (cg_wstrack_t *track, cg_workspace_t *self, cg_error_t **err);

/*  Forgets the changes recorded so far: cg_wstrack_changes reports from here on. */
void cg_wstrack_mark (cg_wstrack_t *track);

/*  The changes since the mark, as cg_workspace_changes documents. */
json_t *cg_wstrack_changes (cg_wstrack_t *track, json_t **after, char **notice);

/*  The listing page [OFFSET, OFFSET + LIMIT) as cg_workspace_list_page documents. */
json_t *cg_wstrack_list (cg_wstrack_t *track, size_t offset, size_t limit);

/*  True when TRACK follows events (fanotify), false when it walks at each sync. */
bool cg_wstrack_live (const cg_wstrack_t *track);

#endif
