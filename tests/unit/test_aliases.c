/*  Unit tests: cg_aliases and their place in cg_config_load — every name of seed 004's
    settings table and seed 002's CODEXEC_* list has a row, each target is an option (or
    one another branch adds), values are converted, CELLGATE_* and flags win over an
    alias, seed 004's name over seed 002's, and unknown or unsupported names are warned
    about. */
#define _GNU_SOURCE
#include "base/cg_aliases.h"
#include "base/cg_config.h"
#include "base/cg_util.h"
#include "cg_test.h"

#include <stdlib.h>
#include <string.h>

//  Seed 004's section 5 table and seed 002's Configuration, as the seeds write them.
static const char *s_seed_names[] = {"SANDBOX_MEMORY_LIMIT",
                                     "SANDBOX_CPU_LIMIT",
                                     "SANDBOX_EXEC_TIMEOUT_S",
                                     "SANDBOX_SESSION_TTL_M",
                                     "SANDBOX_MAX_UPLOAD_BYTES",
                                     "SANDBOX_MAX_ARTIFACT_READ_BYTES",
                                     "SANDBOX_MAX_OUTPUT_BYTES",
                                     "SANDBOX_MAX_CODE_BYTES",
                                     "SANDBOX_HTTP_PORT",
                                     "SANDBOX_IMAGE",
                                     "SANDBOX_MAX_SESSIONS",
                                     "SANDBOX_CLEANUP_INTERVAL_M",
                                     "SANDBOX_LOG_LEVEL",
                                     "SANDBOX_LOG_FILE",
                                     "SANDBOX_LOG_FORMAT",
                                     "CODEXEC_SANDBOX_MODE",
                                     "CODEXEC_DOCKER_IMAGE",
                                     "CODEXEC_SANDBOX_DIR",
                                     "CODEXEC_DEFAULT_TIMEOUT_MS",
                                     "CODEXEC_MAX_TIMEOUT_MS",
                                     "CODEXEC_SESSION_IDLE_TIMEOUT_MS",
                                     "CODEXEC_DOCKER_MEMORY",
                                     "CODEXEC_DOCKER_CPU",
                                     "CODEXEC_DOCKER_NETWORK",
                                     "CODEXEC_MAX_OUTPUT_CHARS",
                                     "CODEXEC_TRUNCATION_HEAD",
                                     "CODEXEC_TRUNCATION_TAIL",
                                     "CODEXEC_LOG_DIR",
                                     "CODEXEC_LOG_RETENTION_DAYS_SUCCESS",
                                     "CODEXEC_LOG_RETENTION_DAYS_FAILURE",
                                     "CODEXEC_LOG_RETENTION_DAYS_SESSION",
                                     "CODEXEC_SCRIPTS_DIR",
                                     NULL};

//  Targets that other branches add to the option table.

static void
s_clear_environment (void)
{
    size_t count;
    const cg_config_option_t *options = cg_config_options (&count);
    for (size_t i = 0; i < count; i++)
        unsetenv (options[i].env);
    const cg_alias_t *aliases = cg_aliases (&count);
    for (size_t i = 0; i < count; i++)
        unsetenv (aliases[i].name);
    unsetenv ("SANDBOX_COLOUR");
}

static bool
s_in (char **lines, const char *a, const char *b)
{
    for (char **line = lines; line && *line; line++)
        if (strstr (*line, a) && (!b || strstr (*line, b)))
            return true;
    return false;
}

static void
s_test_table (void)
{
    size_t count, option_count;
    const cg_alias_t *aliases = cg_aliases (&count);
    const cg_config_option_t *options = cg_config_options (&option_count);
    for (int i = 0; s_seed_names[i]; i++)
        EXPECT (cg_alias_find (s_seed_names[i]), "%s has a row", s_seed_names[i]);
    for (size_t i = 0; i < count; i++) {
        const cg_alias_t *alias = &aliases[i];
        EXPECT (cg_alias_prefixed (alias->name), "%s has a seed's prefix", alias->name);
        EXPECT (alias->target || (alias->note && *alias->note), "%s: a target or a note",
                alias->name);
        bool found = !alias->target;
        for (size_t k = 0; k < option_count && !found; k++)
            found = strcmp (options[k].env, alias->target) == 0;
        EXPECT (found, "%s: its target %s is an option", alias->name, alias->target);
    }
    EXPECT (!cg_alias_prefixed ("CELLGATE_MEMORY_MB") && !cg_alias_find ("SANDBOX_COLOUR"),
            "prefixes");
}

