/*  Unit tests: cg_config — the defaults (the values cellgate has always had, and each the
    same as its table row's text given as a flag), variables overridden by flags, values out
    of bounds, unknown flags, the values derived after loading, and --help naming every
    flag with its default. */
#define _GNU_SOURCE
#include "base/cg_config.h"
#include "base/cg_util.h"
#include "base/cg_limits.h"
#include "cg_test.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const cg_config_option_t *s_table;
static size_t s_count;

//  Removes every CELLGATE_* variable the table reads, so the caller's environment does not
//  leak into a case.
static void
s_clear_environment (void)
{
    for (size_t i = 0; i < s_count; i++)
        unsetenv (s_table[i].env);
}

//  Loads a config from the NULL-terminated flags in ARGS. Returns 0 or -1; on -1 copies the
//  error message into MESSAGE (SIZE bytes). The caller clears *CONFIG either way.
static int
s_load (cg_config_t *config, const char **args, char *message, size_t size)
{
    int argc = 0;
    while (args && args[argc])
        argc++;
    cg_error_t *err = NULL;
    int rc = cg_config_load (config, argc, CG_UNCONST (args), &err);
    if (message && size)
        snprintf (message, size, "%s", rc < 0 ? cg_error_message (err) : "");
    cg_error_destroy (&err);
    return rc;
}

//  Returns true when OPTION's field holds the same value in A and B.
static bool
s_same_field (const cg_config_option_t *option, const cg_config_t *a, const cg_config_t *b)
{
    const char *field_a = (const char *)a + option->offset;
    const char *field_b = (const char *)b + option->offset;
    switch (option->kind) {
        case CG_CONFIG_BOOL:
            return *(const bool *)field_a == *(const bool *)field_b;
        case CG_CONFIG_ENUM:
            return *(const int *)field_a == *(const int *)field_b;
        case CG_CONFIG_STRING: {
            const char *text_a = *(char *const *)field_a, *text_b = *(char *const *)field_b;
            return text_a == text_b || (text_a && text_b && strcmp (text_a, text_b) == 0);
        }
        case CG_CONFIG_INT:
        case CG_CONFIG_LOG_LEVEL:
            return *(const int *)field_a == *(const int *)field_b;
        case CG_CONFIG_DOUBLE:
            return *(const double *)field_a == *(const double *)field_b;
        case CG_CONFIG_BYTES:
        case CG_CONFIG_MB:
            return *(const size_t *)field_a == *(const size_t *)field_b;
    }
    return false;
}

//  The defaults cellgate had before they moved into the table, written out once more here
//  so that a change to one of them is seen.
static void
s_test_defaults (void)
{
    s_clear_environment ();
    cg_config_t config;
    char message[512];
    int rc = s_load (&config, NULL, message, sizeof message);
    EXPECT (rc == 0, "no flags: %s", message);
    if (rc == 0) {
        EXPECT (strcmp (config.state_dir, "/var/lib/cellgate") == 0, "state_dir %s",
                config.state_dir);
        EXPECT (strcmp (config.runtime, "auto") == 0, "runtime %s", config.runtime);
        EXPECT (config.kernels_dir && *config.kernels_dir, "kernels_dir");
        EXPECT (config.memory_mb == 512 && config.cpus == 1.0 && config.pids == 256,
                "memory, cpus, pids");
        EXPECT (config.tmp_mb == 64 && config.nofile == 1024 && config.fsize_mb == 1024,
                "tmp, nofile, fsize");
        EXPECT (config.workspace_mb == 1024 && config.workspace_inodes == 100000, "workspace");
        EXPECT (config.sandbox_uid == 65532 && config.sandbox_gid == 65532, "uid, gid");
        EXPECT (config.default_timeout_s == 30 && config.interrupt_grace_ms == 3000
                    && config.kernel_start_timeout_s == 60,
                "timeouts");
        EXPECT (config.max_message_bytes == 8 * 1024 * 1024
                    && config.max_display_bytes == 16 * 1024 * 1024,
                "message, display");
        EXPECT (config.max_output_bytes == 100 * 1024 && config.output_head_bytes == 40 * 1024
                    && config.output_tail_bytes == 40 * 1024
                    && config.max_output_kept_bytes == 8 * 1024 * 1024,
                "output");
        EXPECT (config.max_code_bytes == 100 * 1024 && config.max_upload_bytes == 50 * 1024 * 1024
                    && config.max_artifact_read_bytes == 10 * 1024 * 1024
                    && config.max_result_bytes == 1024 * 1024,
                "code, upload, artifact read, result");
        EXPECT (strcmp (config.http_listen, "127.0.0.1:8080") == 0 && !config.http_listen_set,
                "http_listen");
        EXPECT (!config.http && !config.http_token, "http, http_token unset");
        EXPECT (config.tool_profile == CG_TOOL_PROFILE_DEFAULT, "tool_profile %d",
                (int)config.tool_profile);
        EXPECT (config.max_sessions == 10 && config.idle_ttl_s == 1800 && config.log_level == 2,
                "sessions, ttl, log level");
    }
    //  Each row's default, given as its flag, loads to the same value as no flag at all.
    for (size_t i = 0; i < s_count && rc == 0; i++) {
        const cg_config_option_t *option = &s_table[i];
        if (!option->fallback) {
            EXPECT (*(char **)((char *)&config + option->offset) == NULL, "%s is set",
                    option->flag);
            continue;
        }
        cg_config_t given;
        const char *args[] = {option->flag, option->fallback, NULL};
        int given_rc = s_load (&given, args, message, sizeof message);
        EXPECT (given_rc == 0, "%s %s: %s", option->flag, option->fallback, message);
        EXPECT (given_rc < 0 || s_same_field (option, &config, &given),
                "%s: default differs from %s", option->flag, option->fallback);
        cg_config_clear (&given);
    }
    cg_config_clear (&config);
}

