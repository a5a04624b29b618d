/*  test_oci — the sandbox's OCI config.json (containers/cg_oci.c) against golden files: every
    mount, namespace, resource limit, masked path, seccomp rule, capability set and rlimit
    of a few limit sets, so that any change to them shows as a diff to review.
    test_oci GOLDEN_DIR           compares (tests/golden/oci/<case>-<machine>.json)
    test_oci GOLDEN_DIR --update  writes the files anew (then review `git diff`) */
#define _GNU_SOURCE
#include "base/cg_util.h"
#include "base/cg_fs.h"
#include "cg_test.h"
#include "containers/cg_oci.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

/*  The server's defaults (bridge/cg_config.c) for everything a sandbox gets. */
static cg_sandbox_limits_t
s_default_limits (const char *kernels_dir)
{
    return (cg_sandbox_limits_t){.backend = "oci",
                                 .runtime = "auto",
                                 .state_dir = "/state",
                                 .kernels_dir = kernels_dir,
                                 .memory_mb = 512,
                                 .cpus = 1.0,
                                 .pids = 256,
                                 .tmp_mb = 64,
                                 .workspace_mb = 1024,
                                 .workspace_inodes = 100000,
                                 .nofile = 1024,
                                 .fsize_mb = 1024,
                                 .sandbox_uid = 65532,
                                 .sandbox_gid = 65532};
}

static const cg_sandbox_t s_session = {.id = "cg-0123456789ab-00000000000a",
                                       .bundle_dir = "/state/instances/0123456789ab/sessions/a",
                                       .workspace = "/state/sessions/a/disk/workspace",
                                       .run_dir = "/state/sessions/a/run",
                                       .ipc_dir = "/state/sessions/a/ipc",
                                       .site_dir = "/state/sessions/a/disk/site",
                                       .instance = "0123456789ab",
                                       .session = "00000000000a",
                                       .kind = CG_SANDBOX_SESSION};

static const cg_sandbox_t s_oneshot = {.id = "cg-0123456789ab-00000000000b",
                                       .bundle_dir = "/state/instances/0123456789ab/oneshot/b",
                                       .workspace = "/state/oneshot/b/workspace",
                                       .run_dir = "/state/oneshot/b/run",
                                       .ipc_dir = "/state/oneshot/b/ipc",
                                       .site_dir = NULL,
                                       .instance = "0123456789ab",
                                       .session = "00000000000b",
                                       .kind = CG_SANDBOX_ONESHOT};

/*  Replaces every FROM in TEXT by TO. Caller frees the result. */
static char *
s_replace (const char *text, const char *from, const char *to)
{
    size_t from_len = strlen (from), to_len = strlen (to), count = 0;
    for (const char *p = strstr (text, from); p; p = strstr (p + from_len, from))
        count++;
    char *out = cg_xmalloc (strlen (text) + count * to_len + 1);
    char *w = out;
    const char *p = text;
    for (const char *hit; (hit = strstr (p, from)); p = hit + from_len) {
        memcpy (w, p, (size_t)(hit - p));
        w += hit - p;
        memcpy (w, to, to_len);
        w += to_len;
    }
    strcpy (w, p);
    return out;
}

/*  The config as text, with the kernels dir (a fresh temp dir) written as @KERNELS@. */
static char *
s_config_text (const cg_sandbox_limits_t *limits, const cg_oci_host_t *host,
               const cg_sandbox_t *sandbox)
{
    json_t *config = cg_oci_config (limits, host, sandbox);
    /* Rootless maps the sandbox's root to whoever runs it: written as @UID@ and @GID@. */
    json_t *linux_obj = json_object_get (config, "linux");
    json_t *uid_map = json_array_get (json_object_get (linux_obj, "uidMappings"), 0);
    json_t *gid_map = json_array_get (json_object_get (linux_obj, "gidMappings"), 0);
    if (uid_map
        && json_integer_value (json_object_get (uid_map, "hostID")) == (json_int_t)getuid ())
        json_object_set_new (uid_map, "hostID", json_string ("@UID@"));
    if (gid_map
        && json_integer_value (json_object_get (gid_map, "hostID")) == (json_int_t)getgid ())
        json_object_set_new (gid_map, "hostID", json_string ("@GID@"));
    cleanup_free char *text = json_dumps (config, JSON_INDENT (1));
    json_decref (config);
    cleanup_free char *kernels = realpath (limits->kernels_dir, NULL);
    cleanup_free char *out = s_replace (text, kernels ? kernels : limits->kernels_dir, "@KERNELS@");
    return cg_strdupf ("%s\n", out);
}

