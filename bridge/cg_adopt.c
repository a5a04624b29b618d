/*  cg_adopt — the sessions the previous server kept, taken back at start-up. */
#define _GNU_SOURCE
#include "bridge/cg_adopt.h"
#include "bridge/cg_session.h"
#include "base/cg_util.h"

#include <string.h>

typedef struct {
    cg_registry_t *registry;
    cg_backend_t *backend;
    cg_instance_t *instance;
    int restored;
} s_adopt_t;

//  One directory of the kept instance: a recorded session is restored; anything else
//  (a one-shot sandbox's, a session's half made) goes, its container first.
static void
s_adopt_one (void *arg, const char *slot)
{
    s_adopt_t *adopt = arg;
    const char *sessions_dir = cg_instance_sessions_dir (adopt->instance);
    cleanup_free char *dir = cg_strdupf ("%s/%s", sessions_dir, slot);
    cg_registry_session_t fields;
    if (cg_registry_keep_restore (dir, &fields) == 0) {
        if (cg_registry_restore (adopt->registry, &fields, slot, NULL))
            adopt->restored++;
        return;
    }
    cleanup_free char *id = cg_strdupf ("%s%s", cg_instance_prefix (adopt->instance), slot);
    cg_sandbox_t sandbox = {.id = id};
    cg_error_t *err = NULL;
    if (cg_container_destroy (adopt->backend, &sandbox, &err) < 0)
        cg_log (1, "%s", cg_error_message (err));
    cg_error_destroy (&err);
    cg_session_dir_remove (dir);
}

int
cg_adopt (cg_registry_t *registry, cg_backend_t *backend, cg_instance_t *instance,
          const cg_config_t *config)
{
    s_adopt_t adopt = {registry, backend, instance, 0};
    if (!cg_instance_keeps (config))
        return 0;
    cg_instance_each_slot (cg_instance_sessions_dir (instance), s_adopt_one, &adopt);
    size_t i;
    json_t *record;
    json_array_foreach (cg_instance_lost (instance), i, record)
    {
        cg_registry_session_t fields;
        if (cg_registry_keep_restore_json (record, &fields) == 0
            && cg_registry_restore (registry, &fields, NULL,
                                    "The server restarted with other sandbox settings (memory, "
                                    "CPUs, kernels or runtime), so this session's sandbox could "
                                    "not be kept: it runs in a new sandbox and its variables and "
                                    "files are gone."))
            adopt.restored++;
    }
    if (adopt.restored)
        cg_log (2, "re-adopted %d session(s) kept by the previous server", adopt.restored);
    return adopt.restored;
}
