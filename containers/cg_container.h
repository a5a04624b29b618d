/*  cg_container — the sandbox backend interface (create, exec, stats, destroy, orphans)
    and the security profile every backend applies. */
#ifndef CG_CONTAINER_H
#define CG_CONTAINER_H

#include "base/cg_error.h"
#include "base/cg_limits.h"

#include <jansson.h>
#include <stdbool.h>
#include <sys/types.h>

typedef struct cg_backend_t cg_backend_t;

/*  Where the kernels directory (--kernels-dir) appears, read-only, inside every sandbox. */
#define CG_KERNELS_MOUNT "/opt/cellgate/kernels"

/*  Installed packages (install_package): a sandbox's own layer, read-write, and the
    shared layer every new sandbox gets read-only after it; each holds python/ (pip
    --target, on PYTHONPATH) and node/node_modules (npm --prefix node, on NODE_PATH). The
    package sources an operator configured are read-only beside them, when set. */
#define CG_SITE_MOUNT "/opt/cellgate/site"
#define CG_SHARED_SITE_MOUNT "/opt/cellgate/shared"
#define CG_WHEELHOUSE_MOUNT "/opt/cellgate/wheelhouse"
#define CG_NPM_MIRROR_MOUNT "/opt/cellgate/npm-mirror"

/*  Inode limits of the sandbox's tmpfs mounts (beside their size limits): /tmp may hold one
    inode per 4 KiB page of its --tmp-mb, /dev/shm (64 MB) likewise, /dev (64 MB; writable
    only for the rootless backend's user, root in its namespace) far fewer; without one,
    empty files would cost kernel memory without end. */
#define CG_TMP_INODES(tmp_mb) ((tmp_mb)*256)
#define CG_SHM_INODES 16384
#define CG_DEV_INODES 4096

/*  What a sandbox is for, written in its OCI config as the annotation org.cellgate.kind
    (cg_sandbox_kind_name) so that an operator (`runc state`) and a sweep can tell. */
typedef enum {
    CG_SANDBOX_SESSION,   /* a named session's sandbox ("session") */
    CG_SANDBOX_ONESHOT,   /* one call's sandbox, removed after it ("oneshot") */
    CG_SANDBOX_INSTALLER, /* a one-shot install into the shared package layer ("installer") */
    CG_SANDBOX_POOL,      /* a warm sandbox waiting to be claimed ("pool") */
} cg_sandbox_kind_t;

/*  Returns KIND's annotation value ("session", "oneshot", "installer", "pool"). Static. */
const char *cg_sandbox_kind_name (cg_sandbox_kind_t kind);

/*  The annotations every sandbox's OCI config carries (runc state shows them). */
#define CG_ANNOTATION_INSTANCE "org.cellgate.instance" /* the server instance's 12 hex */
#define CG_ANNOTATION_SESSION "org.cellgate.session"   /* the registry slot's 12 hex */
#define CG_ANNOTATION_KIND "org.cellgate.kind"         /* cg_sandbox_kind_name */
/*  Where an engine's containers say who made them (the docker backend's labels): a shared
    engine holds the sandboxes of every server on its host, and only one that sees the
    maker's state dir may judge them gone. */
#define CG_ANNOTATION_STATE "org.cellgate.state" /* the maker's --state-dir */
#define CG_ANNOTATION_VIEW "org.cellgate.view"   /* "<boot id>/mnt:[<inode>]" of the maker */

/*  One sandbox: host directories and the container's name. The sandbox can write to
    WORKSPACE, SITE_DIR and IPC_DIR only (each size-limited: the session's disk and its ipc
    tmpfs, artifacts/cg_wsfs), beside its tmpfs mounts; the host never resolves a path below
    any of them in its own namespace through anything the sandbox could have planted. */
