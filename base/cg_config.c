/*  cg_config — server settings from defaults, CELLGATE_* environment variables and flags. */
#include "base/cg_config.h"
#include "base/cg_aliases.h"
#include "base/cg_limits.h"
#include "base/cg_util.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef CG_KERNELS_DIR
#define CG_KERNELS_DIR "kernels"
#endif

#define OFF(field) offsetof (cg_config_t, field)

//  The smallest workspace file system, and what mkfs.ext4 gives each of its inodes.
#define S_WORKSPACE_MIN_MB 8
#define S_INODE_BYTES 256

//  The options, in --help's order. A default is written as a flag's value would be and
//  loaded the same way; the help text leaves it out, --help adds it.
static const cg_config_option_t s_options[] = {
    {"--state-dir", "CELLGATE_STATE_DIR", CG_CONFIG_STRING, OFF (state_dir), "/var/lib/cellgate", 0,
     0, "where sandboxes, workspaces and runtime state live"},
    {"--scripts-dir", "CELLGATE_SCRIPTS_DIR", CG_CONFIG_STRING, OFF (scripts_dir), NULL, 0, 0,
     "the saved-script library (save_script, run_script)"},
    {"--script-versions", "CELLGATE_SCRIPT_VERSIONS", CG_CONFIG_INT, OFF (script_versions), "50", 0,
     100000, "earlier versions save_script keeps per script; past it the oldest are removed"},
    {"--max-scripts", "CELLGATE_MAX_SCRIPTS", CG_CONFIG_INT, OFF (max_scripts), "1000", 1, 1000000,
     "scripts the library holds; a save under a new name past it is refused"},
    {"--max-scripts-mb", "CELLGATE_MAX_SCRIPTS_MB", CG_CONFIG_MB, OFF (max_scripts_bytes), "128", 1,
     1 << 20,
     "size of the script library in MB (scripts, versions, metadata); a save past it is "
     "refused"},
    {"--notebook-max-mb", "CELLGATE_NOTEBOOK_MAX_MB", CG_CONFIG_MB, OFF (notebook_max_bytes), "64",
     1, 4096,
     "a session's notebook record (export_notebook) in MB: near it a run's cell keeps its code "
     "without outputs, at it later runs are left out (the notebook says so)"},
    {"--backend", "CELLGATE_BACKEND", CG_CONFIG_ENUM, OFF (backend), "auto", 0, 0,
     "sandbox backend: oci (runc or crun, as root), rootless (runc in a user namespace, for a "
     "normal user), docker (the Docker Engine API, Podman's too, running --image) or auto "
     "(oci as root, rootless as a normal user, else docker when its socket answers)"},
    {"--image", "CELLGATE_IMAGE", CG_CONFIG_STRING, OFF (image), NULL, 0, 0,
     "the sandbox image: for docker an image name; for oci and rootless an "
     "unpacked root file system used instead of the host's /usr (scripts/build-image.sh)"},
    {"--docker-host", "CELLGATE_DOCKER_HOST", CG_CONFIG_STRING, OFF (docker_host), NULL, 0, 0,
     "the docker backend's engine: unix:///path or tcp://host:port"},
    {"--docker-tcp", "CELLGATE_DOCKER_TCP", CG_CONFIG_BOOL, OFF (docker_tcp), "off", 0, 0,
     "on: allow a tcp:// docker host (plain HTTP, no TLS: whoever reaches it is root there)"},
    {"--image-kernels", "CELLGATE_IMAGE_KERNELS", CG_CONFIG_BOOL, OFF (image_kernels), "off", 0, 0,
     "docker, on: sandboxes run the image's own kernels and --kernels-dir (still read for specs) "
     "is not bound: a server in a container, whose kernels dir the engine's host lacks"},
    {"--runtime", "CELLGATE_RUNTIME", CG_CONFIG_STRING, OFF (runtime), "auto", 0, 0,
     "OCI runtime: auto (crun on a pure cgroup v2 host, else runc), a name found on PATH (runc, "
     "crun) or a path to either (/usr/sbin/runc, ./runc)"},
    {"--kernels-dir", "CELLGATE_KERNELS_DIR", CG_CONFIG_STRING, OFF (kernels_dir), CG_KERNELS_DIR,
     0, 0, "cellgate's own kernel specs (<name>/kernel.json), bound read-only into every sandbox"},
    {"--kernelspecs", "CELLGATE_KERNELSPECS", CG_CONFIG_STRING, OFF (kernelspecs), NULL, 0, 0,
     "more Jupyter kernel spec directories (<name>/kernel.json each), colon-separated; given "
     "twice, the lists add up. Each kernel's program must be in the sandbox's root file system"},
    {"--languages", "CELLGATE_LANGUAGES", CG_CONFIG_STRING, OFF (languages), "all", 0, 0,
     "the languages offered: all (every kernel spec found, and bash) or a comma-separated list "
     "of names or aliases (python,r,bash)"},
    {"--memory-mb", "CELLGATE_MEMORY_MB", CG_CONFIG_INT, OFF (memory_mb), "512", 32, 1 << 20,
     "memory limit per sandbox in MB, no swap"},
    {"--cpus", "CELLGATE_CPUS", CG_CONFIG_DOUBLE, OFF (cpus), "1.0", 0.01, 1024,
     "CPU limit per sandbox"},
    {"--pids", "CELLGATE_PIDS", CG_CONFIG_INT, OFF (pids), "256", 16, 1 << 20,
     "process limit per sandbox"},
    {"--tmp-mb", "CELLGATE_TMP_MB", CG_CONFIG_INT, OFF (tmp_mb), "64", 1, 1 << 20,
     "size of the sandbox's /tmp in MB (and as many files as it has 4 KB pages)"},
    {"--nofile", "CELLGATE_NOFILE", CG_CONFIG_INT, OFF (nofile), "1024", 64, 1 << 20,
     "open files per sandbox process"},
    {"--fsize-mb", "CELLGATE_FSIZE_MB", CG_CONFIG_INT, OFF (fsize_mb), "1024", 1, 1 << 30,
     "largest file a sandbox may write in MB"},
    {"--workspace-mb", "CELLGATE_WORKSPACE_MB", CG_CONFIG_INT, OFF (workspace_mb), "1024", 0,
     1 << 20,
     "size limit in MB of each session's disk, its own loop-mounted ext4: its workspace "
     "(" CG_WORKSPACE_MOUNT ") and installed packages together (its ipc directory gets a 1 MB "
     "tmpfs); 0: no limit"},
    {"--workspace-inodes", "CELLGATE_WORKSPACE_INODES", CG_CONFIG_INT, OFF (workspace_inodes),
     "100000", 64, 1 << 30, "files and directories each session's disk may hold"},
    {"--sandbox-uid", "CELLGATE_SANDBOX_UID", CG_CONFIG_INT, OFF (sandbox_uid), "65532", 1,
     2147483647, "uid inside the sandbox"},
    {"--sandbox-gid", "CELLGATE_SANDBOX_GID", CG_CONFIG_INT, OFF (sandbox_gid), "65532", 1,
     2147483647, "gid inside the sandbox"},
    {"--default-timeout", "CELLGATE_DEFAULT_TIMEOUT", CG_CONFIG_INT, OFF (default_timeout_s),
     CG_STR (CG_DEFAULT_TIMEOUT_S), CG_TIMEOUT_MIN_S, CG_TIMEOUT_MAX_S,
     "default timeout in seconds of execute_code, send_to_session and run_script"},
    {"--run-python-timeout", "CELLGATE_RUN_PYTHON_TIMEOUT", CG_CONFIG_INT,
     OFF (run_python_timeout_s), CG_STR (CG_RUN_PYTHON_TIMEOUT_S), CG_TIMEOUT_MIN_S,
     CG_TIMEOUT_MAX_S, "default timeout in seconds of run_python"},
    {"--max-timeout", "CELLGATE_MAX_TIMEOUT", CG_CONFIG_INT, OFF (max_timeout_s),
     CG_STR (CG_TIMEOUT_MAX_S), CG_TIMEOUT_MIN_S, 86400,
     "the longest timeout in seconds a call may ask for (past a client's request timeout: "
     "run long cells as tasks)"},
    {"--interrupt-grace-ms", "CELLGATE_INTERRUPT_GRACE_MS", CG_CONFIG_INT, OFF (interrupt_grace_ms),
     "3000", 100, 600000, "wait after an interrupt before restarting the kernel"},
    {"--kernel-start-timeout", "CELLGATE_KERNEL_START_TIMEOUT", CG_CONFIG_INT,
     OFF (kernel_start_timeout_s), "60", 1, 600, "seconds a kernel may take to start"},
    {"--max-message-mb", "CELLGATE_MAX_MESSAGE_MB", CG_CONFIG_MB, OFF (max_message_bytes), "8", 1,
     4096, "largest message accepted from a kernel in MB"},
    {"--max-display-mb", "CELLGATE_MAX_DISPLAY_MB", CG_CONFIG_MB, OFF (max_display_bytes), "16", 1,
     4096, "display output data kept per run in MB; more is dropped with a notice"},
    {"--max-output-bytes", "CELLGATE_MAX_OUTPUT_BYTES", CG_CONFIG_BYTES, OFF (max_output_bytes),
     "102400", 256, 1 << 30, "stdout/stderr in a result per stream; more is cut to head + tail"},
    {"--output-head-bytes", "CELLGATE_OUTPUT_HEAD_BYTES", CG_CONFIG_BYTES, OFF (output_head_bytes),
     "40960", 0, 1 << 30, "what a cut output keeps of its start"},
    {"--output-tail-bytes", "CELLGATE_OUTPUT_TAIL_BYTES", CG_CONFIG_BYTES, OFF (output_tail_bytes),
     "40960", 0, 1 << 30, "what a cut output keeps of its end"},
    {"--max-output-kept-mb", "CELLGATE_MAX_OUTPUT_KEPT_MB", CG_CONFIG_MB,
     OFF (max_output_kept_bytes), "8", 1, 4096,
     "output kept per stream per run for the full-output file in MB"},
    {"--max-code-bytes", "CELLGATE_MAX_CODE_BYTES", CG_CONFIG_BYTES, OFF (max_code_bytes), "102400",
     1, 1 << 30, "largest code argument"},
    {"--max-upload-bytes", "CELLGATE_MAX_UPLOAD_BYTES", CG_CONFIG_BYTES, OFF (max_upload_bytes),
     "52428800", 1, 1 << 30, "largest upload_file"},
    {"--max-artifact-read-bytes", "CELLGATE_MAX_ARTIFACT_READ_BYTES", CG_CONFIG_BYTES,
     OFF (max_artifact_read_bytes), "10485760", 1, 1 << 30, "largest file read_artifact returns"},
    {"--max-result-bytes", "CELLGATE_MAX_RESULT_BYTES", CG_CONFIG_BYTES, OFF (max_result_bytes),
     "1048576", 65536, 1 << 30,
     "largest tool result sent to a client, on stdio and HTTP; past it images and long outputs "
     "become links to their saved files"},
    {"--image-budget", "CELLGATE_IMAGE_BUDGET", CG_CONFIG_BYTES, OFF (image_budget), "49152", 1024,
     1 << 30,
     "image bytes a run result carries inline; past it a chart comes as a smaller preview and "
     "a link to its file"},
    {"--preview-timeout-ms", "CELLGATE_PREVIEW_TIMEOUT_MS", CG_CONFIG_INT, OFF (preview_timeout_ms),
     "3000", 100, 600000,
     "wall-clock time the previews of one run's images may take together; they are made in a "
     "locked-down helper process, which is killed past it (the image is then only linked)"},
    {"--preview-memory-mb", "CELLGATE_PREVIEW_MEMORY_MB", CG_CONFIG_INT, OFF (preview_memory_mb),
     "512", 64, 1 << 20, "address space of the image preview helper process in MB"},
    {"--oneshot-keep", "CELLGATE_ONESHOT_KEEP", CG_CONFIG_INT, OFF (oneshot_keep_s), "900", 0,
     604800,
     "seconds the files a one-shot run (no session_id) made stay downloadable after its "
     "sandbox is gone; 0: not kept (and not linked)"},
    {"--oneshot-keep-mb", "CELLGATE_ONESHOT_KEEP_MB", CG_CONFIG_MB, OFF (oneshot_keep_bytes), "256",
     1, 1 << 20,
     "one-shot runs' kept files at most, all together, in MB; the oldest go first past it"},
    {"--http-listen", "CELLGATE_HTTP_LISTEN", CG_CONFIG_STRING, OFF (http_listen),
     CG_HTTP_LISTEN_HOST ":" CG_STR (CG_HTTP_LISTEN_PORT), 0, 0,
     "the listener of a stdio server (downloads, the Jupyter gateway, /metrics, /admin): "
     "HOST:PORT, or off. Unless set, a taken 8080 moves it to the next free port of 8081-8089, "
     "else to any free port (the log and start_session's gateway_url say which); set, a taken "
     "port stops the server"},
    {"--max-mcp-sessions", "CELLGATE_MAX_MCP_SESSIONS", CG_CONFIG_INT, OFF (max_mcp_sessions),
     "1024", 1, 100000, "MCP sessions over HTTP at once (more initialize requests get 503)"},
    {"--max-mcp-sessions-per-client", "CELLGATE_MAX_MCP_SESSIONS_PER_CLIENT", CG_CONFIG_INT,
     OFF (max_mcp_sessions_per_client), "256", 1, 100000,
     "MCP sessions one client may hold (429 past it), at most --max-mcp-sessions; a client is "
     "a token of a comma-separated --http-token, else each MCP session is its own"},
    {"--max-listens", "CELLGATE_MAX_LISTENS", CG_CONFIG_INT, OFF (max_listens), "256", 1, 100000,
     "2026-07-28 subscriptions/listen requests open at once"},
    {"--max-listens-per-client", "CELLGATE_MAX_LISTENS_PER_CLIENT", CG_CONFIG_INT,
     OFF (max_listens_per_client), "64", 1, 100000,
     "subscriptions/listen requests one client may hold open, at most --max-listens"},
    {"--max-tasks", "CELLGATE_MAX_TASKS", CG_CONFIG_INT, OFF (max_tasks), "1000", 1, 1000000,
     "MCP tasks kept at once, running or finished within their TTL; past it a tools/call "
     "asking for a task is refused"},
    {"--max-tasks-per-client", "CELLGATE_MAX_TASKS_PER_CLIENT", CG_CONFIG_INT,
     OFF (max_tasks_per_client), "100", 1, 1000000,
     "MCP tasks one client may hold, at most --max-tasks"},
    {"--max-task-results-mb", "CELLGATE_MAX_TASK_RESULTS_MB", CG_CONFIG_MB,
     OFF (max_task_results_bytes), "64", 1, 4096,
     "results finished tasks keep for their TTL, all together, in MB; past it no task is made"},
    {"--max-task-results-mb-per-client", "CELLGATE_MAX_TASK_RESULTS_MB_PER_CLIENT", CG_CONFIG_MB,
     OFF (max_task_results_bytes_per_client), "16", 1, 4096,
     "results one client's tasks keep, in MB, at most --max-task-results-mb"},
    {"--eof-grace", "CELLGATE_EOF_GRACE", CG_CONFIG_INT, OFF (eof_grace_s), "10", 0, 3600,
     "stdio: seconds the calls in flight may still run once stdin has ended; then they are "
     "cancelled, every one answered and logged, and the server exits"},
    {"--max-sessions", "CELLGATE_MAX_SESSIONS", CG_CONFIG_INT, OFF (max_sessions), "10", 1, 100000,
     "sandboxes at once, one-shot ones included"},
    {"--idle-ttl", "CELLGATE_IDLE_TTL", CG_CONFIG_INT, OFF (idle_ttl_s), "1800", 1, 31536000,
     "seconds after which an unused session is closed"},
    {"--client-grace", "CELLGATE_CLIENT_GRACE", CG_CONFIG_INT, OFF (client_grace_s), "120", 1,
     31536000,
     "seconds an HTTP client with no request, call in flight or open GET stream is kept; then "
     "its sessions are closed"},
    {"--oneshot-reserve", "CELLGATE_ONESHOT_RESERVE", CG_CONFIG_INT, OFF (oneshot_reserve), "2", 0,
     1000, "one-shot sandboxes that may run past --max-sessions, so sessions never starve them"},
    {"--pool", "CELLGATE_POOL", CG_CONFIG_STRING, OFF (pool), CG_CONFIG_POOL_DEFAULT, 0, 0,
     "up to N warm sandboxes per language as demand asks (LANGUAGE=N,...), for one-shot runs and "
     "new sessions (docker: one-shot runs: sessions are labelled when made); off or 0: none"},
    {"--pool-preload", "CELLGATE_POOL_PRELOAD", CG_CONFIG_STRING, OFF (pool_preload),
     "numpy,pandas,matplotlib.pyplot", 0, 0,
     "modules pooled Python kernels import before they are claimed (comma-separated); none: no "
     "preload"},
    {"--pool-memory-mb", "CELLGATE_POOL_MEMORY_MB", CG_CONFIG_INT, OFF (pool_memory_mb), "2048", 0,
     1 << 20, "memory the pool's waiting sandboxes may use together in MB"},
    {"--pool-min-available-mb", "CELLGATE_POOL_MIN_AVAILABLE_MB", CG_CONFIG_INT,
     OFF (pool_min_available_mb), "512", 0, 1 << 20,
     "when the host's MemAvailable falls below this many MB the pool is emptied and not refilled"},
    {"--keep-sessions", "CELLGATE_KEEP_SESSIONS", CG_CONFIG_BOOL, OFF (keep_sessions), "off", 0, 0,
     "on: a server that stops (stdin closed, SIGTERM, a crash) leaves its stdio sessions' "
     "sandboxes running and the next one on the same state dir re-adopts them; off: they go "
     "with it (HTTP sessions always do)"},
    {"--http", "CELLGATE_HTTP", CG_CONFIG_STRING, OFF (http), NULL, 0, 0,
     "serve MCP over Streamable HTTP at http://HOST:PORT/mcp (a bare PORT: 127.0.0.1:PORT; "
     "downloads, the Jupyter gateway, /metrics and /admin on the same listener) instead of "
     "stdio"},
    {"--http-token", "CELLGATE_HTTP_TOKEN", CG_CONFIG_STRING, OFF (http_token), NULL, 0, 0,
     "the bearer token /mcp requires (required when --http is not a loopback address; "
     "/files/ links carry their own token, /api/ takes --gateway-token, /admin and /metrics "
     "--admin-token); a comma-separated list gives each client its own (2026-07-28 clients "
     "are told apart by it)"},
    {"--http-connections-per-address", "CELLGATE_HTTP_CONNECTIONS_PER_ADDRESS", CG_CONFIG_INT,
     OFF (http_per_address), CG_STR (CG_HTTP_PER_ADDRESS_DEFAULT), 1, 256,
     "connections the listener takes from one peer address (of its 256)"},
    {"--http-owner-reserve", "CELLGATE_HTTP_OWNER_RESERVE", CG_CONFIG_INT, OFF (http_owner_reserve),
     CG_STR (CG_HTTP_OWNER_RESERVE_DEFAULT), 0, 128,
     "of the listener's 256 connections, how many only 127.0.0.1 and ::1 may use (where the "
     "server's own user connects from)"},
    {"--http-request-timeout", "CELLGATE_HTTP_REQUEST_TIMEOUT", CG_CONFIG_INT,
     OFF (http_request_timeout_s), CG_STR (CG_HTTP_REQUEST_TIMEOUT_S_DEFAULT), 1, 3600,
     "seconds a connection has to send a whole request (headers and body) from its start or "
     "its previous request's end, however slowly it trickles; then it is closed"},
    {"--admin-token", "CELLGATE_ADMIN_TOKEN", CG_CONFIG_STRING, OFF (admin_token), NULL, 0, 0,
     "the token of /admin/sessions and /metrics on every listener (16+ characters; not the "
     "--http-token or the gateway's)"},
    {"--gateway", "CELLGATE_GATEWAY", CG_CONFIG_BOOL, OFF (gateway), "on", 0, 0,
     "serve the Jupyter Kernel Gateway API (/api/kernels, /api/kernelspecs) on the listener, "
     "for jupyter server/notebook --gateway-url"},
    {"--gateway-token", "CELLGATE_GATEWAY_TOKEN", CG_CONFIG_STRING, OFF (gateway_token), NULL, 0, 0,
     "the Jupyter gateway's token (16+ characters); the log says where it is, never what"},
    {"--public-url", "CELLGATE_PUBLIC_URL", CG_CONFIG_STRING, OFF (public_url), NULL, 0, 0,
     "base URL clients reach the listener at, used in every link (http[s]://HOST[:PORT][/PREFIX], "
     "a proxy stripping PREFIX)"},
    {"--cleanup-interval", "CELLGATE_CLEANUP_INTERVAL_M", CG_CONFIG_DOUBLE,
     OFF (cleanup_interval_m), "5", 0, 10080,
     "minutes between sweeps removing what stopped servers left in the state dir (sandboxes, "
     "workspace mounts, directories); 0: only at start-up"},
    {"--tool-profile", "CELLGATE_TOOL_PROFILE", CG_CONFIG_ENUM, OFF (tool_profile), "default", 0, 0,
     "default; seed001: execute_code served as code_execution_sandbox.execute_code (that "
     "specification's tool); conformance: plus the MCP conformance suite's fixture tools"},
    {"--wheelhouse", "CELLGATE_WHEELHOUSE", CG_CONFIG_STRING, OFF (wheelhouse), NULL, 0, 0,
     "directory of wheels and sdists install_package takes Python packages from (pip "
     "--no-index --find-links), read-only in every sandbox"},
    {"--npm-mirror", "CELLGATE_NPM_MIRROR", CG_CONFIG_STRING, OFF (npm_mirror), NULL, 0, 0,
     "directory of npm tarballs (<name>-<version>.tgz, as npm pack names them) install_package "
     "takes Node packages from, read-only in every sandbox"},
    {"--egress", "CELLGATE_EGRESS", CG_CONFIG_ENUM, OFF (egress), "off", 0, 0,
     "off (sandboxes reach no network) or proxy (HTTP and HTTPS to the --egress-allow hosts "
     "only, through an audited proxy the server runs: docs/egress.md)"},
    {"--egress-allow", "CELLGATE_EGRESS_ALLOW", CG_CONFIG_STRING, OFF (egress_allow), NULL, 0, 0,
     "the hosts --egress proxy reaches: host, *.suffix (its subdomains) or an IP literal, each "
     "with an optional :port (else 80 and 443), comma-separated, or @FILE (one per line); "
     "given again, it adds to the list"},
    {"--pip-index-url", "CELLGATE_PIP_INDEX_URL", CG_CONFIG_STRING, OFF (pip_index_url), NULL, 0, 0,
     "the Python package index pip uses in proxy mode (its host must be allowed)"},
    {"--npm-registry", "CELLGATE_NPM_REGISTRY", CG_CONFIG_STRING, OFF (npm_registry), NULL, 0, 0,
     "the npm registry npm uses in proxy mode (its host must be allowed)"},
    {"--egress-max-conns", "CELLGATE_EGRESS_MAX_CONNS", CG_CONFIG_INT, OFF (egress_max_conns), "8",
     1, 1024, "proxy connections a session may have open at once"},
    {"--egress-max-mb-up", "CELLGATE_EGRESS_MAX_MB_UP", CG_CONFIG_INT, OFF (egress_max_mb_up),
     "100", 1, 1 << 20, "MB a session may send through the proxy in all"},
    {"--egress-max-mb-down", "CELLGATE_EGRESS_MAX_MB_DOWN", CG_CONFIG_INT, OFF (egress_max_mb_down),
     "1024", 1, 1 << 20, "MB a session may receive through the proxy in all"},
    {"--egress-per-minute", "CELLGATE_EGRESS_PER_MINUTE", CG_CONFIG_INT, OFF (egress_per_minute),
     "600", 1, 1000000, "new proxy connections a session may open a minute"},
    {"--log-level", "CELLGATE_LOG_LEVEL", CG_CONFIG_LOG_LEVEL, OFF (log_level), "info", 0, 3,
     "error, warn, info or debug"},
    {"--log-format", "CELLGATE_LOG_FORMAT", CG_CONFIG_ENUM, OFF (log_format), "console", 0, 0,
     "console (text lines) or json (one JSON object per line); both UTC-timestamped"},
    {"--log-file", "CELLGATE_LOG_FILE", CG_CONFIG_STRING, OFF (log_file), NULL, 0, 0,
     "append the log to this file"},
    {"--log-dir", "CELLGATE_LOG_DIR", CG_CONFIG_STRING, OFF (log_dir), NULL, 0, 0,
     "the execution log's directory (JSON lines and their index)"},
    {"--execution-log", "CELLGATE_EXECUTION_LOG", CG_CONFIG_ENUM, OFF (execution_log), "full", 0, 0,
     "full; metadata: no code, stdin or output; off: nothing is logged"},
    {"--save-displays", "CELLGATE_SAVE_DISPLAYS", CG_CONFIG_ENUM, OFF (save_displays), "figures", 0,
     0,
     "display outputs a session run saves in " CG_WORKSPACE_MOUNT "/outputs: figures (PNG, "
     "JPEG, SVG, PDF; not when the run saved an image file itself), all (HTML and JSON too) or "
     "none"},
    {"--log-retention-success-days", "CELLGATE_LOG_RETENTION_SUCCESS_DAYS", CG_CONFIG_INT,
     OFF (log_success_days), "30", 1, 36500, "days successful executions stay in the log"},
    {"--log-retention-failed-days", "CELLGATE_LOG_RETENTION_FAILED_DAYS", CG_CONFIG_INT,
     OFF (log_failed_days), "90", 1, 36500, "days failed and timed-out executions stay in the log"},
    {"--log-retention-session-days", "CELLGATE_LOG_RETENTION_SESSION_DAYS", CG_CONFIG_INT,
     OFF (log_session_days), "90", 1, 36500, "days session log files stay after their last entry"},
};
#define S_OPTION_COUNT (sizeof s_options / sizeof s_options[0])