static bool s_update = false;

/*  Compares (or with --update writes) DIR/NAME-<machine>.json against TEXT. */
static void
s_golden (const char *dir, const char *machine, const char *name, const char *text)
{
    cleanup_free char *path = cg_strdupf ("%s/%s-%s.json", dir, name, machine);
    if (s_update) {
        cg_error_t *err = NULL;
        CHECK (cg_write_file (path, text, strlen (text), 0644, &err) == 0, "write %s: %s", path,
               cg_error_message (err));
        printf ("wrote %s\n", path);
        s_passes++;
        return;
    }
    cleanup_free char *expected = cg_read_file (path, 1 << 20, NULL, NULL);
    CHECK (expected, "read %s: %s (test_oci %s --update writes it)", path, strerror (errno), dir);
    if (strcmp (expected, text) != 0) {
        cleanup_free char *actual = cg_strdupf ("%s-%s.actual.json", name, machine);
        cg_write_file (actual, text, strlen (text), 0644, NULL);
        CHECK (false,
               "the generated config differs from %s; see `diff -u %s %s` (the new one is in "
               "the test's working directory); if the change is meant, review it and run "
               "test_oci %s --update",
               path, path, actual, dir);
    }
    s_passes++;
}

/*  The cases: the default oci sandbox on a cgroup v1 host with swap accounting, a one-shot
    with other limits, package sources and a shared layer on cgroup v2, and the rootless
    backend with an image. */
static void
s_cases (const char *dir, const char *machine, const char *kernels)
{
    const char *name = "cases";
    cg_sandbox_limits_t limits = s_default_limits (kernels);
    cg_oci_host_t host = {.rootfs = "/state/rootfs", .etc_dir = "/state/etc", .memsw = true};
    cleanup_free char *session = s_config_text (&limits, &host, &s_session);
    s_golden (dir, machine, "oci-default-session", session);

    cg_sandbox_limits_t other = limits;
    other.memory_mb = 2048;
    other.cpus = 0.5;
    other.pids = 64;
    other.tmp_mb = 16;
    other.nofile = 256;
    other.fsize_mb = 10;
    other.sandbox_uid = other.sandbox_gid = 1234;
    other.wheelhouse = "/srv/wheelhouse";
    other.npm_mirror = "/srv/npm-mirror";
    cg_oci_host_t v2 = {.rootfs = "/state/rootfs",
                        .etc_dir = "/state/etc",
                        .shared_site = "/state/packages",
                        .cgroup_v2 = true};
    cleanup_free char *oneshot = s_config_text (&other, &v2, &s_oneshot);
    s_golden (dir, machine, "oci-limits-oneshot", oneshot);

    cg_sandbox_limits_t rootless = limits;
    rootless.backend = "rootless";
    cg_oci_host_t user = {.rootfs = "/state/rootfs",
                          .etc_dir = "/state/etc",
                          .image = "/images/cellgate-kernel",
                          .rootless = true};
    cleanup_free char *text = s_config_text (&rootless, &user, &s_session);
    s_golden (dir, machine, "rootless-image-session", text);
    CHECK (strstr (text, "@KERNELS@") == NULL, "an image has its own kernels: none bound");
    CHECK (strstr (session, "@KERNELS@") != NULL, "the kernels dir is bound without an image");
}

int
main (int argc, char **argv)
{
    if (argc < 2 || (argc == 3 && strcmp (argv[2], "--update") != 0) || argc > 3) {
        fprintf (stderr, "usage: test_oci GOLDEN_DIR [--update]\n");
        return 2;
    }
    s_update = argc == 3;
    struct utsname uts;
    uname (&uts);
    /* The seccomp profile names the machine's own architecture: one set of files each. */
    cleanup_free char *probe = cg_strdupf ("%s/oci-default-session-%s.json", argv[1], uts.machine);
    if (!s_update && access (probe, F_OK) != 0) {
        fprintf (stderr, "SKIP: no golden files for %s (%s); test_oci %s --update makes them\n",
                 uts.machine, probe, argv[1]);
        return 77;
    }
    char kernels[] = "/tmp/cg-test-oci-kernels-XXXXXX";
    if (!mkdtemp (kernels)) {
        fprintf (stderr, "mkdtemp: %s\n", strerror (errno));
        return 1;
    }
    s_cases (argv[1], uts.machine, kernels);
    rmdir (kernels);
    printf ("%d passed, %d failed\n", s_passes, s_failures);
    return s_failures ? 1 : 0;
}
