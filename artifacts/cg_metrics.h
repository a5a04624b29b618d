/*  cg_metrics — the server's Prometheus metrics: counters that the run path, the downloads,
    the listener and the orphan sweep add to, gauges read at each scrape, served at
    GET /metrics in the text exposition format 0.0.4. */
#ifndef CG_METRICS_H
#define CG_METRICS_H

#include "artifacts/cg_http.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CG_METRICS_PATH "/metrics"
#define CG_METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"
#define CG_METRICS_LANGUAGES_MAX 16 /* languages the sessions gauge tells apart */

/*  How a run ended, as cellgate_runs_total labels it (status="success", ...). */
typedef enum {
    CG_METRICS_RUN_SUCCESS,
    CG_METRICS_RUN_ERROR, /* the code raised or exited non-zero */
    CG_METRICS_RUN_TIMEOUT,
    CG_METRICS_RUN_CANCELLED,
    CG_METRICS_RUN_SETUP_ERROR, /* the code did not run, or the sandbox failed */
    CG_METRICS_RUN_STATUSES,    /* how many there are */
} cg_metrics_run_status_t;

/*  A pooled language's figures (cg_pool_metrics). */
typedef struct {
    const char *name;      /* borrowed for the scrape */
    uint64_t hits, misses; /* claims served from the pool, and those that went cold */
    size_t target;         /* the size the pool keeps now, from recent demand */
    size_t ready, warming; /* sandboxes waiting, and those warming up */
} cg_metrics_pool_t;

/*  The gauges, read at each scrape. */
typedef struct {
    struct {
        const char *name; /* borrowed for the scrape */
        size_t count;
    } languages[CG_METRICS_LANGUAGES_MAX]; /* live sessions by language */
    size_t languages_len;
    size_t sessions;      /* live sessions (sandboxes kept between calls) */
    size_t oneshots;      /* one-shot runners in flight (each with its own sandbox) */
    size_t closing;       /* sandboxes being torn down */
    size_t sandboxes_max; /* --max-sessions */
    size_t pool;          /* warm sandboxes waiting in a pool (0: there is no pool) */
    cg_metrics_pool_t pool_languages[CG_METRICS_LANGUAGES_MAX]; /* the pooled languages */
    size_t pool_languages_len;
    bool egress; /* --egress proxy: the proxy's counters below are rendered */
    uint64_t egress_allowed, egress_denied;      /* proxy requests since the start */
    uint64_t egress_bytes_up, egress_bytes_down; /* their bytes, each way */
} cg_metrics_gauges_t;

/*  Fills GAUGES (zeroed by the caller) on the cg_http_process thread. */
typedef void (cg_metrics_gauges_fn) (void *arg, cg_metrics_gauges_t *gauges);

/*  Counts a finished run that ended with STATUS; when RAN (the code was given to a
    kernel or shell) its duration, SECONDS, goes into the histogram. Any thread. */
void cg_metrics_run (cg_metrics_run_status_t status, bool ran, double seconds);

/*  Counts one /files/ download of BYTES bytes. Any thread. */
void cg_metrics_download (uint64_t bytes);

/*  Counts one orphan sweep that removed REMOVED servers' leftovers. Any thread. */
void cg_metrics_sweep (unsigned removed);

/*  Why the listener refused or closed a connection before its request arrived whole. */
typedef enum {
    CG_METRICS_CONNECTION_PER_ADDRESS,     /* refused: its address is at its limit */
    CG_METRICS_CONNECTION_OWNER_RESERVE,   /* refused: only the owner's reserve is left */
    CG_METRICS_CONNECTION_LIMIT,           /* refused: every connection is in use */
    CG_METRICS_CONNECTION_EVICTED,         /* closed to make room for a new connection */
    CG_METRICS_CONNECTION_REQUEST_TIMEOUT, /* closed: its request did not arrive in time */
    CG_METRICS_CONNECTION_REASONS,         /* how many there are */
} cg_metrics_connection_t;

/*  Counts one connection refused or closed for REASON. Any thread. */
void cg_metrics_connection_closed (cg_metrics_connection_t reason);

/*  Serves GET /metrics on HTTP to requests with "Authorization: Bearer TOKEN", the admin
    token (401 otherwise; 503 for all when TOKEN is NULL), with GAUGES (and ARG) read at each scrape, and counts the
    listener's responses by route and status. TOKEN and ARG must outlive HTTP. Counters
    are the process's: they start at zero when it starts. */
void cg_metrics_serve (cg_http_t *http, const char *token, cg_metrics_gauges_fn *gauges, void *arg);

/*  Returns the metrics as exposition text, with GAUGES. Caller owns the result. Called
    on the cg_http_process thread (the HTTP counters are that thread's). */
char *cg_metrics_render (const cg_metrics_gauges_t *gauges);

#endif