typedef struct {
    const char *id;             /* container id, unique per server instance */
    const char *bundle_dir;     /* host dir for the backend's own files */
    const char *workspace;      /* host dir mounted read-write at CG_WORKSPACE_MOUNT */
    const char *run_dir;        /* host dir mounted read-only at CG_RUN_MOUNT; holds an
                                   empty ipc/ as the mount point of IPC_DIR */
    const char *ipc_dir;        /* host dir mounted read-write at CG_IPC_MOUNT */
    const char *site_dir;       /* host dir mounted read-write at CG_SITE_MOUNT, or NULL;
                                   the backend's shared layer for a sandbox that installs
                                   into it (cg_backend_shared_site) */
    const char *instance;       /* the server instance it belongs to (annotation) */
    const char *session;        /* the registry slot it was made for (annotation; not a
                               client's session id or any credential) */
    const char *client_session; /* the client's session id it was made for, or NULL (a
                                   one-shot's, a pool's): the docker backend's label
                                   session_id (seed 004), for `docker ps --filter` */
    cg_sandbox_kind_t kind;
    const char *const *env; /* KEY=VALUE strings every process started in it gets before
                               its own (--egress proxy's settings), or NULL; borrowed */
} cg_sandbox_t;

/*  A process to start inside a running sandbox. */
typedef struct {
    const char *const *argv; /* NULL-terminated */
    const char *const *env;  /* NULL-terminated KEY=VALUE list, already allow-listed */
    const char *cwd;         /* inside the sandbox */
    const char *pid_file;    /* host path that receives the process's host pid, or NULL */
    int stdin_fd, stdout_fd, stderr_fd; /* host fds given to the process */
} cg_exec_spec_t;

typedef struct {
    double memory_mb;      /* current usage */
    double memory_peak_mb; /* high-water mark */
    long oom_kills;        /* processes killed by the OOM killer, -1 if unknown */
} cg_container_stats_t;

/*  What every sandbox of a backend gets, and where the backend keeps its files: the
    caller fills it from its own settings. */
typedef struct {
    const char *backend;     /* "auto", "oci" or "docker" (cg_backend_new) */
    const char *runtime;     /* "auto", a name looked up on PATH, or a path */
    const char *state_dir;   /* holds the runtime's state, the shared root and /etc */
    const char *kernels_dir; /* bound read-only at CG_KERNELS_MOUNT when it is a dir */
    int memory_mb;           /* per sandbox, swap included */
    double cpus;             /* CPU quota, in CPUs */
    int pids;                /* processes and threads at once */
    int tmp_mb;              /* size of the sandbox's /tmp tmpfs */
    int workspace_mb;        /* size of the session's disk (workspace and package layer,
                                artifacts/cg_wsfs), for the limits report; 0: no limit */
    int workspace_inodes;    /* its files and directories, likewise */
    int nofile;              /* RLIMIT_NOFILE */
    int fsize_mb;            /* RLIMIT_FSIZE */
    int sandbox_uid;         /* the unprivileged user every sandboxed process runs as */
    int sandbox_gid;
    const char *wheelhouse;  /* bound read-only at CG_WHEELHOUSE_MOUNT, or NULL */
    const char *npm_mirror;  /* bound read-only at CG_NPM_MIRROR_MOUNT, or NULL */
    const char *image;       /* docker: the sandbox image; oci, rootless: its unpacked root
                                file system in place of the host's /usr; or NULL */
    const char *docker_host; /* docker: unix://PATH or tcp://HOST:PORT, or NULL: DOCKER_HOST,
                                else unix:///var/run/docker.sock */
    bool docker_tcp;         /* docker: a tcp:// host is allowed (no TLS: root on it) */
    bool image_kernels;      /* docker: the image's CG_KERNELS_MOUNT serves, KERNELS_DIR is
                                not bound */
    bool egress_proxy;       /* --egress proxy: the limits report says what the network is */
} cg_sandbox_limits_t;

/*  The limits report's words for LIMITS' network. Static. */
#define CG_SANDBOX_NETWORK(limits)                                                           \
    ((limits)->egress_proxy ? "network: HTTP and HTTPS to the --egress-allow hosts only, "   \
                              "through the audited proxy (a listener in an otherwise empty " \
                              "network namespace)"                                           \
                            : "no network (an empty network namespace)")

/*  What a sandbox of backend KIND ("oci", "rootless", "docker") under LIMITS may write and
    how much, for the limits report (rootless: its user is root in its user namespace, so
    /dev is writable too). Caller frees. */
char *cg_sandbox_writable (const cg_sandbox_limits_t *limits, const char *kind);

