/*  cg_session_keep — a session's sandbox kept across a server's restart (--keep-sessions):
    re-adopted by the next server, or left running by this one. */
#define _GNU_SOURCE
#include "bridge/cg_session_int.h"
#include "base/cg_util.h"

#include <dirent.h>
#include <errno.h>
#include <string.h>
#include <unistd.h>

//  The languages (a new strv, at most MAX) whose kernel keys (kernel-<language>.key,
//  cg_kernel_adopt) are in BUNDLE_DIR.
static char **
s_kept_kernels (const char *bundle_dir, int max)
{
    char **languages = cg_strv_new ((size_t)max);
    DIR *dir = opendir (bundle_dir);
    struct dirent *entry;
    int count = 0;
    while (dir && count < max && (entry = readdir (dir))) {
        size_t len = strlen (entry->d_name);
        if (strncmp (entry->d_name, "kernel-", 7) == 0 && len > 11 && len < 48
            && strcmp (entry->d_name + len - 4, ".key") == 0)
            languages[count++] = cg_strdupf ("%.*s", (int)(len - 11), entry->d_name + 7);
    }
    if (dir)
        closedir (dir);
    return languages;
}

//  Re-adopts every kernel whose key the previous server left in the bundle dir. Returns
//  0, or -1 with *err set.
static int
s_adopt_kernels (cg_session_t *self, cg_error_t **err)
{
    char **languages = s_kept_kernels (self->bundle_dir, MAX_KERNELS);
    int rc = 0;
    for (int i = 0; rc == 0 && languages[i]; i++)
        if (!(self->specs[i] = cg_kernel_spec_load (languages[i], err))
            || !(self->kernels[i] = cg_kernel_adopt (self->backend, &self->sandbox, self->specs[i],
                                                     self->config, err)))
            rc = -1;
    cg_strv_free (languages);
    return rc;
}

cg_session_t *
cg_session_adopt (cg_backend_t *backend, const cg_config_t *config, const char *sessions_dir,
                  const char *container_prefix, const char *slot, char *note, size_t note_size)
{
    cg_session_t *self = cg_session_alloc_ (backend, config, sessions_dir, container_prefix, slot,
                                            CG_SANDBOX_SESSION, false);
    cg_error_t *err = NULL;
    //  A session that never ran has no bundle: its runner makes the sandbox on first use.
    if (access (self->bundle_dir, F_OK) < 0
        || !(self->ws = cg_workspace_open (self->workspace, &err))) {
        cg_error_destroy (&err);
        cg_session_free_ (&self);
        return NULL;
    }
    self->container_running = cg_container_alive (backend, &self->sandbox);
    if (!self->container_running)
        cg_error_set (&err, ESRCH, "its container is gone");
    if (self->container_running && s_adopt_kernels (self, &err) == 0) {
        cg_container_stats_t stats = {.oom_kills = -1};
        cg_container_stats (backend, &self->sandbox, &stats, NULL);
        self->oom_kills = stats.oom_kills;
        cg_log (2, "re-adopted the sandbox %s", self->container_id);
        return self;
    }
    //  Not adoptable: the sandbox goes, the directory and workspace stay.
    cg_log (1, "cannot re-adopt the sandbox %s: %s", self->container_id, cg_error_message (err));
    snprintf (note, note_size,
              "The server restarted and this session's sandbox could not be taken over (%s); "
              "it runs in a new one: " S_STATE_LOST,
              cg_error_message (err));
    cg_error_destroy (&err);
    for (int i = 0; i < MAX_KERNELS; i++) {
        cg_kernel_keep (&self->kernels[i]);
        cg_kernel_spec_destroy (&self->specs[i]);
    }
    if (cg_container_destroy (backend, &self->sandbox, &err) < 0)
        cg_log (1, "%s", cg_error_message (err));
    cg_error_destroy (&err);
    self->container_running = false;
    return self;
}

void
cg_session_keep (cg_session_t **self_p)
{
    if (*self_p)
        cg_session_free_ (self_p);
}
