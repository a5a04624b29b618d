/*  cg_docker_probe — the Docker backend's start-up check that the engine sees what this
    server binds into sandboxes, at the same paths, and that this server sees the
    sandboxes' processes. */
#define _GNU_SOURCE
#include "containers/cg_docker_probe.h"
#include "containers/cg_cgroup.h"
#include "base/cg_fs.h"
#include "base/cg_log.h"
#include "base/cg_util.h"

#include <dirent.h>
#include <errno.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

//  The probe's exit statuses: the marker inside the mount is missing but the one below it
//  is there (mounts do not propagate), neither is (the state dir is another directory on
//  the engine's host), the Nth other path is missing (S_EXIT_PATH + N).
#define S_EXIT_MOUNT 20
#define S_EXIT_STATE 21
#define S_EXIT_PATH 22
#define S_MAX_PATHS 4
#define S_POLL_TRIES 500 /* 20 ms apart: a container that runs `test` and sleeps */
#define S_STALE_S 600    /* a probe's leftovers this old are a killed server's */

//  The probe's shell script: $1 the marker inside the mount, $2 the one below it (the same
//  when nothing is mounted), then the paths that must exist; it sleeps once all do, so
//  that the server can find its init by pid.
static const char s_script[] =
    "[ -e \"$1\" ] || { [ \"$1\" != \"$2\" ] && [ -e \"$2\" ] && exit 20; exit 21; }; shift 2; "
    "i=22; for p; do [ -e \"$p\" ] || exit $i; i=$((i+1)); done; exec sleep 60";

//  One path the probe checks besides the state dir.
typedef struct {
    const char *what;   /* "the kernels dir (--kernels-dir)" */
    char *host;         /* the directory on this side, or NULL: the image's own */
    char *inside;       /* the path the probe tests */
    const char *remedy; /* what else would do, or "" */
} s_path_t;

//  The first entry of DIR but . and .. (caller frees), or NULL when it has none.
static char *
s_first_entry (const char *dir)
{
    DIR *d = opendir (dir);
    if (!d)
        return NULL;
    char *name = NULL;
    struct dirent *entry;
    while (!name && (entry = readdir (d)))
        if (strcmp (entry->d_name, ".") != 0 && strcmp (entry->d_name, "..") != 0)
            name = cg_xstrdup (entry->d_name);
    closedir (d);
    return name;
}

//  Adds DIR (when it is a directory with an entry) to PATHS as the probe's /probe/SLOT,
//  or, when IMAGE_OWN, the image's own IMAGE_DIR holding the same entry.
static void
s_add_path (s_path_t *paths, size_t *count, const char *what, const char *dir, const char *slot,
            const char *image_dir, const char *remedy)
{
    cleanup_free char *real = dir ? realpath (dir, NULL) : NULL;
    cleanup_free char *entry = real ? s_first_entry (real) : NULL;
    if (!entry)
        return;
    s_path_t *p = &paths[(*count)++];
    p->what = what;
    p->remedy = remedy;
    p->host = image_dir ? NULL : cg_xstrdup (real);
    p->inside = image_dir ? cg_strdupf ("%s/%s", image_dir, entry)
                          : cg_strdupf ("/probe/%s/%s", slot, entry);
}

//  The probe container's create body. Labelled org.cellgate.kind=probe, not app=cellgate:
//  it is no sandbox, and a sweep or a count of sandboxes never meets it.
static json_t *
s_body (const cg_sandbox_limits_t *limits, const char *inside, const char *below,
        const s_path_t *paths, size_t count)
{
    json_t *binds = json_array (), *cmd = json_pack ("[s, s]", inside, below);
    json_array_append_new (binds, json_sprintf ("%s:/probe/state:ro", limits->state_dir));
    static const char *const slots[S_MAX_PATHS] = {"p0", "p1", "p2", "p3"};
    for (size_t i = 0; i < count; i++) {
        if (paths[i].host)
            json_array_append_new (binds,
                                   json_sprintf ("%s:/probe/%s:ro", paths[i].host, slots[i]));
        json_array_append_new (cmd, json_string (paths[i].inside));
    }
    //  Podman as root would ask runc for limits above this process's own (cg_docker.c).
    struct rlimit nproc = {4096, 4096};
    getrlimit (RLIMIT_NPROC, &nproc);
    json_int_t nproc_max = nproc.rlim_max == RLIM_INFINITY || nproc.rlim_max > 4096
                               ? 4096
                               : (json_int_t)nproc.rlim_max;
    json_t *ulimits = json_pack ("[{s:s, s:i, s:i}, {s:s, s:I, s:I}]", "Name", "nofile", "Soft", 64,
                                 "Hard", 64, "Name", "nproc", "Soft", nproc_max, "Hard", nproc_max);
    return json_pack ("{s:s, s:[s, s, s, s], s:o, s:s, s:b, s:{s:s}, "
                      "s:{s:s, s:[s], s:[s], s:b, s:o, s:{s:s, s:{}}, s:I, s:o}}",
                      "Image", limits->image, "Entrypoint", "/bin/sh", "-c", s_script,
                      "cellgate-probe", "Cmd", cmd, "User", "0:0", "NetworkDisabled", 1, "Labels",
                      CG_ANNOTATION_KIND, "probe", "HostConfig", "NetworkMode", "none", "CapDrop",
                      "ALL", "SecurityOpt", "no-new-privileges", "ReadonlyRootfs", 1, "Binds",
                      binds, "LogConfig", "Type", "none", "Config", "PidsLimit", (json_int_t)16,
                      "Ulimits", ulimits);
}

