/*  cg_kernelspec — a kernel spec (kernels/<language>/kernel.json): how to start a kernel
    of one language and what it supports. */
#include "bridge/cg_kernelspec.h"
#include "base/cg_kernels.h"
#include "base/cg_util.h"
#include "containers/cg_sandbox_env.h"

#include <errno.h>
#include <stdint.h>
#include <jansson.h>
#include <string.h>

cg_kernel_spec_t *
cg_kernel_spec_load (const char *language, cg_error_t **err)
{
    const cg_language_t *entry = cg_kernels_find (cg_kernels (), language);
    if (!entry || entry->command) {
        cleanup_free char *have = cg_kernels_names (cg_kernels (), ", ");
        cg_error_set (err, ENOENT, "no kernel for language '%s' (offered: %s)", language, have);
        return NULL;
    }
    language = entry->name;
    cleanup_free char *path = cg_strdupf ("%s/kernel.json", entry->spec_dir);
    json_error_t jerr;
    json_t *root = json_load_file (path, JSON_REJECT_DUPLICATES, &jerr);
    if (!root) {
        cg_error_set (err, EINVAL, "kernel spec %s: %s", path, jerr.text);
        return NULL;
    }
    json_t *argv = json_object_get (root, "argv");
    json_t *env = json_object_get (root, "env");
    const char *mode = json_string_value (json_object_get (root, "interrupt_mode"));
    json_t *cellgate = json_object_get (json_object_get (root, "metadata"), "cellgate");
    const char *endpoint = json_string_value (json_object_get (cellgate, "endpoint"));
    const char *stdin_mode = json_string_value (json_object_get (cellgate, "stdin"));
    if (!json_is_array (argv) || json_array_size (argv) == 0 || (env && !json_is_object (env))) {
        json_decref (root);
        cg_error_set (err, EINVAL, "kernel spec %s: argv must be a non-empty array", path);
        return NULL;
    }
    cg_kernel_spec_t *self = cg_xcalloc (1, sizeof *self);
    self->language = cg_xstrdup (language);
    if (entry->own)
        snprintf (self->ipc_name, sizeof self->ipc_name, "%s", language);
    else {
        uint32_t hash = 2166136261u; /* FNV-1a */
        for (const char *c = language; *c; c++)
            hash = (hash ^ (unsigned char)*c) * 16777619u;
        snprintf (self->ipc_name, sizeof self->ipc_name, "k%04x", hash & 0xffff);
    }
    self->argv = cg_strv_new (json_array_size (argv));
    for (size_t i = 0; i < json_array_size (argv); i++) {
        const char *arg = json_string_value (json_array_get (argv, i));
        self->argv[i] = cg_xstrdup (arg ? arg : "");
    }
    self->env = cg_strv_new (json_object_size (env));
    const char *key;
    json_t *value;
    size_t n = 0;
    json_object_foreach (env, key, value) if (json_is_string (value)) self->env[n++] =
        cg_strdupf ("%s=%s", key, json_string_value (value));
    self->interrupt_message = mode && strcmp (mode, "message") == 0;
    self->endpoint_colon = endpoint && strcmp (endpoint, "colon") == 0;
    self->stdin_file = stdin_mode && strcmp (stdin_mode, "file") == 0;
    json_decref (root);
    return self;
}

void
cg_kernel_spec_destroy (cg_kernel_spec_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    cg_kernel_spec_t *self = *self_p;
    free (self->language);
    cg_strv_free (self->argv);
    cg_strv_free (self->env);
    free (self);
    *self_p = NULL;
}

char **
cg_kernelspec_env (const cg_kernel_spec_t *spec, size_t max_message)
{
    size_t spec_count = cg_strv_count ((const char *const *)spec->env);
    cleanup_free const char **extra = cg_xcalloc (spec_count + 2, sizeof *extra);
    for (size_t i = 0; i < spec_count; i++)
        extra[i] = spec->env[i];
    cleanup_free char *limit = cg_strdupf ("CELLGATE_MAX_MESSAGE_BYTES=%zu", max_message);
    extra[spec_count] = limit;
    return cg_sandbox_env_new (extra);
}
