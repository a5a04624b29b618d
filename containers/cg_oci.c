/*  cg_oci — the default sandbox backend: OCI containers through runc or crun, with the
    config.json written here (read-only root, no network, no capabilities, seccomp). */
#define _GNU_SOURCE
#include "containers/cg_oci.h"
#include "containers/cg_cgroup.h"
#include "containers/cg_backend_ops.h"
#include "containers/cg_rootless.h"
#include "containers/cg_runtime.h"
#include "containers/cg_seccomp.h"
#include "base/cg_fault.h"
#include "base/cg_util.h"
#include "base/cg_fs.h"
#include "base/cg_proc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/mman.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <unistd.h>

#define CGROUP_PARENT CG_CGROUP_PARENT

typedef struct {
    cg_sandbox_limits_t limits; /* a copy; its strings are borrowed */
    char *runtime_path;         /* /usr/bin/runc or /usr/bin/crun */
    char *runtime_name;
    char *runtime_root;             /* the runtime's own state (--root) */
    char *rootfs;                   /* shared empty read-only root with mount points */
    char *etc_dir;                  /* shared synthetic /etc */
    const char *const *shared_site; /* the shared package layer, or NULL (cg_backend.c's) */
    bool cgroup_v2;                 /* the host's cgroup layout is unified only */
    bool memsw;                     /* cgroup v1 swap accounting present */
    bool rootless;                  /* --backend rootless: a normal user's (cg_rootless) */
    char *image; /* --image: an unpacked root file system in place of the host's /usr, or NULL */
} cg_oci_t;

//  --------------------------------------------------------------------------
//  Running the runtime

//  Returns the "msg" of the last JSON line in the runtime's log file. Caller owns it.
static char *
s_log_error (const char *path)
{
    cleanup_free char *text = cg_read_file (path, CG_RUN_CAPTURE_MAX, NULL, NULL);
    char *result = cg_xstrdup ("");
    for (char *line = text, *next; line && *line; line = next) {
        next = strchr (line, '\n');
        if (next)
            *next++ = '\0';
        json_t *entry = json_loads (line, 0, NULL);
        const char *msg = json_string_value (json_object_get (entry, "msg"));
        if (msg) {
            free (result);
            result = cg_xstrdup (msg);
        }
        json_decref (entry);
    }
    return result;
}

//  Runs ARGV to completion with stdin from /dev/null. Captures stdout into *out (when
//  OUT is not NULL; caller owns it) and stderr for the error message.
//  DETACHED_LOG: for a command that leaves a container running, whose first process
//  would inherit (and keep open) the runtime's stdio: stdio is /dev/null and errors
//  are read from this log file (runtime --log, JSON lines) instead.
static int
s_run (char *const argv[], char **out, const char *detached_log, cg_error_t **err)
{
    char *bufs[2] = {NULL, NULL};
    int status =
        cg_run (argv, NULL, detached_log ? NULL : &bufs[0], detached_log ? NULL : &bufs[1], err);
    if (status < 0)
        return -1;
    int rc = 0;
    if (!WIFEXITED (status) || WEXITSTATUS (status) != 0) {
        //  Keep the runtime's last line: it says what went wrong.
        cleanup_free char *msg = detached_log ? s_log_error (detached_log) : bufs[1];
        if (!detached_log)
            bufs[1] = NULL;
        size_t len = strlen (msg);
        while (len > 0 && (msg[len - 1] == '\n' || msg[len - 1] == ' '))
            msg[--len] = '\0';
        char *last = strrchr (msg, '\n');
        const char *base = strrchr (argv[0], '/') ? strrchr (argv[0], '/') + 1 : argv[0];
        rc = cg_error_set (err, EIO, "%s: %s", base, *msg ? (last ? last + 1 : msg) : "failed");
    }
    if (out && rc == 0)
        *out = bufs[0] ? bufs[0] : cg_xstrdup ("");
    else
        free (bufs[0]);
    free (bufs[1]);
    return rc;
}

//  Runs the runtime with ARGS (NULL-terminated, after the global flags).
static int
s_runtime (cg_oci_t *self, char **out, const char *detached_log, cg_error_t **err, ...)
{
    char *argv[20];
    int argc = 0;
    argv[argc++] = self->runtime_path;
    argv[argc++] = "--root";
    argv[argc++] = self->runtime_root;
    if (detached_log) {
        argv[argc++] = "--log";
        argv[argc++] = CG_UNCONST (detached_log);
        argv[argc++] = "--log-format";
        argv[argc++] = "json";
    }
    va_list args;
    va_start (args, err);
    const char *subcommand = NULL;
    const char *arg;
    while ((arg = va_arg (args, const char *)) && argc < 19) {
        if (!subcommand)
            subcommand = arg;
        argv[argc++] = CG_UNCONST (arg);
    }
    va_end (args);
    argv[argc] = NULL;
    if (s_run (argv, out, detached_log, err) < 0)
        return cg_error_wrap (err, "%s", subcommand);
    return 0;
}

