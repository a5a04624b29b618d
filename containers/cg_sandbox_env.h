/*  cg_sandbox_env — the environment every sandboxed process starts with: an allow-list,
    nothing from the host. */
#ifndef CG_SANDBOX_ENV_H
#define CG_SANDBOX_ENV_H

/*  Returns the base environment of every sandboxed process (NULL-terminated KEY=VALUE
    strings, static). */
const char *const *cg_sandbox_base_env (void);

/*  Returns a new environment: the base without the variables EXTRA sets, then copies of
    EXTRA (NULL-terminated KEY=VALUE strings, or NULL). Caller owns the result and frees it with cg_strv_free. */
char **cg_sandbox_env_new (const char *const *extra);

#endif
