/*  cg_workspace — safe host-side access to a session's workspace (/mnt/data inside the
    sandbox): path rules, reads, uploads, listings and created/modified/deleted scans that
    never follow a link the sandboxed code planted. */
#ifndef CG_WORKSPACE_H
#define CG_WORKSPACE_H

#include "base/cg_error.h"
#include "base/cg_limits.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

/*  Limits on client paths: one component, and the whole canonical relative path. */
#define CG_WORKSPACE_NAME_MAX 255
#define CG_WORKSPACE_PATH_MAX 1024

/*  Limits on a listing or snapshot walk. */
#define CG_WORKSPACE_DEPTH_MAX 32
#define CG_WORKSPACE_FILES_MAX 10000

typedef struct cg_workspace_t cg_workspace_t;

/*  Opens the workspace directory HOST_DIR (O_PATH, without following a symlink at its last
    component) and keeps its fd for every later access. Returns a new workspace the caller
    owns (destroy with cg_workspace_destroy), or NULL with *err set: ENOENT when HOST_DIR is
    missing, ELOOP when it is a symbolic link, ENOTDIR when it is not a directory. */
cg_workspace_t *cg_workspace_open (const char *host_dir, cg_error_t **err);

/*  Closes the workspace fd, frees *self_p and sets it to NULL. Safe on NULL. */
void cg_workspace_destroy (cg_workspace_t **self_p);

/*  Turns a client path, either "/mnt/data/<rel>" or a relative "<rel>", into the canonical
    relative path: no leading slash, no "." or empty components, no trailing slash. Returns
    the new string (caller owns the result), or NULL with *err set to EINVAL and a message
    saying why when PATH is empty, absolute outside /mnt/data, /mnt/data itself, has a ".."
    component, a NUL, a control character (below 0x20, or 0x7f) or invalid UTF-8, a
    component longer than 255 bytes, or a canonical form longer than 1024 bytes. */
char *cg_workspace_normalize (const char *path, cg_error_t **err);

/*  Same as cg_workspace_normalize for the LEN bytes at PATH, which need not end in NUL; an
    embedded NUL is rejected with EINVAL. */
char *cg_workspace_normalize_len (const char *path, size_t len, cg_error_t **err);

/*  Checks an upload's file name with the rules of cg_workspace_normalize, and also rejects
    a name that ends in "/" or "/." (it would name a directory). Subdirectories are allowed
    ("in/sales.csv"). Returns the canonical relative path (caller owns the result), or NULL
    with *err set to EINVAL. */
char *cg_workspace_sanitize_filename (const char *name, cg_error_t **err);

/*  Opens the regular file REL (a canonical relative path) below the workspace with FLAGS
    (O_RDONLY, O_WRONLY or O_RDWR, optionally O_APPEND or O_TRUNC; never O_CREAT — use
    cg_workspace_write to create files). The file is opened with openat2 and RESOLVE_BENEATH,
    RESOLVE_NO_SYMLINKS, RESOLVE_NO_MAGICLINKS and RESOLVE_NO_XDEV (or an equivalent
    O_NOFOLLOW walk on kernels without openat2), non-blocking so that a FIFO never hangs the
    caller. Fills *ST when ST is not NULL and the file could be opened. Returns an fd the
    caller owns (close-on-exec, blocking again), or -1 with *err set: ELOOP when any
    component is a symbolic link, ENOENT when it is missing, EISDIR for a directory, EINVAL
    for anything else that is not a regular file or for a non-canonical REL, EXDEV when the
    path crosses a mount point. */
int cg_workspace_open_file (cg_workspace_t *self, const char *rel, int flags, struct stat *st,
                            cg_error_t **err);

/*  Reads the whole regular file REL into a new NUL-terminated buffer and stores its length
    in *LEN (when not NULL). Fails with EFBIG when the file is larger than MAX bytes — *ST
    (when not NULL) is still filled so the caller can report the size — or when it grows
    past MAX while being read. Returns the buffer (caller owns the result), or NULL with
    *err set as for cg_workspace_open_file. */
char *cg_workspace_read (cg_workspace_t *self, const char *rel, size_t max, size_t *len,
                         struct stat *st, cg_error_t **err);

/*  Writes LEN bytes of DATA to REL (a canonical relative path), creating missing parent
    directories (mode 0755) without following symlinks. When OVERWRITE is false the file
    must not exist yet; when true the data goes to a temporary file in the same directory
    that is then renamed over REL, so a symlink planted at REL is replaced, never followed.
    New files (mode 0644) and directories are owned by UID:GID ((uid_t) -1 and (gid_t) -1
    keep the server's own). Returns 0, or -1 with *err set: EEXIST when REL exists and
    OVERWRITE is false, EISDIR when REL is a directory, ELOOP when a parent is a symbolic
    link, ENOTDIR when a parent is not a directory, EINVAL for a non-canonical REL. */
