/*  cg_config — server settings from defaults, CELLGATE_* environment variables and flags. */
#ifndef CG_CONFIG_H
#define CG_CONFIG_H

#include "base/cg_error.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/*  The settings with fixed values, parsed once (CG_CONFIG_ENUM): each enum's values are in
    the order of the names its option takes (cg_config_values). */
typedef enum {
    CG_BACKEND_OCI,      /* runc or crun, as root */
    CG_BACKEND_ROOTLESS, /* runc in a user namespace */
    CG_BACKEND_DOCKER,   /* a Docker or Podman engine */
    CG_BACKEND_AUTO,     /* the first that can run here */
} cg_config_backend_t;

typedef enum {
    CG_TOOL_PROFILE_DEFAULT,
    CG_TOOL_PROFILE_SEED001,     /* execute_code as seed 001's tool */
    CG_TOOL_PROFILE_CONFORMANCE, /* plus the MCP conformance suite's fixtures */
} cg_tool_profile_t;

typedef enum {
    CG_LOG_FORMAT_CONSOLE, /* text lines */
    CG_LOG_FORMAT_JSON,    /* one JSON object per line */
} cg_log_format_t;

typedef enum {
    CG_EXECUTION_LOG_FULL,
    CG_EXECUTION_LOG_METADATA, /* no code, stdin or output */
    CG_EXECUTION_LOG_OFF,
} cg_execution_log_t;

typedef enum {
    CG_SAVE_DISPLAYS_FIGURES, /* PNG, JPEG, SVG, PDF (not when the run saved an image) */
    CG_SAVE_DISPLAYS_ALL,     /* HTML and JSON too */
    CG_SAVE_DISPLAYS_NONE,
} cg_save_displays_t;

/*  --egress: what leaves a sandbox (egress/cg_egress.h). */
typedef enum {
    CG_EGRESS_OFF,   /* nothing: the sandbox's network namespace has lo only */
    CG_EGRESS_PROXY, /* HTTP and HTTPS to --egress-allow's hosts, through the audited proxy */
} cg_egress_mode_t;

/*  --pool's default. A language it names that the server does not offer (--languages) is
    left out of it; named in a --pool given, it is refused. */
#define CG_CONFIG_POOL_DEFAULT "python=1,javascript=1,bash=1"

