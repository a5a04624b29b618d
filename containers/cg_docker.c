/*  cg_docker — the sandbox backend on the Docker Engine API (Docker, or Podman's
    compatible service): one container per sandbox with no network, no capabilities, our
    seccomp profile, a read-only root and limits; processes started with exec. */
#define _GNU_SOURCE
#include "containers/cg_backend_ops.h"
#include "containers/cg_cgroup.h"
#include "containers/cg_docker.h"
#include "containers/cg_docker_api.h"
#include "containers/cg_docker_probe.h"
#include "containers/cg_seccomp.h"
#include "base/cg_fault.h"
#include "base/cg_util.h"
#include "base/cg_fs.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

//  Every sandbox container's label app=cellgate, and a session's session_id=<the client's
//  session id> (seed 004), beside the annotations' names as labels (org.cellgate.instance,
//  .session, .kind).
#define S_LABEL_APP "app"
#define S_LABEL_APP_VALUE "cellgate"
#define S_LABEL_SESSION_ID "session_id"

typedef struct {
    cg_sandbox_limits_t limits;     /* a copy; its strings are borrowed */
    const char *const *shared_site; /* the shared package layer, or NULL (cg_backend.c's) */
    cg_docker_api_t *api;
    char *engine;       /* "Docker Engine 20.10.24", "Podman Engine 4.3.1" */
    char *seccomp_path; /* Podman: the profile as a file it reads; NULL for Docker */
    char *seccomp_json; /* Docker: the profile itself */
    bool cgroup_v2;     /* the host's cgroup layout is unified only */
    char *view;         /* this process's view of file systems: CG_ANNOTATION_VIEW */
} cg_docker_t;

//  --------------------------------------------------------------------------
//  The engine

//  Asks the engine what it is (GET /version) and fills SELF->engine. Returns 0, or -1.
static int
s_identify (cg_docker_t *self, bool *podman, cg_error_t **err)
{
    json_t *reply = NULL;
    int status = cg_docker_api_call (self->api, "GET", "/version", NULL, &reply, err);
    if (status < 0)
        return -1;
    if (status != 200) {
        cg_docker_api_fail (status, reply, err, "GET /version");
        json_decref (reply);
        return -1;
    }
    const char *name = NULL, *version = json_string_value (json_object_get (reply, "Version"));
    size_t i;
    json_t *component;
    json_array_foreach (json_object_get (reply, "Components"), i, component)
    {
        const char *c = json_string_value (json_object_get (component, "Name"));
        if (c && strstr (c, "Engine")) {
            name = c;
            version = json_string_value (json_object_get (component, "Version"));
            break;
        }
    }
    *podman = name && strstr (name, "Podman");
    //  Docker's component is plain "Engine" (Podman's "Podman Engine").
    if (!name || strcmp (name, "Engine") == 0)
        name = "Docker Engine";
    self->engine = cg_strdupf ("%s %s", name, version ? version : "?");
    json_decref (reply);
    return 0;
}

//  The seccomp profile as the engine takes it: Docker wants the JSON itself in
//  SecurityOpt, Podman's compatible service a path on its host (this one).
static int
s_prepare_seccomp (cg_docker_t *self, bool podman, cg_error_t **err)
{
    json_t *profile = cg_seccomp_profile ();
    char *text = json_dumps (profile, JSON_COMPACT);
    json_decref (profile);
    if (!text)
        abort ();
    if (!podman) {
        self->seccomp_json = text;
        return 0;
    }
    self->seccomp_path = cg_strdupf ("%s/docker-seccomp.json", self->limits.state_dir);
    int rc = cg_mkdir_p (self->limits.state_dir, 0755, err) < 0
                 ? -1
                 : cg_write_file (self->seccomp_path, text, strlen (text), 0644, err);
    free (text);
    return rc;
}

//  What CG_ANNOTATION_VIEW says of this process: the boot and the mount namespace. Two
//  servers with the same view see the same paths, so one can tell whether the other's
//  state dir is gone; cellgate in a container and cellgate on its host have different ones.
static char *
s_view (void)
{
    cleanup_free char *boot = cg_read_file ("/proc/sys/kernel/random/boot_id", 64, NULL, NULL);
    if (boot)
        boot[strcspn (boot, "\n")] = '\0';
    char mnt[64] = "";
    ssize_t n = readlink ("/proc/self/ns/mnt", mnt, sizeof mnt - 1);
    mnt[n > 0 ? n : 0] = '\0';
    return cg_strdupf ("%s/%s", boot ? boot : "", mnt);
}

