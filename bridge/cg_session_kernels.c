/*  cg_session_kernels — a session's kernel slots: which language is where, its spec and
    the environment its kernel starts with, and what the Jupyter gateway asks of a running
    kernel. */
#include "base/cg_fault.h"
#include "bridge/cg_session_int.h"
#include "base/cg_util.h"

#include <errno.h>
#include <string.h>

int
cg_session_kernel_index_ (cg_session_t *self, const char *language, bool create)
{
    for (int i = 0; i < MAX_KERNELS; i++)
        if (self->specs[i] && strcmp (self->specs[i]->language, language) == 0)
            return i;
    if (!create)
        return -1;
    for (int i = 0; i < MAX_KERNELS; i++)
        if (!self->specs[i])
            return i;
    return -1;
}

int
cg_session_load_spec_ (cg_session_t *self, int index, const char *language, cg_error_t **err)
{
    self->specs[index] = cg_kernel_spec_load (language, err);
    if (self->specs[index] && cg_fault_at ("kernel_spec", err) < 0)
        cg_kernel_spec_destroy (&self->specs[index]);
    return self->specs[index] ? 0 : -1;
}

int
cg_session_kernel_env (cg_session_t *self, const char *language, const char *const *env,
                       cg_error_t **err)
{
    int index = cg_session_kernel_index_ (self, language, true);
    if (index < 0)
        return cg_error_set (err, ENOSPC, "too many kernels in one session");
    if (!self->specs[index] && cg_session_load_spec_ (self, index, language, err) < 0)
        return -1;
    cg_kernel_spec_t *spec = self->specs[index];
    size_t have = cg_strv_count ((const char *const *)spec->env), more = cg_strv_count (env);
    char **joined = cg_strv_new (have + more);
    for (size_t i = 0; i < have; i++)
        joined[i] = cg_xstrdup (spec->env[i]);
    for (size_t i = 0; i < more; i++)
        joined[have + i] = cg_xstrdup (env[i]);
    cg_strv_free (spec->env);
    spec->env = joined;
    return 0;
}

cg_kernel_t *
cg_session_kernel_at (cg_session_t *self, int index, const char **language)
{
    _Static_assert(CG_SESSION_KERNELS == MAX_KERNELS, "one count of kernel slots");
    *language = index >= 0 && index < MAX_KERNELS && self->specs[index]
                    ? self->specs[index]->language
                    : NULL;
    return *language ? self->kernels[index] : NULL;
}

int
cg_session_interrupt (cg_session_t *self, const char *language)
{
    int index = cg_session_kernel_index_ (self, language, false);
    return index >= 0 && self->kernels[index] ? cg_kernel_interrupt (self->kernels[index]) : -1;
}