//  --------------------------------------------------------------------------
//  The shared root and /etc

static int
s_copy_etc (const char *name, const char *etc_dir, cg_error_t **err)
{
    cleanup_free char *src = cg_strdupf ("/etc/%s", name);
    if (access (src, F_OK) != 0)
        return 0;
    char *argv[] = {"/bin/cp", "-a", "--no-preserve=ownership", src, CG_UNCONST (etc_dir), NULL};
    return s_run (argv, NULL, NULL, err);
}

static int
s_write_text (const char *dir, const char *name, const char *text, cg_error_t **err)
{
    cleanup_free char *path = cg_strdupf ("%s/%s", dir, name);
    return cg_write_file (path, text, strlen (text), 0644, err);
}

//  Builds the synthetic /etc: generated account files plus an allow-list of host files
//  the kernels need (the dynamic loader's cache, fonts, matplotlib and Python defaults,
//  R's /etc/R: R_HOME/etc links there). No host secrets are copied.
static int
s_prepare_etc (cg_oci_t *self, cg_error_t **err)
{
    cleanup_free char *fresh = cg_strdupf ("%s.new", self->etc_dir);
    if (cg_rm_rf (fresh, err) < 0 || cg_mkdir_p (fresh, 0755, err) < 0)
        return -1;
    static const char *copies[] = {"ld.so.cache",  "ld.so.conf",  "ld.so.conf.d",
                                   "alternatives", "fonts",       "matplotlibrc",
                                   "python3",      "python3.11",  "mime.types",
                                   "localtime",    "bash.bashrc", "profile",
                                   "inputrc",      "R",           NULL};
    for (int i = 0; copies[i]; i++)
        if (s_copy_etc (copies[i], fresh, err) < 0)
            return -1;
    const cg_sandbox_limits_t *c = &self->limits;
    cleanup_free char *passwd =
        cg_strdupf ("root:x:0:0:root:/root:/usr/sbin/nologin\n"
                    "sandbox:x:%d:%d:sandbox:/tmp:/bin/bash\n"
                    "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
                    c->sandbox_uid, c->sandbox_gid);
    cleanup_free char *group =
        cg_strdupf ("root:x:0:\nsandbox:x:%d:\nnogroup:x:65534:\n", c->sandbox_gid);
    if (s_write_text (fresh, "passwd", passwd, err) < 0
        || s_write_text (fresh, "group", group, err) < 0
        || s_write_text (fresh, "hosts", "127.0.0.1 localhost sandbox\n::1 localhost\n", err) < 0
        || s_write_text (fresh, "hostname", "sandbox\n", err) < 0
        || s_write_text (fresh, "resolv.conf", "", err) < 0
        || s_write_text (fresh, "nsswitch.conf", "passwd: files\ngroup: files\nhosts: files\n", err)
               < 0)
        return -1;
    //  Swap in atomically enough: running containers keep their old bind.
    cleanup_free char *old = cg_strdupf ("%s.old", self->etc_dir);
    cg_rm_rf (old, NULL);
    rename (self->etc_dir, old);
    if (rename (fresh, self->etc_dir) < 0)
        return cg_error_set (err, errno, "rename %s: %s", fresh, strerror (errno));
    cg_rm_rf (old, NULL);
    return 0;
}

//  Builds the shared empty root: mount points, and the host's merged-/usr symlinks.
static int
s_prepare_rootfs (cg_oci_t *self, cg_error_t **err)
{
    static const char *dirs[] = {"usr",
                                 "etc",
                                 "proc",
                                 "sys",
                                 "dev",
                                 "tmp",
                                 "mnt/data",
                                 "run/cellgate",
                                 "opt/cellgate/kernels",
                                 "opt/cellgate/site",
                                 "opt/cellgate/shared",
                                 "opt/cellgate/wheelhouse",
                                 "opt/cellgate/npm-mirror",
                                 NULL};
    for (int i = 0; dirs[i]; i++) {
        cleanup_free char *path = cg_strdupf ("%s/%s", self->rootfs, dirs[i]);
        if (cg_mkdir_p (path, 0755, err) < 0)
            return -1;
    }
    //  runc gives a tmpfs the mode of the directory it covers.
    cleanup_free char *tmp = cg_strdupf ("%s/tmp", self->rootfs);
    if (chmod (tmp, 01777) < 0)
        return cg_error_set (err, errno, "chmod %s: %s", tmp, strerror (errno));
    static const char *links[] = {"bin", "sbin", "lib", "lib32", "lib64", "libx32", NULL};
    for (int i = 0; links[i]; i++) {
        cleanup_free char *host = cg_strdupf ("/%s", links[i]);
        cleanup_free char *path = cg_strdupf ("%s/%s", self->rootfs, links[i]);
        char target[256];
        ssize_t n = readlink (host, target, sizeof target - 1);
        if (n < 0)
            continue; /* absent or a real directory: bound below if present */
        target[n] = '\0';
        unlink (path);
        if (symlink (target, path) < 0)
            return cg_error_set (err, errno, "symlink %s: %s", path, strerror (errno));
    }
    return 0;
}