typedef struct {
    char *state_dir;             /* containers' bundles, workspaces, runtime dirs */
    char *scripts_dir;           /* the saved-script library; NULL: <state_dir>/scripts */
    int script_versions;         /* earlier versions kept per script; older ones are removed */
    int max_scripts;             /* scripts in the library */
    size_t max_scripts_bytes;    /* bytes of the whole library */
    size_t notebook_max_bytes;   /* a session's notebook record (notebook.jsonl) */
    char *runtime;               /* "auto", a name looked up on PATH, or a path */
    cg_config_backend_t backend; /* --backend */
    char *image;                 /* the docker backend's sandbox image, or NULL */
    char *docker_host;           /* unix:///path or tcp://host:port, or NULL */
    bool docker_tcp;             /* a tcp:// docker host is allowed */
    bool image_kernels;          /* docker: the image's kernels, --kernels-dir not bound */
    char *kernels_dir;           /* cellgate's kernel specs: <dir>/<name>/kernel.json */
    char *kernelspecs;           /* more kernel spec directories, colon-separated, or NULL */
    char *languages;             /* the languages offered: "all" or a list (base/cg_kernels.h) */
    int memory_mb;               /* per sandbox, swap included */
    double cpus;
    int pids;
    int tmp_mb;           /* size of the sandbox's /tmp tmpfs */
    int nofile;           /* RLIMIT_NOFILE inside the sandbox */
    int fsize_mb;         /* RLIMIT_FSIZE inside the sandbox */
    int workspace_mb;     /* each workspace's own file system; 0: plain directory */
    int workspace_inodes; /* inodes of that file system */
    int sandbox_uid;
    int sandbox_gid;
    int default_timeout_s;    /* the running tools' default timeout (seeds 000, 002) */
    int max_timeout_s;        /* the longest timeout a call may ask for (CG_TIMEOUT_MAX_S) */
    int run_python_timeout_s; /* run_python's (seed 004) */
    int interrupt_grace_ms;   /* after an interrupt, before the kernel is restarted */
    int kernel_start_timeout_s;
    size_t max_message_bytes;     /* largest message accepted from a kernel */
    size_t max_display_bytes;     /* display data kept per run; past it outputs are dropped */
    size_t max_output_bytes;      /* stdout/stderr in a result, per stream; more is cut */
    size_t output_head_bytes;     /* what a cut keeps of the start ... */
    size_t output_tail_bytes;     /* ... and of the end */
    size_t max_output_kept_bytes; /* kept per stream per run for the full-output file */
    size_t max_code_bytes;
    size_t max_upload_bytes;
    size_t max_artifact_read_bytes;
    size_t max_result_bytes;   /* largest tools/call response sent to a client, serialized */
    size_t image_budget;       /* image bytes a tools/call result carries inline */
    int preview_timeout_ms;    /* wall-clock time a run's image previews may take together */
    int preview_memory_mb;     /* the preview helper's address space */
    int oneshot_keep_s;        /* a one-shot run's files stay downloadable this long; 0: not kept */
    size_t oneshot_keep_bytes; /* one-shot runs' kept files at most, all together */
    char *http_listen;         /* "HOST:PORT" of the download listener, or "off" */
    char *http;                /* "HOST:PORT": serve MCP over Streamable HTTP there, or NULL */
    char *http_token;          /* bearer token the HTTP transport requires, or NULL */
    char *gateway_token;       /* the Jupyter gateway's token, or NULL (one is made: cg_gateway) */
    bool gateway;              /* serve the Jupyter gateway API on the listener */
    char *admin_token;         /* /admin and /metrics' token, or NULL (one is made: cg_admin) */
    int http_per_address;      /* the listener's connections from one peer address */
    int http_owner_reserve;    /* of its connections, kept for 127.0.0.1 and ::1 */
    int http_request_timeout_s;     /* a connection's request must arrive whole within this */
    char *public_url;               /* base of every link handed out ("https://host:port/prefix", no
                         trailing slash), or NULL: the listener's own address */
    double cleanup_interval_m;      /* minutes between orphan sweeps; 0: at start-up only */
    cg_tool_profile_t tool_profile; /* which tools tools/list shows */
    char *wheelhouse;               /* install_package's pip source directory, or NULL */
    char *npm_mirror;               /* install_package's npm tarball directory, or NULL */
    cg_egress_mode_t egress;        /* --egress */
    char *egress_allow;             /* the hosts proxy mode reaches ("a.b,*.c:8443", @file) */
    char *pip_index_url;            /* pip's index in proxy mode, or NULL: pip's own default */
    char *npm_registry;             /* npm's registry in proxy mode, or NULL: npm's own */
    int egress_max_conns;           /* a session's proxy connections at once */
    int egress_max_mb_up;           /* bytes a session may send through the proxy, in MB */
    int egress_max_mb_down;         /* bytes it may receive */
    int egress_per_minute;          /* new proxy connections a session may open a minute */
    bool http_listen_set;           /* given by flag or variable (no fallback port then) */
    int max_mcp_sessions;           /* Streamable HTTP MCP sessions at once */
    int max_mcp_sessions_per_client; /* of them, one client's (cg_client_same_owner) */
    int max_listens;                 /* 2026-07-28 subscriptions/listen open at once */
    int max_listens_per_client;
    int max_tasks; /* MCP tasks kept at once (running, or finished within their TTL) */
    int max_tasks_per_client;
    size_t max_task_results_bytes; /* what finished tasks' results weigh together */
    size_t max_task_results_bytes_per_client;
    int eof_grace_s;           /* stdio: how long calls in flight may run on once stdin has ended */
    int max_sessions;          /* sandboxes at once, one-shot ones included */
    int idle_ttl_s;            /* a session unused this long is closed */
    int client_grace_s;        /* an HTTP client gone this long loses its sessions */
    int oneshot_reserve;       /* one-shot sandboxes allowed past max_sessions */
    char *pool;                /* warm pool sizes, "python=1,javascript=1,bash=1" or "off" */
    char *pool_preload;        /* modules pooled Python kernels import, or "none" */
    int pool_memory_mb;        /* what the pool's waiting sandboxes may use together */
    int pool_min_available_mb; /* below this MemAvailable the pool empties, stops refilling */
    bool keep_sessions;        /* stdio sessions outlive the server (cg_registry_keep) */
    int log_level;
    cg_log_format_t log_format;
    char *log_file; /* the log's file (appended), or NULL: stderr */
    char *log_dir;  /* the execution log's directory; NULL: <state_dir>/logs */
    cg_execution_log_t execution_log;
    cg_save_displays_t save_displays; /* display outputs saved in outputs/ */
    int log_success_days;             /* successful executions are kept this long */
    int log_failed_days;              /* failed and timed-out ones */
    int log_session_days;             /* session log files, from their last line */
    char **warnings; /* start-up warnings about the seeds' variables (a strv), to log */
    char **notes;    /* which of the seeds' variables gave a value (a strv), to log */
} cg_config_t;

