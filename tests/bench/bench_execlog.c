/*  Benchmark (not a test): the execution log's cost per execution (append + index) and
    search_execution_logs' latency (p50/p99) over N logged executions (default 100000).
    Usage: bench_execlog [N] [DIR]; DIR defaults to a new directory under /tmp. */
#include "artifacts/cg_execlog.h"
#include "base/cg_util.h"
#include "base/cg_fs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int
s_cmp (const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int
main (int argc, char **argv)
{
    int n = argc > 1 ? atoi (argv[1]) : 100000;
    char base[] = "/tmp/cg-bench-execlog-XXXXXX";
    const char *dir = argc > 2 ? argv[2] : mkdtemp (base);
    cg_execlog_options_t options = {CG_EXECLOG_FULL, 30, 90, 90, 0};
    cg_error_t *err = NULL;
    cg_execlog_t *log = cg_execlog_open (dir, &options, &err);
    if (!log) {
        fprintf (stderr, "open: %s\n", cg_error_message (err));
        return 1;
    }
    static const char *languages[] = {"python", "javascript", "bash"};
    static const char *statuses[] = {"success", "success", "success", "failed", "timeout"};
    int64_t start = cg_now_us ();
    for (int i = 0; i < n; i++) {
        char id[32], code[256], out[256];
        snprintf (id, sizeof id, "exec_b%011d", i);
        snprintf (code, sizeof code,
                  "import pandas as pd\ndf = pd.read_csv('data_%d.csv')\n"
                  "print(df.describe())  # token%d",
                  i % 1000, i);
        snprintf (out, sizeof out, "count %d\nmean %d.5\nrow%d done\n", i, i % 77, i);
        json_t *entry = json_pack (
            "{s:s, s:s, s:n, s:s, s:s, s:s, s:s, s:s, s:i, s:b, s:i, s:s, s:s}", "execution_id", id,
            "client_id", i % 10 ? "stdio" : "other", "session_id", "language", languages[i % 3],
            "code", code, "stdout", out, "stderr", i % 5 == 3 ? "ValueError: bad row" : "",
            "status", statuses[i % 5], "exit_code", i % 5 == 3, "timed_out", i % 5 == 4,
            "duration_ms", i % 1000, "sandbox_mode", "runc", "working_dir", "/mnt/data");
        if (cg_execlog_record (log, entry, &err) < 0) {
            fprintf (stderr, "record: %s\n", cg_error_message (err));
            return 1;
        }
        json_decref (entry);
    }
    double per_us = (double)(cg_now_us () - start) / n;
    printf ("append + index: %d executions, %.1f us per execution\n", n, per_us);
    const cg_execlog_query_t queries[] = {
        {.owner = "stdio"},
        {.owner = "stdio", .status = "failed"},
        {.owner = "stdio", .language = "python", .query = "pandas"},
        {.owner = "stdio", .query = "token4242"},
        {.owner = "stdio", .query = "ValueError", .since = "2000-01-01"},
    };
    enum { ROUNDS = 40 };
    int nq = sizeof queries / sizeof queries[0];
    double times[ROUNDS * 5];
    for (int r = 0; r < ROUNDS; r++)
        for (int q = 0; q < nq; q++) {
            int64_t t0 = cg_now_us ();
            json_t *found = cg_execlog_search (log, &queries[q], &err);
            times[r * nq + q] = (double)(cg_now_us () - t0) / 1000.0;
            if (!found) {
                fprintf (stderr, "search: %s\n", cg_error_message (err));
                return 1;
            }
            json_decref (found);
        }
    qsort (times, (size_t)(ROUNDS * nq), sizeof times[0], s_cmp);
    printf ("search over %d executions (%d queries x %d rounds): p50 %.2f ms, p99 %.2f ms\n", n, nq,
            ROUNDS, times[ROUNDS * nq / 2], times[ROUNDS * nq * 99 / 100]);
    cg_execlog_destroy (&log);
    if (argc <= 2)
        cg_rm_rf (dir, NULL);
    return 0;
}
