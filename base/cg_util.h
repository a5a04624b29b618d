/*  cg_util — small helpers shared by every module: memory, strings, time, ids, cleanup (files: cg_fs.h; helper programs: cg_proc.h). */
#ifndef CG_UTIL_H
#define CG_UTIL_H

#include "base/cg_error.h"
#include "base/cg_log.h"

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

/*  True when NAME (may be NULL) is 1 to MAX bytes of ASCII letters and digits and the
    characters of EXTRA, starting with a letter or digit: a name that becomes a file name or
    an id (a script, a session id, a language). */
bool cg_valid_name (const char *name, size_t max, const char *extra);

/*  Writes the current UTC time into OUT: ISO 8601 ("2026-11-23T17:20:00Z"), or its basic
    form ("20261123T172000Z") when BASIC. */
void cg_utc_now (char out[32], bool basic);

/*  P without its const, for the C APIs whose parameters lack a const they honour (execve's
    argv, MHD's buffers): visible at each use, and no warning from -Wcast-qual. */
#define CG_UNCONST(p) ((void *)(uintptr_t)(p))

/*  Cleanup helpers for __attribute__((cleanup)) locals (crun's cleanup_free). */
void cg_cleanup_free (void *ptr);
void cg_cleanup_close (int *fd);
//  CG_SANITIZED: 1 in a build with AddressSanitizer (gcc's -fsanitize=address defines
//  __SANITIZE_ADDRESS__; clang 14's says it with __has_feature), else 0.
#if defined(__SANITIZE_ADDRESS__)
#define CG_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CG_SANITIZED 1
#endif
#endif
#ifndef CG_SANITIZED
#define CG_SANITIZED 0
#endif

#define cleanup_free __attribute__ ((cleanup (cg_cleanup_free)))
#define cleanup_close __attribute__ ((cleanup (cg_cleanup_close)))

#endif