//  Finds the runtime the limits name and learns what it is from `--version`; warns when
//  its version is known to lack security fixes.
static int
s_init_runtime (cg_oci_t *self, cg_error_t **err)
{
    self->runtime_path = cg_runtime_locate (self->limits.runtime, self->cgroup_v2, err);
    if (!self->runtime_path)
        return -1;
    char *argv[] = {self->runtime_path, "--version", NULL};
    cleanup_free char *out = NULL;
    cleanup_free char *version = NULL;
    if (s_run (argv, &out, NULL, err) < 0
        || cg_runtime_parse_version (out, &self->runtime_name, &version, err) < 0)
        return cg_error_wrap (err, "OCI runtime %s", self->runtime_path);
    cg_log (2, "sandbox runtime: %s %s (%s)", self->runtime_name, version, self->runtime_path);
    const char *advisory = cg_runtime_advisory (self->runtime_name, version);
    if (advisory)
        cg_log (
            1,
            "%s %s has no upstream fix for %s; no action needed: as far as we can tell none "
            "is reachable the way cellgate runs it (docs/sandbox.md, 'Runtime'); for defence in "
            "depth, --runtime PATH takes a patched runc or crun",
            self->runtime_name, version, advisory);
    return 0;
}

static void s_oci_destroy (void **impl_p);

//  --image DIR: a sandbox image's unpacked root file system (scripts/build-image.sh), used
//  read-only as the sandboxes' root. Sets SELF->image to its real path. Returns 0, or -1 with
//  *err set saying what DIR lacks.
static int
s_use_image (cg_oci_t *self, const char *dir, cg_error_t **err)
{
    self->image = realpath (dir, NULL);
    struct stat st;
    if (!self->image || stat (self->image, &st) < 0 || !S_ISDIR (st.st_mode))
        return cg_error_set (err, ENOTDIR,
                             "--image %s: not a directory (the oci and rootless backends take an "
                             "unpacked root file system: scripts/build-image.sh makes one)",
                             dir);
    static const char *const needed[] = {"usr/bin/python3", "usr/bin/catatonit",    "mnt/data",
                                         "run/cellgate",    "opt/cellgate/kernels", NULL};
    for (int i = 0; needed[i]; i++) {
        cleanup_free char *path = cg_strdupf ("%s/%s", self->image, needed[i]);
        if (access (path, F_OK) != 0)
            return cg_error_set (err, ENOENT,
                                 "--image %s: no /%s in it: not a cellgate sandbox image's root "
                                 "file system (scripts/build-image.sh makes one)",
                                 dir, needed[i]);
    }
    cg_log (2, "sandbox root: the image at %s (not the host's /usr)", self->image);
    return 0;
}

static void *
s_new (const cg_sandbox_limits_t *limits, const char *const *shared_site, bool rootless,
       cg_error_t **err)
{
    struct statfs fs;
    cg_oci_t *self = cg_xcalloc (1, sizeof *self);
    void *impl = self;
    self->limits = *limits;
    self->rootless = rootless;
    self->shared_site = shared_site;
    self->cgroup_v2 = statfs ("/sys/fs/cgroup", &fs) == 0 && fs.f_type == 0x63677270; /* CGROUP2 */
    if (s_init_runtime (self, err) < 0
        || (limits->image && s_use_image (self, limits->image, err) < 0)) {
        s_oci_destroy (&impl);
        return NULL;
    }
    self->runtime_root = cg_strdupf ("%s/runtime-%s", limits->state_dir, self->runtime_name);
    self->rootfs = cg_strdupf ("%s/rootfs", limits->state_dir);
    self->etc_dir = cg_strdupf ("%s/etc", limits->state_dir);
    self->memsw = access ("/sys/fs/cgroup/memory/memory.memsw.limit_in_bytes", F_OK) == 0;
    if (cg_mkdir_p (self->runtime_root, 0700, err) < 0 || s_prepare_rootfs (self, err) < 0
        || s_prepare_etc (self, err) < 0) {
        cg_error_wrap (err, "prepare sandbox root");
        s_oci_destroy (&impl);
        return NULL;
    }
    return self;
}

static void *
s_oci_new (const cg_sandbox_limits_t *limits, const char *const *shared_site, cg_error_t **err)
{
    if (geteuid () != 0) {
        cg_error_set (err, EPERM,
                      "the oci backend runs runc as root, and this process is uid %u: use "
                      "--backend rootless (the default for a normal user)",
                      (unsigned)geteuid ());
        return NULL;
    }
    return s_new (limits, shared_site, false, err);
}

