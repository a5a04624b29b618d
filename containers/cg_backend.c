/*  cg_backend — choosing the sandbox backend (--backend oci|docker|auto) and dispatching
    cg_container.h's calls to it; what every backend shares (the package layers). */
#define _GNU_SOURCE
#include "containers/cg_backend_ops.h"
#include "containers/cg_cgroup.h"
#include "containers/cg_rootless.h"
#include "base/cg_util.h"
#include "base/cg_fs.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct cg_backend_t {
    const cg_backend_ops_t *ops;
    cg_sandbox_limits_t limits; /* a copy; strings borrowed */
    void *impl;                 /* the backend's own state */
    char *shared_site;          /* the shared package layer (<state_dir>/packages), or NULL */
};

//  The backends --backend names, in auto's order of preference.
static const cg_backend_ops_t *const s_backends[] = {&cg_oci_ops, &cg_rootless_ops, &cg_docker_ops};
#define S_BACKEND_COUNT (sizeof s_backends / sizeof s_backends[0])

int
cg_container_site_prepare (const char *dir, int uid, int gid, cg_error_t **err)
{
    static const char *const parts[] = {"", "/python", "/node", "/node/node_modules", NULL};
    for (int i = 0; parts[i]; i++) {
        cleanup_free char *path = cg_strdupf ("%s%s", dir, parts[i]);
        if (cg_mkdir_p (path, 0755, err) < 0)
            return -1;
        if (i > 0 && fchownat (AT_FDCWD, path, (uid_t)uid, (gid_t)gid, AT_SYMLINK_NOFOLLOW) < 0)
            return cg_error_set (err, errno, "chown %s: %s", path, strerror (errno));
    }
    return 0;
}

const char *
cg_sandbox_kind_name (cg_sandbox_kind_t kind)
{
    switch (kind) {
        case CG_SANDBOX_ONESHOT:
            return "oneshot";
        case CG_SANDBOX_INSTALLER:
            return "installer";
        case CG_SANDBOX_POOL:
            return "pool";
        case CG_SANDBOX_SESSION:
        default:
            return "session";
    }
}

extern char **environ;

pid_t
cg_backend_spawn (const char *path, char *const argv[], const cg_exec_spec_t *spec, int extra_fd,
                  const char *id, cg_error_t **err)
{
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init (&actions);
    posix_spawn_file_actions_adddup2 (&actions, spec->stdin_fd, 0);
    posix_spawn_file_actions_adddup2 (&actions, spec->stdout_fd, 1);
    posix_spawn_file_actions_adddup2 (&actions, spec->stderr_fd, 2);
    if (extra_fd >= 0)
        posix_spawn_file_actions_adddup2 (&actions, extra_fd, 3);
    posix_spawnattr_t attr;
    posix_spawnattr_init (&attr);
    //  Its own process group: a terminal's ^C to the server must not reach the kernel.
    posix_spawnattr_setflags (&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK);
    sigset_t empty;
    sigemptyset (&empty);
    posix_spawnattr_setsigmask (&attr, &empty);
    pid_t pid;
    int rc = posix_spawn (&pid, path, &actions, &attr, argv, environ);
    posix_spawn_file_actions_destroy (&actions);
    posix_spawnattr_destroy (&attr);
    if (rc != 0)
        return cg_error_set (err, rc, "exec in %s: %s: %s", id, path, strerror (rc));
    return pid;
}

int
cg_backend_remove_instances (json_t *instances, cg_container_owned_fn *owned, void *arg, void *impl,
                             int (*remove_orphans) (void *impl, const char *prefix,
                                                    cg_error_t **err),
                             cg_error_t **err)
{
    int removed = 0;
    const char *instance;
    json_t *value;
    json_object_foreach (instances, instance, value)
    {
        if (owned (json_string_value (value), instance, arg))
            continue;
        cleanup_free char *prefix = cg_strdupf ("cg-%s-", instance);
        int n = remove_orphans (impl, prefix, err);
        if (n < 0)
            return -1;
        cg_log (2, "removed %d sandbox(es) of instance %s, whose state was already gone", n,
                instance);
        removed += n;
    }
    return removed;
}

