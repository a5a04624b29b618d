/*  cg_cgroup — the sandboxes' cgroups as the runtime leaves them: removing those a runtime
    killed half-way through a create left behind, which it no longer knows about. */
#ifndef CG_CGROUP_H
#define CG_CGROUP_H

#include "containers/cg_container.h"

#include <stdbool.h>
#include <sys/types.h>

/*  The cgroup every sandbox's own cgroup is made in, in each hierarchy. */
#define CG_CGROUP_PARENT "cellgate"

/*  Removes every cgroup named PREFIX* below CG_CGROUP_PARENT in every hierarchy mounted at
    /sys/fs/cgroup (the unified one, or each v1 controller, named and unified ones of a
    hybrid host included): thaws it, SIGKILLs what runs in it, waits briefly for it to
    empty and removes it. Failures are logged. Returns how many cgroup directories were
    removed. */
int cg_cgroup_remove_prefix (const char *prefix);

/*  What a sandbox's memory cgroup (DIR, below /sys/fs/cgroup; V2: the unified layout)
    tells, for backends whose sandboxes run on this host. */

/*  Returns the memory cgroup directory of host process PID as /proc/PID/cgroup names it
    (the unified one when V2, else the memory controller's), or NULL when it cannot be
    read. Caller owns the result. */
char *cg_cgroup_memory_dir_of (pid_t pid, bool v2);

/*  Sets the scheduling priority of every thread in DIR to NICE, and the cgroup's CPU
    weight to a task's at NICE (v1: cpu.shares in the cpu hierarchy's same path; v2:
    cpu.weight.nice), where the cpu controller has it. Returns how many threads were set;
    never fails. */
int cg_cgroup_renice (const char *dir, bool v2, int nice);

/*  Reads DIR's memory usage, peak and OOM kills into STATS. Returns 0, or -1 with *err
    set (ENOENT, naming sandbox ID) when DIR has no memory accounting. */
int cg_cgroup_stats (const char *dir, bool v2, const char *id, cg_container_stats_t *stats,
                     cg_error_t **err);

/*  cg_container_peak_begin and cg_container_peak_end for the cgroup DIR (may be NULL for
    the end: no fallback to the sandbox's peak since it started). */
void cg_cgroup_peak_begin (const char *dir, bool v2, cg_container_peak_t *peak);
double cg_cgroup_peak_end (const char *dir, bool v2, cg_container_peak_t *peak);

/*  Sends SIGNAL once to every process listed in DIR's cgroup.procs but INIT and the
    KEEP_COUNT pids in KEEP. Returns how many were signalled. */
int cg_cgroup_signal_members (const char *dir, pid_t init, int signal, const pid_t *keep,
                              size_t keep_count);

/*  Returns true when host process PID runs in the cgroup of container CONTAINER_ID, as runc
    (root or rootless) names it: a pid read from a pid file is still that container's
    process, not a reused pid. */
bool cg_cgroup_holds_pid (pid_t pid, const char *container_id);

#endif
