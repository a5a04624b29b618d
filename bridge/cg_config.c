/*  cg_config — server settings from defaults, CELLGATE_* environment variables and flags. */
#include "cg_config.h"
#include "cg_util.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#ifndef CG_KERNELS_DIR
#define CG_KERNELS_DIR "kernels"
#endif

typedef enum { S_STRING, S_INT, S_DOUBLE, S_SIZE, S_SIZE_MB, S_LOG_LEVEL } s_kind_t;

typedef struct {
    const char *flag;       /* --flag VALUE */
    const char *env;        /* CELLGATE_... */
    s_kind_t kind;
    size_t offset;
    double min, max;
    const char *help;
} s_option_t;

#define OFF(field) offsetof (cg_config_t, field)

static const s_option_t s_options[] = {
    {"--state-dir", "CELLGATE_STATE_DIR", S_STRING, OFF (state_dir), 0, 0,
     "where sandboxes, workspaces and runtime state live (default /var/lib/cellgate)"},
    {"--runtime", "CELLGATE_RUNTIME", S_STRING, OFF (runtime), 0, 0,
     "OCI runtime: auto, runc, crun (found on PATH) or a path to either (auto: crun on a pure cgroup v2 host, else runc)"},
    {"--kernels-dir", "CELLGATE_KERNELS_DIR", S_STRING, OFF (kernels_dir), 0, 0,
     "directory of kernel specs (<language>/kernel.json)"},
    {"--memory-mb", "CELLGATE_MEMORY_MB", S_INT, OFF (memory_mb), 32, 1 << 20,
     "memory limit per sandbox in MB, no swap (default 512)"},
    {"--cpus", "CELLGATE_CPUS", S_DOUBLE, OFF (cpus), 0.01, 1024, "CPU limit per sandbox (default 1.0)"},
    {"--pids", "CELLGATE_PIDS", S_INT, OFF (pids), 16, 1 << 20, "process limit per sandbox (default 256)"},
    {"--tmp-mb", "CELLGATE_TMP_MB", S_INT, OFF (tmp_mb), 1, 1 << 20, "size of the sandbox's /tmp in MB (default 64)"},
    {"--nofile", "CELLGATE_NOFILE", S_INT, OFF (nofile), 64, 1 << 20, "open files per sandbox process (default 1024)"},
    {"--fsize-mb", "CELLGATE_FSIZE_MB", S_INT, OFF (fsize_mb), 1, 1 << 30, "largest file a sandbox may write in MB (default 1024)"},
    {"--workspace-mb", "CELLGATE_WORKSPACE_MB", S_INT, OFF (workspace_mb), 0, 1 << 20, "size limit of each session's workspace (/mnt/data) in MB, its own loop-mounted ext4; 0: no limit (default 1024)"},
    {"--workspace-inodes", "CELLGATE_WORKSPACE_INODES", S_INT, OFF (workspace_inodes), 64, 1 << 30, "files and directories each workspace may hold (default 100000)"},
    {"--sandbox-uid", "CELLGATE_SANDBOX_UID", S_INT, OFF (sandbox_uid), 1, 2147483647, "uid inside the sandbox (default 65532)"},
    {"--sandbox-gid", "CELLGATE_SANDBOX_GID", S_INT, OFF (sandbox_gid), 1, 2147483647, "gid inside the sandbox (default 65532)"},
    {"--default-timeout", "CELLGATE_DEFAULT_TIMEOUT", S_INT, OFF (default_timeout_s), 1, 300, "default execute_code timeout in seconds (default 30)"},
    {"--interrupt-grace-ms", "CELLGATE_INTERRUPT_GRACE_MS", S_INT, OFF (interrupt_grace_ms), 100, 600000, "wait after an interrupt before restarting the kernel (default 3000)"},
    {"--kernel-start-timeout", "CELLGATE_KERNEL_START_TIMEOUT", S_INT, OFF (kernel_start_timeout_s), 1, 600, "seconds a kernel may take to start (default 60)"},
    {"--max-message-mb", "CELLGATE_MAX_MESSAGE_MB", S_SIZE_MB, OFF (max_message_bytes), 1, 4096, "largest message accepted from a kernel in MB (default 8)"},
    {"--max-display-mb", "CELLGATE_MAX_DISPLAY_MB", S_SIZE_MB, OFF (max_display_bytes), 1, 4096, "display output data kept per run in MB; more is dropped with a notice (default 16)"},
    {"--max-output-bytes", "CELLGATE_MAX_OUTPUT_BYTES", S_SIZE, OFF (max_output_bytes), 256, 1 << 30, "stdout/stderr in a result per stream; more is cut to head + tail (default 102400)"},
    {"--output-head-bytes", "CELLGATE_OUTPUT_HEAD_BYTES", S_SIZE, OFF (output_head_bytes), 0, 1 << 30, "what a cut output keeps of its start (default 40960)"},
    {"--output-tail-bytes", "CELLGATE_OUTPUT_TAIL_BYTES", S_SIZE, OFF (output_tail_bytes), 0, 1 << 30, "what a cut output keeps of its end (default 40960)"},
    {"--max-output-kept-mb", "CELLGATE_MAX_OUTPUT_KEPT_MB", S_SIZE_MB, OFF (max_output_kept_bytes), 1, 4096, "output kept per stream per run for the full-output file in MB (default 8)"},
    {"--max-code-bytes", "CELLGATE_MAX_CODE_BYTES", S_SIZE, OFF (max_code_bytes), 1, 1 << 30, "largest code argument (default 102400)"},
    {"--max-upload-bytes", "CELLGATE_MAX_UPLOAD_BYTES", S_SIZE, OFF (max_upload_bytes), 1, 1 << 30, "largest upload_file (default 52428800)"},
    {"--max-artifact-read-bytes", "CELLGATE_MAX_ARTIFACT_READ_BYTES", S_SIZE, OFF (max_artifact_read_bytes), 1, 1 << 30, "largest file read_artifact returns (default 10485760)"},
    {"--max-result-bytes", "CELLGATE_MAX_RESULT_BYTES", S_SIZE, OFF (max_result_bytes), 65536, 1 << 30, "largest tool result sent to a client, on stdio and HTTP; past it images and long outputs become links to their saved files (default 1048576)"},
    {"--http-listen", "CELLGATE_HTTP_LISTEN", S_STRING, OFF (http_listen), 0, 0, "download listener HOST:PORT, or off (default 127.0.0.1:8080; if that port is taken, a free one)"},
    {"--max-sessions", "CELLGATE_MAX_SESSIONS", S_INT, OFF (max_sessions), 1, 100000, "sandboxes at once, one-shot ones included (default 10)"},
    {"--idle-ttl", "CELLGATE_IDLE_TTL", S_INT, OFF (idle_ttl_s), 1, 31536000, "seconds after which an unused session is closed (default 1800)"},
    {"--http", "CELLGATE_HTTP", S_STRING, OFF (http), 0, 0, "serve MCP over Streamable HTTP at http://HOST:PORT/mcp (a bare PORT: 127.0.0.1:PORT; downloads on the same listener) instead of stdio"},
    {"--http-token", "CELLGATE_HTTP_TOKEN", S_STRING, OFF (http_token), 0, 0, "bearer token HTTP clients must send (required when --http is not a loopback address)"},
    {"--tool-profile", "CELLGATE_TOOL_PROFILE", S_STRING, OFF (tool_profile), 0, 0, "default; seed001: execute_code served as seed 001's code_execution_sandbox.execute_code; conformance: plus the MCP conformance suite's fixture tools"},
    {"--log-level", "CELLGATE_LOG_LEVEL", S_LOG_LEVEL, OFF (log_level), 0, 3, "error, warn, info or debug (default info)"},
};
#define S_OPTION_COUNT (sizeof s_options / sizeof s_options[0])