static void *
s_rootless_new (const cg_sandbox_limits_t *limits, const char *const *shared_site, cg_error_t **err)
{
    if (cg_rootless_probe (err) < 0)
        return NULL;
    void *impl = s_new (limits, shared_site, true, err);
    if (impl) {
        json_t *report = cg_rootless_limits_report (limits);
        cleanup_free char *enforced = json_dumps (json_object_get (report, "enforced"), 0);
        cleanup_free char *not_enforced = json_dumps (json_object_get (report, "not_enforced"), 0);
        cg_log (1, "rootless sandboxes: enforced %s; NOT enforced %s", enforced, not_enforced);
        json_decref (report);
    }
    return impl;
}

static void
s_oci_destroy (void **impl_p)
{
    if (!impl_p || !*impl_p)
        return;
    cg_oci_t *self = *impl_p;
    free (self->runtime_path);
    free (self->runtime_name);
    free (self->runtime_root);
    free (self->rootfs);
    free (self->etc_dir);
    free (self->image);
    free (self);
    *impl_p = NULL;
}

static const char *
s_oci_name (void *impl)
{
    return ((cg_oci_t *)impl)->runtime_name;
}

//  --------------------------------------------------------------------------
//  config.json

static json_t *
s_mount (const char *destination, const char *type, const char *source, const char *options)
{
    json_t *opts = json_array ();
    cleanup_free char *copy = cg_xstrdup (options);
    char *save = NULL;
    for (char *tok = strtok_r (copy, ",", &save); tok; tok = strtok_r (NULL, ",", &save))
        json_array_append_new (opts, json_string (tok));
    return json_pack ("{s:s, s:s, s:s, s:o}", "destination", destination, "type", type, "source",
                      source, "options", opts);
}

static json_t *
s_string_array (const char *const *items)
{
    json_t *array = json_array ();
    for (int i = 0; items[i]; i++)
        json_array_append_new (array, json_string (items[i]));
    return array;
}

static json_t *
s_rlimits (const cg_sandbox_limits_t *c, bool rootless)
{
    json_t *rlimits = json_pack (
        "[{s:s,s:I,s:I},{s:s,s:I,s:I},{s:s,s:I,s:I}]", "type", "RLIMIT_NOFILE", "hard",
        (json_int_t)c->nofile, "soft", (json_int_t)c->nofile, "type", "RLIMIT_FSIZE", "hard",
        (json_int_t)c->fsize_mb * 1024 * 1024, "soft", (json_int_t)c->fsize_mb * 1024 * 1024,
        "type", "RLIMIT_CORE", "hard", (json_int_t)0, "soft", (json_int_t)0);
    if (rootless)
        cg_rootless_rlimits (rlimits, c);
    return rlimits;
}

//  The process object shared by the init and every exec'd process: unprivileged user,
//  no capabilities at all, no_new_privileges, limits.
static json_t *
s_process (const cg_sandbox_limits_t *c, bool rootless, const char *const *argv,
           const char *const *env, const char *cwd)
{
    json_t *caps = json_pack ("{s:[], s:[], s:[], s:[], s:[]}", "bounding", "effective",
                              "inheritable", "permitted", "ambient");
    return json_pack ("{s:b, s:{s:i, s:i}, s:o, s:o, s:s, s:o, s:b, s:o}", "terminal", 0, "user",
                      "uid", rootless ? 0 : c->sandbox_uid, "gid", rootless ? 0 : c->sandbox_gid,
                      "args", s_string_array (argv), "env", s_string_array (env), "cwd", cwd,
                      "capabilities", caps, "noNewPrivileges", 1, "rlimits",
                      s_rlimits (c, rootless));
}

