/*  cg_rootless — what the OCI backend does differently for a normal user (--backend
    rootless): runc in rootless mode inside a user namespace that maps the user's own uid
    and gid onto themselves, so the sandbox user is the host user and nothing is chowned;
    no cgroup when none is delegated, so the sandbox's processes are found by their pid
    namespace and bounded by rlimits instead. */
#ifndef CG_ROOTLESS_H
#define CG_ROOTLESS_H

#include "containers/cg_container.h"

#include <jansson.h>
#include <stdbool.h>
#include <sys/types.h>

/*  Returns 0 when this process can make a user namespace (probed in a child), or -1 with
    *err set saying why not. */
int cg_rootless_probe (cg_error_t **err);

/*  Adds to the OCI config's "linux" object LINUX (borrowed) what rootless needs: a user
    namespace with the one-uid and one-gid mappings of this process's ids, and no
    cgroupsPath or resources (no cgroup is delegated on this host). */
void cg_rootless_linux (json_t *linux_obj);

/*  Appends to RLIMITS (an OCI rlimits array) the limits that stand in for the cgroup's:
    RLIMIT_DATA (memory, per process), RLIMIT_NPROC (processes of the sandbox user in its
    namespace) and RLIMIT_CPU (CPU seconds per process). */
void cg_rootless_rlimits (json_t *rlimits, const cg_sandbox_limits_t *limits);

/*  The per-process CPU time RLIMIT_CPU allows, in seconds. */
#define CG_ROOTLESS_CPU_SECONDS (4 * 3600)

/*  One sentence for the start-up log and list_sessions: which limits hold and which not. */
json_t *cg_rootless_limits_report (const cg_sandbox_limits_t *limits);

/*  Sends SIGNAL to every process in the pid namespace of INIT (a host pid) but INIT and
    the KEEP_COUNT pids in KEEP, in passes until a pass finds none (at most 20: a fork
    bomb held by RLIMIT_NPROC empties in a few). Returns how many were signalled, or -1
    with *err set when INIT's namespace cannot be read. */
int cg_rootless_signal_others (pid_t init, int signal, const pid_t *keep, size_t keep_count,
                               cg_error_t **err);

/*  Sets the scheduling priority of every process in INIT's pid namespace to NICE.
    Returns how many were set. */
int cg_rootless_renice (pid_t init, int nice);

/*  Sums the resident memory (Pss) of the processes in INIT's pid namespace into STATS
    (no peak or OOM count without a cgroup: memory_peak_mb = memory_mb, oom_kills -1).
    Returns 0, or -1 with *err set. */
int cg_rootless_stats (pid_t init, cg_container_stats_t *stats, cg_error_t **err);

#endif
