/*  cg_execlog — the execution log: every execution as a JSON line in
    <dir>/executions-YYYY-MM-DD.jsonl (by the day it ran, UTC), each session's lifecycle in
    <dir>/session-<id>.jsonl, and an SQLite index (<dir>/index.sqlite: filter columns and an
    FTS5 trigram table over code and output) that is only a cache of the lines: missing or
    corrupt, it is rebuilt from them. Retention per category (successful executions,
    failed ones, session files) by a sweep the caller runs now and then. Names no
    protocol: entries are JSON objects in seed 002's layout, made by the caller.
    Single-threaded: one owner calls everything; a reader (cg_execlog_open_reader) is a
    second handle on the same directory for another thread, which only searches and reads. */
#ifndef CG_EXECLOG_H
#define CG_EXECLOG_H

#include "base/cg_error.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

typedef struct cg_execlog_t cg_execlog_t;

/*  What is recorded. */
typedef enum {
    CG_EXECLOG_FULL,     /* everything */
    CG_EXECLOG_METADATA, /* no code, stdin, stdout or stderr */
    CG_EXECLOG_OFF,      /* nothing */
} cg_execlog_mode_t;

/*  The store's settings. */
typedef struct {
    cg_execlog_mode_t mode;
    int success_days;  /* successful executions are kept this long */
    int failed_days;   /* failed and timed-out ones */
    int session_days;  /* session files, counted from their last line */
    size_t stream_cap; /* bytes of code, stdin, stdout, stderr, result kept per entry; 0: 1 MiB */
} cg_execlog_options_t;

/*  Returns the mode named NAME (full, metadata, off), or -1. */
int cg_execlog_mode_from_name (const char *name);

/*  Opens the log in DIR (created with its parents, mode 0700) with OPTIONS (copied). A
    missing or corrupt index is rebuilt from the lines (a corrupt one is kept aside as
    index.sqlite.corrupt). Returns the log, or NULL with *err set when DIR cannot be made
    or no index can be opened at all. Caller owns it. */
cg_execlog_t *cg_execlog_open (const char *dir, const cg_execlog_options_t *options,
                               cg_error_t **err);

/*  Opens a reader of LOG (borrowed; it must stay open as long): its own read-only
    connection to the index and its own directory handle, for one other thread than LOG's
    owner to call cg_execlog_search and cg_execlog_get on while the owner writes (the index
    is in WAL mode: a search sees what was committed when it began). The writing calls
    fail on it (EROFS). Returns it, or NULL with *err set. Caller owns it. */
cg_execlog_t *cg_execlog_open_reader (cg_execlog_t *log, cg_error_t **err);

/*  The writer's tickets, which let a reader wait for the writes queued before it asked
    (the writer's queue runs them in order): the queueing thread takes one per write
    (cg_execlog_ticket_take, returns it) and reads the last taken (cg_execlog_ticket_last);
    the writing thread says each done (cg_execlog_ticket_done, in order); another thread
    waits until TICKET is done (cg_execlog_ticket_wait, on the writer or one of its
    readers). */
uint64_t cg_execlog_ticket_take (cg_execlog_t *self);
uint64_t cg_execlog_ticket_last (cg_execlog_t *self);
void cg_execlog_ticket_done (cg_execlog_t *self, uint64_t ticket);
void cg_execlog_ticket_wait (cg_execlog_t *self, uint64_t ticket);

/*  Closes the log; sets *self_p to NULL. Safe on NULL. */
void cg_execlog_destroy (cg_execlog_t **self_p);

/*  Records the execution ENTRY (borrowed; an object with at least execution_id, and
    language, status, executed_at (ISO 8601 UTC; now when absent), session_id, owner,
    code, stdin, stdout, stderr, ...). In metadata mode the code and streams are dropped,
    in off mode nothing is written; streams longer than the cap are cut there and marked
    "<stream>_truncated_in_log": true. The line goes to the day's executions file (and a
    short "execution" line to the session's file when there is a session_id), then to the
    index. Returns 0, or -1 with *err set (a failed index update is logged, not failed:
    the line is written and the next rebuild finds it). */
int cg_execlog_record (cg_execlog_t *self, json_t *entry, cg_error_t **err);

/*  cg_execlog_record in two steps, for a caller that must know the line is in its file
    before the index has it (an answer waits for the line only; a crash between them leaves
    a line the next open indexes): writes the lines and sets *LINE_P to what the index
    needs (NULL in off mode or on failure), which cg_execlog_index_line takes. */
typedef struct cg_execlog_line_t cg_execlog_line_t;
int cg_execlog_record_line (cg_execlog_t *self, json_t *entry, cg_execlog_line_t **line_p,
                            cg_error_t **err);

/*  Indexes the line *LINE_P (taken: freed, *LINE_P set to NULL; nothing when NULL); a failed
    update is logged (the next rebuild finds the line). */
void cg_execlog_index_line (cg_execlog_t *self, cg_execlog_line_t **line_p);

/*  Frees a line not indexed; sets *LINE_P to NULL. Safe on NULL. */
void cg_execlog_line_destroy (cg_execlog_line_t **line_p);

/*  Appends the session lifecycle entry ENTRY (borrowed; "type" session_start,
    package_install or session_end, and a "session_id" that is a plain name) to the
    session's file, with "at" set to now when absent. Nothing in off mode. Returns 0, or
    -1 with *err set. */
int cg_execlog_session_event (cg_execlog_t *self, json_t *entry, cg_error_t **err);

/*  A search. Every field is optional (NULL / 0). */
typedef struct {
    const char *owner;    /* only this owner's executions; NULL: everyone's */
    const char *language; /* canonical */
    const char *status;   /* success, failed, timeout */
    const char *query;    /* text in the code or the output (case-insensitive substring) */
    const char *since;    /* ISO 8601 date or UTC time: executed at or after it */
    int limit;            /* 1..100; 0: 20 */
} cg_execlog_query_t;

/*  Returns {results: [{execution_id, session_id, language, code_preview, status,
    exit_code, error_preview, duration_ms, executed_at}] newest first, total_count}, or
    NULL with *err set (EINVAL for a bad since). Caller owns it. */
json_t *cg_execlog_search (cg_execlog_t *self, const cg_execlog_query_t *query, cg_error_t **err);

/*  Returns the whole entry of EXECUTION_ID as recorded (OWNER's only, unless OWNER is
    NULL), or NULL when there is none. Caller owns it. */
json_t *cg_execlog_get (cg_execlog_t *self, const char *execution_id, const char *owner);

/*  Deletes what is past its category's age at NOW: lines of successful executions older
    than success_days and of failed ones older than failed_days (a day's file is rewritten
    without them, or removed when empty), and session files whose last line is older
    than session_days; their index rows go too. Returns the number of entries and files
    removed, or -1 with *err set. */
int cg_execlog_sweep (cg_execlog_t *self, time_t now, cg_error_t **err);

/*  Rebuilds the index from the lines (what cg_execlog_open does when it must). Returns
    the number of executions indexed, or -1 with *err set. */
int cg_execlog_rebuild (cg_execlog_t *self, cg_error_t **err);

#endif