/*  How an option's text becomes its field. */
typedef enum {
    CG_CONFIG_STRING,    /* char *, owned; an empty value is refused */
    CG_CONFIG_INT,       /* int, a whole number from min to max */
    CG_CONFIG_DOUBLE,    /* double, from min to max */
    CG_CONFIG_BYTES,     /* size_t, a whole number of bytes from min to max */
    CG_CONFIG_MB,        /* size_t in bytes, given as whole MB from min to max */
    CG_CONFIG_LOG_LEVEL, /* int, from the names error, warn, info, debug */
    CG_CONFIG_BOOL,      /* bool, on or off: given as on/off, true/false, yes/no or 1/0 in any
                            case; the flag alone (--keep-sessions) means on */
    CG_CONFIG_ENUM,      /* an enum (int-sized), from the names cg_config_values gives, in any
                            case: the Nth name is the enum's value N */
} cg_config_kind_t;

/*  One option: the one place its flag, variable, default and bounds are written. */
typedef struct {
    const char *flag; /* "--memory-mb"; also accepted as --memory-mb=VALUE */
    const char *env;  /* "CELLGATE_MEMORY_MB" */
    cg_config_kind_t kind;
    size_t offset;        /* of its field in cg_config_t */
    const char *fallback; /* the default, as a flag's value would be written; NULL: unset */
    double min, max;      /* bounds of a number (the number given, MB for CG_CONFIG_MB) */
    const char *help;     /* one line for --help, without the default */
} cg_config_option_t;

/*  Returns the table of options (sets *COUNT to its length). The table is static. */
const cg_config_option_t *cg_config_options (size_t *count);

/*  The names an ENUM OPTION takes, in its enum's order (NULL-terminated, static), or NULL
    for another kind. */
const char *const *cg_config_values (const cg_config_option_t *option);

/*  The name of VALUE of the ENUM option whose field is at OFFSET in cg_config_t (offsetof),
    e.g. "rootless" for offsetof (cg_config_t, backend) and CG_BACKEND_ROOTLESS. */
const char *cg_config_value_name (size_t offset, int value);

/*  Whose default an option's default is said for. */
typedef enum {
    CG_CONFIG_FOR_ROOT, /* as root (the table's fallback) */
    CG_CONFIG_FOR_THIS, /* the user running this process: a normal user's where it differs,
                           with its paths written out */
    CG_CONFIG_FOR_DOCS, /* both, for the generated docs: root's, then a normal user's where
                           it differs; nothing that depends on the machine that built it */
} cg_config_for_t;

/*  Returns OPTION's default as FOR says it: the fallback, what leaving it unset means
    ("<state-dir>/scripts"), or for a normal user what cg_config_for_user makes of it.
    Caller owns the result. */
char *cg_config_default_text (const cg_config_option_t *option, cg_config_for_t who);

/*  Returns a normal user's state dir ($XDG_STATE_HOME/cellgate, else
    $HOME/.local/state/cellgate), or NULL when neither variable is an absolute path.
    Caller owns the result. */
char *cg_config_user_state_dir (void);

/*  Fills SELF with the table's defaults, then the seeds' SANDBOX_* and CODEXEC_* variables
    that stand for a setting (cg_aliases), then CELLGATE_* environment variables, then the
    flags in ARGV (ARGC entries, the subcommand already removed): a later source wins.
    SELF->warnings gets a line for each SANDBOX_* or CODEXEC_* variable that sets nothing
    (unknown, or a setting cellgate lacks), SELF->notes one for each that gave a value or
    was overridden; the caller logs them. Returns 0, or -1 with *err set for an unknown
    flag or a bad value. Free with cg_config_clear, also after a failure. */
int cg_config_load (cg_config_t *self, int argc, char **argv, cg_error_t **err);

/*  For a normal user (EUID not 0) whose --backend is auto or rootless: the state dir,
    when left at its default, becomes the user's XDG state dir ($XDG_STATE_HOME/cellgate,
    else $HOME/.local/state/cellgate); sandboxes run as the user's own uid and gid (the
    rootless user namespace maps them onto themselves); workspaces are plain directories
    (--workspace-mb 0: no loop mount without root). Returns a sentence saying what changed
    (caller frees), or NULL when nothing did (root, or another backend). */
char *cg_config_for_user (cg_config_t *self);

/*  Frees the strings SELF owns. */
void cg_config_clear (cg_config_t *self);

/*  Writes the flags, their variables (the seeds' names too, cg_aliases), help and
    defaults (as the running user gets them: CG_CONFIG_FOR_THIS) to OUT. */
void cg_config_print_usage (FILE *out);

/*  cg_config_print_usage to stdout. */
void cg_config_usage (void);

#endif