static int
s_set (cg_config_t *self, const s_option_t *option, const char *value, const char *source,
       cg_error_t **err)
{
    char *field = (char *) self + option->offset;
    if (option->kind == S_STRING) {
        if (!*value)
            return cg_error_set (err, EINVAL, "%s: empty value", source);
        free (*(char **) field);
        *(char **) field = cg_xstrdup (value);
        if (option->offset == OFF (http_listen))
            self->http_listen_set = true;
        return 0;
    }
    if (option->kind == S_LOG_LEVEL) {
        int level = cg_log_level_from_name (value);
        if (level < 0)
            return cg_error_set (err, EINVAL, "%s: '%s' is not error, warn, info or debug", source, value);
        *(int *) field = level;
        return 0;
    }
    char *end = NULL;
    errno = 0;
    double number = strtod (value, &end);
    if (errno || end == value || *end || number < option->min || number > option->max
        || (option->kind != S_DOUBLE && number != (double) (long long) number))
        return cg_error_set (err, EINVAL, "%s: '%s' is not a %s from %g to %g", source, value,
                             option->kind == S_DOUBLE ? "number" : "whole number", option->min,
                             option->max);
    if (option->kind == S_INT)
        *(int *) field = (int) number;
    else if (option->kind == S_DOUBLE)
        *(double *) field = number;
    else if (option->kind == S_SIZE)
        *(size_t *) field = (size_t) number;
    else
        *(size_t *) field = (size_t) number * 1024 * 1024;
    return 0;
}