//  Makes OPS's state in SELF, with the shared package layer after it. Returns 0, or -1
//  with *err set.
static int
s_open (cg_backend_t *self, const cg_backend_ops_t *ops, const cg_sandbox_limits_t *limits,
        cg_error_t **err)
{
    self->ops = ops;
    self->limits = *limits;
    self->impl = ops->new (limits, (const char *const *)&self->shared_site, err);
    if (!self->impl)
        return -1;
    //  Without the shared package layer (a user namespace cannot give it to the sandbox
    //  user, say) sandboxes still run; global installs are then refused.
    self->shared_site = cg_strdupf ("%s/packages", limits->state_dir);
    cg_error_t *site_err = NULL;
    if (cg_container_site_prepare (self->shared_site, limits->sandbox_uid, limits->sandbox_gid,
                                   &site_err)
        < 0) {
        cg_log (1, "shared package layer off (global install_package refused): %s",
                cg_error_message (site_err));
        cg_error_destroy (&site_err);
        free (self->shared_site);
        self->shared_site = NULL;
    }
    return 0;
}

//  auto: the OCI backend as root when its runtime works, else the Docker API when it
//  answers. Returns 0, or -1 with *err saying why neither can run.
static int
s_open_auto (cg_backend_t *self, const cg_sandbox_limits_t *limits, cg_error_t **err)
{
    cleanup_free char *why = cg_xstrdup ("");
    for (size_t i = 0; i < S_BACKEND_COUNT; i++) {
        const cg_backend_ops_t *ops = s_backends[i];
        cg_error_t *local = NULL;
        if (ops == &cg_oci_ops && geteuid () != 0)
            cg_error_set (&local, EPERM, "runs runc as root, and this process is uid %u",
                          (unsigned)geteuid ());
        else if (ops == &cg_rootless_ops && geteuid () == 0)
            cg_error_set (&local, EPERM, "root uses oci");
        else if (s_open (self, ops, limits, &local) == 0) {
            cg_log (2, "sandbox backend: %s (--backend auto%s%s)", ops->kind, *why ? "; " : "",
                    why);
            return 0;
        }
        char *more =
            cg_strdupf ("%s%s%s: %s", why, *why ? "; " : "", ops->kind, cg_error_message (local));
        free (why);
        why = more;
        cg_error_destroy (&local);
    }
    return cg_error_set (err, ENOENT, "no sandbox backend can run here (--backend auto): %s", why);
}

cg_backend_t *
cg_backend_new (const cg_sandbox_limits_t *limits, cg_error_t **err)
{
    cg_backend_t *self = cg_xcalloc (1, sizeof *self);
    const char *kind = limits->backend ? limits->backend : "auto";
    int rc = -1;
    if (strcmp (kind, "auto") == 0)
        rc = s_open_auto (self, limits, err);
    else {
        for (size_t i = 0; i < S_BACKEND_COUNT && !self->ops; i++)
            if (strcmp (kind, s_backends[i]->kind) == 0) {
                rc = s_open (self, s_backends[i], limits, err);
                if (rc == 0)
                    cg_log (2, "sandbox backend: %s (--backend %s)", kind, kind);
            }
        if (!self->ops)
            cg_error_set (err, EINVAL,
                          "--backend: unknown backend '%s' (oci, rootless, docker or auto)", kind);
    }
    if (rc < 0) {
        self->ops = NULL;
        cg_backend_destroy (&self);
    }
    return self;
}

cg_backend_t *
cg_backend_of (const cg_backend_ops_t *ops, const cg_sandbox_limits_t *limits, cg_error_t **err)
{
    cg_backend_t *self = cg_xcalloc (1, sizeof *self);
    if (s_open (self, ops, limits, err) < 0) {
        self->ops = NULL;
        cg_backend_destroy (&self);
    }
    return self;
}

