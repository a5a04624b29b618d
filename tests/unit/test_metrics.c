/*  Unit tests: cg_metrics — the exposition text: every family announced with # HELP and
    # TYPE, runs by status, the duration histogram cumulative with +Inf equal to its count,
    the gauges as given (label values escaped), the warm pool's by language, downloads and sweeps counted, and the build's
    version in cellgate_build_info. */
#define _GNU_SOURCE
#include "artifacts/cg_metrics.h"
#include "base/cg_version.h"
#include "cg_test.h"

#include <stdlib.h>
#include <string.h>

//  True when TEXT has the line LINE (without its newline).
static bool
s_has_line (const char *text, const char *line)
{
    size_t len = strlen (line);
    for (const char *p = text; (p = strstr (p, line)); p += len)
        if ((p == text || p[-1] == '\n') && p[len] == '\n')
            return true;
    return false;
}

static void
s_test_render (void)
{
    cg_metrics_run (CG_METRICS_RUN_SUCCESS, true, 0.01);
    cg_metrics_run (CG_METRICS_RUN_SUCCESS, true, 0.3);
    cg_metrics_run (CG_METRICS_RUN_ERROR, true, 700);
    cg_metrics_run (CG_METRICS_RUN_SETUP_ERROR, false, 0);
    cg_metrics_download (3000);
    cg_metrics_sweep (2);
    cg_metrics_gauges_t gauges = {.sessions = 3, .oneshots = 1, .sandboxes_max = 10};
    gauges.languages[0].name = "python";
    gauges.languages[0].count = 2;
    gauges.languages[1].name = "we\"ird\\";
    gauges.languages[1].count = 1;
    gauges.languages_len = 2;
    gauges.pool_languages[0] = (cg_metrics_pool_t){
        .name = "python", .hits = 7, .misses = 3, .target = 4, .ready = 2, .warming = 1};
    gauges.pool_languages_len = 1;
    char *text = cg_metrics_render (&gauges);
    const char *lines[] = {
        "# TYPE cellgate_runs_total counter",
        "cellgate_runs_total{status=\"success\"} 2",
        "cellgate_runs_total{status=\"error\"} 1",
        "cellgate_runs_total{status=\"timeout\"} 0",
        "cellgate_runs_total{status=\"setup_error\"} 1",
        "# TYPE cellgate_run_duration_seconds histogram",
        "cellgate_run_duration_seconds_bucket{le=\"0.05\"} 1",
        "cellgate_run_duration_seconds_bucket{le=\"0.25\"} 1",
        "cellgate_run_duration_seconds_bucket{le=\"0.5\"} 2",
        "cellgate_run_duration_seconds_bucket{le=\"600\"} 2",
        "cellgate_run_duration_seconds_bucket{le=\"+Inf\"} 3",
        "cellgate_run_duration_seconds_count 3",
        "cellgate_run_duration_seconds_sum 700.310000",
        "cellgate_sessions 3",
        "cellgate_sessions_by_language{language=\"python\"} 2",
        "cellgate_sessions_by_language{language=\"we\\\"ird\\\\\"} 1",
        "cellgate_oneshot_runs_in_flight 1",
        "cellgate_sandboxes 4",
        "cellgate_sandboxes_max 10",
        "cellgate_pool_sandboxes 0",
        "cellgate_pool_hits_total{language=\"python\"} 7",
        "cellgate_pool_misses_total{language=\"python\"} 3",
        "cellgate_pool_target_sandboxes{language=\"python\"} 4",
        "cellgate_pool_sandboxes_by_language{language=\"python\",state=\"ready\"} 2",
        "cellgate_pool_sandboxes_by_language{language=\"python\",state=\"warming\"} 1",
        "cellgate_download_bytes_total 3000",
        "cellgate_downloads_total 1",
        "cellgate_orphans_removed_total 2",
        "cellgate_orphan_sweeps_total 1",
    };
    for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++)
        EXPECT (s_has_line (text, lines[i]), "line '%s' in:\n%s", lines[i], text);
    //  Which cellgate this is, as cellgate --version says.
    EXPECT (s_has_line (text, "cellgate_build_info{version=\"" CG_VERSION
                              "\",revision=\"" CG_REVISION "\"} 1"),
            "cellgate_build_info in:\n%s", text);
    //  Every sample's family has # HELP and # TYPE before it.
    char *copy = strdup (text);
    char *save = NULL;
    for (char *line = strtok_r (copy, "\n", &save); line; line = strtok_r (NULL, "\n", &save)) {
        if (line[0] == '#')
            continue;
        char family[128];
        snprintf (family, sizeof family, "%.*s", (int)strcspn (line, "{ "), line);
        char *suffix = strstr (family, "_seconds_");
        if (suffix)
            suffix[strlen ("_seconds")] = '\0';
        char help[160], type[160];
        snprintf (help, sizeof help, "# HELP %s ", family);
        snprintf (type, sizeof type, "# TYPE %s ", family);
        const char *at = strstr (text, line);
        const char *help_at = strstr (text, help), *type_at = strstr (text, type);
        EXPECT (help_at && type_at && help_at < at && type_at < at, "%s announced", family);
    }
    free (copy);
    free (text);
}

int
main (void)
{
    s_test_render ();
    printf ("%d passed, %d failed\n", s_passes, s_failures);
    return s_failures ? 1 : 0;
}
