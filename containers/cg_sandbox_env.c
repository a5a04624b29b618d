/*  cg_sandbox_env — the environment every sandboxed process starts with: an allow-list,
    nothing from the host. */
#include "containers/cg_sandbox_env.h"
#include "containers/cg_container.h"
#include "base/cg_util.h"

#include <string.h>

const char *const *
cg_sandbox_base_env (void)
{
    static const char *const base[] = {
        "PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/tmp", "TMPDIR=/tmp", "LANG=C.UTF-8",
        "TERM=xterm-256color", "XDG_CACHE_HOME=/tmp/.cache",
        "JUPYTER_RUNTIME_DIR=/tmp/.jupyter/runtime",
        //  Installed packages: the sandbox's own, then the
        //  shared layer's (cg_container.h).
        "PYTHONPATH=" CG_SITE_MOUNT "/python:" CG_SHARED_SITE_MOUNT "/python",
        "NODE_PATH=" CG_SITE_MOUNT "/node/node_modules:" CG_SHARED_SITE_MOUNT "/node/node_modules",
        NULL};
    return base;
}

char **
cg_sandbox_env_new (const char *const *extra)
{
    const char *const *base = cg_sandbox_base_env ();
    size_t base_count = cg_strv_count (base), extra_count = cg_strv_count (extra);
    char **env = cg_strv_new (base_count + extra_count);
    size_t n = 0;
    for (size_t i = 0; i < base_count; i++) {
        //  A variable EXTRA sets replaces the base's.
        size_t key = strcspn (base[i], "=") + 1;
        bool replaced = false;
        for (size_t k = 0; k < extra_count && !replaced; k++)
            replaced = strncmp (base[i], extra[k], key) == 0;
        if (!replaced)
            env[n++] = cg_xstrdup (base[i]);
    }
    for (size_t i = 0; i < extra_count; i++)
        env[n++] = cg_xstrdup (extra[i]);
    return env;
}