json_t *
cg_oci_config (const cg_sandbox_limits_t *c, const cg_oci_host_t *host, const cg_sandbox_t *sandbox)
{
    static const char *init_argv[] = {"/usr/bin/catatonit", "-P", NULL};
    static const char *init_env[] = {"PATH=/usr/bin:/bin", NULL};

    //  Every path the sandbox can write has a size and an inode limit: the tmpfs mounts
    //  here, and the session's disk and ipc directory (artifacts/cg_wsfs) bound below.
    json_t *mounts = json_array ();
    json_array_append_new (mounts, s_mount ("/proc", "proc", "proc", "nosuid,noexec,nodev"));
    json_array_append_new (
        mounts,
        s_mount ("/dev", "tmpfs", "tmpfs",
                 "nosuid,strictatime,mode=755,size=65536k,nr_inodes=" CG_STR (CG_DEV_INODES)));
    json_array_append_new (mounts, s_mount ("/dev/pts", "devpts", "devpts",
                                            "nosuid,noexec,newinstance,ptmxmode=0666,mode=0620"));
    json_array_append_new (
        mounts,
        s_mount ("/dev/shm", "tmpfs", "shm",
                 "nosuid,noexec,nodev,mode=1777,size=65536k,nr_inodes=" CG_STR (CG_SHM_INODES)));
    json_array_append_new (mounts,
                           s_mount ("/dev/mqueue", "mqueue", "mqueue", "nosuid,noexec,nodev"));
    json_array_append_new (mounts, s_mount ("/sys", "sysfs", "sysfs", "nosuid,noexec,nodev,ro"));
    //  The host's /usr and a generated /etc in an empty root, unless an image is the root.
    if (!host->image) {
        json_array_append_new (mounts, s_mount ("/usr", "bind", "/usr", "rbind,ro,nosuid,nodev"));
        json_array_append_new (mounts,
                               s_mount ("/etc", "bind", host->etc_dir, "rbind,ro,nosuid,nodev"));
    }
    cleanup_free char *tmp_opts = cg_strdupf ("nosuid,nodev,mode=1777,size=%dm,nr_inodes=%d",
                                              c->tmp_mb, CG_TMP_INODES (c->tmp_mb));
    json_array_append_new (mounts, s_mount ("/tmp", "tmpfs", "tmpfs", tmp_opts));
    json_array_append_new (
        mounts, s_mount (CG_WORKSPACE_MOUNT, "bind", sandbox->workspace, "rbind,rw,nosuid,nodev"));
    //  What the host writes is read-only inside; only the ipc directory below it is not.
    json_array_append_new (
        mounts, s_mount (CG_RUN_MOUNT, "bind", sandbox->run_dir, "rbind,ro,nosuid,nodev,noexec"));
    json_array_append_new (
        mounts, s_mount (CG_IPC_MOUNT, "bind", sandbox->ipc_dir, "rbind,rw,nosuid,nodev,noexec"));
    //  The kernel specs and what kernels need beside them (a Node kernel's node_modules),
    //  read-only; not noexec, since native addons are mapped executable. An image has its own.
    cleanup_free char *kernels = realpath (c->kernels_dir, NULL);
    struct stat st;
    if (!host->image && kernels && stat (kernels, &st) == 0 && S_ISDIR (st.st_mode))
        json_array_append_new (
            mounts, s_mount (CG_KERNELS_MOUNT, "bind", kernels, "rbind,ro,nosuid,nodev"));
    //  Packages: the sandbox's own layer, the shared one, and the operator's sources.
    if (sandbox->site_dir)
        json_array_append_new (
            mounts, s_mount (CG_SITE_MOUNT, "bind", sandbox->site_dir, "rbind,rw,nosuid,nodev"));
    if (host->shared_site)
        json_array_append_new (mounts, s_mount (CG_SHARED_SITE_MOUNT, "bind", host->shared_site,
                                                "rbind,ro,nosuid,nodev"));
    if (c->wheelhouse)
        json_array_append_new (mounts, s_mount (CG_WHEELHOUSE_MOUNT, "bind", c->wheelhouse,
                                                "rbind,ro,nosuid,nodev,noexec"));
    if (c->npm_mirror)
        json_array_append_new (mounts, s_mount (CG_NPM_MIRROR_MOUNT, "bind", c->npm_mirror,
                                                "rbind,ro,nosuid,nodev,noexec"));

    static const char *masked[] = {"/proc/asound",
                                   "/proc/acpi",
                                   "/proc/kcore",
                                   "/proc/keys",
                                   "/proc/latency_stats",
                                   "/proc/timer_list",
                                   "/proc/timer_stats",
                                   "/proc/sched_debug",
                                   "/proc/scsi",
                                   "/sys/firmware",
                                   "/sys/devices/virtual/powercap",
                                   "/sys/kernel",
                                   NULL};
    static const char *readonly[] = {"/proc/bus",           "/proc/fs", "/proc/irq", "/proc/sys",
                                     "/proc/sysrq-trigger", NULL};

    json_int_t memory = (json_int_t)c->memory_mb * 1024 * 1024;
    json_t *memory_obj = json_pack ("{s:I}", "limit", memory);
    if (host->cgroup_v2 || host->memsw)
        json_object_set_new (memory_obj, "swap", json_integer (memory));
    json_t *resources =
        json_pack ("{s:[{s:b, s:s}], s:o, s:{s:I, s:I}, s:{s:I}}", "devices", "allow", 0, "access",
                   "rwm", "memory", memory_obj, "cpu", "quota", (json_int_t)(c->cpus * 100000),
                   "period", (json_int_t)100000, "pids", "limit", (json_int_t)c->pids);

    json_t *namespaces =
        json_pack ("[{s:s},{s:s},{s:s},{s:s},{s:s},{s:s}]", "type", "pid", "type", "network",
                   "type", "ipc", "type", "uts", "type", "mount", "type", "cgroup");
    cleanup_free char *cgroups_path = cg_strdupf ("/%s/%s", CGROUP_PARENT, sandbox->id);

    json_t *linux_obj =
        json_pack ("{s:o, s:s, s:o, s:o, s:o, s:o}", "namespaces", namespaces, "cgroupsPath",
                   cgroups_path, "resources", resources, "maskedPaths", s_string_array (masked),
                   "readonlyPaths", s_string_array (readonly), "seccomp", cg_seccomp_profile ());
    if (host->rootless)
        cg_rootless_linux (linux_obj);
    json_t *annotations = json_pack (
        "{s:s, s:s, s:s}", CG_ANNOTATION_INSTANCE, sandbox->instance ? sandbox->instance : "",
        CG_ANNOTATION_SESSION, sandbox->session ? sandbox->session : "", CG_ANNOTATION_KIND,
        cg_sandbox_kind_name (sandbox->kind));
    return json_pack ("{s:s, s:o, s:{s:s, s:b}, s:s, s:o, s:o, s:o}", "ociVersion", "1.0.2",
                      "process", s_process (c, host->rootless, init_argv, init_env, "/"), "root",
                      "path", host->image ? host->image : host->rootfs, "readonly", 1, "hostname",
                      "sandbox", "mounts", mounts, "linux", linux_obj, "annotations", annotations);
}

