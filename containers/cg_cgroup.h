/*  cg_cgroup — the sandboxes' cgroups as the runtime leaves them: removing those a runtime
    killed half-way through a create left behind, which it no longer knows about. */
#ifndef CG_CGROUP_H
#define CG_CGROUP_H

/*  The cgroup every sandbox's own cgroup is made in, in each hierarchy. */
#define CG_CGROUP_PARENT "cellgate"

/*  Removes every cgroup named PREFIX* below CG_CGROUP_PARENT in every hierarchy mounted at
    /sys/fs/cgroup (the unified one, or each v1 controller, named and unified ones of a
    hybrid host included): thaws it, SIGKILLs what runs in it, waits briefly for it to
    empty and removes it. Failures are logged. Returns how many cgroup directories were
    removed. */
int cg_cgroup_remove_prefix (const char *prefix);

#endif