//  The names each ENUM option takes, in its enum's order (cg_config.h).
static const struct {
    size_t offset;
    const char *const names[5];
} s_enums[] = {
    {OFF (backend), {"oci", "rootless", "docker", "auto", NULL}},
    {OFF (tool_profile), {"default", "seed001", "conformance", NULL}},
    {OFF (log_format), {"console", "json", NULL}},
    {OFF (execution_log), {"full", "metadata", "off", NULL}},
    {OFF (save_displays), {"figures", "all", "none", NULL}},
    {OFF (egress), {"off", "proxy", NULL}},
};

static const char *const *
s_names_at (size_t offset)
{
    for (size_t i = 0; i < sizeof s_enums / sizeof s_enums[0]; i++)
        if (s_enums[i].offset == offset)
            return s_enums[i].names;
    return NULL;
}

const char *const *
cg_config_values (const cg_config_option_t *option)
{
    return option->kind == CG_CONFIG_ENUM ? s_names_at (option->offset) : NULL;
}

const char *
cg_config_value_name (size_t offset, int value)
{
    const char *const *names = s_names_at (offset);
    for (int i = 0; names && names[i]; i++)
        if (i == value)
            return names[i];
    return "?";
}

//  Sets the ENUM OPTION's FIELD from VALUE, one of its names in any case. Returns 0, or -1
//  with *err set naming them ("--log-format: 'xml' is not console or json").
static int
s_set_enum (const cg_config_option_t *option, char *field, const char *value, const char *source,
            cg_error_t **err)
{
    const char *const *names = cg_config_values (option);
    size_t count = 0;
    for (; names[count]; count++)
        if (strcasecmp (value, names[count]) == 0) {
            *(int *)field = (int)count;
            return 0;
        }
    char list[128] = "";
    for (size_t i = 0; i < count; i++)
        snprintf (list + strlen (list), sizeof list - strlen (list), "%s%s",
                  i == 0           ? ""
                  : i + 1 == count ? " or "
                                   : ", ",
                  names[i]);
    return cg_error_set (err, EINVAL, "%s: '%s' is not %s", source, value, list);
}