static int
s_write_json (const char *path, json_t *value, cg_error_t **err)
{
    cleanup_free char *text = json_dumps (value, JSON_INDENT (1));
    if (!text)
        abort ();
    return cg_write_file (path, text, strlen (text), 0600, err);
}

//  --------------------------------------------------------------------------
//  Life cycle

static int s_oci_destroy_container (void *impl, const cg_sandbox_t *sandbox, cg_error_t **err);

static int
s_oci_create (void *impl, const cg_sandbox_t *sandbox, cg_error_t **err)
{
    cg_oci_t *self = impl;
    cg_oci_host_t host = {self->rootfs,    self->etc_dir, self->image,   *self->shared_site,
                          self->cgroup_v2, self->memsw,   self->rootless};
    json_t *config = cg_oci_config (&self->limits, &host, sandbox);
    cleanup_free char *path = cg_strdupf ("%s/config.json", sandbox->bundle_dir);
    int rc = s_write_json (path, config, err);
    json_decref (config);
    if (rc == 0)
        rc = cg_fault_at ("oci_config", err);
    if (rc < 0)
        return cg_error_wrap (err, "container %s", sandbox->id);
    cleanup_free char *pid_file = cg_strdupf ("%s/init.pid", sandbox->bundle_dir);
    cleanup_free char *log = cg_strdupf ("%s/runtime.log", sandbox->bundle_dir);
    if (s_runtime (self, NULL, log, err, "run", "--detach", "--bundle", sandbox->bundle_dir,
                   "--pid-file", pid_file, sandbox->id, NULL)
        < 0) {
        s_oci_destroy_container (self, sandbox, NULL);
        return cg_error_wrap (err, "container %s", sandbox->id);
    }
    return 0;
}

static pid_t
s_oci_exec (void *impl, const cg_sandbox_t *sandbox, const cg_exec_spec_t *spec, cg_error_t **err)
{
    cg_oci_t *self = impl;
    //  The process spec goes to the runtime through a memfd it reads as its fd 3, so
    //  no file is left behind per exec.
    json_t *process = s_process (&self->limits, self->rootless, spec->argv, spec->env, spec->cwd);
    cleanup_free char *text = json_dumps (process, JSON_COMPACT);
    json_decref (process);
    if (!text)
        abort ();
    cleanup_close int memfd = memfd_create ("cellgate-exec", MFD_CLOEXEC);
    size_t len = strlen (text);
    if (memfd < 0 || write (memfd, text, len) != (ssize_t)len || lseek (memfd, 0, SEEK_SET) < 0)
        return cg_error_set (err, errno, "exec in %s: process spec: %s", sandbox->id,
                             strerror (errno));
    char path[] = "/proc/self/fd/3";
    char *argv[] = {self->runtime_path,
                    "--root",
                    self->runtime_root,
                    "exec",
                    "--process",
                    path,
                    CG_UNCONST (sandbox->id),
                    NULL,
                    NULL,
                    NULL};
    if (spec->pid_file) {
        unlink (spec->pid_file);
        argv[6] = "--pid-file";
        argv[7] = CG_UNCONST (spec->pid_file);
        argv[8] = CG_UNCONST (sandbox->id);
    }
    return cg_backend_spawn (argv[0], argv, spec, memfd, sandbox->id, err);
}

//  SANDBOX's init as the runtime wrote it (a host pid), or 0.
static pid_t
s_init_pid (const cg_sandbox_t *sandbox)
{
    cleanup_free char *pid_file = cg_strdupf ("%s/init.pid", sandbox->bundle_dir);
    cleanup_free char *init_text = cg_read_file (pid_file, 64, NULL, NULL);
    return init_text ? (pid_t)atol (init_text) : 0;
}

