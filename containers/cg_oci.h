/*  cg_oci — the OCI backend's config.json, built apart from running it (the backend itself
    is cg_oci_ops and cg_rootless_ops, cg_backend_ops.h; tests/unit/test_oci.c pins the
    config against tests/golden/oci). */
#ifndef CG_OCI_H
#define CG_OCI_H

#include "containers/cg_container.h"

#include <jansson.h>
#include <stdbool.h>

/*  What the config depends on beside the limits and the sandbox: the backend's own paths
    and what it learnt of the host. Strings borrowed. */
typedef struct {
    const char *rootfs;      /* the shared empty read-only root with mount points */
    const char *etc_dir;     /* the generated /etc, bound read-only when IMAGE is NULL */
    const char *image;       /* --image's real path: the root in place of ROOTFS, or NULL */
    const char *shared_site; /* the shared package layer's host dir, or NULL */
    bool cgroup_v2;          /* the host's cgroup layout is unified only */
    bool memsw;              /* cgroup v1 swap accounting present */
    bool rootless;           /* the rootless backend: a user namespace, rlimits, no cgroup */
} cg_oci_host_t;

/*  Returns the config.json of SANDBOX under LIMITS on HOST: its mounts, namespaces,
    resources, seccomp profile, process (user, capabilities, rlimits) and annotations.
    Reads only LIMITS->kernels_dir from the file system (bound when it is a directory).
    Caller owns the result. */
json_t *cg_oci_config (const cg_sandbox_limits_t *limits, const cg_oci_host_t *host,
                       const cg_sandbox_t *sandbox);

#endif