const cg_config_option_t *
cg_config_options (size_t *count)
{
    *count = S_OPTION_COUNT;
    return s_options;
}

//  What the table's fallback does not say of a default: what an option left unset means,
//  a normal user's default where cg_config_for_user changes it, and the docs' words for a
//  default that names the machine that built it. unit_config checks that every option
//  without a fallback has a row here.
static const struct {
    const char *flag;
    const char *unset; /* what leaving it unset means (the fallback is NULL) */
    const char *user;  /* a normal user's default (the rootless backend), or NULL: root's */
    const char *docs;  /* the default as the docs say it, or NULL: the fallback */
} s_defaults[] = {
    {"--state-dir", NULL, "$XDG_STATE_HOME/cellgate, else ~/.local/state/cellgate", NULL},
    {"--scripts-dir", "<state-dir>/scripts", NULL, NULL},
    {"--image", "none: the host's /usr (oci, rootless); docker needs one", NULL, NULL},
    {"--docker-host", "$DOCKER_HOST, else unix:///var/run/docker.sock", NULL, NULL},
    {"--kernels-dir", NULL, NULL, "the source tree's kernels/, or the .deb's (compiled in)"},
    {"--kernelspecs", "none: cellgate's own, then the sandbox root's share/jupyter/kernels", NULL,
     NULL},
    {"--workspace-mb", NULL, "0: not enforced without root (plain directories)", NULL},
    {"--sandbox-uid", NULL, "the user's own uid (mapped onto itself)", NULL},
    {"--sandbox-gid", NULL, "the user's own gid (mapped onto itself)", NULL},
    {"--http", "unset: MCP on stdio", NULL, NULL},
    {"--http-token", "none: --http on a loopback address only", NULL, NULL},
    {"--admin-token", "one made at first start, kept 0600 in <state-dir>/admin-token", NULL, NULL},
    {"--gateway-token", "one made at first start, kept 0600 in <state-dir>/gateway-token", NULL,
     NULL},
    {"--public-url", "http://<the listener's address>", NULL, NULL},
    {"--wheelhouse", "none: install_package installs no Python package", NULL, NULL},
    {"--npm-mirror", "none: install_package installs no Node package", NULL, NULL},
    {"--egress-allow", "none (proxy mode needs at least one host)", NULL, NULL},
    {"--pip-index-url", "pip's own (https://pypi.org/simple)", NULL, NULL},
    {"--npm-registry", "npm's own (https://registry.npmjs.org/)", NULL, NULL},
    {"--log-file", "stderr", NULL, NULL},
    {"--log-dir", "<state-dir>/logs", NULL, NULL},
};

