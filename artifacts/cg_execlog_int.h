/*  cg_execlog_int — what the execution log's two halves share: cg_execlog.c (the lines,
    search, retention) and cg_execlog_index.c (the SQLite index). Internal to them. */
#ifndef CG_EXECLOG_INT_H
#define CG_EXECLOG_INT_H

#include "artifacts/cg_execlog.h"

#include <czmq.h>
#include <pthread.h>
#include <stdint.h>
#include <sqlite3.h>
#include <sys/types.h>

#define CG_EXECLOG_INDEX "index.sqlite"

struct cg_execlog_t {
    char *dir;
    int dir_fd;
    cg_execlog_options_t options;
    sqlite3 *db;
    sqlite3_stmt *insert;     /* a row of executions */
    sqlite3_stmt *insert_fts; /* its text */
    bool reader;              /* a second handle that only searches and reads (no statements) */
    cg_execlog_t *writer;     /* a reader's writer (borrowed), else NULL */
    /*  The writer's tickets (cg_execlog_ticket_*): how many writes were queued, and the
        last one done; DONE under LOCK, signalled by WRITTEN. */
    uint64_t queued;
    uint64_t done;
    pthread_mutex_t lock;
    pthread_cond_t written;
};

/*  ENTRY's string KEY, or NULL. */
const char *cg_execlog_str (json_t *entry, const char *key);

/*  Sets *err to the index's last error while doing WHAT; returns -1. */
int cg_execlog_db_error (cg_execlog_t *self, cg_error_t **err, const char *what);

/*  Runs SQL on the index. Returns 0 or -1 with *err. */
int cg_execlog_exec (cg_execlog_t *self, const char *sql, cg_error_t **err);

/*  The log directory's file names starting with PREFIX, sorted. Caller destroys. */
zlistx_t *cg_execlog_files (cg_execlog_t *self, const char *prefix);

/*  True when NAME is a day's executions file (executions-YYYY-MM-DD.jsonl); *DAY its day. */
bool cg_execlog_is_day_file (const char *name, time_t *day);

/*  Opens the index, rebuilding it from the lines when it is missing, corrupt or old, and
    indexing the lines a crash left unindexed. Returns 0 or -1 with *err. */
int cg_execlog_index_open (cg_execlog_t *self, cg_error_t **err);

/*  Closes the index (safe when closed). */
void cg_execlog_index_close (cg_execlog_t *self);

/*  Indexes ENTRY, whose line is LENGTH bytes at OFFSET in FILE. Returns 0 or -1 with *err. */
int cg_execlog_index_entry (cg_execlog_t *self, json_t *entry, const char *file, off_t offset,
                            size_t length, cg_error_t **err);

/*  Indexes every line of the executions file NAME. Returns how many, or -1 with *err. */
int cg_execlog_index_file (cg_execlog_t *self, const char *name, cg_error_t **err);

#endif