static void s_docker_destroy (void **impl_p);

static void *
s_docker_new (const cg_sandbox_limits_t *limits, const char *const *shared_site, cg_error_t **err)
{
    if (!limits->image) {
        cg_error_set (err, EINVAL,
                      "no sandbox image: --image (CELLGATE_IMAGE, SANDBOX_IMAGE) names the image "
                      "the Docker backend runs");
        return NULL;
    }
    struct statfs fs;
    cg_docker_t *self = cg_xcalloc (1, sizeof *self);
    void *impl = self;
    self->limits = *limits;
    self->shared_site = shared_site;
    self->cgroup_v2 = statfs ("/sys/fs/cgroup", &fs) == 0 && fs.f_type == 0x63677270; /* CGROUP2 */
    self->view = s_view ();
    bool podman = false;
    self->api = cg_docker_api_new (limits->docker_host, limits->docker_tcp, err);
    if (!self->api || s_identify (self, &podman, err) < 0
        || s_prepare_seccomp (self, podman, err) < 0
        || cg_docker_probe (self->api, limits, self->engine, self->cgroup_v2, err) < 0) {
        s_docker_destroy (&impl);
        return NULL;
    }
    cg_log (2, "sandbox engine: %s at %s, image %s", self->engine, cg_docker_api_host (self->api),
            limits->image);
    return self;
}

static void
s_docker_destroy (void **impl_p)
{
    if (!impl_p || !*impl_p)
        return;
    cg_docker_t *self = *impl_p;
    cg_docker_api_destroy (&self->api);
    free (self->engine);
    free (self->seccomp_path);
    free (self->seccomp_json);
    free (self->view);
    free (self);
    *impl_p = NULL;
}

static const char *
s_docker_name (void *impl)
{
    (void)impl;
    return "docker";
}

//  --------------------------------------------------------------------------
//  Containers

//  Appends "SOURCE:DESTINATION:MODE" to BINDS when SOURCE is set.
static void
s_bind (json_t *binds, const char *source, const char *destination, const char *mode)
{
    if (source)
        json_array_append_new (binds, json_sprintf ("%s:%s:%s", source, destination, mode));
}

static json_t *
s_ulimit (const char *name, json_int_t value)
{
    return json_pack ("{s:s, s:I, s:I}", "Name", name, "Soft", value, "Hard", value);
}

//  /var/tmp: Podman mounts a writable tmpfs there on a read-only root (--read-only-tmpfs), of
//  half the host's memory; an empty read-only one keeps the sandbox's writable paths the
//  same on every engine.
#define S_VAR_TMP "ro,nosuid,nodev,noexec,size=64k,mode=755"