static void
s_test_environment_then_flags (void)
{
    const char *name = "environment then flags";
    s_clear_environment ();
    setenv ("CELLGATE_MEMORY_MB", "1024", 1);
    setenv ("CELLGATE_LOG_LEVEL", "debug", 1);
    setenv ("CELLGATE_HTTP_LISTEN", "127.0.0.1:9", 1);
    cg_config_t config;
    char message[512];
    int rc = s_load (&config, NULL, message, sizeof message);
    CHECK (rc == 0, "variables only: %s", message);
    EXPECT (config.memory_mb == 1024 && config.log_level == 3, "variables read: %d %d",
            config.memory_mb, config.log_level);
    EXPECT (config.http_listen_set && strcmp (config.http_listen, "127.0.0.1:9") == 0,
            "http_listen from variable");
    cg_config_clear (&config);

    const char *args[] = {"--memory-mb", "2048", "--log-level=warn", "--max-message-mb=2", NULL};
    rc = s_load (&config, args, message, sizeof message);
    CHECK (rc == 0, "flags: %s", message);
    EXPECT (config.memory_mb == 2048, "a flag wins over its variable: %d", config.memory_mb);
    EXPECT (config.log_level == 1, "--log-level=warn: %d", config.log_level);
    EXPECT (config.max_message_bytes == 2 * 1024 * 1024, "MB become bytes: %zu",
            config.max_message_bytes);
    cg_config_clear (&config);
    s_clear_environment ();

    const char *listen[] = {"--http-listen", "127.0.0.1:8080", NULL};
    rc = s_load (&config, listen, message, sizeof message);
    EXPECT (rc == 0 && config.http_listen_set, "--http-listen given, even as its default, is set");
    cg_config_clear (&config);
    const char *bare_port[] = {"--http", "8123", NULL};
    rc = s_load (&config, bare_port, message, sizeof message);
    EXPECT (rc == 0 && config.http && strcmp (config.http, "127.0.0.1:8123") == 0,
            "a bare --http port is loopback");
    cg_config_clear (&config);

    //  --egress-allow given twice adds to the list (a host silently dropped would be a
    //  surprise); its variable is replaced by the flags, as every variable is.
    setenv ("CELLGATE_EGRESS_ALLOW", "env.example.com", 1);
    const char *allow[] = {"--egress-allow", "a.example.com,b.example.com",
                           "--egress-allow=@/etc/cellgate/allow", NULL};
    rc = s_load (&config, allow, message, sizeof message);
    EXPECT (rc == 0 && config.egress_allow
                && strcmp (config.egress_allow, "a.example.com,b.example.com,@/etc/cellgate/allow")
                       == 0,
            "--egress-allow twice: '%s'", config.egress_allow ? config.egress_allow : "(null)");
    cg_config_clear (&config);
    //  --kernelspecs likewise, joined as a path list.
    const char *specs[] = {"--kernelspecs", "/opt/a:/opt/b", "--kernelspecs=/opt/c", NULL};
    rc = s_load (&config, specs, message, sizeof message);
    EXPECT (rc == 0 && config.kernelspecs
                && strcmp (config.kernelspecs, "/opt/a:/opt/b:/opt/c") == 0
                && strcmp (config.languages, "all") == 0,
            "--kernelspecs twice: '%s'", config.kernelspecs ? config.kernelspecs : "(null)");
    cg_config_clear (&config);
    s_clear_environment ();
}