//  Sends METHOD to PATH; returns the status (-1 with *err set when the engine is not
//  reached) and the reply in *REPLY (may be NULL).
static int
s_call (cg_docker_api_t *api, const char *method, const char *path, json_t *body, json_t **reply,
        cg_error_t **err)
{
    json_t *local = NULL;
    int status = cg_docker_api_call (api, method, path, body, reply ? reply : &local, err);
    json_decref (local);
    return status;
}

//  The container's init, seen from here: true when its host pid PID is in this process's
//  /proc in a cgroup named for ID, running `sleep` (the probe passed its tests), and its memory
//  cgroup directory is there to read.
static bool
s_sees_init (pid_t pid, const char *id, bool v2, bool *sleeping)
{
    cleanup_free char *cmdline_path = cg_strdupf ("/proc/%ld/cmdline", (long)pid);
    cleanup_free char *cgroup_path = cg_strdupf ("/proc/%ld/cgroup", (long)pid);
    cleanup_free char *cmdline = cg_read_file (cmdline_path, 256, NULL, NULL);
    cleanup_free char *cgroups = cg_read_file (cgroup_path, 65536, NULL, NULL);
    *sleeping = cmdline && strcmp (cmdline, "sleep") == 0;
    if (!*sleeping || !cgroups || !strstr (cgroups, id))
        return false;
    cleanup_free char *memory = cg_cgroup_memory_dir_of (pid, v2);
    return memory && access (memory, R_OK) == 0;
}

//  Waits for the probe container ID (ENGINE_ID the engine's) to exit or to sleep. Returns its exit status, 0 when
//  it sleeps and this process sees it, or -2 when it sleeps (or runs on) unseen; -1 with
//  *err set when the engine fails.
static int
s_wait (cg_docker_api_t *api, const char *id, const char *engine_id, bool v2, cg_error_t **err)
{
    cleanup_free char *path = cg_strdupf ("/containers/%s/json", id);
    for (int try = 0; try < S_POLL_TRIES; try++) {
        json_t *reply = NULL;
        int status = s_call (api, "GET", path, NULL, &reply, err);
        json_t *state = json_object_get (reply, "State");
        bool running = json_is_true (json_object_get (state, "Running"));
        json_int_t pid = json_integer_value (json_object_get (state, "Pid"));
        json_int_t code = json_integer_value (json_object_get (state, "ExitCode"));
        const char *word = json_string_value (json_object_get (state, "Status"));
        bool exited = !running && word && strcmp (word, "exited") == 0;
        json_decref (reply);
        if (status != 200)
            return status < 0 ? -1 : cg_docker_api_fail (status, NULL, err, "inspect %s", id);
        if (exited)
            return (int)code;
        bool sleeping = false;
        if (running && pid > 0 && s_sees_init ((pid_t)pid, engine_id, v2, &sleeping))
            return 0;
        struct timespec pause = {0, 20 * 1000 * 1000};
        nanosleep (&pause, NULL);
    }
    return -2;
}