//  The container's HostConfig: what confines it.
static json_t *
s_host_config (cg_docker_t *self, const cg_sandbox_t *sandbox)
{
    const cg_sandbox_limits_t *c = &self->limits;
    json_t *binds = json_array ();
    s_bind (binds, sandbox->workspace, CG_WORKSPACE_MOUNT, "rw");
    //  What the host writes is read-only inside; only the ipc directory below it is not.
    s_bind (binds, sandbox->run_dir, CG_RUN_MOUNT, "ro");
    s_bind (binds, sandbox->ipc_dir, CG_IPC_MOUNT, "rw");
    cleanup_free char *kernels = realpath (c->kernels_dir, NULL);
    struct stat st;
    if (!c->image_kernels && kernels && stat (kernels, &st) == 0 && S_ISDIR (st.st_mode))
        s_bind (binds, kernels, CG_KERNELS_MOUNT, "ro");
    s_bind (binds, sandbox->site_dir, CG_SITE_MOUNT, "rw");
    s_bind (binds, *self->shared_site, CG_SHARED_SITE_MOUNT, "ro");
    s_bind (binds, c->wheelhouse, CG_WHEELHOUSE_MOUNT, "ro");
    s_bind (binds, c->npm_mirror, CG_NPM_MIRROR_MOUNT, "ro");
    json_int_t memory = (json_int_t)c->memory_mb * 1024 * 1024;
    json_int_t fsize = (json_int_t)c->fsize_mb * 1024 * 1024;
    //  Podman as root gives every process RLIMIT_NPROC 1048576, which runc cannot set where
    //  the service's own hard limit is lower. Ours: this process's hard limit, at most
    //  pid_max, which limits nothing pid_max does not; the sandbox's own limit is PidsLimit.
    struct rlimit nproc = {RLIM_INFINITY, RLIM_INFINITY};
    getrlimit (RLIMIT_NPROC, &nproc);
    cleanup_free char *pid_max_text = cg_read_file ("/proc/sys/kernel/pid_max", 64, NULL, NULL);
    json_int_t nproc_max = pid_max_text ? atoll (pid_max_text) : 32768;
    if (nproc.rlim_max != RLIM_INFINITY && (json_int_t)nproc.rlim_max < nproc_max)
        nproc_max = (json_int_t)nproc.rlim_max;
    json_t *ulimits =
        json_pack ("[o, o, o, o]", s_ulimit ("nofile", c->nofile), s_ulimit ("fsize", fsize),
                   s_ulimit ("core", 0), s_ulimit ("nproc", nproc_max));
    cleanup_free char *seccomp =
        cg_strdupf ("seccomp=%s", self->seccomp_path ? self->seccomp_path : self->seccomp_json);
    //  No nr_inodes: Podman refuses it. The tmpfs inodes are kernel memory that the
    //  container's memory limit counts (cg_sandbox_writable says so).
    cleanup_free char *tmp = cg_strdupf ("rw,nosuid,nodev,size=%dm,mode=1777", c->tmp_mb);
    //  LogConfig none: the engine would keep whatever the container's init writes (sandboxed
    //  code can write to /proc/1/fd/1) in a log file on the host's disk, without a limit; the
    //  kernels' own output reaches the server through exec streams, not the log.
    return json_pack (
        "{s:s, s:[s], s:[s, s], s:b, s:{s:s, s:s}, s:I, s:I, s:I, s:I, s:o, s:o, s:s, "
        "s:b, s:b, s:I, s:{s:s, s:{}}}",
        "NetworkMode", "none", "CapDrop", "ALL", "SecurityOpt", "no-new-privileges", seccomp,
        "ReadonlyRootfs", 1, "Tmpfs", "/tmp", tmp, "/var/tmp", S_VAR_TMP, "Memory", memory,
        "MemorySwap", memory, "NanoCpus", (json_int_t)(c->cpus * 1e9), "PidsLimit",
        (json_int_t)c->pids, "Ulimits", ulimits, "Binds", binds, "IpcMode", "private", "Privileged",
        0, "Init", 0, "ShmSize", (json_int_t)64 * 1024 * 1024, "LogConfig", "Type", "none",
        "Config");
}

static json_t *
s_create_body (cg_docker_t *self, const cg_sandbox_t *sandbox)
{
    const cg_sandbox_limits_t *c = &self->limits;
    cleanup_free char *user = cg_strdupf ("%d:%d", c->sandbox_uid, c->sandbox_gid);
    json_t *labels = json_pack ("{s:s, s:s, s:s, s:s, s:s, s:s}", S_LABEL_APP, S_LABEL_APP_VALUE,
                                CG_ANNOTATION_INSTANCE, sandbox->instance ? sandbox->instance : "",
                                CG_ANNOTATION_SESSION, sandbox->session ? sandbox->session : "",
                                CG_ANNOTATION_KIND, cg_sandbox_kind_name (sandbox->kind),
                                CG_ANNOTATION_STATE, c->state_dir, CG_ANNOTATION_VIEW, self->view);
    if (sandbox->client_session)
        json_object_set_new (labels, S_LABEL_SESSION_ID, json_string (sandbox->client_session));
    return json_pack ("{s:s, s:[s], s:[s], s:s, s:s, s:s, s:[s], s:b, s:o, s:o}", "Image", c->image,
                      "Entrypoint", "/usr/bin/catatonit", "Cmd", "-P", "User", user, "Hostname",
                      "sandbox", "WorkingDir", "/", "Env", "PATH=/usr/bin:/bin", "NetworkDisabled",
                      1, "Labels", labels, "HostConfig", s_host_config (self, sandbox));
}