//  Signals every listed process but init and KEEP once. Returns how many.
static int
s_signal_listed (cg_oci_t *self, const cg_sandbox_t *sandbox, int signal, const pid_t *keep,
                 size_t keep_count, cg_error_t **err)
{
    cleanup_free char *out = NULL;
    if (s_runtime (self, &out, NULL, err, "ps", "--format", "json", sandbox->id, NULL) < 0)
        return -1;
    pid_t init = s_init_pid (sandbox);
    json_t *pids = json_loads (out, 0, NULL);
    if (!json_is_array (pids)) {
        json_decref (pids);
        return cg_error_set (err, EIO, "%s ps %s: unexpected output", self->runtime_name,
                             sandbox->id);
    }
    int count = 0;
    size_t i;
    json_t *item;
    json_array_foreach (pids, i, item)
    {
        pid_t pid = (pid_t)json_integer_value (item);
        bool skip = pid <= 1 || pid == init;
        for (size_t k = 0; k < keep_count && !skip; k++)
            skip = keep[k] == pid;
        if (!skip && kill (pid, signal) == 0)
            count++;
    }
    json_decref (pids);
    return count;
}

static int
s_oci_signal_others (void *impl, const cg_sandbox_t *sandbox, int signal, const pid_t *keep,
                     size_t keep_count, cg_error_t **err)
{
    cg_oci_t *self = impl;
    if (self->rootless)
        return cg_rootless_signal_others (s_init_pid (sandbox), signal, keep, keep_count, err);
    //  Freeze the container first so that nothing can fork between listing and
    //  signalling (a fork bomb would otherwise outrun us); the frozen processes die as
    //  soon as it is thawed.
    bool frozen = s_runtime (self, NULL, NULL, NULL, "pause", sandbox->id, NULL) == 0;
    int count = s_signal_listed (self, sandbox, signal, keep, keep_count, err);
    cg_log (3, "signalled %d process(es) in %s (frozen: %s)", count, sandbox->id,
            frozen ? "yes" : "no");
    if (frozen && s_runtime (self, NULL, NULL, err, "resume", sandbox->id, NULL) < 0)
        return -1;
    return count;
}

//  SANDBOX's memory cgroup directory (caller frees).
static char *
s_memory_dir (cg_oci_t *self, const cg_sandbox_t *sandbox)
{
    return self->cgroup_v2 ? cg_strdupf ("/sys/fs/cgroup/%s/%s", CGROUP_PARENT, sandbox->id)
                           : cg_strdupf ("/sys/fs/cgroup/memory/%s/%s", CGROUP_PARENT, sandbox->id);
}

static int
s_oci_renice (void *impl, const cg_sandbox_t *sandbox, int nice)
{
    cg_oci_t *self = impl;
    if (self->rootless)
        return cg_rootless_renice (s_init_pid (sandbox), nice);
    cleanup_free char *dir = s_memory_dir (self, sandbox);
    return cg_cgroup_renice (dir, self->cgroup_v2, nice);
}

static int
s_oci_stats (void *impl, const cg_sandbox_t *sandbox, cg_container_stats_t *stats, cg_error_t **err)
{
    cg_oci_t *self = impl;
    if (self->rootless)
        return cg_rootless_stats (s_init_pid (sandbox), stats, err);
    cleanup_free char *dir = s_memory_dir (self, sandbox);
    return cg_cgroup_stats (dir, self->cgroup_v2, sandbox->id, stats, err);
}

static void
s_oci_peak_begin (void *impl, const cg_sandbox_t *sandbox, cg_container_peak_t *peak)
{
    cg_oci_t *self = impl;
    cleanup_free char *dir = s_memory_dir (self, sandbox);
    cg_cgroup_peak_begin (dir, self->cgroup_v2, peak);
}

static double
s_oci_peak_end (void *impl, const cg_sandbox_t *sandbox, cg_container_peak_t *peak)
{
    cg_oci_t *self = impl;
    cg_container_stats_t now = {.oom_kills = -1};
    if (self->rootless) //  no peak without a cgroup: what the sandbox holds at the end
        return cg_rootless_stats (s_init_pid (sandbox), &now, NULL) == 0
                   ? (peak->current_mb = now.memory_mb)
                   : -1;
    cleanup_free char *dir = s_memory_dir (self, sandbox);
    return cg_cgroup_peak_end (dir, self->cgroup_v2, peak);
}

//  How many times a container's delete is tried: a runtime process that dies in its delete
//  (killed, out of memory) leaves the container behind, and one more try removes it.
#define S_DELETE_TRIES 3

static int
s_oci_destroy_container (void *impl, const cg_sandbox_t *sandbox, cg_error_t **err)
{
    cg_oci_t *self = impl;
    for (int attempt = 1;; attempt++) {
        cg_error_t *local = NULL;
        if (cg_fault_at ("container_delete", &local) == 0
            && s_runtime (self, NULL, NULL, &local, "delete", "--force", sandbox->id, NULL) == 0)
            return 0;
        bool gone = strstr (local->message, "does not exist")
                    || strstr (local->message, "not exist") || strstr (local->message, "not found");
        if (gone || attempt == S_DELETE_TRIES) {
            if (!gone)
                cg_error_set (err, local->code, "destroy container %s: %s", sandbox->id,
                              local->message);
            cg_error_destroy (&local);
            return gone ? 0 : -1;
        }
        cg_log (1, "destroy container %s: %s; trying again", sandbox->id, local->message);
        cg_error_destroy (&local);
    }
}

