/*  Benchmark (not a test): search_scripts' and list_scripts' latency (p50/p99) over N saved
    scripts (default 10000), per kind of query.
    Usage: bench_scripts [N] [ROUNDS] [DIR]; DIR defaults to a new directory under /tmp
    (removed at the end); a DIR given is kept, and one that holds an index.json already is
    searched as it is (no saves). */
#include "artifacts/cg_scripts.h"
#include "base/cg_util.h"
#include "base/cg_fs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const cg_scripts_limits_t s_limits = {
    .versions = 50, .scripts = 1000000, .bytes = (size_t)1 << 40};

static int
s_cmp (const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

//  Saves script I into DIR: its name, tags, description and code draw on separate word
//  lists, so that a query word is found in one kind of field only.
static int
s_save (const char *dir, int i)
{
    static const char *verbs[] = {"parse", "clean", "plot", "merge", "fetch", "convert", "score"};
    static const char *nouns[] = {"csv", "logs", "sales", "invoices", "images", "sensors"};
    static const char *tags[] = {"etl", "reporting", "finance", "ml", "ops", "geo", "qa"};
    static const char *topics[] = {"quarterly", "monthly", "regional", "customer", "weekly"};
    static const char *languages[] = {"python", "javascript", "bash"};
    char name[64], description[256], code[512];
    snprintf (name, sizeof name, "%s-%s-%d", verbs[i % 7], nouns[i % 6], i);
    snprintf (description, sizeof description,
              "Reads the %s figures of batch %d and writes a tidy table for the %s team.",
              topics[i % 5], i, topics[(i / 5) % 5]);
    snprintf (code, sizeof code,
              "# step %d\nimport json, sys\nrows = [json.loads(l) for l in sys.stdin]\n"
              "total_%d = sum(r['amount'] for r in rows)\nprint(helperzeta%d(total_%d))\n",
              i, i, i, i);
    json_t *fields =
        json_pack ("{s:s, s:s, s:[s, s], s:[s]}", "description", description, "language",
                   languages[i % 3], "tags", tags[i % 7], tags[(i / 7) % 7], "packages", "pandas");
    cg_error_t *err = NULL;
    json_t *saved = cg_scripts_save (dir, name, fields, code, &s_limits, &err);
    json_decref (fields);
    if (!saved) {
        fprintf (stderr, "save %s: %s\n", name, cg_error_message (err));
        cg_error_destroy (&err);
        return -1;
    }
    json_decref (saved);
    return 0;
}

//  Runs QUERY (NULL: cg_scripts_list) ROUNDS times over DIR and prints p50/p99 and the
//  number of results.
static int
s_time (const char *dir, const char *label, const char *query, int rounds)
{
    double *times = cg_xcalloc ((size_t)rounds, sizeof (double));
    size_t found = 0;
    for (int r = 0; r < rounds; r++) {
        cg_error_t *err = NULL;
        int64_t t0 = cg_now_us ();
        json_t *result =
            query ? cg_scripts_search (dir, query, NULL, 20, &err) : cg_scripts_list (dir, &err);
        times[r] = (double)(cg_now_us () - t0) / 1000.0;
        if (!result) {
            fprintf (stderr, "%s: %s\n", label, cg_error_message (err));
            free (times);
            return -1;
        }
        found = json_array_size (result);
        json_decref (result);
    }
    qsort (times, (size_t)rounds, sizeof times[0], s_cmp);
    printf ("  %-34s p50 %8.2f ms  p99 %8.2f ms  (%zu results)\n", label, times[rounds / 2],
            times[rounds * 99 / 100], found);
    free (times);
    return 0;
}

int
main (int argc, char **argv)
{
    int n = argc > 1 ? atoi (argv[1]) : 10000;
    int rounds = argc > 2 ? atoi (argv[2]) : 50;
    char base[] = "/tmp/cg-bench-scripts-XXXXXX";
    const char *dir = argc > 3 ? argv[3] : mkdtemp (base);
    if (n <= 0 || rounds <= 0 || !dir) {
        fprintf (stderr, "usage: bench_scripts [N] [ROUNDS] [DIR]\n");
        return 1;
    }
    cleanup_free char *index = cg_strdupf ("%s/index.json", dir);
    if (access (index, F_OK) == 0)
        printf ("searching the library in %s as it is\n", dir);
    else {
        int64_t start = cg_now_us ();
        for (int i = 0; i < n; i++)
            if (s_save (dir, i) < 0)
                return 1;
        printf ("save: %d scripts, %.2f ms per save\n", n,
                (double)(cg_now_us () - start) / 1000.0 / n);
    }
    const char *queries[][2] = {
        {"list_scripts (whole index)", NULL},
        {"name word (\"invoices\")", "invoices"},
        {"tag (\"finance\")", "finance"},
        {"description word (\"quarterly\")", "quarterly"},
        {"code only (\"helperzeta4242\")", "helperzeta4242"},
        {"nothing (\"xylophone\")", "xylophone"},
        {"two words (\"merge sales\")", "merge sales"},
    };
    printf ("over %d scripts, %d rounds each:\n", n, rounds);
    for (size_t q = 0; q < sizeof queries / sizeof queries[0]; q++)
        if (s_time (dir, queries[q][0], queries[q][1], rounds) < 0)
            return 1;
    if (argc <= 3)
        cg_rm_rf (dir, NULL);
    return 0;
}