char *
cg_config_user_state_dir (void)
{
    const char *xdg = getenv ("XDG_STATE_HOME");
    const char *home = getenv ("HOME");
    return xdg && xdg[0] == '/'     ? cg_strdupf ("%s/cellgate", xdg)
           : home && home[0] == '/' ? cg_strdupf ("%s/.local/state/cellgate", home)
                                    : NULL;
}

char *
cg_config_default_text (const cg_config_option_t *option, cg_config_for_t who)
{
    const char *unset = NULL, *user = NULL, *docs = NULL;
    for (size_t i = 0; i < sizeof s_defaults / sizeof s_defaults[0]; i++)
        if (strcmp (s_defaults[i].flag, option->flag) == 0) {
            unset = s_defaults[i].unset;
            user = s_defaults[i].user;
            docs = s_defaults[i].docs;
        }
    const char *root = who == CG_CONFIG_FOR_DOCS && docs ? docs
                       : option->fallback                ? option->fallback
                       : unset                           ? unset
                                                         : "unset";
    if (!user || who == CG_CONFIG_FOR_ROOT || (who == CG_CONFIG_FOR_THIS && geteuid () == 0))
        return cg_xstrdup (root);
    if (who == CG_CONFIG_FOR_DOCS)
        return cg_strdupf ("%s; a normal user: %s", root, user);
    if (option->offset == OFF (state_dir)) {
        char *dir = cg_config_user_state_dir ();
        if (dir)
            return dir;
    }
    if (option->offset == OFF (sandbox_uid))
        return cg_strdupf ("%u (your uid)", (unsigned)getuid ());
    if (option->offset == OFF (sandbox_gid))
        return cg_strdupf ("%u (your gid)", (unsigned)getgid ());
    return cg_xstrdup (user);
}