/*  The limits report's words for sessions whose disk has no limit (--workspace-mb 0, and
    always without root). */
#define CG_SANDBOX_DISK_UNLIMITED                                                          \
    "the size and file count of the workspace, its package layer (" CG_SITE_MOUNT ") and " \
    "the ipc directory (" CG_IPC_MOUNT "): plain directories on the state dir's file "     \
    "system (--workspace-mb 0; a normal user cannot mount a loop device or a tmpfs)"

/*  Creates the backend LIMITS->backend names: "oci" (runc or crun as LIMITS->runtime says,
    preparing the shared read-only root under LIMITS->state_dir), "docker" (the Docker
    Engine API, Podman's included, at LIMITS->docker_host, running LIMITS->image) or "auto"
    (NULL too): oci when this process is root and a runtime works, else docker when its
    socket answers. Logs the choice and why. LIMITS is copied; the strings it points to are
    borrowed and must outlive the backend. Returns NULL with *err set when the backend (for
    auto: none) can run here, or the name is unknown (EINVAL). */
cg_backend_t *cg_backend_new (const cg_sandbox_limits_t *limits, cg_error_t **err);

/*  Destroys *self_p (not the containers) and sets it to NULL. */
void cg_backend_destroy (cg_backend_t **self_p);

/*  Returns the runtime in use, e.g. "runc", or "docker" for the Docker backend. */
const char *cg_backend_name (cg_backend_t *self);

/*  What the backend's sandboxes are held to: a new object {backend (its kind), enforced:
    [sentences], not_enforced: [sentences]} the caller owns. The root and Docker backends
    enforce every limit; the rootless one says which it cannot (cg_rootless). */
json_t *cg_backend_limits (cg_backend_t *self);

/*  Returns the backend's kind: "oci", "rootless" or "docker". Static. */
const char *cg_backend_kind (cg_backend_t *self);

/*  Returns whether a sandbox made before its session (the warm pool's) may become a named
    session's. False where the client's session id is a label the engine fixes when the
    container is made (docker: label session_id, which no engine can change on a running
    container): there the pool serves one-shot runs only, and a session's sandbox is made
    for it. */
bool cg_backend_pools_sessions (cg_backend_t *self);

/*  Returns the host directory of the shared package layer (<state_dir>/packages, made by
    cg_backend_new, writable by the sandbox user), bound read-only at CG_SHARED_SITE_MOUNT
    in every sandbox; NULL when it could not be made (logged): sandboxes run without it.
    Borrowed. */
const char *cg_backend_shared_site (cg_backend_t *self);

/*  Makes DIR a package layer (CG_SITE_MOUNT's layout): DIR itself, and python/, node/ and
    node/node_modules owned by UID:GID, the sandbox user. Returns 0, or -1 with *err set. */
int cg_container_site_prepare (const char *dir, int uid, int gid, cg_error_t **err);

/*  Creates and starts SANDBOX: a container with no network, a read-only root, the
    workspace and run dir as its only writable binds, limits and seccomp, and a reaping
    init as its first process. Returns 0, or -1 with *err set. */
int cg_container_create (cg_backend_t *self, const cg_sandbox_t *sandbox, cg_error_t **err);

/*  Starts SPEC inside SANDBOX as the unprivileged sandbox user, with SANDBOX->env before
    SPEC's environment (a variable SPEC sets that SANDBOX->env sets too is left out). Returns the host pid of
    the local helper process whose exit means the sandboxed process exited (its exit
    status is the process's), or -1 with *err set. The caller reaps it. */
pid_t cg_container_exec (cg_backend_t *self, const cg_sandbox_t *sandbox,
                         const cg_exec_spec_t *spec, cg_error_t **err);

/*  SANDBOX's init as a host pid (every backend notes it in its bundle dir when it starts
    the sandbox), or 0 when it is not running or not known. */
pid_t cg_container_init_pid (const cg_sandbox_t *sandbox);

/*  Returns true when host process PID is a process of SANDBOX's container, as its backend
    lays out cgroups (runc: a cgroup named for the container; an engine: its container's
    init's), so that a pid read from a file is still the sandbox's and not a reused pid. */
