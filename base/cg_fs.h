/*  cg_fs — file operations safe in trees that untrusted code can write. */
#ifndef CG_FS_H
#define CG_FS_H

#include "base/cg_error.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/*  Writes LEN bytes of DATA to NAME (one path component) in the directory DIR_FD, with
    MODE and owned by UID:GID ((uid_t) -1: the caller's), replacing what was there,
    atomically: a temporary file with a random name is created with O_EXCL|O_NOFOLLOW|
    O_NONBLOCK, given its owner and mode through its fd, filled, and renamed over NAME.
    Safe in a directory that untrusted code can write: never follows or opens a link or
    FIFO planted at either name and never blocks on one. Returns 0, or -1 with *err set. */
int cg_write_file_at (int dir_fd, const char *name, const void *data, size_t len, int mode,
                      uid_t uid, gid_t gid, cg_error_t **err);

/*  Writes all LEN bytes of DATA to FD, going on after short writes and EINTR. Returns 0,
    or -errno (-EIO where write(2) wrote nothing). */
int cg_write_all (int fd, const void *data, size_t len);

/*  cg_write_file_at in PATH's directory (opened by path: for directories only the host
    can write), owned by the caller. Returns 0, or -1 with *err set. */
int cg_write_file (const char *path, const void *data, size_t len, int mode, cg_error_t **err);

/*  Reads at most MAX bytes of PATH into a new NUL-terminated buffer; *len_p gets the
    length when not NULL. Returns NULL with *err set on failure or when the file is
    larger than MAX. Caller owns the result. */
char *cg_read_file (const char *path, size_t max, size_t *len_p, cg_error_t **err);

/*  Creates DIR and its parents with MODE (like mkdir -p). Returns 0 or -1 with *err. */
int cg_mkdir_p (const char *dir, int mode, cg_error_t **err);

/*  Removes PATH and everything below it, for trees that untrusted code made and may still
    be changing. Returns 0 when PATH is gone (a missing PATH is already gone), or -1 with
    *err set to the first failure, naming its path below PATH.
    - Refuses NULL, "", "/", any path that ends in "." or ".." and any directory that is
      the root (such as "//"): -1, nothing touched.
    - PATH up to its last component is resolved as usual; the last component (trailing
      slashes ignored) and everything below it is never followed: a link is unlinked.
    - Never crosses into another file system: a directory whose device is not PATH's is
      a mount point, left as it is, and a failure.
    - Goes on past what cannot be removed and removes all the rest, then fails.
    - Any depth and any number of entries, with at most four fds open at once (one
      directory open at a time; it climbs back up through "..", checked against the
      device and inode recorded on the way down). When a directory turns out to have
      moved, it stops and fails rather than remove what may not be below PATH. */
int cg_rm_rf (const char *path, cg_error_t **err);

/*  Reads PATH as a JSON object of at most MAX bytes. Returns a new reference, or NULL when
    it is missing, larger, not JSON or not an object. */
json_t *cg_read_json_object (const char *path, size_t max);

/*  Writes JSON (stolen) compactly to NAME in DIR with MODE, atomically (cg_write_file).
    Returns 0, or -1 with *err set. */
int cg_write_json (const char *dir, const char *name, json_t *json, int mode, cg_error_t **err);

#endif