static void
s_convert (const char *alias_name, const char *value, const char *want)
{
    cg_error_t *err = NULL;
    char *got = cg_alias_convert (cg_alias_find (alias_name), value, &err);
    if (want)
        EXPECT (got && strcmp (got, want) == 0, "%s=%s: want %s, got %s", alias_name, value, want,
                got ? got : cg_error_message (err));
    else
        EXPECT (!got && err && strstr (cg_error_message (err), alias_name),
                "%s=%s refused, naming it", alias_name, value);
    free (got);
    cg_error_destroy (&err);
}

static void
s_test_convert (void)
{
    s_convert ("SANDBOX_MEMORY_LIMIT", "512MB", "512");
    s_convert ("SANDBOX_MEMORY_LIMIT", "1g", "1024");
    s_convert ("CODEXEC_DOCKER_MEMORY", "512m", "512");
    s_convert ("CODEXEC_DOCKER_MEMORY", "1GiB", "1024");
    s_convert ("SANDBOX_MEMORY_LIMIT", "536870912", "512");
    s_convert ("SANDBOX_MEMORY_LIMIT", "lots", NULL);
    s_convert ("SANDBOX_MEMORY_LIMIT", "512q", NULL);
    s_convert ("SANDBOX_SESSION_TTL_M", "30", "1800");
    s_convert ("SANDBOX_SESSION_TTL_M", "soon", NULL);
    s_convert ("CODEXEC_DEFAULT_TIMEOUT_MS", "30000", "30");
    s_convert ("CODEXEC_DEFAULT_TIMEOUT_MS", "1500", "2");
    s_convert ("CODEXEC_SESSION_IDLE_TIMEOUT_MS", "900000", "900");
    s_convert ("SANDBOX_HTTP_PORT", "9000", "127.0.0.1:9000");
    s_convert ("SANDBOX_HTTP_PORT", "0", NULL);
    s_convert ("SANDBOX_HTTP_PORT", "70000", NULL);
    s_convert ("SANDBOX_HTTP_PORT", "0.0.0.0:80", NULL);
    s_convert ("SANDBOX_CPU_LIMIT", "1.5", "1.5");
    setenv ("HOME", "/home/ann", 1);
    s_convert ("CODEXEC_SCRIPTS_DIR", "~/.annabelle/scripts", "/home/ann/.annabelle/scripts");
    s_convert ("CODEXEC_LOG_DIR", "/var/log/x", "/var/log/x");
}

static int
s_load (cg_config_t *config, const char **args, char *message, size_t size)
{
    int argc = 0;
    while (args && args[argc])
        argc++;
    cg_error_t *err = NULL;
    int rc = cg_config_load (config, argc, CG_UNCONST (args), &err);
    snprintf (message, size, "%s", rc < 0 ? cg_error_message (err) : "");
    cg_error_destroy (&err);
    return rc;
}

