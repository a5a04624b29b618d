/*  Unit tests: cg_pool's two parsers — --pool's sizes (languages, counts, off) and
    --pool-preload's module list turned into silent import code. */
#include "bridge/cg_pool.h"
#include "base/cg_util.h"
#include "cg_test.h"

#include <stdlib.h>
#include <string.h>

static void
s_sizes (void)
{
    int sizes[CG_KERNELS_MAX];
    cg_error_t *err = NULL;
    EXPECT (cg_pool_parse ("python=2,javascript=1", sizes, &err) == 0, "parse");
    int py = cg_kernels_index (cg_kernels (), cg_kernels_find (cg_kernels (), "python"));
    int js = cg_kernels_index (cg_kernels (), cg_kernels_find (cg_kernels (), "javascript"));
    int sh = cg_kernels_index (cg_kernels (), cg_kernels_find (cg_kernels (), "bash"));
    EXPECT (py == 0 && js > 0 && sh > js, "catalogue order: python %d, javascript %d, bash %d", py,
            js, sh);
    EXPECT (sizes[py] == 2 && sizes[js] == 1 && sizes[sh] == 0, "%d %d %d", sizes[py], sizes[js],
            sizes[sh]);
    EXPECT (strcmp (cg_pool_language_name (sh), "bash") == 0, "bash's index names bash");
    EXPECT (cg_pool_parse ("bash=3", sizes, &err) == 0 && sizes[sh] == 3 && sizes[py] == 0,
            "bash=3");
    EXPECT (cg_pool_parse ("off", sizes, &err) == 0 && sizes[py] + sizes[js] + sizes[sh] == 0,
            "off");
    EXPECT (cg_pool_parse ("0", sizes, &err) == 0 && sizes[py] + sizes[js] + sizes[sh] == 0, "0");
    //  An alias names its language; the catalogue is cellgate's kernels/ (python first).
    EXPECT (cg_pool_parse ("py=1,js=2", sizes, &err) == 0 && sizes[py] == 1 && sizes[js] == 2,
            "aliases");
    //  The default names javascript: a server that does not offer it (--languages) still
    //  starts, without it in the pool; a --pool given that names it is refused.
    EXPECT (cg_pool_parse (CG_CONFIG_POOL_DEFAULT, sizes, &err) == 0 && sizes[py] == 1, "default");
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

//  With --languages python,bash (no javascript): the default pool leaves javascript out, a
//  --pool given that names it is refused.
static void
s_restricted (void)
{
    cleanup_free char *repo = cg_xstrdup (__FILE__);
    for (int up = 0; up < 3; up++)
        *strrchr (repo, '/') = '\0';
    cleanup_free char *own = cg_strdupf ("%s/kernels", repo);
    cg_error_t *err = NULL;
    cg_kernels_t *only = cg_kernels_load (own, NULL, "python,bash", NULL, &err);
    EXPECT (only, "load: %s", err ? cg_error_message (err) : "");
    if (!only)
        return;
    cg_kernels_install (only);
    int sizes[CG_KERNELS_MAX];
    EXPECT (cg_pool_parse (CG_CONFIG_POOL_DEFAULT, sizes, &err) == 0 && sizes[0] == 1
                && sizes[1] == 1,
            "the default without javascript: %s", err ? cg_error_message (err) : "");
    cg_error_destroy (&err);
    EXPECT (cg_pool_parse ("python=1,javascript=1", sizes, &err) == -1 && err
                && strstr (cg_error_message (err), "one of python, bash"),
            "javascript named: refused");
    cg_error_destroy (&err);
}

int
main (void)
{
    s_sizes ();
    s_preload ();
    s_restricted ();
    printf ("%d passed, %d failed\n", s_passes, s_failures);
    return s_failures ? 1 : 0;
}