//  Removes what a runtime killed during a create left with PREFIX, which `list` does not
//  show: its state dir without a state.json, and cgroups (with whatever was started in
//  them). Called after the listed containers are deleted, so anything left is of this kind.
static void
s_remove_half_made (cg_oci_t *self, const char *prefix)
{
    DIR *dir = opendir (self->runtime_root);
    struct dirent *entry;
    while (dir && (entry = readdir (dir)))
        if (strncmp (entry->d_name, prefix, strlen (prefix)) == 0) {
            cleanup_free char *path = cg_strdupf ("%s/%s", self->runtime_root, entry->d_name);
            cg_error_t *err = NULL;
            if (s_runtime (self, NULL, NULL, NULL, "delete", "--force", entry->d_name, NULL) < 0
                && cg_rm_rf (path, &err) < 0)
                cg_log (1, "remove half-made container %s: %s", entry->d_name,
                        cg_error_message (err));
            else
                cg_log (2, "removed the runtime state of half-made container %s", entry->d_name);
            cg_error_destroy (&err);
        }
    if (dir)
        closedir (dir);
    int cgroups = cg_cgroup_remove_prefix (prefix);
    if (cgroups > 0)
        cg_log (2, "removed %d cgroup(s) of half-made containers %s*", cgroups, prefix);
}

static int
s_oci_remove_orphans (void *impl, const char *prefix, cg_error_t **err)
{
    cg_oci_t *self = impl;
    cleanup_free char *out = NULL;
    if (s_runtime (self, &out, NULL, err, "list", "--format", "json", NULL) < 0)
        return -1;
    json_t *list = json_loads (out, 0, NULL);
    int removed = 0;
    size_t i;
    json_t *item;
    json_array_foreach (list, i, item)
    {
        const char *id = json_string_value (json_object_get (item, "id"));
        if (!id || strncmp (id, prefix, strlen (prefix)) != 0)
            continue;
        cg_error_t *local = NULL;
        if (s_runtime (self, NULL, NULL, &local, "delete", "--force", id, NULL) == 0)
            removed++;
        else
            cg_log (1, "remove orphan container %s: %s", id, cg_error_message (local));
        cg_error_destroy (&local);
    }
    json_decref (list);
    s_remove_half_made (self, prefix);
    return removed;
}

//  Adds the instance of container ID (or runtime state entry) to SET when ID is named
//  for one: "cg-" + 12 hex + "-".
static void
s_note_instance (json_t *set, const char *id)
{
    if (!id || strncmp (id, "cg-", 3) != 0 || strlen (id) < 16 || id[15] != '-')
        return;
    char instance[13];
    memcpy (instance, id + 3, 12);
    instance[12] = '\0';
    if (strspn (instance, "0123456789abcdef") == 12)
        json_object_set_new (set, instance, json_true ());
}

static int
s_oci_remove_unowned (void *impl, cg_container_owned_fn *owned, void *arg, cg_error_t **err)
{
    cg_oci_t *self = impl;
    cleanup_free char *out = NULL;
    if (s_runtime (self, &out, NULL, err, "list", "--format", "json", NULL) < 0)
        return -1;
    json_t *set = json_object ();
    json_t *list = json_loads (out, 0, NULL);
    size_t i;
    json_t *item;
    json_array_foreach (list, i, item)
        s_note_instance (set, json_string_value (json_object_get (item, "id")));
    json_decref (list);
    DIR *dir = opendir (self->runtime_root);
    struct dirent *entry;
    while (dir && (entry = readdir (dir)))
        s_note_instance (set, entry->d_name);
    if (dir)
        closedir (dir);
    int removed = cg_backend_remove_instances (set, owned, arg, self, s_oci_remove_orphans, err);
    json_decref (set);
    return removed;
}

//  The root and the rootless backends: the same functions but for how each is made.
#define S_OCI_OPS(KIND, NEW)                                                                  \
    {                                                                                         \
        .kind = KIND, .new = NEW, .destroy = s_oci_destroy, .name = s_oci_name,               \
        .create = s_oci_create, .exec = s_oci_exec, .owns_pid = cg_backend_runc_owns_pid,     \
        .signal_others = s_oci_signal_others, .renice = s_oci_renice, .stats = s_oci_stats,   \
        .peak_begin = s_oci_peak_begin, .peak_end = s_oci_peak_end,                           \
        .destroy_container = s_oci_destroy_container, .remove_orphans = s_oci_remove_orphans, \
        .remove_unowned = s_oci_remove_unowned                                                \
    }

const cg_backend_ops_t cg_oci_ops = S_OCI_OPS ("oci", s_oci_new);
const cg_backend_ops_t cg_rootless_ops = S_OCI_OPS ("rootless", s_rootless_new);