void
cg_backend_destroy (cg_backend_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    cg_backend_t *self = *self_p;
    if (self->ops && self->impl)
        self->ops->destroy (&self->impl);
    free (self->shared_site);
    free (self);
    *self_p = NULL;
}

const char *
cg_backend_name (cg_backend_t *self)
{
    return self->ops->name (self->impl);
}

const char *
cg_backend_kind (cg_backend_t *self)
{
    return self->ops->kind;
}

const char *
cg_backend_shared_site (cg_backend_t *self)
{
    return self->shared_site;
}

int
cg_container_create (cg_backend_t *self, const cg_sandbox_t *sandbox, cg_error_t **err)
{
    return self->ops->create (self->impl, sandbox, err);
}

pid_t
cg_container_exec (cg_backend_t *self, const cg_sandbox_t *sandbox, const cg_exec_spec_t *spec,
                   cg_error_t **err)
{
    if (!sandbox->env)
        return self->ops->exec (self->impl, sandbox, spec, err);
    size_t extra = cg_strv_count (sandbox->env), own = cg_strv_count (spec->env);
    const char **env = cg_xcalloc (extra + own + 1, sizeof *env);
    size_t n = 0;
    for (size_t i = 0; i < extra; i++)
        env[n++] = sandbox->env[i];
    for (size_t i = 0; i < own; i++) {
        const char *eq = strchr (spec->env[i], '=');
        size_t len = eq ? (size_t)(eq - spec->env[i]) + 1 : strlen (spec->env[i]);
        bool set = false;
        for (size_t k = 0; k < extra && !set; k++)
            set = strncmp (sandbox->env[k], spec->env[i], len) == 0;
        if (!set)
            env[n++] = spec->env[i];
    }
    cg_exec_spec_t merged = *spec;
    merged.env = env;
    pid_t pid = self->ops->exec (self->impl, sandbox, &merged, err);
    free (env);
    return pid;
}

pid_t
cg_container_init_pid (const cg_sandbox_t *sandbox)
{
    cleanup_free char *pid_file = cg_strdupf ("%s/init.pid", sandbox->bundle_dir);
    cleanup_free char *text = cg_read_file (pid_file, 64, NULL, NULL);
    long pid = text ? atol (text) : 0;
    return pid > 1 ? (pid_t)pid : 0;
}

bool
cg_backend_runc_owns_pid (void *impl, const cg_sandbox_t *sandbox, pid_t pid)
{
    (void)impl;
    return cg_cgroup_holds_pid (pid, sandbox->id);
}

bool
cg_container_owns_pid (cg_backend_t *self, const cg_sandbox_t *sandbox, pid_t pid)
{
    if (pid <= 0)
        return false;
    return self->ops->owns_pid ? self->ops->owns_pid (self->impl, sandbox, pid)
                               : cg_backend_runc_owns_pid (self->impl, sandbox, pid);
}

bool
cg_container_alive (cg_backend_t *self, const cg_sandbox_t *sandbox)
{
    return cg_container_owns_pid (self, sandbox, cg_container_init_pid (sandbox));
}

bool
cg_backend_pools_sessions (cg_backend_t *self)
{
    return !self->ops->fixed_labels;
}

int
cg_container_signal_others (cg_backend_t *self, const cg_sandbox_t *sandbox, int signal,
                            const pid_t *keep, size_t keep_count, cg_error_t **err)
{
    return self->ops->signal_others (self->impl, sandbox, signal, keep, keep_count, err);
}

int
cg_container_renice (cg_backend_t *self, const cg_sandbox_t *sandbox, int nice)
{
    return self->ops->renice (self->impl, sandbox, nice);
}

int
cg_container_stats (cg_backend_t *self, const cg_sandbox_t *sandbox, cg_container_stats_t *stats,
                    cg_error_t **err)
{
    return self->ops->stats (self->impl, sandbox, stats, err);
}