//  The words an on/off setting takes, in any case: the even ones mean on.
static const char *const s_switch_words[] = {"on", "off", "true", "false", "yes",
                                             "no", "1",   "0",    NULL};

//  Returns "on" or "off" for VALUE, one of s_switch_words in any case, or NULL.
static const char *
s_switch (const char *value)
{
    for (int i = 0; s_switch_words[i]; i++)
        if (strcasecmp (value, s_switch_words[i]) == 0)
            return i % 2 == 0 ? "on" : "off";
    return NULL;
}

static int
s_set (cg_config_t *self, const cg_config_option_t *option, const char *value, const char *source,
       cg_error_t **err)
{
    char *field = (char *)self + option->offset;
    if (option->kind == CG_CONFIG_BOOL) {
        const char *state = s_switch (value);
        if (!state)
            return cg_error_set (err, EINVAL,
                                 "%s: '%s' is not on or off (also true/false, yes/no, 1/0)", source,
                                 value);
        *(bool *)field = strcmp (state, "on") == 0;
        return 0;
    }
    if (option->kind == CG_CONFIG_ENUM)
        return s_set_enum (option, field, value, option->flag, err);
    if (option->kind == CG_CONFIG_STRING) {
        if (!*value)
            return cg_error_set (err, EINVAL, "%s: empty value", source);
        free (*(char **)field);
        *(char **)field = cg_xstrdup (value);
        return 0;
    }
    if (option->kind == CG_CONFIG_LOG_LEVEL) {
        int level = cg_log_level_from_name (value);
        if (level < 0)
            return cg_error_set (err, EINVAL, "%s: '%s' is not error, warn, info or debug", source,
                                 value);
        *(int *)field = level;
        return 0;
    }
    char *end = NULL;
    errno = 0;
    double number = strtod (value, &end);
    if (errno || end == value || *end || number < option->min || number > option->max
        || (option->kind != CG_CONFIG_DOUBLE && number != (double)(long long)number)) {
        char min[32], max[32];
        return cg_error_set (err, EINVAL, "%s: '%s' is not a %s from %s to %s", source, value,
                             option->kind == CG_CONFIG_DOUBLE ? "number" : "whole number",
                             cg_number_text (option->min, min), cg_number_text (option->max, max));
    }
    if (option->kind == CG_CONFIG_INT)
        *(int *)field = (int)number;
    else if (option->kind == CG_CONFIG_DOUBLE)
        *(double *)field = number;
    else if (option->kind == CG_CONFIG_BYTES)
        *(size_t *)field = (size_t)number;
    else
        *(size_t *)field = (size_t)number * 1024 * 1024;
    return 0;
}

