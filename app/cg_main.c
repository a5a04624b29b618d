/*  cellgate — the server program: `cellgate mcp` serves MCP (stdio or Streamable HTTP);
    `cellgate kernel` starts one sandboxed kernel and prints its connection file (for
    benchmarks and Jupyter clients); `cellgate help` says so (cg_help). */
#define _GNU_SOURCE /* SCHED_BATCH */
#include "egress/cg_egress.h"
#include "containers/cg_container.h"
#include "containers/cg_docker.h"
#include "artifacts/cg_preview.h"
#include "mcp/cg_mcp.h"
#include "mcp/conformance/cg_conformance.h"
#include "server/cg_server.h"
#include "base/cg_config.h"
#include "base/cg_fault.h"
#include "base/cg_kernels.h"
#include "app/cg_help.h"
#include "bridge/cg_instance.h"
#include "bridge/cg_pool.h"
#include "bridge/cg_session.h"
#include "bridge/cg_state.h"
#include "bridge/cg_sweep.h"
#include "egress/cg_egress_relay.h"
#include "remote/cg_remote_relay.h"
#include "base/cg_util.h"
#include "base/cg_fs.h"
#include "base/cg_version.h"

#include <czmq.h>
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

//  Writes a copy of the kernel's connection file for a host client (jupyter_client).
//  Its ipc paths name links in a host-only directory to /proc/<this pid>/fd/N, the
//  sockets the server itself connected to: a host client never resolves a name in the
//  sandbox's writable ipc dir. They work while this process runs.
static char *
s_host_connection_file (cg_session_t *session, cg_kernel_t *kernel, cg_error_t **err)
{
    cleanup_free char *links = cg_strdupf ("%s/host-ipc", cg_session_dir (session));
    if (cg_mkdir_p (links, 0700, err) < 0)
        return NULL;
    for (int port = 1; port <= 5; port++) {
        cleanup_free char *link = cg_strdupf ("%s/python-%d", links, port);
        cleanup_free char *target =
            cg_strdupf ("/proc/%d/fd/%d", (int)getpid (), cg_kernel_endpoint_fd (kernel, port));
        unlink (link);
        if (symlink (target, link) < 0) {
            cg_error_set (err, errno, "symlink %s: %s", link, strerror (errno));
            return NULL;
        }
    }
    json_t *conn = json_deep_copy (cg_kernel_connection_info (kernel));
    cleanup_free char *ip = cg_strdupf ("%s/python", links);
    json_object_set_new (conn, "ip", json_string (ip));
    cleanup_free char *text = json_dumps (conn, JSON_INDENT (1));
    json_decref (conn);
    char *path = cg_strdupf ("%s/kernel-python.host.json", cg_session_dir (session));
    if (cg_write_file (path, text, strlen (text), 0600, err) < 0) {
        free (path);
        return NULL;
    }
    return path;
}

static int
s_kernel_command (const cg_config_t *config, cg_backend_t *backend, cg_instance_t *instance)
{
    cg_error_t *err = NULL;
    cg_session_t *session =
        cg_session_new_as (backend, config, cg_instance_sessions_dir (instance),
                           cg_instance_prefix (instance), NULL, CG_SANDBOX_SESSION, NULL, &err);
    cg_kernel_t *kernel = session ? cg_session_kernel (session, "python", &err) : NULL;
    char *path = kernel ? s_host_connection_file (session, kernel, &err) : NULL;
    if (!path) {
        fprintf (stderr, "cellgate kernel: %s\n", cg_error_message (err));
        cg_error_destroy (&err);
        cg_session_destroy (&session);
        return 1;
    }
    printf ("%s\n", path);
    fflush (stdout);
    free (path);
    char buf[256];
    while (!zsys_interrupted && read (STDIN_FILENO, buf, sizeof buf) > 0)
        ;
    cg_session_destroy (&session);
    return 0;
}