//  Loads ARGS (or, with ENV, the variable set to VALUE) and expects an error containing WANT.
static void
s_expect_error (const char *env, const char **args, const char *want)
{
    s_clear_environment ();
    if (env)
        setenv (env, args[1], 1);
    cg_config_t config;
    char message[512];
    int rc = s_load (&config, env ? NULL : args, message, sizeof message);
    EXPECT (rc < 0 && strstr (message, want),
            "%s %s: wanted an error with \"%s\", got rc %d \"%s\"", env ? env : args[0],
            args[1] ? args[1] : "", want, rc, message);
    cg_config_clear (&config);
    s_clear_environment ();
}

//  An ENUM option refuses a word it does not take, naming the ones it does as the checks
//  after loading did ("--log-format: 'xml' is not console or json"), from its flag or its
//  variable.
static void
s_expect_enum_errors (const cg_config_option_t *option)
{
    const char *const *names = cg_config_values (option);
    EXPECT (names && names[0] && names[1], "%s: no names", option->flag);
    char want[256];
    int at = snprintf (want, sizeof want, "%s: 'bogus' is not ", option->flag);
    for (size_t i = 0; names && names[i]; i++)
        at += snprintf (want + at, sizeof want - (size_t)at, "%s%s",
                        i == 0         ? ""
                        : names[i + 1] ? ", "
                                       : " or ",
                        names[i]);
    const char *args[] = {option->flag, "bogus", NULL};
    s_expect_error (NULL, args, want);
    s_expect_error (option->env, args, want);
}

//  The enumerations parsed once: each name to its enum value, in any case, from a flag or
//  a variable, the last source winning; the messages the checks after loading gave.
static void
s_test_enums (void)
{
    static const struct {
        const char *flag, *value;
        size_t offset;
        int want;
    } cases[] = {
        {"--backend", "rootless", offsetof (cg_config_t, backend), CG_BACKEND_ROOTLESS},
        {"--backend", "DOCKER", offsetof (cg_config_t, backend), CG_BACKEND_DOCKER},
        {"--backend", "auto", offsetof (cg_config_t, backend), CG_BACKEND_AUTO},
        {"--tool-profile", "seed001", offsetof (cg_config_t, tool_profile),
         CG_TOOL_PROFILE_SEED001},
        {"--tool-profile", "conformance", offsetof (cg_config_t, tool_profile),
         CG_TOOL_PROFILE_CONFORMANCE},
        {"--log-format", "JSON", offsetof (cg_config_t, log_format), CG_LOG_FORMAT_JSON},
        {"--execution-log", "metadata", offsetof (cg_config_t, execution_log),
         CG_EXECUTION_LOG_METADATA},
        {"--execution-log", "off", offsetof (cg_config_t, execution_log), CG_EXECUTION_LOG_OFF},
        {"--save-displays", "all", offsetof (cg_config_t, save_displays), CG_SAVE_DISPLAYS_ALL},
        {"--save-displays", "none", offsetof (cg_config_t, save_displays), CG_SAVE_DISPLAYS_NONE},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        s_clear_environment ();
        cg_config_t config;
        char message[512];
        const char *args[] = {cases[i].flag, cases[i].value, NULL};
        int rc = s_load (&config, args, message, sizeof message);
        int got = rc == 0 ? *(int *)((char *)&config + cases[i].offset) : -1;
        EXPECT (rc == 0 && got == cases[i].want, "%s %s: wanted %d, got %d (%s)", cases[i].flag,
                cases[i].value, cases[i].want, got, message);
        EXPECT (
            rc < 0 || strcasecmp (cg_config_value_name (cases[i].offset, got), cases[i].value) == 0,
            "%s: the name of %d", cases[i].flag, got);
        cg_config_clear (&config);
    }
    //  The variable, then the flag over it.
    s_clear_environment ();
    setenv ("CELLGATE_SAVE_DISPLAYS", "none", 1);
    cg_config_t config;
    EXPECT (s_load (&config, NULL, NULL, 0) == 0 && config.save_displays == CG_SAVE_DISPLAYS_NONE,
            "CELLGATE_SAVE_DISPLAYS=none");
    cg_config_clear (&config);
    const char *args[] = {"--save-displays", "all", NULL};
    EXPECT (s_load (&config, args, NULL, 0) == 0 && config.save_displays == CG_SAVE_DISPLAYS_ALL,
            "--save-displays all over CELLGATE_SAVE_DISPLAYS=none");
    cg_config_clear (&config);
    s_clear_environment ();
    //  The messages, word for word.
    const char *profile[] = {"--tool-profile", "full", NULL};
    s_expect_error (NULL, profile, "--tool-profile: 'full' is not default, seed001 or conformance");
    const char *backend[] = {"--backend", "podman", NULL};
    s_expect_error (NULL, backend, "--backend: 'podman' is not oci, rootless, docker or auto");
    const char *format[] = {"--log-format", "xml", NULL};
    s_expect_error (NULL, format, "--log-format: 'xml' is not console or json");
    const char *log[] = {"--execution-log", "some", NULL};
    s_expect_error (NULL, log, "--execution-log: 'some' is not full, metadata or off");
    const char *displays[] = {"--save-displays", "few", NULL};
    s_expect_error (NULL, displays, "--save-displays: 'few' is not figures, all or none");
    EXPECT (cg_config_values (&s_table[0]) == NULL, "a string option has no names");
}

