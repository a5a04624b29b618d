/*  cg_sandbox_env — the environment every sandboxed process starts with: an allow-list,
    nothing from the host. */
#include "cg_sandbox_env.h"
#include "../bridge/cg_util.h"

const char *const *
cg_sandbox_base_env (void)
{
    static const char *const base[] = {"PATH=/usr/local/bin:/usr/bin:/bin",
                                       "HOME=/tmp",
                                       "TMPDIR=/tmp",
                                       "LANG=C.UTF-8",
                                       "TERM=xterm-256color",
                                       "XDG_CACHE_HOME=/tmp/.cache",
                                       "JUPYTER_RUNTIME_DIR=/tmp/.jupyter/runtime",
                                       NULL};
    return base;
}

char **
cg_sandbox_env_new (const char *const *extra)
{
    const char *const *base = cg_sandbox_base_env ();
    size_t base_count = cg_strv_count (base), extra_count = cg_strv_count (extra);
    char **env = cg_strv_new (base_count + extra_count);
    for (size_t i = 0; i < base_count; i++)
        env[i] = cg_xstrdup (base[i]);
    for (size_t i = 0; i < extra_count; i++)
        env[base_count + i] = cg_xstrdup (extra[i]);
    return env;
}