//  Writes the container's init pid (the host's) to BUNDLE_DIR/init.pid, for its cgroup.
static int
s_note_init (cg_docker_t *self, const cg_sandbox_t *sandbox, cg_error_t **err)
{
    cleanup_free char *path = cg_strdupf ("/containers/%s/json", sandbox->id);
    json_t *reply = NULL;
    int status = cg_docker_api_call (self->api, "GET", path, NULL, &reply, err);
    if (status < 0)
        return -1;
    json_int_t pid = json_integer_value (json_object_get (json_object_get (reply, "State"), "Pid"));
    if (status != 200 || pid <= 0) {
        int rc = cg_docker_api_fail (status, reply, err, "inspect: no running init");
        json_decref (reply);
        return rc;
    }
    json_decref (reply);
    cleanup_free char *pid_file = cg_strdupf ("%s/init.pid", sandbox->bundle_dir);
    cleanup_free char *text = cg_strdupf ("%lld\n", (long long)pid);
    return cg_write_file (pid_file, text, strlen (text), 0644, err);
}

static int s_docker_destroy_container (void *impl, const cg_sandbox_t *sandbox, cg_error_t **err);

static int
s_docker_create (void *impl, const cg_sandbox_t *sandbox, cg_error_t **err)
{
    cg_docker_t *self = impl;
    json_t *body = s_create_body (self, sandbox);
    cleanup_free char *path = cg_strdupf ("/containers/create?name=%s", sandbox->id);
    json_t *reply = NULL;
    int status = cg_fault_at ("oci_config", err) < 0
                     ? -1
                     : cg_docker_api_call (self->api, "POST", path, body, &reply, err);
    json_decref (body);
    if (status >= 0 && status != 201)
        status = cg_docker_api_fail (status, reply, err, "create");
    json_decref (reply);
    if (status < 0)
        return cg_error_wrap (err, "container %s", sandbox->id);
    cleanup_free char *start = cg_strdupf ("/containers/%s/start", sandbox->id);
    status = cg_docker_api_call (self->api, "POST", start, NULL, &reply, err);
    if (status >= 0 && status != 204 && status != 304)
        status = cg_docker_api_fail (status, reply, err, "start");
    json_decref (reply);
    if (status < 0 || s_note_init (self, sandbox, err) < 0) {
        s_docker_destroy_container (self, sandbox, NULL);
        return cg_error_wrap (err, "container %s", sandbox->id);
    }
    return 0;
}

static pid_t
s_docker_exec (void *impl, const cg_sandbox_t *sandbox, const cg_exec_spec_t *spec,
               cg_error_t **err)
{
    cg_docker_t *self = impl;
    return cg_docker_exec_start (self->api, &self->limits, sandbox, spec, err);
}

//  SANDBOX's memory cgroup directory, found from its init's pid (caller frees), or NULL.
static char *
s_memory_dir (cg_docker_t *self, const cg_sandbox_t *sandbox, pid_t *init)
{
    cleanup_free char *pid_file = cg_strdupf ("%s/init.pid", sandbox->bundle_dir);
    cleanup_free char *text = cg_read_file (pid_file, 64, NULL, NULL);
    pid_t pid = text ? (pid_t)atol (text) : 0;
    if (init)
        *init = pid;
    return pid > 0 ? cg_cgroup_memory_dir_of (pid, self->cgroup_v2) : NULL;
}

//  The host pid of SANDBOX's init as the engine knows it now, or 0 when the container does
//  not run (or the engine does not answer).
static pid_t
s_running_init (cg_docker_t *self, const cg_sandbox_t *sandbox)
{
    cleanup_free char *path = cg_strdupf ("/containers/%s/json", sandbox->id);
    json_t *reply = NULL;
    int status = cg_docker_api_call (self->api, "GET", path, NULL, &reply, NULL);
    json_t *state = json_object_get (reply, "State");
    json_int_t pid = status == 200 && json_is_true (json_object_get (state, "Running"))
                         ? json_integer_value (json_object_get (state, "Pid"))
                         : 0;
    json_decref (reply);
    return pid > 0 ? (pid_t)pid : 0;
}