//  Sets an option given by the user (a variable or a flag), not by its default.
static int
s_give (cg_config_t *self, const cg_config_option_t *option, const char *value, const char *source,
        cg_error_t **err)
{
    if (s_set (self, option, value, source, err) < 0)
        return -1;
    if (option->offset == OFF (http_listen))
        self->http_listen_set = true;
    return 0;
}

//  Adds the printf-formatted line to the strv *LIST_P.
static void __attribute__ ((format (printf, 2, 3))) s_note (char ***list_p, const char *fmt, ...)
{
    size_t count = cg_strv_count ((const char *const *)*list_p);
    *list_p = cg_xrealloc (*list_p, (count + 2) * sizeof (char *));
    va_list args;
    va_start (args, fmt);
    (*list_p)[count] = cg_vstrdupf (fmt, args);
    va_end (args);
    (*list_p)[count + 1] = NULL;
}

static const cg_config_option_t *
s_option_of_env (const char *env)
{
    for (size_t i = 0; i < S_OPTION_COUNT; i++)
        if (strcmp (s_options[i].env, env) == 0)
            return &s_options[i];
    return NULL;
}

//  The seeds' variables (cg_aliases): each one set gives its setting a value unless the
//  setting's CELLGATE_* variable is set or an earlier alias gave it one. Every SANDBOX_* or
//  CODEXEC_* variable that sets nothing is warned about. Returns 0, or -1 with *err set.
static int
s_load_aliases (cg_config_t *self, cg_error_t **err)
{
    size_t count;
    const cg_alias_t *aliases = cg_aliases (&count);
    const char *given_by[S_OPTION_COUNT] = {NULL};
    for (size_t i = 0; i < count; i++) {
        const cg_alias_t *alias = &aliases[i];
        const char *value = getenv (alias->name);
        const cg_config_option_t *option = alias->target ? s_option_of_env (alias->target) : NULL;
        size_t index = option ? (size_t)(option - s_options) : 0;
        if (!value)
            continue;
        if (!alias->target)
            s_note (&self->warnings, "%s: ignored, cellgate has no such setting: %s", alias->name,
                    alias->note);
        else if (!option)
            s_note (&self->warnings, "%s: ignored, its setting %s is not in this build",
                    alias->name, alias->target);
        else if (getenv (alias->target))
            s_note (&self->notes, "%s: ignored, %s is set", alias->name, alias->target);
        else if (given_by[index])
            s_note (&self->notes, "%s: ignored, %s already gave %s", alias->name, given_by[index],
                    alias->target);
        else {
            cleanup_free char *converted = cg_alias_convert (alias, value, err);
            cleanup_free char *source = cg_strdupf ("%s (as %s)", alias->name, option->flag);
            if (!converted || s_give (self, option, converted, source, err) < 0)
                return -1;
            given_by[index] = alias->name;
            s_note (&self->notes, "%s=%s gives %s %s", alias->name, value, option->flag, converted);
        }
    }
    extern char **environ;
    for (char **entry = environ; entry && *entry; entry++) {
        const char *equals = strchr (*entry, '=');
        cleanup_free char *name =
            equals ? cg_xstrndup (*entry, (size_t)(equals - *entry)) : cg_xstrdup (*entry);
        if (cg_alias_prefixed (name) && !cg_alias_find (name))
            s_note (&self->warnings,
                    "%s: ignored, not a setting cellgate knows (docs/configuration.md)", name);
    }
    return 0;
}

//  Makes *DIR_P (a package source given as FLAG, or NULL) an absolute path to an existing
//  directory: it is bound into sandboxes. Returns 0, or -1 with *err set.
static int
s_package_source (char **dir_p, const char *flag, cg_error_t **err)
{
    if (!*dir_p)
        return 0;
    char *real = realpath (*dir_p, NULL);
    struct stat st;
    if (!real || stat (real, &st) < 0 || !S_ISDIR (st.st_mode)) {
        int code = real ? ENOTDIR : errno;
        free (real);
        return cg_error_set (err, code, "%s: '%s' is not a directory", flag, *dir_p);
    }
    free (*dir_p);
    *dir_p = real;
    return 0;
}