//  Loads the languages CONFIG offers (base/cg_kernels.h) and makes them the process's:
//  cellgate's kernels/, --kernelspecs, then the sandbox root's share/jupyter/kernels (the
//  image's when --image is a directory, the host's /usr without one; none for an image a
//  Docker engine holds). Returns 0, or -1 with *err set.
static int
s_load_kernels (const cg_config_t *config, cg_error_t **err)
{
    struct stat st;
    bool image_dir = config->image && stat (config->image, &st) == 0 && S_ISDIR (st.st_mode);
    const char *root = image_dir                                                ? config->image
                       : !config->image && config->backend != CG_BACKEND_DOCKER ? ""
                                                                                : NULL;
    cleanup_free char *list = cg_xstrdup (config->kernelspecs ? config->kernelspecs : "");
    char *dirs[CG_KERNELS_MAX + 3] = {NULL};
    size_t n = 0;
    char *save = NULL;
    for (char *dir = strtok_r (list, ":", &save); dir && n < CG_KERNELS_MAX;
         dir = strtok_r (NULL, ":", &save))
        dirs[n++] = cg_xstrdup (dir);
    if (root) {
        dirs[n++] = cg_strdupf ("%s/usr/local/share/jupyter/kernels", root);
        dirs[n++] = cg_strdupf ("%s/usr/share/jupyter/kernels", root);
    }
    char **notes = NULL;
    cg_kernels_t *kernels = cg_kernels_load (config->kernels_dir, (const char *const *)dirs,
                                             config->languages, &notes, err);
    for (size_t i = 0; i < n; i++)
        free (dirs[i]);
    for (char **line = notes; line && *line; line++)
        cg_log (strstr (*line, ": shadowed by") ? 3 : 1, "%s", *line);
    cg_strv_free (notes);
    if (!kernels)
        return -1;
    cleanup_free char *names = cg_kernels_names (kernels, ", ");
    cg_log (2, "languages: %s", names);
    cg_kernels_install (kernels);
    return 0;
}

//  What containers/ needs of the settings: the sandboxes' limits and the backend's files.
static cg_sandbox_limits_t
s_sandbox_limits (const cg_config_t *config)
{
    return (cg_sandbox_limits_t){
        .backend = cg_config_value_name (offsetof (cg_config_t, backend), (int)config->backend),
        .image = config->image,
        .docker_host = config->docker_host,
        .docker_tcp = config->docker_tcp,
        .image_kernels = config->image_kernels,
        .runtime = config->runtime,
        .state_dir = config->state_dir,
        .kernels_dir = config->kernels_dir,
        .memory_mb = config->memory_mb,
        .cpus = config->cpus,
        .pids = config->pids,
        .tmp_mb = config->tmp_mb,
        .workspace_mb = config->workspace_mb,
        .workspace_inodes = config->workspace_inodes,
        .nofile = config->nofile,
        .fsize_mb = config->fsize_mb,
        .sandbox_uid = config->sandbox_uid,
        .sandbox_gid = config->sandbox_gid,
        .wheelhouse = config->wheelhouse,
        .npm_mirror = config->npm_mirror,
        .egress_proxy = config->egress == CG_EGRESS_PROXY};
}

//  What the MCP server registers beside its features and tools: the conformance suite's
//  fixtures under --tool-profile conformance, nothing else.
static cg_server_setup_fn *
s_providers (const cg_config_t *config)
{
    return config->tool_profile == CG_TOOL_PROFILE_CONFORMANCE ? cg_conformance_register : NULL;
}