//  Each engine names a container's cgroup its own way (dockerd: docker/<id>, Podman with
//  cgroupfs: libpod_parent/libpod-<id>, either under systemd: a scope), never by the name we
//  gave it: PID is the container's when it shares the memory cgroup of the init the engine
//  says runs the container now.
static bool
s_docker_owns_pid (void *impl, const cg_sandbox_t *sandbox, pid_t pid)
{
    cg_docker_t *self = impl;
    pid_t init = s_running_init (self, sandbox);
    if (init <= 0)
        return false;
    if (init == pid)
        return true;
    cleanup_free char *mine = cg_cgroup_memory_dir_of (pid, self->cgroup_v2);
    cleanup_free char *its = cg_cgroup_memory_dir_of (init, self->cgroup_v2);
    return mine && its && strcmp (mine, its) == 0;
}

//  POSTs to /containers/ID/VERB (pause, unpause). Returns 0, or -1 with *err set.
static int
s_post (cg_docker_t *self, const char *id, const char *verb, cg_error_t **err)
{
    cleanup_free char *path = cg_strdupf ("/containers/%s/%s", id, verb);
    json_t *reply = NULL;
    int status = cg_docker_api_call (self->api, "POST", path, NULL, &reply, err);
    if (status >= 0 && status != 204)
        status = cg_docker_api_fail (status, reply, err, "%s %s", verb, id);
    json_decref (reply);
    return status < 0 ? -1 : 0;
}

static int
s_docker_signal_others (void *impl, const cg_sandbox_t *sandbox, int signal, const pid_t *keep,
                        size_t keep_count, cg_error_t **err)
{
    cg_docker_t *self = impl;
    pid_t init = 0;
    cleanup_free char *dir = s_memory_dir (self, sandbox, &init);
    if (!dir)
        return cg_error_set (err, ENOENT, "signal in %s: its cgroup is not found", sandbox->id);
    //  Frozen first, as the OCI backend does, so that nothing forks between the listing
    //  and the signals.
    bool frozen = s_post (self, sandbox->id, "pause", NULL) == 0;
    int count = cg_cgroup_signal_members (dir, init, signal, keep, keep_count);
    cg_log (3, "signalled %d process(es) in %s (frozen: %s)", count, sandbox->id,
            frozen ? "yes" : "no");
    if (frozen && s_post (self, sandbox->id, "unpause", err) < 0)
        return -1;
    return count;
}

static int
s_docker_renice (void *impl, const cg_sandbox_t *sandbox, int nice)
{
    cg_docker_t *self = impl;
    cleanup_free char *dir = s_memory_dir (self, sandbox, NULL);
    return dir ? cg_cgroup_renice (dir, self->cgroup_v2, nice) : 0;
}

static int
s_docker_stats (void *impl, const cg_sandbox_t *sandbox, cg_container_stats_t *stats,
                cg_error_t **err)
{
    cg_docker_t *self = impl;
    cleanup_free char *dir = s_memory_dir (self, sandbox, NULL);
    if (!dir)
        return cg_error_set (err, ENOENT, "stats %s: its cgroup is not found", sandbox->id);
    return cg_cgroup_stats (dir, self->cgroup_v2, sandbox->id, stats, err);
}

static void
s_docker_peak_begin (void *impl, const cg_sandbox_t *sandbox, cg_container_peak_t *peak)
{
    cg_docker_t *self = impl;
    cleanup_free char *dir = s_memory_dir (self, sandbox, NULL);
    if (dir)
        cg_cgroup_peak_begin (dir, self->cgroup_v2, peak);
    else
        *peak = (cg_container_peak_t){.fd = -1};
}

static double
s_docker_peak_end (void *impl, const cg_sandbox_t *sandbox, cg_container_peak_t *peak)
{
    cg_docker_t *self = impl;
    cleanup_free char *dir = s_memory_dir (self, sandbox, NULL);
    return cg_cgroup_peak_end (dir, self->cgroup_v2, peak);
}

//  Force-removes container ID (NAME or id). Returns 0 (also when it is gone), or -1.
static int
s_remove (cg_docker_t *self, const char *id, cg_error_t **err)
{
    cleanup_free char *path = cg_strdupf ("/containers/%s?force=true&v=true", id);
    json_t *reply = NULL;
    int status = cg_docker_api_call (self->api, "DELETE", path, NULL, &reply, err);
    if (status >= 0 && status != 204 && status != 200 && status != 404)
        status = cg_docker_api_fail (status, reply, err, "destroy container %s", id);
    json_decref (reply);
    return status < 0 ? -1 : 0;
}

