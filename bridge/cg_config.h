/*  cg_config — server settings from defaults, CELLGATE_* environment variables and flags. */
#ifndef CG_CONFIG_H
#define CG_CONFIG_H

#include "cg_error.h"

#include <stdbool.h>
#include <stddef.h>

typedef struct {
    char *state_dir;            /* containers' bundles, workspaces, runtime dirs */
    char *runtime;              /* "auto", "runc" or "crun" */
    char *kernels_dir;          /* kernel specs: <dir>/<language>/kernel.json */
    int memory_mb;              /* per sandbox, swap included */
    double cpus;
    int pids;
    int tmp_mb;                 /* size of the sandbox's /tmp tmpfs */
    int nofile;                 /* RLIMIT_NOFILE inside the sandbox */
    int fsize_mb;               /* RLIMIT_FSIZE inside the sandbox */
    int workspace_mb;           /* each workspace's own file system; 0: plain directory */
    int workspace_inodes;       /* inodes of that file system */
    int sandbox_uid;
    int sandbox_gid;
    int default_timeout_s;      /* execute_code's default timeout */
    int interrupt_grace_ms;     /* after an interrupt, before the kernel is restarted */
    int kernel_start_timeout_s;
    size_t max_message_bytes;   /* largest message accepted from a kernel */
    size_t max_display_bytes;   /* display data kept per run; past it outputs are dropped */
    size_t max_output_bytes;    /* stdout/stderr in a result, per stream; more is cut */
    size_t output_head_bytes;   /* what a cut keeps of the start ... */
    size_t output_tail_bytes;   /* ... and of the end */
    size_t max_output_kept_bytes; /* kept per stream per run for the full-output file */
    size_t max_code_bytes;
    size_t max_upload_bytes;
    size_t max_artifact_read_bytes;
    size_t max_result_bytes;    /* largest tools/call response sent to a client, serialized */
    char *http_listen;          /* "HOST:PORT" of the download listener, or "off" */
    char *http;                 /* "HOST:PORT": serve MCP over Streamable HTTP there, or NULL */
    char *http_token;           /* bearer token the HTTP transport requires, or NULL */
    char *tool_profile;         /* "default" or "seed001": which tools tools/list shows */
    bool http_listen_set;       /* given by flag or variable (no fallback port then) */
    int max_sessions;           /* sandboxes at once, one-shot ones included */
    int idle_ttl_s;             /* a session unused this long is closed */
    int log_level;
} cg_config_t;

/*  Fills SELF with defaults, then CELLGATE_* environment variables, then the flags in
    ARGV (ARGC entries, the subcommand already removed). Returns 0, or -1 with *err set
    for an unknown flag or a bad value. Free with cg_config_clear. */
int cg_config_load (cg_config_t *self, int argc, char **argv, cg_error_t **err);

/*  Frees the strings SELF owns. */
void cg_config_clear (cg_config_t *self);

/*  Prints the flags and variables to stdout. */
void cg_config_usage (void);

#endif
