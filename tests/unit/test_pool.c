/*  Unit tests: cg_pool's two parsers — --pool's sizes (languages, counts, off) and
    --pool-preload's module list turned into silent import code. */
#include "bridge/cg_pool.h"
#include "cg_test.h"

#include <stdlib.h>
#include <string.h>

static void
s_sizes (void)
{
    int sizes[CG_POOL_LANGUAGES];
    cg_error_t *err = NULL;
    EXPECT (cg_pool_parse ("python=2,javascript=1", sizes, &err) == 0, "parse");
    EXPECT (sizes[0] == 2 && sizes[1] == 1 && sizes[2] == 0, "%d %d %d", sizes[0], sizes[1],
            sizes[2]);
    EXPECT (strcmp (cg_pool_language_name (2), "bash") == 0, "index 2 is bash");
    EXPECT (cg_pool_parse ("bash=3", sizes, &err) == 0 && sizes[2] == 3 && sizes[0] == 0, "bash=3");
    EXPECT (cg_pool_parse ("off", sizes, &err) == 0 && sizes[0] + sizes[1] + sizes[2] == 0, "off");
    EXPECT (cg_pool_parse ("0", sizes, &err) == 0 && sizes[0] + sizes[1] + sizes[2] == 0, "0");
    const char *bad[] = {"ruby=1",    "python",     "python=", "python=x", "python=-1",
                         "python=65", "python=1,,", "=1",      "python=1x"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        EXPECT (cg_pool_parse (bad[i], sizes, &err) == -1 && err, "refused: %s", bad[i]);
        cg_error_destroy (&err);
    }
}

static void
s_preload (void)
{
    cg_error_t *err = NULL;
    char *code = cg_pool_preload_code ("numpy,matplotlib.pyplot", &err);
    EXPECT (code && strstr (code, "exec('import numpy', {})")
                && strstr (code, "exec('import matplotlib.pyplot', {})"),
            "code: %s", code ? code : "(null)");
    free (code);
    EXPECT (!cg_pool_preload_code ("none", &err) && !err, "none: no code, no error");
    const char *bad[] = {"numpy;import os", "a..b", "1abc", "x'y", ".numpy"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        EXPECT (!cg_pool_preload_code (bad[i], &err) && err, "refused: %s", bad[i]);
        cg_error_destroy (&err);
    }
}

int
main (void)
{
    s_sizes ();
    s_preload ();
    printf ("%d passed, %d failed\n", s_passes, s_failures);
    return s_failures ? 1 : 0;
}