//  Sets *err for the probe's exit STATUS.
static int
s_refuse (int status, const cg_sandbox_limits_t *limits, const char *engine, const s_path_t *paths,
          size_t count, cg_error_t **err)
{
    const char *state = limits->state_dir;
    if (status == S_EXIT_STATE)
        return cg_error_set (
            err, ENOENT,
            "%s does not see this server's state dir %s: sandboxes are the engine's "
            "containers (siblings of this server's own, when it runs in one), so every "
            "directory the server binds into them must be at the same path on the engine's "
            "host; bind the state dir at the same path (-v %s:%s:rshared) (docs/deploy.md)",
            engine, state, state, state);
    if (status == S_EXIT_MOUNT)
        return cg_error_set (
            err, ENOENT,
            "%s sees the state dir %s but not a file system this server mounts below it (each "
            "session's disk, --workspace-mb): the bind must pass mounts on to the engine's host "
            "(-v %s:%s:rshared, the server's container privileged for its loop devices), or "
            "--workspace-mb 0 turns the workspace limit off (docs/deploy.md)",
            engine, state, state, state);
    if (status >= S_EXIT_PATH && status < S_EXIT_PATH + (int)count) {
        const s_path_t *p = &paths[status - S_EXIT_PATH];
        if (!p->host)
            return cg_error_set (err, ENOENT,
                                 "the sandbox image %s has no %s, %s: build it from "
                                 "Dockerfile.kernel (scripts/build-image.sh)%s",
                                 limits->image, p->inside, p->what, p->remedy);
        return cg_error_set (err, ENOENT,
                             "%s does not see %s, %s, at the same path: bind it at the same "
                             "path (-v %s:%s:ro)%s (docs/deploy.md)",
                             engine, p->host, p->what, p->host, p->host, p->remedy);
    }
    if (status == -2)
        return cg_error_set (
            err, ESRCH,
            "this server does not see the sandboxes' processes (%s's probe container's init, "
            "by its host pid and cgroup): it signals kernels and reads their cgroups by host "
            "pid, so in a container it needs the host's pid namespace and cgroups "
            "(--pid host, --cgroupns host, -v /sys/fs/cgroup:/sys/fs/cgroup) (docs/deploy.md)",
            engine);
    return cg_error_set (err, EIO,
                         "the probe container (image %s: /bin/sh, test and sleep) exited with "
                         "status %d",
                         limits->image, status);
}

//  Makes the probe's directory DIR below the state dir with the marker BELOW, and over it
//  (when LIMITS asks for session disks) a tmpfs holding the marker INSIDE; *MOUNTED says
//  whether it did.
static int
s_prepare (const cg_sandbox_limits_t *limits, const char *dir, const char *below,
           const char *inside, bool *mounted, cg_error_t **err)
{
    cleanup_free char *below_path = cg_strdupf ("%s/%s", dir, below);
    cleanup_free char *inside_path = cg_strdupf ("%s/%s", dir, inside);
    *mounted = false;
    if (cg_mkdir_p (dir, 0755, err) < 0 || cg_write_file (below_path, "", 0, 0644, err) < 0)
        return -1;
    if (limits->workspace_mb <= 0)
        return 0;
    //  Without the right to mount, sessions cannot have disks either; that error is theirs.
    if (mount ("cellgate-probe", dir, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
               "size=16k,nr_inodes=16,mode=0755")
        < 0) {
        cg_log (2, "docker bind probe: no tmpfs on %s (%s): mounts not checked", dir,
                strerror (errno));
        return 0;
    }
    *mounted = true;
    return cg_write_file (inside_path, "", 0, 0644, err);
}

//  Removes what a probe of a server killed while it probed left: its directory (and
//  tmpfs) below the state dir and its container, once older than any live probe can be
//  (another server sharing the state dir or the engine may be probing now).
static void
s_sweep_stale (cg_docker_api_t *api, const char *state_dir)
{
    time_t now = time (NULL);
    DIR *d = opendir (state_dir);
    struct dirent *entry;
    while (d && (entry = readdir (d))) {
        struct stat st;
        cleanup_free char *path = cg_strdupf ("%s/%s", state_dir, entry->d_name);
        if (strncmp (entry->d_name, "probe-", 6) != 0 || strlen (entry->d_name) != 6 + 16
            || lstat (path, &st) < 0 || !S_ISDIR (st.st_mode) || now - st.st_mtime < S_STALE_S)
            continue;
        umount2 (path, MNT_DETACH);
        if (cg_rm_rf (path, NULL) == 0)
            cg_log (2, "docker bind probe: removed a killed server's %s", path);
    }
    if (d)
        closedir (d);
    cleanup_free char *filter =
        cg_docker_api_escape (api, "{\"label\":[\"" CG_ANNOTATION_KIND "=probe\"]}");
    cleanup_free char *list = cg_strdupf ("/containers/json?all=true&filters=%s", filter);
    json_t *reply = NULL;
    size_t i;
    json_t *item;
    if (s_call (api, "GET", list, NULL, &reply, NULL) == 200)
        json_array_foreach (reply, i, item)
        {
            const char *id = json_string_value (json_object_get (item, "Id"));
            json_int_t created = json_integer_value (json_object_get (item, "Created"));
            if (!id || now - (time_t)created < S_STALE_S)
                continue;
            cleanup_free char *remove = cg_strdupf ("/containers/%s?force=true&v=true", id);
            s_call (api, "DELETE", remove, NULL, NULL, NULL);
        }
    json_decref (reply);
}