//  Each live session holds a few dozen descriptors and ZeroMQ sockets (a kernel's five
//  channels, their monitors, the session actor's pipes). The soft RLIMIT_NOFILE (often
//  1024) and czmq's default of 1024 sockets would stop a server at about 50 sessions
//  ("Too many open files"): raise the first to the hard limit and the second to match,
//  before any socket exists.
static void
s_raise_socket_limits (void)
{
    struct rlimit nofile = {1024, 1024};
    if (getrlimit (RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur < nofile.rlim_max) {
        nofile.rlim_cur = nofile.rlim_max;
        if (setrlimit (RLIMIT_NOFILE, &nofile) < 0)
            getrlimit (RLIMIT_NOFILE, &nofile);
    }
    size_t sockets = zsys_socket_limit ();
    if (nofile.rlim_cur != RLIM_INFINITY && nofile.rlim_cur < sockets)
        sockets = (size_t)nofile.rlim_cur;
    zsys_set_max_sockets (sockets);
    cg_log (3, "open files: up to %llu; ZeroMQ sockets: up to %zu",
            (unsigned long long)nofile.rlim_cur, sockets);
}

//  ZeroMQ's I/O thread runs as SCHED_BATCH: the same share of the CPU, but its wake-ups
//  never preempt the thread running where it wakes (the tick may). Every kernel message a
//  runner reads wakes it (libzmq's activate_write, at our receive limit of 2 up to once per
//  frame), and each wake-up could put the runner off its CPU and back; now the runner goes
//  on, and the I/O thread runs on the other CPU or when the runner waits (bench_bridge, the
//  same build with and without: context switches per cell 28 -> 22, less CPU per cell,
//  latency the same within noise). libzmq aborts the process when it cannot set the policy
//  it was given, so a throwaway thread tries it first (a seccomp filter may refuse it);
//  when that fails the threads keep the policy they inherit.
static void *
s_try_batch (void *arg)
{
    //  As libzmq does it (the priority kept), from the default policy only: a server an
    //  operator started at another keeps it.
    int policy;
    struct sched_param param;
    int rc = pthread_getschedparam (pthread_self (), &policy, &param);
    *(int *)arg = rc ? rc
                  : policy != SCHED_OTHER
                      ? -2
                      : pthread_setschedparam (pthread_self (), SCHED_BATCH, &param);
    return NULL;
}

static void
s_zmq_threads_batch (void)
{
    int rc = -1;
    pthread_t probe;
    if (pthread_create (&probe, NULL, s_try_batch, &rc) == 0)
        pthread_join (probe, NULL);
    if (rc == 0)
        zsys_set_thread_sched_policy (SCHED_BATCH);
    else
        cg_log (2, "ZeroMQ's threads keep the scheduling policy they inherit (SCHED_BATCH: %s)",
                rc == -2 ? "the server does not run at the default policy"
                : rc > 0 ? strerror (rc)
                         : "no thread to try it");
}

//  A normal user gets the rootless backend's settings (user namespace, XDG state dir; the
//  sentence saying so in *NOTE, or NULL for root); the backends that need root say so
//  plainly instead of failing on a mkdir or chown. Returns 0, or -1 when COMMAND cannot run.
static int
s_for_user (cg_config_t *config, const char *command, char **note)
{
    *note = cg_config_for_user (config);
    if (geteuid () == 0 || *note)
        return 0;
    fprintf (stderr,
             "cellgate %s: --backend %s needs root, and this process runs as uid %u. As a "
             "normal user use --backend rootless (the default: runc in a user namespace, "
             "no sudo). For the oci or docker backend run cellgate as root; from a stdio "
             "MCP client that means e.g. 'claude mcp add cellgate -- sudo -n "
             "/path/to/cellgate mcp' with a sudoers rule that asks no password (a stdio "
             "client cannot answer a password prompt).\n",
             command, cg_config_value_name (offsetof (cg_config_t, backend), (int)config->backend),
             (unsigned)geteuid ());
    return -1;
}

static int
s_preview_main (int argc, char **argv)
{
    cg_preview_main (argc, argv);
}

//  The helper programs the server starts itself (this same binary), one row each.
static const struct {
    const char *name;
    int (*main) (int argc, char **argv);
} s_helpers[] = {
    //  The Docker backend's exec helper (cg_docker.h).
    {"docker-exec", cg_docker_exec_main},
    //  The egress relay (cg_egress_relay.h), started once by the server.
    {"egress-relay", cg_egress_relay_main},
    //  A remote sandbox's init (cg_remote_relay.h), started by the engine in its container.
    {"relay", cg_remote_relay_main},
    //  The image preview helper (cg_preview.h), started by a runner thread; it locks
    //  itself down before it reads the untrusted image.
    {"preview", s_preview_main},
};

//  cellgate mcp: the orphan sweep, the egress proxy when --egress proxy, then the server.
//  Returns the exit code.
static int
s_mcp_command (const cg_config_t *config, cg_backend_t *backend, cg_instance_t *instance,
               const cg_egress_test_t *egress_test)
{
    cg_log (2, "serving MCP on %s (runtime %s, state %s)",
            config->http ? "Streamable HTTP" : "stdio", cg_backend_name (backend),
            config->state_dir);
    cg_sweep_t *sweep = cg_sweep_new (instance, config->cleanup_interval_m);
    //  Started here, on the main thread: squid and the relay die with it.
    cg_error_t *err = NULL;
    cg_egress_t *egress =
        config->egress == CG_EGRESS_PROXY
            ? cg_egress_new (config, config->state_dir, "/proc/self/exe", egress_test, &err)
            : NULL;
    int rc = 1;
    if (config->egress == CG_EGRESS_PROXY && !egress)
        cg_log (0, "%s", cg_error_message (err));
    else
        rc = cg_serve (config, backend, instance, egress, STDIN_FILENO, STDOUT_FILENO,
                       s_providers (config));
    cg_error_destroy (&err);
    cg_egress_destroy (&egress);
    cg_sweep_destroy (&sweep);
    return rc;
}

int
main (int argc, char **argv)
{
    if (argc < 2 || strcmp (argv[1], "--help") == 0 || strcmp (argv[1], "-h") == 0) {
        cg_help_print (argc < 2 ? stderr : stdout, NULL);
        return argc < 2 ? 2 : 0;
    }
    if (strcmp (argv[1], "help") == 0) {
        if (cg_help_print (stdout, argc > 2 ? argv[2] : NULL) == 0)
            return 0;
        fprintf (stderr, "cellgate help: unknown command '%s' (try cellgate help)\n", argv[2]);
        return 2;
    }
    if (strcmp (argv[1], "--version") == 0) {
        printf ("cellgate %s\n", CG_VERSION);
        return 0;
    }
    const char *command = argv[1];
    for (size_t i = 0; i < sizeof s_helpers / sizeof s_helpers[0]; i++)
        if (strcmp (command, s_helpers[i].name) == 0)
            return s_helpers[i].main (argc, argv);
    if (strcmp (command, "mcp") != 0 && strcmp (command, "kernel") != 0) {
        fprintf (stderr, "cellgate: unknown command '%s' (try cellgate help)\n", command);
        return 2;
    }
    for (int i = 2; i < argc; i++)
        if (strcmp (argv[i], "--help") == 0 || strcmp (argv[i], "-h") == 0) {
            cg_help_print (stdout, command);
            return 0;
        }
    cg_config_t config;
    cg_error_t *err = NULL;
    //  Hidden from --help, never read from the environment: tests only (cg_fault.h).
    int args = argc - 2;
    cg_egress_test_t egress_test = {0};
    if (cg_fault_take_args (&args, argv + 2, &err) < 0
        || cg_egress_take_test_args (&args, argv + 2, &egress_test, &err) < 0) {
        fprintf (stderr, "cellgate: %s\n", cg_error_message (err));
        cg_error_destroy (&err);
        return 2;
    }
    if (cg_config_load (&config, args, argv + 2, &err) < 0) {
        fprintf (stderr, "cellgate: %s\n", cg_error_message (err));
        cg_error_destroy (&err);
        cg_config_clear (&config);
        return 2;
    }
    cleanup_free char *for_user = NULL;
    if (s_for_user (&config, command, &for_user) < 0) {
        cg_config_clear (&config);
        return 2;
    }
    cg_log_set_level (config.log_level);
    cg_log_set_json (config.log_format == CG_LOG_FORMAT_JSON);
    int pool_sizes[CG_KERNELS_MAX];
    char *preload = NULL;
    if ((config.log_file && cg_log_set_file (config.log_file, &err) < 0)
        || s_load_kernels (&config, &err) < 0 || cg_pool_parse (config.pool, pool_sizes, &err) < 0
        || (!(preload = cg_pool_preload_code (config.pool_preload, &err)) && err)
        || cg_egress_check (&config, &err) < 0) {
        fprintf (stderr, "cellgate: %s\n", cg_error_message (err));
        cg_error_destroy (&err);
        cg_config_clear (&config);
        return 2;
    }
    free (preload);
    for (char **line = config.warnings; line && *line; line++)
        cg_log (1, "%s", *line);
    for (char **line = config.notes; line && *line; line++)
        cg_log (2, "%s", *line);
    if (for_user)
        cg_log (2, "%s", for_user);
    if (sodium_init () < 0) {
        fprintf (stderr, "cellgate: libsodium failed to initialize\n");
        return 1;
    }
    signal (SIGPIPE, SIG_IGN);
    //  Before anything reads or writes the state dir: a newer format is left alone.
    if (cg_state_open (config.state_dir, NULL, &err) < 0) {
        cg_log (0, "%s", cg_error_message (err));
        cg_error_destroy (&err);
        cg_config_clear (&config);
        return 1;
    }
    //  Kernel messages are large and short-lived. A fixed mmap threshold keeps every large
    //  buffer in its own mapping, returned to the system when freed (glibc's moving
    //  threshold would move them into the heap, which then stays at its high-water mark),
    //  and few arenas keep the runner threads from each holding a heap of their own.
    mallopt (M_MMAP_THRESHOLD, 256 * 1024);
    mallopt (M_ARENA_MAX, 2);
    zsys_init ();
    zsys_set_logstream (stderr);
    s_zmq_threads_batch ();
    s_raise_socket_limits ();

    if (config.workspace_mb == 0)
        cg_log (1,
                "--workspace-mb 0: workspaces, package layers and ipc directories have no size "
                "or inode limit; sandboxed code can fill the file system of %s",
                config.state_dir);
    int rc = 1;
    cg_sandbox_limits_t limits = s_sandbox_limits (&config);
    cg_backend_t *backend = cg_backend_new (&limits, &err);
    cg_instance_t *instance = backend ? cg_instance_new (backend, &config, &err) : NULL;
    if (!instance)
        cg_log (0, "%s", cg_error_message (err));
    else if (strcmp (command, "mcp") == 0)
        rc = s_mcp_command (&config, backend, instance, &egress_test);
    else
        rc = s_kernel_command (&config, backend, instance);
    cg_error_destroy (&err);
    cg_instance_destroy (&instance);
    cg_backend_destroy (&backend);
    cg_config_clear (&config);
    return rc;
}