//  True for the bytes RFC 3986 allows in a path segment besides percent-escapes.
static bool
s_path_byte (char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')
           || strchr ("-._~!$&'()*+,;=:@/", c);
}

//  Checks *URL_P, the public base URL: http or https, a host (a name, an IPv4 address or
//  an IPv6 one in brackets), an optional port and path prefix, no credentials, query or
//  fragment. Strips a trailing slash. Returns 0, or -1 with *err set saying what is wrong.
static int
s_public_url (char **url_p, cg_error_t **err)
{
    char *url = *url_p;
    if (!url)
        return 0;
    const char *why = NULL;
    size_t scheme = strncasecmp (url, "http://", 7) == 0    ? 7
                    : strncasecmp (url, "https://", 8) == 0 ? 8
                                                            : 0;
    const char *host = url + scheme, *p = host;
    if (!scheme)
        why = "use an http:// or https:// URL";
    else if (strpbrk (url, "?#"))
        why = "a base URL has no query (?) or fragment (#)";
    else if (memchr (host, '@', strcspn (host, "/")))
        why = "a base URL has no user or password (@)";
    else if (*p == '[') {
        p += 1 + strspn (p + 1, "0123456789abcdefABCDEF:.");
        why = *p == ']' && p > host + 1 ? NULL : "an IPv6 host goes in brackets: http://[::1]:8080";
        p++;
    }
    else {
        p += strspn (p, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_~");
        why = p > host ? NULL : "the URL has no host";
    }
    if (!why && *p == ':') {
        size_t digits = strspn (p + 1, "0123456789");
        long port = digits >= 1 && digits <= 5 ? strtol (p + 1, NULL, 10) : 0;
        why = port >= 1 && port <= 65535 ? NULL : "the port is not a number from 1 to 65535";
        p += 1 + digits;
    }
    if (!why && *p && *p != '/')
        why = "the host is not a name or an address";
    for (; !why && *p; p++)
        if (*p == '%' ? !isxdigit ((unsigned char)p[1]) || !isxdigit ((unsigned char)p[2])
                      : !s_path_byte (*p))
            why = "the path prefix has a character URLs do not allow (escape it as %XX)";
    if (why)
        return cg_error_set (err, EINVAL, "--public-url: '%s': %s", url, why);
    size_t len = strlen (url);
    while (len > scheme && url[len - 1] == '/')
        url[--len] = '\0';
    for (size_t i = 0; i < scheme; i++)
        url[i] = (char)tolower ((unsigned char)url[i]);
    return 0;
}

//  The timeouts against --max-timeout, each client's share against its whole, and the
//  tokens' lengths (--http-token's each in its comma-separated list). Returns 0, or -1
//  with *err set.
static int
s_check_limits (cg_config_t *self, cg_error_t **err)
{
    if (self->default_timeout_s > self->max_timeout_s
        || self->run_python_timeout_s > self->max_timeout_s)
        return cg_error_set (err, EINVAL,
                             "--default-timeout and --run-python-timeout must not pass "
                             "--max-timeout (%d s)",
                             self->max_timeout_s);
    const struct {
        double share, whole;
        const char *share_flag, *whole_flag;
    } shares[] = {
        {self->max_mcp_sessions_per_client, self->max_mcp_sessions, "--max-mcp-sessions-per-client",
         "--max-mcp-sessions"},
        {self->max_listens_per_client, self->max_listens, "--max-listens-per-client",
         "--max-listens"},
        {self->max_tasks_per_client, self->max_tasks, "--max-tasks-per-client", "--max-tasks"},
        {(double)self->max_task_results_bytes_per_client, (double)self->max_task_results_bytes,
         "--max-task-results-mb-per-client", "--max-task-results-mb"},
    };
    for (size_t i = 0; i < sizeof shares / sizeof shares[0]; i++)
        if (shares[i].share > shares[i].whole)
            return cg_error_set (err, EINVAL, "%s must not pass %s (one client's share of it)",
                                 shares[i].share_flag, shares[i].whole_flag);
    if (self->gateway_token && strlen (self->gateway_token) < 16)
        return cg_error_set (err, EINVAL, "--gateway-token: use at least 16 characters");
    if (self->admin_token && (strlen (self->admin_token) < 16 || strchr (self->admin_token, ',')))
        return cg_error_set (err, EINVAL, "--admin-token: use one token of 16 characters or more");
    for (const char *token = self->http_token; token && *token;) {
        size_t len = strcspn (token, ",");
        if (len < 16)
            return cg_error_set (err, EINVAL,
                                 "--http-token: use at least 16 characters (per token of a "
                                 "comma-separated list)");
        token += len + (token[len] == ',');
    }
    if (self->http_token
        && (!*self->http_token || self->http_token[strlen (self->http_token) - 1] == ','))
        return cg_error_set (err, EINVAL, "--http-token: use at least 16 characters");
    return 0;
}

int
cg_config_load (cg_config_t *self, int argc, char **argv, cg_error_t **err)
{
    *self = (cg_config_t){0};
    for (size_t i = 0; i < S_OPTION_COUNT; i++)
        if (s_options[i].fallback
            && s_set (self, &s_options[i], s_options[i].fallback, s_options[i].flag, err) < 0)
            return -1;
    if (s_load_aliases (self, err) < 0)
        return -1;
    for (size_t i = 0; i < S_OPTION_COUNT; i++) {
        const char *value = getenv (s_options[i].env);
        if (value && s_give (self, &s_options[i], value, s_options[i].env, err) < 0)
            return -1;
    }
    bool allow_given = false; /* --egress-allow given once already: a second one adds to it */
    bool specs_given = false; /* --kernelspecs likewise */
    for (int arg = 0; arg < argc; arg++) {
        const char *name = argv[arg];
        const char *value = NULL;
        const char *equals = strchr (name, '=');
        size_t name_len = equals ? (size_t)(equals - name) : strlen (name);
        const cg_config_option_t *option = NULL;
        for (size_t i = 0; i < S_OPTION_COUNT && !option; i++)
            if (strlen (s_options[i].flag) == name_len
                && strncmp (s_options[i].flag, name, name_len) == 0)
                option = &s_options[i];
        if (!option)
            return cg_error_set (err, EINVAL, "unknown option '%s' (see --help)", name);
        if (equals)
            value = equals + 1;
        else if (option->kind == CG_CONFIG_BOOL)
            //  A switch alone means on; "--keep-sessions off" still reads the next word.
            value = arg + 1 < argc && s_switch (argv[arg + 1]) ? argv[++arg] : "on";
        else if (arg + 1 < argc)
            value = argv[++arg];
        else
            return cg_error_set (err, EINVAL, "%s needs a value", option->flag);
        cleanup_free char *joined = NULL;
        if (option->offset == OFF (egress_allow) && allow_given && *value)
            value = joined = cg_strdupf ("%s,%s", self->egress_allow, value);
        allow_given |= option->offset == OFF (egress_allow);
        if (option->offset == OFF (kernelspecs) && specs_given && *value)
            value = joined = cg_strdupf ("%s:%s", self->kernelspecs, value);
        specs_given |= option->offset == OFF (kernelspecs);
        if (s_give (self, option, value, option->flag, err) < 0)
            return -1;
    }
    if (self->http && strspn (self->http, "0123456789") == strlen (self->http)) {
        //  A bare port listens on loopback.
        char *full = cg_strdupf ("127.0.0.1:%s", self->http);
        free (self->http);
        self->http = full;
    }
    if (s_check_limits (self, err) < 0)
        return -1;
    if (self->http && !self->http_token && strncmp (self->http, "127.", 4) != 0
        && strncmp (self->http, "[::1]:", 6) != 0)
        return cg_error_set (
            err, EINVAL,
            "--http %s listens beyond loopback: set --http-token (or CELLGATE_HTTP_TOKEN)",
            self->http);
    if (self->output_head_bytes + self->output_tail_bytes > self->max_output_bytes)
        return cg_error_set (
            err, EINVAL,
            "--output-head-bytes + --output-tail-bytes (%zu) exceed --max-output-bytes (%zu)",
            self->output_head_bytes + self->output_tail_bytes, self->max_output_bytes);
    if (self->max_output_kept_bytes < self->max_output_bytes)
        return cg_error_set (err, EINVAL,
                             "--max-output-kept-mb must hold at least --max-output-bytes");
    if (self->workspace_mb > 0 && self->workspace_mb < S_WORKSPACE_MIN_MB)
        return cg_error_set (
            err, EINVAL,
            "--workspace-mb: %d is too small for a file system: use at least " CG_STR (
                S_WORKSPACE_MIN_MB) ", or 0 for no limit",
            self->workspace_mb);
    if (self->workspace_mb > 0
        && (double)self->workspace_inodes * S_INODE_BYTES
               > (double)self->workspace_mb * 1024 * 1024 / 2)
        return cg_error_set (
            err, EINVAL,
            "--workspace-inodes %d: their tables (" CG_STR (
                S_INODE_BYTES) " bytes each) would take more than half "
                               "of --workspace-mb %d; lower the one or raise the other",
            self->workspace_inodes, self->workspace_mb);
    if (s_package_source (&self->wheelhouse, "--wheelhouse", err) < 0
        || s_package_source (&self->npm_mirror, "--npm-mirror", err) < 0
        || s_public_url (&self->public_url, err) < 0)
        return -1;
    if (self->state_dir[0] != '/')
        return cg_error_set (err, EINVAL, "--state-dir: '%s' is not an absolute path",
                             self->state_dir);
    if (self->scripts_dir && self->scripts_dir[0] != '/')
        return cg_error_set (err, EINVAL, "--scripts-dir: '%s' is not an absolute path",
                             self->scripts_dir);
    return 0;
}

void
cg_config_clear (cg_config_t *self)
{
    free (self->state_dir);
    free (self->scripts_dir);
    free (self->runtime);
    free (self->image);
    free (self->docker_host);
    self->image = self->docker_host = NULL;
    free (self->kernels_dir);
    free (self->http_listen);
    free (self->http);
    free (self->http_token);
    free (self->gateway_token);
    self->gateway_token = NULL;
    free (self->admin_token);
    self->admin_token = NULL;
    free (self->log_dir);
    free (self->wheelhouse);
    free (self->npm_mirror);
    free (self->egress_allow);
    free (self->kernelspecs);
    free (self->languages);
    self->kernelspecs = self->languages = NULL;
    free (self->pip_index_url);
    free (self->npm_registry);
    free (self->log_file);
    cg_strv_free (self->warnings);
    cg_strv_free (self->notes);
    self->log_file = NULL;
    self->warnings = self->notes = NULL;
    free (self->public_url);
    free (self->pool);
    free (self->pool_preload);
    self->pool = self->pool_preload = NULL;
    self->http = self->http_token = self->log_dir = self->scripts_dir = NULL;
    self->wheelhouse = self->npm_mirror = self->public_url = NULL;
    self->egress_allow = self->pip_index_url = self->npm_registry = NULL;
    self->state_dir = self->runtime = self->kernels_dir = self->http_listen = NULL;
}

void
cg_config_print_usage (FILE *out)
{
    fprintf (out,
             "options (each also read from its environment variable; an on/off option "
             "alone means on,\n and takes on/off, true/false, yes/no or 1/0; defaults as "
             "uid %u gets them):\n",
             (unsigned)geteuid ());
    size_t alias_count;
    const cg_alias_t *aliases = cg_aliases (&alias_count);
    for (size_t i = 0; i < S_OPTION_COUNT; i++) {
        cleanup_free char *fallback = cg_config_default_text (&s_options[i], CG_CONFIG_FOR_THIS);
        fprintf (out, "  %-26s %-34s %s (default %s)\n", s_options[i].flag, s_options[i].env,
                 s_options[i].help, fallback);
        const char *also = "      also";
        for (size_t k = 0; k < alias_count; k++)
            if (aliases[k].target && strcmp (aliases[k].target, s_options[i].env) == 0) {
                fprintf (out, "%s %s", also, aliases[k].name);
                also = ",";
            }
        if (also[0] == ',')
            fputc ('\n', out);
    }
}

void
cg_config_usage (void)
{
    cg_config_print_usage (stdout);
}

char *
cg_config_for_user (cg_config_t *self)
{
    if (geteuid () == 0
        || (self->backend != CG_BACKEND_AUTO && self->backend != CG_BACKEND_ROOTLESS))
        return NULL;
    const char *default_state = s_options[0].fallback;
    if (strcmp (self->state_dir, default_state) == 0) {
        char *dir = cg_config_user_state_dir ();
        if (dir) {
            free (self->state_dir);
            self->state_dir = dir;
        }
    }
    self->sandbox_uid = (int)getuid ();
    self->sandbox_gid = (int)getgid ();
    int workspace_mb = self->workspace_mb;
    self->workspace_mb = 0;
    return cg_strdupf ("running as uid %u: state in %s, sandboxes as uid %d gid %d in a user "
                       "namespace, workspaces, package layers and ipc directories plain "
                       "directories%s",
                       (unsigned)getuid (), self->state_dir, self->sandbox_uid, self->sandbox_gid,
                       workspace_mb ? " (--workspace-mb is not enforced without root)" : "");
}