void
cg_container_peak_begin (cg_backend_t *self, const cg_sandbox_t *sandbox, cg_container_peak_t *peak)
{
    self->ops->peak_begin (self->impl, sandbox, peak);
    peak->current_mb = -1;
}

double
cg_container_peak_end (cg_backend_t *self, const cg_sandbox_t *sandbox, cg_container_peak_t *peak)
{
    return self->ops->peak_end (self->impl, sandbox, peak);
}

int
cg_container_destroy (cg_backend_t *self, const cg_sandbox_t *sandbox, cg_error_t **err)
{
    return self->ops->destroy_container (self->impl, sandbox, err);
}

int
cg_container_remove_orphans (cg_backend_t *self, const char *prefix, cg_error_t **err)
{
    return self->ops->remove_orphans (self->impl, prefix, err);
}

int
cg_container_remove_unowned (cg_backend_t *self, cg_container_owned_fn *owned, void *arg,
                             cg_error_t **err)
{
    return self->ops->remove_unowned (self->impl, owned, arg, err);
}

char *
cg_sandbox_writable (const cg_sandbox_limits_t *limits, const char *kind)
{
    cleanup_free char *disk =
        limits->workspace_mb > 0
            ? cg_strdupf ("the workspace and its package layer (one file system: %d MB, %d "
                          "files), the ipc directory (%d KB, %d files)",
                          limits->workspace_mb, limits->workspace_inodes, CG_IPC_TMPFS_KB,
                          CG_IPC_TMPFS_INODES)
            : cg_xstrdup ("the workspace, its package layer and the ipc directory (no limit)");
    //  The Docker API takes no inode count for a tmpfs (Podman refuses nr_inodes): there
    //  the sandbox's inodes in /tmp and /dev/shm are kernel memory its memory limit counts.
    if (strcmp (kind, "docker") == 0)
        return cg_strdupf ("read-only system; writable only: %s, /tmp (%d MB), /dev/shm (64 MB); "
                           "their inodes count against the memory limit",
                           disk, limits->tmp_mb);
    return cg_strdupf (
        "read-only system; writable only: %s, /tmp (%d MB, %d files), /dev/shm "
        "(64 MB, %d files)%s",
        disk, limits->tmp_mb, CG_TMP_INODES (limits->tmp_mb), CG_SHM_INODES,
        strcmp (kind, "rootless") == 0 ? ", /dev (64 MB, " CG_STR (CG_DEV_INODES) " files)" : "");
}

json_t *
cg_backend_limits (cg_backend_t *self)
{
    const cg_sandbox_limits_t *c = &self->limits;
    json_t *report = NULL;
    if (self->ops == &cg_rootless_ops)
        report = cg_rootless_limits_report (c);
    else {
        cleanup_free char *memory =
            cg_strdupf ("memory: %d MB per sandbox, swap included (its cgroup)", c->memory_mb);
        cleanup_free char *pids = cg_strdupf ("processes: %d per sandbox (its cgroup)", c->pids);
        cleanup_free char *cpu = cg_strdupf ("CPU share: %g CPUs (its cgroup)", c->cpus);
        cleanup_free char *fsize =
            cg_strdupf ("file size: %d MB per file (RLIMIT_FSIZE)", c->fsize_mb);
        cleanup_free char *writable = cg_sandbox_writable (c, self->ops->kind);
        report = json_pack ("{s:[s, s, s, s, s, s, s], s:[]}", "enforced", memory, pids, cpu, fsize,
                            CG_SANDBOX_NETWORK (c), writable,
                            "no capabilities, no_new_privs, seccomp", "not_enforced");
        if (c->workspace_mb == 0)
            json_array_append_new (json_object_get (report, "not_enforced"),
                                   json_string (CG_SANDBOX_DISK_UNLIMITED));
    }
    json_object_set_new (report, "backend", json_string (self->ops->kind));
    return report;
}