static void
s_test_errors (void)
{
    char value[64], want[256];
    for (size_t i = 0; i < s_count; i++) {
        const cg_config_option_t *option = &s_table[i];
        if (option->kind == CG_CONFIG_STRING) {
            const char *args[] = {option->flag, "", NULL};
            s_expect_error (NULL, args, "empty value");
            continue;
        }
        if (option->kind == CG_CONFIG_ENUM) {
            s_expect_enum_errors (option);
            continue;
        }
        if (option->kind == CG_CONFIG_BOOL) {
            const char *args[] = {option->flag, "maybe", NULL};
            s_expect_error (NULL, args, "unknown option 'maybe'");
            const char *given[] = {"", NULL, NULL};
            char flag[64];
            snprintf (flag, sizeof flag, "%s=maybe", option->flag);
            given[0] = flag;
            s_expect_error (NULL, given, "'maybe' is not on or off");
            s_expect_error (option->env, args, "'maybe' is not on or off");
            continue;
        }
        if (option->kind == CG_CONFIG_LOG_LEVEL) {
            const char *args[] = {option->flag, "loud", NULL};
            s_expect_error (NULL, args, "'loud' is not error, warn, info or debug");
            continue;
        }
        const char *kind = option->kind == CG_CONFIG_DOUBLE ? "number" : "whole number";
        double outside[] = {option->max + 1, option->min - 1};
        for (int k = 0; k < 2; k++) {
            snprintf (value, sizeof value, "%.17g", outside[k]);
            const char *args[] = {option->flag, value, NULL};
            char min[32], max[32];
            cg_number_text (option->min, min);
            cg_number_text (option->max, max);
            snprintf (want, sizeof want, "%s: '%s' is not a %s from %s to %s", option->flag, value,
                      kind, min, max);
            s_expect_error (NULL, args, want);
            snprintf (want, sizeof want, "%s: '%s' is not a %s from %s to %s", option->env, value,
                      kind, min, max);
            s_expect_error (option->env, args, want);
        }
        if (option->kind != CG_CONFIG_DOUBLE) {
            const char *args[] = {option->flag, "1.5", NULL};
            s_expect_error (NULL, args, "is not a whole number");
        }
    }
    //  Bounds read as numbers people write, not %g's exponents.
    const char *big[] = {"--memory-mb", "2000000", NULL};
    s_expect_error (NULL, big, "--memory-mb: '2000000' is not a whole number from 32 to 1048576");
    const char *cpus[] = {"--cpus", "0", NULL};
    s_expect_error (NULL, cpus, "--cpus: '0' is not a number from 0.01 to 1024");
    const char *unknown[] = {"--no-such-option", "1", NULL};
    s_expect_error (NULL, unknown, "unknown option '--no-such-option' (see --help)");
    const char *unknown_equals[] = {"--memory=512", NULL, NULL};
    s_expect_error (NULL, unknown_equals, "unknown option '--memory=512' (see --help)");
    const char *no_value[] = {"--pids", NULL, NULL};
    s_expect_error (NULL, no_value, "--pids needs a value");
    const char *timeout[] = {"--default-timeout", CG_STR (CG_TIMEOUT_MAX_S), NULL};
    s_clear_environment ();
    cg_config_t config;
    EXPECT (s_load (&config, timeout, NULL, 0) == 0 && config.default_timeout_s == CG_TIMEOUT_MAX_S,
            "--default-timeout takes the tools' largest timeout");
    cg_config_clear (&config);
    //  Any runtime name is looked up on PATH when the backend starts, not refused here.
    const char *runtime[] = {"--runtime", "runc-patched", NULL};
    s_clear_environment ();
    EXPECT (s_load (&config, runtime, NULL, 0) == 0 && strcmp (config.runtime, "runc-patched") == 0,
            "--runtime takes a name");
    cg_config_clear (&config);
    const char *beyond[] = {"--http", "0.0.0.0:1", NULL};
    s_expect_error (NULL, beyond, "listens beyond loopback: set --http-token");
    const char *small[] = {"--workspace-mb", "4", NULL};
    s_expect_error (NULL, small,
                    "--workspace-mb: 4 is too small for a file system: use at least 8, or 0");
    const char *relative[] = {"--state-dir", "state", NULL};
    s_expect_error (NULL, relative, "--state-dir: 'state' is not an absolute path");
    //  A client's share is at most the whole.
    const char *share[] = {"--max-tasks-per-client", "2000", NULL};
    s_expect_error (NULL, share, "--max-tasks-per-client must not pass --max-tasks");
    const char *listens[] = {"--max-listens", "8", NULL};
    s_expect_error (NULL, listens, "--max-listens-per-client must not pass --max-listens");
}