static int
s_docker_destroy_container (void *impl, const cg_sandbox_t *sandbox, cg_error_t **err)
{
    return s_remove (impl, sandbox->id, err);
}

//  Lists every container labelled app=cellgate. Returns the engine's array (caller owns
//  it), or NULL with *err set.
static json_t *
s_list (cg_docker_t *self, cg_error_t **err)
{
    cleanup_free char *filter =
        cg_docker_api_escape (self->api, "{\"label\":[\"" S_LABEL_APP "=" S_LABEL_APP_VALUE "\"]}");
    cleanup_free char *path = cg_strdupf ("/containers/json?all=true&filters=%s", filter);
    json_t *reply = NULL;
    int status = cg_docker_api_call (self->api, "GET", path, NULL, &reply, err);
    if (status >= 0 && (status != 200 || !json_is_array (reply))) {
        cg_docker_api_fail (status, reply, err, "list containers");
        json_decref (reply);
        return NULL;
    }
    return status < 0 ? NULL : reply;
}

//  The container name in ITEM (a list entry: "Names": ["/cg-…"]), or NULL.
static const char *
s_item_name (json_t *item)
{
    const char *name = json_string_value (json_array_get (json_object_get (item, "Names"), 0));
    return name && name[0] == '/' ? name + 1 : name;
}

static int
s_docker_remove_orphans (void *impl, const char *prefix, cg_error_t **err)
{
    cg_docker_t *self = impl;
    json_t *list = s_list (self, err);
    if (!list)
        return -1;
    int removed = 0;
    size_t i;
    json_t *item;
    json_array_foreach (list, i, item)
    {
        const char *name = s_item_name (item);
        if (!name || strncmp (name, prefix, strlen (prefix)) != 0)
            continue;
        cg_error_t *local = NULL;
        if (s_remove (self, name, &local) == 0)
            removed++;
        else
            cg_log (1, "remove orphan container %s: %s", name, cg_error_message (local));
        cg_error_destroy (&local);
    }
    json_decref (list);
    return removed;
}

static int
s_docker_remove_unowned (void *impl, cg_container_owned_fn *owned, void *arg, cg_error_t **err)
{
    cg_docker_t *self = impl;
    json_t *list = s_list (self, err);
    if (!list)
        return -1;
    json_t *set = json_object ();
    size_t i;
    json_t *item;
    json_array_foreach (list, i, item)
    {
        json_t *labels = json_object_get (item, "Labels");
        const char *instance = json_string_value (json_object_get (labels, CG_ANNOTATION_INSTANCE));
        const char *state = json_string_value (json_object_get (labels, CG_ANNOTATION_STATE));
        const char *view = json_string_value (json_object_get (labels, CG_ANNOTATION_VIEW));
        if (!instance || strlen (instance) != 12 || strspn (instance, "0123456789abcdef") != 12)
            continue;
        //  Made with this state dir, in any view (this server's container restarted has a
        //  new mount namespace), or unlabelled (an older server's): judged by our instances.
        //  Another state dir: judged by its instances when seen from the same view, else
        //  (its maker's state is out of sight) or when it is not a path, left alone.
        bool ours = !state || strcmp (state, self->limits.state_dir) == 0;
        if (!ours && ((view && strcmp (view, self->view) != 0) || state[0] != '/'))
            continue;
        json_object_set_new (set, instance, ours ? json_true () : json_string (state));
    }
    json_decref (list);
    int removed = cg_backend_remove_instances (set, owned, arg, self, s_docker_remove_orphans, err);
    json_decref (set);
    return removed;
}

const cg_backend_ops_t cg_docker_ops = {.kind = "docker",
                                        .fixed_labels = true,
                                        .new = s_docker_new,
                                        .destroy = s_docker_destroy,
                                        .name = s_docker_name,
                                        .create = s_docker_create,
                                        .exec = s_docker_exec,
                                        .owns_pid = s_docker_owns_pid,
                                        .signal_others = s_docker_signal_others,
                                        .renice = s_docker_renice,
                                        .stats = s_docker_stats,
                                        .peak_begin = s_docker_peak_begin,
                                        .peak_end = s_docker_peak_end,
                                        .destroy_container = s_docker_destroy_container,
                                        .remove_orphans = s_docker_remove_orphans,
                                        .remove_unowned = s_docker_remove_unowned};