int
cg_config_load (cg_config_t *self, int argc, char **argv, cg_error_t **err)
{
    *self = (cg_config_t){
        .state_dir = cg_xstrdup ("/var/lib/cellgate"),
        .runtime = cg_xstrdup ("auto"),
        .kernels_dir = cg_xstrdup (CG_KERNELS_DIR),
        .memory_mb = 512,
        .cpus = 1.0,
        .pids = 256,
        .tmp_mb = 64,
        .nofile = 1024,
        .fsize_mb = 1024,
        .workspace_mb = 1024,
        .workspace_inodes = 100000,
        .sandbox_uid = 65532,
        .sandbox_gid = 65532,
        .default_timeout_s = 30,
        .interrupt_grace_ms = 3000,
        .kernel_start_timeout_s = 60,
        .max_message_bytes = 8 * 1024 * 1024,
        .max_display_bytes = 16 * 1024 * 1024,
        .max_output_bytes = 100 * 1024,
        .output_head_bytes = 40 * 1024,
        .output_tail_bytes = 40 * 1024,
        .max_output_kept_bytes = 8 * 1024 * 1024,
        .max_code_bytes = 100 * 1024,
        .max_upload_bytes = 50 * 1024 * 1024,
        .max_artifact_read_bytes = 10 * 1024 * 1024,
        .max_result_bytes = 1024 * 1024,
        .http_listen = cg_xstrdup ("127.0.0.1:8080"),
        .tool_profile = cg_xstrdup ("default"),
        .max_sessions = 10,
        .idle_ttl_s = 1800,
        .log_level = 2,
    };
    for (size_t i = 0; i < S_OPTION_COUNT; i++) {
        const char *value = getenv (s_options[i].env);
        if (value && s_set (self, &s_options[i], value, s_options[i].env, err) < 0)
            return -1;
    }
    for (int arg = 0; arg < argc; arg++) {
        const char *name = argv[arg];
        const char *value = NULL;
        const char *equals = strchr (name, '=');
        size_t name_len = equals ? (size_t) (equals - name) : strlen (name);
        const s_option_t *option = NULL;
        for (size_t i = 0; i < S_OPTION_COUNT && !option; i++)
            if (strlen (s_options[i].flag) == name_len
                && strncmp (s_options[i].flag, name, name_len) == 0)
                option = &s_options[i];
        if (!option)
            return cg_error_set (err, EINVAL, "unknown option '%s' (see --help)", name);
        if (equals)
            value = equals + 1;
        else if (arg + 1 < argc)
            value = argv[++arg];
        else
            return cg_error_set (err, EINVAL, "%s needs a value", option->flag);
        if (s_set (self, option, value, option->flag, err) < 0)
            return -1;
    }
    if (strcmp (self->runtime, "auto") && strcmp (self->runtime, "runc")
        && strcmp (self->runtime, "crun") && !strchr (self->runtime, '/'))
        return cg_error_set (err, EINVAL, "--runtime: '%s' is not auto, runc, crun or a path",
                             self->runtime);
    if (self->http && strspn (self->http, "0123456789") == strlen (self->http)) {
        //  A bare port listens on loopback.
        char *full = cg_strdupf ("127.0.0.1:%s", self->http);
        free (self->http);
        self->http = full;
    }
    if (self->http_token && strlen (self->http_token) < 16)
        return cg_error_set (err, EINVAL, "--http-token: use at least 16 characters");
    if (self->http && !self->http_token && strncmp (self->http, "127.", 4) != 0 && strncmp (self->http, "[::1]:", 6) != 0)
        return cg_error_set (err, EINVAL, "--http %s listens beyond loopback: set --http-token (or CELLGATE_HTTP_TOKEN)", self->http);
    if (strcmp (self->tool_profile, "default") && strcmp (self->tool_profile, "seed001")
        && strcmp (self->tool_profile, "conformance"))
        return cg_error_set (err, EINVAL, "--tool-profile: '%s' is not default, seed001 or conformance", self->tool_profile);
    if (self->output_head_bytes + self->output_tail_bytes > self->max_output_bytes)
        return cg_error_set (err, EINVAL, "--output-head-bytes + --output-tail-bytes (%zu) exceed --max-output-bytes (%zu)",
                             self->output_head_bytes + self->output_tail_bytes, self->max_output_bytes);
    if (self->max_output_kept_bytes < self->max_output_bytes)
        return cg_error_set (err, EINVAL, "--max-output-kept-mb must hold at least --max-output-bytes");
    if (self->workspace_mb > 0 && self->workspace_mb < 8)
        return cg_error_set (err, EINVAL, "--workspace-mb: %d is too small for a file system: use at least 8, or 0 for no limit",
                             self->workspace_mb);
    if (self->workspace_mb > 0 && (double) self->workspace_inodes * 256 > (double) self->workspace_mb * 1024 * 1024 / 2)
        return cg_error_set (err, EINVAL, "--workspace-inodes %d: their tables (256 bytes each) would take more than half "
                             "of --workspace-mb %d; lower the one or raise the other", self->workspace_inodes, self->workspace_mb);
    if (self->state_dir[0] != '/')
        return cg_error_set (err, EINVAL, "--state-dir: '%s' is not an absolute path", self->state_dir);
    return 0;
}

void
cg_config_clear (cg_config_t *self)
{
    free (self->state_dir);
    free (self->runtime);
    free (self->kernels_dir);
    free (self->http_listen);
    free (self->tool_profile);
    free (self->http);
    free (self->http_token);
    self->http = self->http_token = NULL;
    self->state_dir = self->runtime = self->kernels_dir = self->http_listen = self->tool_profile = NULL;
}

void
cg_config_usage (void)
{
    printf ("options (each also read from its environment variable):\n");
    for (size_t i = 0; i < S_OPTION_COUNT; i++)
        printf ("  %-26s %-34s %s\n", s_options[i].flag, s_options[i].env, s_options[i].help);
}