static void
s_test_usage (void)
{
    const char *name = "usage";
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream (&text, &len);
    CHECK (out, "open_memstream");
    cg_config_print_usage (out);
    fclose (out);
    char want[1024];
    for (size_t i = 0; i < s_count; i++) {
        const cg_config_option_t *option = &s_table[i];
        //  One line: the flag, its variable, the help, then the default.
        snprintf (want, sizeof want, "\n  %s ", option->flag);
        char *line = strstr (text, want);
        EXPECT (line, "%s does not start a line of the usage", option->flag);
        if (!line)
            continue;
        line++;
        size_t line_len = strcspn (line, "\n");
        cleanup_free char *fallback = cg_config_default_text (option, CG_CONFIG_FOR_THIS);
        snprintf (want, sizeof want, "%s (default %s)", option->help, fallback);
        //  The default is said once, by the table (or what unset means, by its side table):
        //  never also in the help text, and never the bare "unset" of an option that
        //  means something when left unset.
        const char *said[] = {
            "(default", "; default", "default:", "default <", "default $", "unset"};
        bool says = false;
        for (size_t k = 0; k < sizeof said / sizeof said[0]; k++)
            says = says || strstr (option->help, said[k]);
        EXPECT (!says, "%s: its help text says a default of its own: %s", option->flag,
                option->help);
        cleanup_free char *docs = cg_config_default_text (option, CG_CONFIG_FOR_DOCS);
        EXPECT (option->fallback || strcmp (docs, "unset") != 0,
                "%s: no fallback, and nothing says what leaving it unset means", option->flag);
        char *env = strstr (line, option->env);
        char *tail = strstr (line, want);
        EXPECT (env && env < line + line_len, "%s: its variable %s is not on its line",
                option->flag, option->env);
        EXPECT (tail && tail + strlen (want) == line + line_len,
                "%s: the line does not end with \"%s\"", option->flag, want);
    }
    EXPECT (strstr (text, "--memory-mb") && strstr (text, "(default 512)"), "memory's default");
    free (text);
}

//  --public-url: kept without its trailing slash (the scheme lowercased); bad ones refused
//  with their reason.
static void
s_test_public_url (void)
{
    s_clear_environment ();
    const char *good[][2] = {
        {"http://sandbox.example:8080/prefix/", "http://sandbox.example:8080/prefix"},
        {"HTTPS://[::1]:8443//", "https://[::1]:8443"},
        {"http://10.0.0.5/a%2Fb/c", "http://10.0.0.5/a%2Fb/c"}};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        cg_config_t config;
        const char *args[] = {"--public-url", good[i][0], NULL};
        char message[512];
        EXPECT (s_load (&config, args, message, sizeof message) == 0, "%s: %s", good[i][0],
                message);
        EXPECT (config.public_url && strcmp (config.public_url, good[i][1]) == 0, "%s became %s",
                good[i][0], config.public_url ? config.public_url : "(null)");
        cg_config_clear (&config);
    }
    const char *bad[][2] = {{"ftp://x", "http:// or https://"},
                            {"http://", "no host"},
                            {"http://h/p?q=1", "no query"},
                            {"http://h#f", "no query"},
                            {"http://u:p@h", "no user or password"},
                            {"http://h:0", "port"},
                            {"http://h:65536", "port"},
                            {"http://h p", "not a name"},
                            {"http://h/a b", "escape it"},
                            {"http://[::1", "brackets"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cg_config_t config;
        const char *args[] = {"--public-url", bad[i][0], NULL};
        char message[512];
        EXPECT (s_load (&config, args, message, sizeof message) < 0, "%s accepted", bad[i][0]);
        EXPECT (strstr (message, "--public-url") && strstr (message, bad[i][1]), "%s: '%s'",
                bad[i][0], message);
        cg_config_clear (&config);
    }
}

