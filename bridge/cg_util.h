/*  cg_util — small helpers shared by every module: memory, strings, time, ids, files. */
#ifndef CG_UTIL_H
#define CG_UTIL_H

#include "cg_error.h"
#include "cg_log.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/types.h>
#include <unistd.h>

/*  Allocation that aborts on out-of-memory (czmq, crun and bubblewrap do the same). */
void *cg_xmalloc (size_t size);
void *cg_xcalloc (size_t count, size_t size);
void *cg_xrealloc (void *ptr, size_t size);
char *cg_xstrdup (const char *s);
char *cg_xstrndup (const char *s, size_t n);

/*  Returns a new printf-formatted string. Caller owns the result. */
char *cg_strdupf (const char *fmt, ...) __attribute__ ((format (printf, 1, 2)));
char *cg_vstrdupf (const char *fmt, va_list args) __attribute__ ((format (printf, 1, 0)));

/*  A NULL-terminated array of strings (an argv or an environment). cg_strv_new returns
    one with room for COUNT strings, all NULL; cg_strv_count returns how many STRV holds
    (0 for NULL); cg_strv_free frees STRV and its strings (NULL is fine). */
char **cg_strv_new (size_t count);
size_t cg_strv_count (const char *const *strv);
void cg_strv_free (char **strv);

/*  Writes VALUE to OUT as a person would: a whole number in full ("1048576", not
    "1.04858e+06"), any other in the shortest of up to 15 significant digits ("0.01").
    Returns OUT. */
const char *cg_number_text (double value, char out[32]);

/*  Monotonic clock in microseconds. */
int64_t cg_now_us (void);

/*  Fills BUF with 2*NBYTES lowercase hex characters from libsodium's CSPRNG and a NUL.
    BUF must hold 2*NBYTES+1 bytes. */
void cg_random_hex (char *buf, size_t nbytes);

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

/*  Writes the current UTC time into OUT: ISO 8601 ("2026-11-23T17:20:00Z"), or its basic
    form ("20261123T172000Z") when BASIC. */
void cg_utc_now (char out[32], bool basic);

/*  P without its const, for the C APIs whose parameters lack a const they honour (execve's
    argv, MHD's buffers): visible at each use, and no warning from -Wcast-qual. */
#define CG_UNCONST(p) ((void *)(uintptr_t)(p))

/*  Cleanup helpers for __attribute__((cleanup)) locals (crun's cleanup_free). */
/*  Runs ARGV (argv[0] an absolute path) to completion with stdin from /dev/null, in ENVP
    (NULL: this process's environment). With OUT and ERR_TEXT both NULL its stdout and
    stderr go to /dev/null; otherwise each is captured (at most CG_RUN_CAPTURE_MAX bytes
    kept) into *OUT and *ERR_TEXT, NUL-terminated, for the caller to free (a NULL one of
    the two is read and dropped). Returns the wait status, or -1 with *err set when it
    could not be started. */
#define CG_RUN_CAPTURE_MAX (4 * 1024 * 1024)
int cg_run (char *const argv[], char *const envp[], char **out, char **err_text, cg_error_t **err);

void cg_cleanup_free (void *ptr);
void cg_cleanup_close (int *fd);
#define cleanup_free __attribute__ ((cleanup (cg_cleanup_free)))
#define cleanup_close __attribute__ ((cleanup (cg_cleanup_close)))

#endif
