/*  cg_metrics — the server's Prometheus metrics: counters that the run path, the downloads,
    the listener and the orphan sweep add to, gauges read at each scrape, served at
    GET /metrics in the text exposition format 0.0.4. */
#define _GNU_SOURCE
#include "artifacts/cg_metrics.h"
#include "artifacts/cg_http_guard.h"

#include "base/cg_util.h"
#include "base/cg_version.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

//  The run duration histogram's upper bounds, in seconds (+Inf follows).
static const double s_bounds[] = {0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600};
#define S_BOUNDS (sizeof s_bounds / sizeof s_bounds[0])

//  Responses counted by route and status; past this many pairs they go to route "other".
#define S_HTTP_PAIRS_MAX 64

static const char *const s_connection_reasons[CG_METRICS_CONNECTION_REASONS] = {
    "per_address_limit", "owner_reserve", "connection_limit", "evicted", "request_timeout"};

static const char *const s_status_names[CG_METRICS_RUN_STATUSES] = {"success", "error", "timeout",
                                                                    "cancelled", "setup_error"};

//  The process's counters. Runs, downloads and sweeps may be counted from any thread
//  (relaxed atomics); the HTTP pairs only on the cg_http_process thread.
static struct {
    uint64_t runs[CG_METRICS_RUN_STATUSES];
    uint64_t buckets[S_BOUNDS + 1]; /* per bound, not cumulative; the last is +Inf */
    uint64_t duration_sum_us;
    uint64_t downloads;
    uint64_t download_bytes;
    uint64_t sweeps;
    uint64_t swept;
    uint64_t connections_closed[CG_METRICS_CONNECTION_REASONS];
    struct {
        char route[32];
        unsigned int status;
        uint64_t count;
    } http[S_HTTP_PAIRS_MAX + 1];
    size_t http_len;
} s_counts;

//  What the /metrics route needs.
static struct {
    cg_http_t *http;
    const char *token;
    cg_metrics_gauges_fn *gauges;
    void *arg;
} s_route;

static void
s_add (uint64_t *counter, uint64_t n)
{
    __atomic_fetch_add (counter, n, __ATOMIC_RELAXED);
}

static uint64_t
s_get (const uint64_t *counter)
{
    return __atomic_load_n (counter, __ATOMIC_RELAXED);
}

void
cg_metrics_run (cg_metrics_run_status_t status, bool ran, double seconds)
{
    if ((unsigned)status >= CG_METRICS_RUN_STATUSES)
        status = CG_METRICS_RUN_SETUP_ERROR;
    s_add (&s_counts.runs[status], 1);
    if (!ran)
        return;
    if (seconds < 0)
        seconds = 0;
    size_t bucket = 0;
    while (bucket < S_BOUNDS && seconds > s_bounds[bucket])
        bucket++;
    s_add (&s_counts.buckets[bucket], 1);
    s_add (&s_counts.duration_sum_us, (uint64_t)(seconds * 1e6));
}

void
cg_metrics_download (uint64_t bytes)
{
    s_add (&s_counts.downloads, 1);
    s_add (&s_counts.download_bytes, bytes);
}

void
cg_metrics_sweep (unsigned removed)
{
    s_add (&s_counts.sweeps, 1);
    s_add (&s_counts.swept, removed);
}

void
cg_metrics_connection_closed (cg_metrics_connection_t reason)
{
    if ((unsigned)reason < CG_METRICS_CONNECTION_REASONS)
        s_add (&s_counts.connections_closed[reason], 1);
}

//  The listener's observer: one response to ROUTE (NULL: none matched) with STATUS.
static void
s_observe (void *arg, const char *route, unsigned int status)
{
    (void)arg;
    char label[32];
    snprintf (label, sizeof label, "%s", route ? route : "none");
    size_t i = 0;
    while (i < s_counts.http_len
           && (strcmp (s_counts.http[i].route, label) != 0 || s_counts.http[i].status != status))
        i++;
    if (i == S_HTTP_PAIRS_MAX) {
        //  The overflow slot: route "other", code 0.
        snprintf (s_counts.http[i].route, sizeof s_counts.http[i].route, "other");
        s_counts.http[i].status = 0;
    }
    else if (i == s_counts.http_len) {
        snprintf (s_counts.http[i].route, sizeof s_counts.http[i].route, "%s", label);
        s_counts.http[i].status = status;
        s_counts.http_len++;
    }
    s_counts.http[i].count++;
}

//  Writes VALUE as a label value: backslash, double quote and newline escaped.
static void
s_label (FILE *out, const char *value)
{
    for (const char *p = value; *p; p++) {
        if (*p == '\\' || *p == '"')
            fputc ('\\', out);
        if (*p == '\n')
            fputs ("\\n", out);
        else
            fputc (*p, out);
    }
}