static void
s_test_precedence (void)
{
    const char *name = "precedence";
    char message[512];
    cg_config_t config;
    s_clear_environment ();
    setenv ("SANDBOX_MEMORY_LIMIT", "1g", 1);
    setenv ("CODEXEC_DOCKER_MEMORY", "2g", 1);
    setenv ("SANDBOX_EXEC_TIMEOUT_S", "90", 1);
    setenv ("CODEXEC_DEFAULT_TIMEOUT_MS", "45000", 1);
    setenv ("SANDBOX_SESSION_TTL_M", "5", 1);
    setenv ("SANDBOX_HTTP_PORT", "9123", 1);
    setenv ("SANDBOX_LOG_LEVEL", "DEBUG", 1);
    setenv ("SANDBOX_LOG_FORMAT", "JSON", 1);
    setenv ("SANDBOX_IMAGE", "llm-sandbox:latest", 1);
    setenv ("SANDBOX_CLEANUP_INTERVAL_M", "7", 1);
    setenv ("SANDBOX_COLOUR", "blue", 1);
    int rc = s_load (&config, NULL, message, sizeof message);
    CHECK (rc == 0, "load: %s", message);
    EXPECT (config.memory_mb == 1024, "seed 004's SANDBOX_MEMORY_LIMIT wins over seed 002's: %d",
            config.memory_mb);
    EXPECT (s_in (config.notes, "SANDBOX_MEMORY_LIMIT", "--memory-mb 1024"),
            "the alias that gave the value is named");
    EXPECT (s_in (config.notes, "CODEXEC_DOCKER_MEMORY", "already gave"),
            "the one that lost is named");
    EXPECT (config.run_python_timeout_s == 90 && config.default_timeout_s == 45,
            "SANDBOX_EXEC_TIMEOUT_S is run_python's, CODEXEC_DEFAULT_TIMEOUT_MS the others': "
            "%d, %d",
            config.run_python_timeout_s, config.default_timeout_s);
    EXPECT (config.idle_ttl_s == 300, "minutes: %d", config.idle_ttl_s);
    EXPECT (strcmp (config.http_listen, "127.0.0.1:9123") == 0 && config.http_listen_set,
            "SANDBOX_HTTP_PORT: %s", config.http_listen);
    EXPECT (config.log_level == 3 && config.log_format == CG_LOG_FORMAT_JSON,
            "log level and format in any case");
    EXPECT (config.image && strcmp (config.image, "llm-sandbox:latest") == 0
                && s_in (config.notes, "SANDBOX_IMAGE", "--image"),
            "SANDBOX_IMAGE gives the docker backend's --image: %s", config.image);
    EXPECT (s_in (config.warnings, "SANDBOX_COLOUR", "not a setting cellgate knows"),
            "an unknown name is warned about");
    EXPECT (config.cleanup_interval_m == 7
                && s_in (config.notes, "SANDBOX_CLEANUP_INTERVAL_M", "--cleanup-interval"),
            "SANDBOX_CLEANUP_INTERVAL_M gives --cleanup-interval: %g", config.cleanup_interval_m);
    EXPECT (!s_in (config.warnings, "SANDBOX_MEMORY_LIMIT", NULL), "known names not warned");
    cg_config_clear (&config);

    //  CELLGATE_* wins over the alias; a flag over both.
    setenv ("CELLGATE_MEMORY_MB", "256", 1);
    rc = s_load (&config, NULL, message, sizeof message);
    CHECK (rc == 0, "load: %s", message);
    EXPECT (config.memory_mb == 256, "CELLGATE_MEMORY_MB wins: %d", config.memory_mb);
    EXPECT (s_in (config.notes, "SANDBOX_MEMORY_LIMIT", "CELLGATE_MEMORY_MB is set"),
            "the alias overridden is named");
    cg_config_clear (&config);
    const char *flags[] = {"--memory-mb", "300", NULL};
    rc = s_load (&config, flags, message, sizeof message);
    EXPECT (rc == 0 && config.memory_mb == 300, "the flag wins: %d", config.memory_mb);
    cg_config_clear (&config);

    //  A bad alias value fails the start, naming the variable.
    s_clear_environment ();
    setenv ("SANDBOX_MAX_SESSIONS", "0", 1);
    rc = s_load (&config, NULL, message, sizeof message);
    EXPECT (rc < 0 && strstr (message, "SANDBOX_MAX_SESSIONS"), "out of bounds: %s", message);
    cg_config_clear (&config);
    s_clear_environment ();
    setenv ("SANDBOX_LOG_FORMAT", "xml", 1);
    rc = s_load (&config, NULL, message, sizeof message);
    EXPECT (rc < 0 && strstr (message, "console or json"), "log format: %s", message);
    cg_config_clear (&config);
    s_clear_environment ();
}

int
main (void)
{
    s_test_table ();
    s_test_convert ();
    s_test_precedence ();
    printf ("test_aliases: %d passed, %d failed\n", s_passes, s_failures);
    return s_failures ? 1 : 0;
}