bool cg_container_owns_pid (cg_backend_t *self, const cg_sandbox_t *sandbox, pid_t pid);

/*  Returns true when SANDBOX's container still runs: the init pid noted in its bundle dir
    (cg_container_init_pid) is a process of it (cg_container_owns_pid). */
bool cg_container_alive (cg_backend_t *self, const cg_sandbox_t *sandbox);

/*  Sends SIGNAL to every process in SANDBOX except its init and the host pids in KEEP
    (KEEP_COUNT entries). Returns how many were signalled, or -1 with *err set. */
int cg_container_signal_others (cg_backend_t *self, const cg_sandbox_t *sandbox, int signal,
                                const pid_t *keep, size_t keep_count, cg_error_t **err);

/*  Sets the scheduling priority of every thread in SANDBOX's cgroup to NICE, and the
    cgroup's CPU weight to match where it has one (a pooled sandbox warms up at a low
    priority and is raised when claimed). Returns how many threads were set; never
    fails. */
int cg_container_renice (cg_backend_t *self, const cg_sandbox_t *sandbox, int nice);

/*  Reads memory usage and OOM kills of SANDBOX from its cgroup. Returns 0, or -1 with
    *err set. */
int cg_container_stats (cg_backend_t *self, const cg_sandbox_t *sandbox,
                        cg_container_stats_t *stats, cg_error_t **err);

/*  One run's measure of its sandbox's peak memory. */
typedef struct {
    int fd;            /* cgroup v2: memory.peak, open and reset for this measure; else -1 */
    bool reset;        /* the peak was reset at the start: the measure is this run's own */
    double current_mb; /* what cg_container_peak_end found in use, in MB; -1 unknown */
} cg_container_peak_t;

/*  Starts measuring SANDBOX's peak memory afresh: on cgroup v1 by resetting
    memory.max_usage_in_bytes, on v2 by opening memory.peak and writing to it, which
    resets the peak read through that descriptor (Linux 6.12 and later). When neither
    works, PEAK->reset is false and cg_container_peak_end gives the sandbox's peak since
    it started. Never fails; PEAK must be ended with cg_container_peak_end. */
void cg_container_peak_begin (cg_backend_t *self, const cg_sandbox_t *sandbox,
                              cg_container_peak_t *peak);

/*  Returns SANDBOX's peak memory in MB since cg_container_peak_begin (since the sandbox
    started when PEAK->reset is false), or -1 when it cannot be read; closes PEAK's
    descriptor. Sets PEAK->current_mb to the memory in use now when it could read it (the
    value cg_container_stats would give as memory_mb), else -1. */
double cg_container_peak_end (cg_backend_t *self, const cg_sandbox_t *sandbox,
                              cg_container_peak_t *peak);

/*  Kills and removes SANDBOX's container (not its directories). Returns 0, or -1 with
    *err set; a container that no longer exists is not an error. */
int cg_container_destroy (cg_backend_t *self, const cg_sandbox_t *sandbox, cg_error_t **err);

/*  Kills and removes every container of this backend whose id starts with PREFIX (what
    a crashed server left). Returns how many were removed, or -1 with *err set. */
int cg_container_remove_orphans (cg_backend_t *self, const char *prefix, cg_error_t **err);

/*  Answers whether server instance INSTANCE (12 hex) is alive or kept, so that its
    sandboxes must stay. STATE_DIR is the state dir its sandbox names (an engine's label),
    or NULL for this server's own. */
typedef bool (cg_container_owned_fn) (const char *state_dir, const char *instance, void *arg);

/*  Finds every container of this backend named for a server instance ("cg-<12 hex>-…", in
    the runtime's list or as a state entry it left half-made) and removes, as
    cg_container_remove_orphans does, all of each instance for which OWNED (ARG) answers
    false: what a server killed mid-create leaves when its create completes after its
    instance's state was already swept. On a shared engine, a sandbox that names another
    state dir is judged by that dir's instances, and never when it was made in another
    mount namespace (cellgate in a container beside one on the host): that state is out of
    sight. Returns how many containers were removed, or -1 with *err set. */
int cg_container_remove_unowned (cg_backend_t *self, cg_container_owned_fn *owned, void *arg,
                                 cg_error_t **err);

#endif