int cg_workspace_write (cg_workspace_t *self, const char *rel, const void *data, size_t len,
                        bool overwrite, uid_t uid, gid_t gid, cg_error_t **err);

/*  Writes a new file's content, the fd of which it is given (open for writing, at offset
    0). Returns 0, or -errno (the file is then removed). */
typedef int (cg_workspace_fill_fn) (int fd, void *arg);

/*  As cg_workspace_write, with the content written by FILL (with ARG) straight into the
    new file: a stream written as it is made, never held whole in memory. */
int cg_workspace_write_with (cg_workspace_t *self, const char *rel, cg_workspace_fill_fn *fill,
                             void *arg, bool overwrite, uid_t uid, gid_t gid, cg_error_t **err);

/*  Lists the regular files below the workspace, never following symlinks, at most 32
    directories deep and at most 10000 files. Returns a new object the caller owns:
    {"artifacts": [{"path": "/mnt/data/<rel>", "filename", "size_bytes", "mime_type",
    "mtime_ns"}, ...] sorted by path, "truncated": true when a limit cut the walk short,
    "skipped": how many names were left out because they are not valid UTF-8, contain a
    control character or make a path longer than 1024 bytes}. Returns NULL with *err set
    when the workspace itself cannot be read. Served from the workspace's index of files
    (made by one walk on first use, then kept up to date: see cg_workspace_changes). */
json_t *cg_workspace_list (cg_workspace_t *self, cg_error_t **err);

/*  As cg_workspace_list, with only the artifacts [OFFSET, OFFSET + LIMIT) of the sorted
    list, and "total": how many there are in all. Costs O(changes since the last call +
    LIMIT), not O(files), while the index follows events. */
json_t *cg_workspace_list_page (cg_workspace_t *self, size_t offset, size_t limit,
                                cg_error_t **err);

/*  Starts a change set: brings the workspace's index up to date (silently: what changed
    before this call is not reported) and forgets the changes recorded so far. Returns 0, or
    -1 with *err set when the workspace cannot be read. */
int cg_workspace_mark (cg_workspace_t *self, cg_error_t **err);

/*  The changes since the last cg_workspace_mark, exactly what cg_workspace_diff of a
    cg_workspace_snapshot taken then and one taken now would say: a new object the caller
    owns, {"created": [rel, ...], "modified": [...], "deleted": [...]}, each sorted; and in
    *AFTER a new object {rel: [size, mtime_ns]} of the created and modified files. The index
    follows fanotify events where the kernel allows it (the workspace is the root, or the
    child of the root, of a file system of its own, and the server has CAP_SYS_ADMIN), so
    this costs O(changes); elsewhere it walks the workspace. When the events overflowed
    (the kernel's queue or the tracker's bound on pending paths) it walks the workspace in
    full and sets *NOTICE to a sentence saying so (caller frees; else NULL). Returns NULL
    with *err set when the workspace cannot be read. */
json_t *cg_workspace_changes (cg_workspace_t *self, json_t **after, char **notice,
                              cg_error_t **err);

/*  True when the workspace's index follows events (fanotify), false when it walks. */
bool cg_workspace_tracked (cg_workspace_t *self);

/*  The full-walk reference the index is held to (the server itself no longer walks per
    run: cg_workspace_mark and cg_workspace_changes); unit_wstrack, unit_workspace and
    bench_wstrack compare against it. Takes a snapshot of the same walk as cg_workspace_list,
    walking the whole workspace: a new object {rel: [size, mtime_ns]} the caller owns, or
    NULL with *err set. */
json_t *cg_workspace_snapshot (cg_workspace_t *self, cg_error_t **err);

/*  Compares two snapshots (NULL counts as empty). Returns a new object the caller owns:
    {"created": [rel, ...], "modified": [rel, ...], "deleted": [rel, ...]}, each sorted;
    a file is modified when its size or mtime changed. */
json_t *cg_workspace_diff (json_t *before, json_t *after);

/*  Returns the MIME type for FILENAME's extension (case-insensitive), or
    "application/octet-stream" when it is unknown. The result is a static string. */
const char *cg_mime_type (const char *filename);

/*  For tests: when ENABLED is false, use the O_NOFOLLOW walk as if the kernel lacked
    openat2. Not for production use; not thread-safe against concurrent accesses. */
void cg_workspace_use_openat2 (bool enabled);

/*  For tests: when ENABLED is false, indexes made from now on walk at each call instead of
    following fanotify events. */
void cg_workspace_use_fanotify (bool enabled);

#endif
