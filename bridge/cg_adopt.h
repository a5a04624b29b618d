/*  cg_adopt — at start-up, the sessions the previous server kept (--keep-sessions) taken
    back into the registry: called by the process, after the registry exists and before
    any front end serves. */
#ifndef CG_ADOPT_H
#define CG_ADOPT_H

#include "base/cg_config.h"
#include "bridge/cg_instance.h"
#include "bridge/cg_registry.h"

/*  Re-adopts what the previous server kept in INSTANCE's sessions dir (each recorded
    session is restored into REGISTRY and its runner re-adopts the sandbox; anything else
    there, a one-shot sandbox's, is removed) and restores LOST's sessions (records of an
    instance whose sandboxes could not be kept) as fresh sessions whose next run says their
    state was lost. Returns how many sessions were restored (0 when keeping is off). */
int cg_adopt (cg_registry_t *registry, cg_backend_t *backend, cg_instance_t *instance,
              const cg_config_t *config);

#endif
