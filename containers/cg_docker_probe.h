/*  cg_docker_probe — the Docker backend's start-up check that the engine sees what this
    server binds into sandboxes: the state dir (and a mount made below it), the kernels dir,
    the package sources, and the sandboxes' processes. */
#ifndef CG_DOCKER_PROBE_H
#define CG_DOCKER_PROBE_H

#include "containers/cg_container.h"
#include "containers/cg_docker_api.h"

/*  Runs one short-lived container of LIMITS->image through API (ENGINE names the engine in
    messages) with the state dir, the kernels dir (unless LIMITS->image_kernels) and the
    wheelhouse and npm mirror bound read-only, and checks that it finds there a marker this
    process just wrote below the state dir (inside a tmpfs it mounted there when
    LIMITS->workspace_mb is set, as each session's disk is), an entry of each other
    directory, the image's own kernels when LIMITS->image_kernels, and that this process
    sees the container's init by its host pid and cgroup (V2: the host's cgroup layout is
    unified). Sandboxes are the engine's containers, so these paths must be the same on the
    engine's host as here (docs/deploy.md). Returns 0, or -1 with *err set saying which
    path or view differs and what to change. Leaves no container, file or mount behind. */
int cg_docker_probe (cg_docker_api_t *api, const cg_sandbox_limits_t *limits, const char *engine,
                     bool v2, cg_error_t **err);

#endif
