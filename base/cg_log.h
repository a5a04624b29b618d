/*  cg_log — the server's log: one line per message, timestamped (UTC, milliseconds), as
    console text or as a JSON object, to stderr or a file; structured records carry fields.
    A shared header (cg_util.h includes it): it includes nothing of the project above it. */
#ifndef CG_LOG_H
#define CG_LOG_H

#include "base/cg_error.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/*  Levels: 0 error, 1 warn, 2 info, 3 debug. */

/*  Logs the printf-formatted message at LEVEL. Messages above the level set by
    cg_log_set_level are not written (the thread's hook still gets them). */
void cg_log (int level, const char *fmt, ...) __attribute__ ((format (printf, 2, 3)));

/*  cg_log of a record with FIELDS (a JSON object, borrowed): in the json format they are
    members of the line's object, in the console format key=value pairs after the message
    (a string value with spaces, quotes or '=' is written as a JSON string). Records are
    the operator's: they are written to the log only, never handed to the thread's hook
    (which forwards lines to MCP clients). */
void cg_log_fields (int level, const json_t *fields, const char *fmt, ...)
    __attribute__ ((format (printf, 3, 4)));

void cg_log_set_level (int level);

/*  True when lines of LEVEL are written (for work done only to be logged). */
bool cg_log_enabled (int level);

/*  Returns the level of NAME: error, warn (or warning), info or debug, in any case; -1
    when NAME is none of them. */
int cg_log_level_from_name (const char *name);

/*  Chooses the format of the lines written from now on: JSON true, one JSON object per
    line ({"ts", "level", "msg", fields...}); false, console text
    ("<ts> cellgate <level>: <msg> key=value..."). Console is the default. Set before the
    server starts its threads. */
void cg_log_set_json (bool json);

/*  Appends the lines written from now on to PATH (created 0640 when missing) instead of
    stderr; NULL: back to stderr. Stdout is never written. Set before the server starts
    its threads. Returns 0, or -1 with *err set (the log stays where it was). */
int cg_log_set_file (const char *path, cg_error_t **err);

/*  Returns one line (no newline) of the message MESSAGE at LEVEL with FIELDS (borrowed,
    may be NULL), stamped TS, in the json (JSON) or console format. MESSAGE may hold any
    bytes: invalid UTF-8 is replaced. Caller owns the result. */
char *cg_log_line (const char *ts, int level, const char *message, const json_t *fields, bool json);

/*  Writes the current UTC time with milliseconds into OUT: "2026-11-23T17:20:00.123Z". */
void cg_log_timestamp (char out[32]);

/*  Also hands every message logged on the calling thread to FN (with ARG; NULL: none),
    whatever the written level (records with fields excepted): MESSAGE is the message
    alone, without timestamp and level. Each thread has its own hook (the
    server's main loop queues its own lines; a runner sends its lines to the main loop as
    messages), so no state is shared between threads. What FN itself logs does not reach
    FN. */
typedef void (cg_log_hook_fn) (void *arg, int level, const char *message);
void cg_log_set_hook (cg_log_hook_fn *fn, void *arg);

#endif