int
cg_docker_probe (cg_docker_api_t *api, const cg_sandbox_limits_t *limits, const char *engine,
                 bool v2, cg_error_t **err)
{
    int64_t began = cg_now_us ();
    char hex[17];
    cg_random_hex (hex, 8);
    cleanup_free char *below = cg_strdupf ("below-%s", hex);
    cleanup_free char *inside = cg_strdupf ("inside-%s", hex);
    cleanup_free char *dir = cg_strdupf ("%s/probe-%s", limits->state_dir, hex);
    cleanup_free char *id = cg_strdupf ("cg-probe-%s", hex);
    s_path_t paths[S_MAX_PATHS] = {{0}};
    size_t count = 0;
    s_sweep_stale (api, limits->state_dir);
    const char *kernels_remedy =
        ", or --image-kernels on (CELLGATE_IMAGE_KERNELS) to run the image's own kernels";
    s_add_path (paths, &count, "the kernels dir (--kernels-dir)", limits->kernels_dir, "p0",
                limits->image_kernels ? CG_KERNELS_MOUNT : NULL,
                limits->image_kernels ? ", or --image-kernels off" : kernels_remedy);
    s_add_path (paths, &count, "the wheelhouse (--wheelhouse)", limits->wheelhouse, "p1", NULL, "");
    s_add_path (paths, &count, "the npm mirror (--npm-mirror)", limits->npm_mirror, "p2", NULL, "");
    bool mounted = false;
    int rc = s_prepare (limits, dir, below, inside, &mounted, err);
    if (rc == 0) {
        cleanup_free char *seen_below = cg_strdupf ("/probe/state/probe-%s/%s", hex, below);
        cleanup_free char *seen_inside = cg_strdupf ("/probe/state/probe-%s/%s", hex, inside);
        json_t *body =
            s_body (limits, mounted ? seen_inside : seen_below, seen_below, paths, count);
        cleanup_free char *create = cg_strdupf ("/containers/create?name=%s", id);
        cleanup_free char *start = cg_strdupf ("/containers/%s/start", id);
        json_t *reply = NULL;
        int status = s_call (api, "POST", create, body, &reply, err);
        json_decref (body);
        if (status >= 0 && status != 201) {
            //  Podman refuses a bind whose source its host lacks (Docker makes it).
            cg_error_t *local = NULL;
            cg_docker_api_fail (status, reply, &local, "create");
            if (strstr (cg_error_message (local), limits->state_dir)) {
                cg_log (1, "docker bind probe: %s", cg_error_message (local));
                s_refuse (S_EXIT_STATE, limits, engine, paths, count, err);
                cg_error_destroy (&local);
            }
            else if (err)
                *err = local;
            else
                cg_error_destroy (&local);
        }
        //  The engine's id: the cgroup paths name it, not the container's name.
        const char *full = json_string_value (json_object_get (reply, "Id"));
        cleanup_free char *engine_id = cg_xstrdup (full ? full : id);
        json_decref (reply);
        reply = NULL;
        if (status == 201 && (status = s_call (api, "POST", start, NULL, &reply, err)) >= 0
            && status != 204)
            cg_docker_api_fail (status, reply, err, "start");
        json_decref (reply);
        int exit = status == 204 ? s_wait (api, id, engine_id, v2, err) : -1;
        if (exit != 0 && exit != -1)
            s_refuse (exit, limits, engine, paths, count, err);
        rc = exit == 0 ? 0 : -1;
        cleanup_free char *remove = cg_strdupf ("/containers/%s?force=true&v=true", id);
        s_call (api, "DELETE", remove, NULL, NULL, NULL);
    }
    if (mounted)
        umount2 (dir, MNT_DETACH);
    cg_rm_rf (dir, NULL);
    for (size_t i = 0; i < count; i++) {
        free (paths[i].host);
        free (paths[i].inside);
    }
    if (rc < 0)
        return cg_error_wrap (err, "docker bind probe");
    cg_log (2,
            "docker bind probe: %s sees the state dir%s and %zu other path(s) here, and this "
            "server its processes (%.2f s)",
            engine, mounted ? " with mounts below it" : "", count,
            (double)(cg_now_us () - began) / 1e6);
    return 0;
}