//  Loads ARGS and returns a copy of the switch --keep-sessions's value ("on" or "off"),
//  or the error message. Caller frees.
static char *
s_keep (const char **args)
{
    s_clear_environment ();
    cg_config_t config;
    char message[512];
    int rc = s_load (&config, args, message, sizeof message);
    char *out = cg_xstrdup (rc == 0 ? config.keep_sessions ? "on" : "off" : message);
    cg_config_clear (&config);
    return out;
}

//  On/off options: the flag alone means on (as users type it), a following on/off word is
//  its value, and every spelling of on and off is taken, from a flag or a variable.
static void
s_test_switches (void)
{
    struct {
        const char *args[4];
        const char *want;
    } cases[] = {
        {{"--keep-sessions", NULL}, "on"},
        {{"--keep-sessions", "--memory-mb", "256", NULL}, "on"},
        {{"--memory-mb", "256", "--keep-sessions", NULL}, "on"},
        {{"--keep-sessions", "off", NULL}, "off"},
        {{"--keep-sessions", "on", NULL}, "on"},
        {{"--keep-sessions=OFF", NULL}, "off"},
        {{"--keep-sessions=true", NULL}, "on"},
        {{"--keep-sessions", "No", NULL}, "off"},
        {{"--keep-sessions", "1", NULL}, "on"},
        {{"--keep-sessions=0", NULL}, "off"},
        {{"--keep-sessions", "yes", NULL}, "on"},
        {{"--keep-sessions=", NULL}, "--keep-sessions: '' is not on or off"},
        {{NULL}, "off"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cleanup_free char *got = s_keep (cases[i].args);
        EXPECT (strncmp (got, cases[i].want, strlen (cases[i].want)) == 0,
                "%s %s: wanted %s, got %s", cases[i].args[0] ? cases[i].args[0] : "(none)",
                cases[i].args[0] && cases[i].args[1] ? cases[i].args[1] : "", cases[i].want, got);
    }
    //  Every on/off option, bare and from its variable.
    for (size_t i = 0; i < s_count; i++) {
        const cg_config_option_t *option = &s_table[i];
        if (option->kind != CG_CONFIG_BOOL)
            continue;
        const char *bare[] = {option->flag, NULL};
        const char *spellings[][2] = {{"FALSE", "off"}, {"yes", "on"}, {"0", "off"}, {"On", "on"}};
        for (int k = -1; k < 4; k++) {
            s_clear_environment ();
            if (k >= 0)
                setenv (option->env, spellings[k][0], 1);
            cg_config_t config;
            char message[512];
            int rc = s_load (&config, k < 0 ? bare : NULL, message, sizeof message);
            bool on = rc == 0 && *(bool *)((char *)&config + option->offset);
            const char *value = rc == 0 ? on ? "on" : "off" : message;
            const char *want = k < 0 ? "on" : spellings[k][1];
            EXPECT (rc == 0 && strcmp (value, want) == 0, "%s %s: wanted %s, got %s", option->flag,
                    k < 0 ? "(alone)" : spellings[k][0], want, value);
            cg_config_clear (&config);
        }
    }
    s_clear_environment ();
    //  Only switches go without a value.
    const char *no_value[] = {"--memory-mb", NULL};
    s_expect_error (NULL, no_value, "--memory-mb needs a value");
}

int
main (void)
{
    s_table = cg_config_options (&s_count);
    s_test_defaults ();
    s_test_environment_then_flags ();
    s_test_errors ();
    s_test_usage ();
    s_test_public_url ();
    s_test_switches ();
    s_test_enums ();
    printf ("%d passed, %d failed\n", s_passes, s_failures);
    return s_failures ? 1 : 0;
}