static void
s_head (FILE *out, const char *name, const char *type, const char *help)
{
    fprintf (out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void
s_gauges (FILE *out, const cg_metrics_gauges_t *g)
{
    s_head (out, "cellgate_build_info", "gauge",
            "Always 1; its labels say which cellgate this is (cellgate --version).");
    fputs ("cellgate_build_info{version=\"", out);
    s_label (out, CG_VERSION);
    fputs ("\",revision=\"", out);
    s_label (out, CG_REVISION);
    fputs ("\"} 1\n", out);
    s_head (out, "cellgate_sessions", "gauge", "Live sessions (sandboxes kept between calls).");
    fprintf (out, "cellgate_sessions %zu\n", g->sessions);
    s_head (out, "cellgate_sessions_by_language", "gauge",
            "Live sessions by the language they were created for.");
    for (size_t i = 0; i < g->languages_len && i < CG_METRICS_LANGUAGES_MAX; i++) {
        fputs ("cellgate_sessions_by_language{language=\"", out);
        s_label (out, g->languages[i].name ? g->languages[i].name : "");
        fprintf (out, "\"} %zu\n", g->languages[i].count);
    }
    s_head (out, "cellgate_oneshot_runs_in_flight", "gauge",
            "One-shot runs in flight, each in a sandbox of its own.");
    fprintf (out, "cellgate_oneshot_runs_in_flight %zu\n", g->oneshots);
    s_head (out, "cellgate_sandboxes", "gauge",
            "Sandboxes counted against the limit: sessions and one-shot runs.");
    fprintf (out, "cellgate_sandboxes %zu\n", g->sessions + g->oneshots);
    s_head (out, "cellgate_sandboxes_max", "gauge", "The limit on sandboxes at once.");
    fprintf (out, "cellgate_sandboxes_max %zu\n", g->sandboxes_max);
    s_head (out, "cellgate_sandboxes_closing", "gauge", "Sandboxes being torn down.");
    fprintf (out, "cellgate_sandboxes_closing %zu\n", g->closing);
    s_head (out, "cellgate_pool_sandboxes", "gauge", "Warm sandboxes waiting in the pool.");
    fprintf (out, "cellgate_pool_sandboxes %zu\n", g->pool);
}

//  The warm pool by language: its sample lines for NAME, one per pooled language, with
//  the value FIELD picks.
static void
s_pool_samples (FILE *out, const cg_metrics_gauges_t *g, const char *name, const char *labels,
                size_t field)
{
    for (size_t i = 0; i < g->pool_languages_len && i < CG_METRICS_LANGUAGES_MAX; i++) {
        const cg_metrics_pool_t *l = &g->pool_languages[i];
        fprintf (out, "%s{language=\"", name);
        s_label (out, l->name ? l->name : "");
        uint64_t value = field == 0   ? l->hits
                         : field == 1 ? l->misses
                         : field == 2 ? l->target
                         : field == 3 ? l->ready
                                      : l->warming;
        fprintf (out, "\"%s} %" PRIu64 "\n", labels, value);
    }
}

static void
s_pool (FILE *out, const cg_metrics_gauges_t *g)
{
    if (g->pool_languages_len == 0)
        return;
    s_head (out, "cellgate_pool_hits_total", "counter",
            "Pool claims a ready warm sandbox served, by language.");
    s_pool_samples (out, g, "cellgate_pool_hits_total", "", 0);
    s_head (out, "cellgate_pool_misses_total", "counter",
            "Pool claims that found no ready sandbox and started cold, by language.");
    s_pool_samples (out, g, "cellgate_pool_misses_total", "", 1);
    s_head (out, "cellgate_pool_target_sandboxes", "gauge",
            "The sandboxes the pool keeps now per language, from recent demand within --pool.");
    s_pool_samples (out, g, "cellgate_pool_target_sandboxes", "", 2);
    s_head (out, "cellgate_pool_sandboxes_by_language", "gauge",
            "Pooled sandboxes by language and state (ready: waiting; warming: starting).");
    s_pool_samples (out, g, "cellgate_pool_sandboxes_by_language", ",state=\"ready\"", 3);
    s_pool_samples (out, g, "cellgate_pool_sandboxes_by_language", ",state=\"warming\"", 4);
}

static void
s_counters (FILE *out, const cg_metrics_gauges_t *gauges)
{
    s_head (out, "cellgate_runs_total", "counter", "Finished runs by how they ended.");
    for (int i = 0; i < CG_METRICS_RUN_STATUSES; i++)
        fprintf (out, "cellgate_runs_total{status=\"%s\"} %" PRIu64 "\n", s_status_names[i],
                 s_get (&s_counts.runs[i]));
    s_head (out, "cellgate_run_duration_seconds", "histogram",
            "How long the code of finished runs ran, in seconds.");
    uint64_t cumulative = 0;
    for (size_t i = 0; i <= S_BOUNDS; i++) {
        cumulative += s_get (&s_counts.buckets[i]);
        if (i < S_BOUNDS)
            fprintf (out, "cellgate_run_duration_seconds_bucket{le=\"%g\"} %" PRIu64 "\n",
                     s_bounds[i], cumulative);
        else
            fprintf (out, "cellgate_run_duration_seconds_bucket{le=\"+Inf\"} %" PRIu64 "\n",
                     cumulative);
    }
    uint64_t sum_us = s_get (&s_counts.duration_sum_us);
    fprintf (out, "cellgate_run_duration_seconds_sum %" PRIu64 ".%06" PRIu64 "\n", sum_us / 1000000,
             sum_us % 1000000);
    fprintf (out, "cellgate_run_duration_seconds_count %" PRIu64 "\n", cumulative);
    s_head (out, "cellgate_downloads_total", "counter", "Files served by /files/ downloads.");
    fprintf (out, "cellgate_downloads_total %" PRIu64 "\n", s_get (&s_counts.downloads));
    s_head (out, "cellgate_download_bytes_total", "counter",
            "Bytes of the files served by /files/ downloads.");
    fprintf (out, "cellgate_download_bytes_total %" PRIu64 "\n", s_get (&s_counts.download_bytes));
    s_head (out, "cellgate_orphan_sweeps_total", "counter", "Orphan sweeps run.");
    fprintf (out, "cellgate_orphan_sweeps_total %" PRIu64 "\n", s_get (&s_counts.sweeps));
    s_head (out, "cellgate_orphans_removed_total", "counter",
            "Stopped servers whose leftovers the sweeps removed.");
    fprintf (out, "cellgate_orphans_removed_total %" PRIu64 "\n", s_get (&s_counts.swept));
    s_head (out, "cellgate_http_connections_closed_total", "counter",
            "HTTP connections refused or closed before their request arrived whole, by reason.");
    for (int i = 0; i < CG_METRICS_CONNECTION_REASONS; i++)
        fprintf (out, "cellgate_http_connections_closed_total{reason=\"%s\"} %" PRIu64 "\n",
                 s_connection_reasons[i], s_get (&s_counts.connections_closed[i]));
    if (gauges->egress) {
        s_head (out, "cellgate_egress_requests_total", "counter",
                "Requests through the egress proxy (--egress proxy), by decision.");
        fprintf (out, "cellgate_egress_requests_total{decision=\"allowed\"} %" PRIu64 "\n",
                 gauges->egress_allowed);
        fprintf (out, "cellgate_egress_requests_total{decision=\"denied\"} %" PRIu64 "\n",
                 gauges->egress_denied);
        s_head (out, "cellgate_egress_bytes_total", "counter",
                "Bytes through the egress proxy, up (from sandboxes) and down.");
        fprintf (out, "cellgate_egress_bytes_total{direction=\"up\"} %" PRIu64 "\n",
                 gauges->egress_bytes_up);
        fprintf (out, "cellgate_egress_bytes_total{direction=\"down\"} %" PRIu64 "\n",
                 gauges->egress_bytes_down);
    }
    s_head (out, "cellgate_http_requests_total", "counter",
            "HTTP responses by route and status code.");
    for (size_t i = 0; i <= S_HTTP_PAIRS_MAX && (i < s_counts.http_len || s_counts.http[i].count);
         i++)
        fprintf (out, "cellgate_http_requests_total{route=\"%s\",code=\"%u\"} %" PRIu64 "\n",
                 s_counts.http[i].route, s_counts.http[i].status, s_counts.http[i].count);
}

char *
cg_metrics_render (const cg_metrics_gauges_t *gauges)
{
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream (&text, &len);
    if (!out)
        abort ();
    s_gauges (out, gauges);
    s_pool (out, gauges);
    s_counters (out, gauges);
    if (fclose (out) != 0)
        abort ();
    return text;
}

//  GET /metrics (the listener has refused other methods and bodies).
static void
s_serve (void *arg, cg_http_exchange_t *ex)
{
    (void)arg;
    if (!cg_http_guard_origin (s_route.http, ex)) {
        cg_http_respond_error (ex, 403, "forbidden", "Host or Origin is not this server");
        return;
    }
    if (!cg_http_guard_admin (ex, s_route.token))
        return;
    cg_metrics_gauges_t gauges = {0};
    if (s_route.gauges)
        s_route.gauges (s_route.arg, &gauges);
    cleanup_free char *text = cg_metrics_render (&gauges);
    cg_http_respond (ex, 200, CG_METRICS_CONTENT_TYPE, text, strlen (text), NULL);
}

void
cg_metrics_serve (cg_http_t *http, const char *token, cg_metrics_gauges_fn *gauges, void *arg)
{
    s_route.http = http;
    s_route.token = token;
    s_route.gauges = gauges;
    s_route.arg = arg;
    cg_http_route (http, CG_METRICS_PATH, CG_HTTP_GET_ONLY, 0, s_serve, NULL);
    cg_http_set_observer (http, s_observe, NULL);
}
