/*  cg_aliases — seed 004's SANDBOX_* and seed 002's CODEXEC_* names for cellgate's settings. */
#include "base/cg_aliases.h"
#include "base/cg_limits.h"
#include "base/cg_util.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

//  Seed 004's section 5 table, then seed 002's Configuration. Every target is a row of
//  cg_config's option table (unit_aliases checks it).
static const cg_alias_t s_aliases[] = {
    {"SANDBOX_MEMORY_LIMIT", "CELLGATE_MEMORY_MB", CG_ALIAS_MEMORY, NULL},
    {"SANDBOX_CPU_LIMIT", "CELLGATE_CPUS", CG_ALIAS_SAME, NULL},
    {"SANDBOX_EXEC_TIMEOUT_S", "CELLGATE_RUN_PYTHON_TIMEOUT", CG_ALIAS_SAME, NULL},
    {"SANDBOX_SESSION_TTL_M", "CELLGATE_IDLE_TTL", CG_ALIAS_MINUTES, NULL},
    {"SANDBOX_MAX_UPLOAD_BYTES", "CELLGATE_MAX_UPLOAD_BYTES", CG_ALIAS_SAME, NULL},
    {"SANDBOX_MAX_ARTIFACT_READ_BYTES", "CELLGATE_MAX_ARTIFACT_READ_BYTES", CG_ALIAS_SAME, NULL},
    {"SANDBOX_MAX_OUTPUT_BYTES", "CELLGATE_MAX_OUTPUT_BYTES", CG_ALIAS_SAME, NULL},
    {"SANDBOX_MAX_CODE_BYTES", "CELLGATE_MAX_CODE_BYTES", CG_ALIAS_SAME, NULL},
    {"SANDBOX_HTTP_PORT", "CELLGATE_HTTP_LISTEN", CG_ALIAS_PORT, NULL},
    {"SANDBOX_IMAGE", "CELLGATE_IMAGE", CG_ALIAS_SAME, NULL},
    {"SANDBOX_MAX_SESSIONS", "CELLGATE_MAX_SESSIONS", CG_ALIAS_SAME, NULL},
    {"SANDBOX_CLEANUP_INTERVAL_M", "CELLGATE_CLEANUP_INTERVAL_M", CG_ALIAS_SAME, NULL},
    {"SANDBOX_LOG_LEVEL", "CELLGATE_LOG_LEVEL", CG_ALIAS_SAME, NULL},
    {"SANDBOX_LOG_FILE", "CELLGATE_LOG_FILE", CG_ALIAS_PATH, NULL},
    {"SANDBOX_LOG_FORMAT", "CELLGATE_LOG_FORMAT", CG_ALIAS_SAME, NULL},
    {"CODEXEC_SANDBOX_MODE", NULL, CG_ALIAS_SAME,
     "code always runs in a sandbox (CodeExec's docker mode); there is no subprocess mode"},
    {"CODEXEC_DOCKER_IMAGE", "CELLGATE_IMAGE", CG_ALIAS_SAME, NULL},
    {"CODEXEC_SANDBOX_DIR", NULL, CG_ALIAS_SAME,
     "code runs in its session's workspace, " CG_WORKSPACE_MOUNT ", kept under --state-dir"},
    {"CODEXEC_DEFAULT_TIMEOUT_MS", "CELLGATE_DEFAULT_TIMEOUT", CG_ALIAS_MS, NULL},
    {"CODEXEC_MAX_TIMEOUT_MS", "CELLGATE_MAX_TIMEOUT", CG_ALIAS_MS, NULL},
    {"CODEXEC_SESSION_IDLE_TIMEOUT_MS", "CELLGATE_IDLE_TTL", CG_ALIAS_MS, NULL},
    {"CODEXEC_DOCKER_MEMORY", "CELLGATE_MEMORY_MB", CG_ALIAS_MEMORY, NULL},
    {"CODEXEC_DOCKER_CPU", "CELLGATE_CPUS", CG_ALIAS_SAME, NULL},
    {"CODEXEC_DOCKER_NETWORK", NULL, CG_ALIAS_SAME, "sandboxes never have a network"},
    {"CODEXEC_MAX_OUTPUT_CHARS", "CELLGATE_MAX_OUTPUT_BYTES", CG_ALIAS_SAME, NULL},
    {"CODEXEC_TRUNCATION_HEAD", "CELLGATE_OUTPUT_HEAD_BYTES", CG_ALIAS_SAME, NULL},
    {"CODEXEC_TRUNCATION_TAIL", "CELLGATE_OUTPUT_TAIL_BYTES", CG_ALIAS_SAME, NULL},
    {"CODEXEC_LOG_DIR", "CELLGATE_LOG_DIR", CG_ALIAS_PATH, NULL},
    {"CODEXEC_LOG_RETENTION_DAYS_SUCCESS", "CELLGATE_LOG_RETENTION_SUCCESS_DAYS", CG_ALIAS_SAME,
     NULL},
    {"CODEXEC_LOG_RETENTION_DAYS_FAILURE", "CELLGATE_LOG_RETENTION_FAILED_DAYS", CG_ALIAS_SAME,
     NULL},
    {"CODEXEC_LOG_RETENTION_DAYS_SESSION", "CELLGATE_LOG_RETENTION_SESSION_DAYS", CG_ALIAS_SAME,
     NULL},
    {"CODEXEC_SCRIPTS_DIR", "CELLGATE_SCRIPTS_DIR", CG_ALIAS_PATH, NULL},
};
#define S_ALIAS_COUNT (sizeof s_aliases / sizeof s_aliases[0])

const cg_alias_t *
cg_aliases (size_t *count)
{
    *count = S_ALIAS_COUNT;
    return s_aliases;
}

const cg_alias_t *
cg_alias_find (const char *name)
{
    for (size_t i = 0; i < S_ALIAS_COUNT; i++)
        if (strcmp (s_aliases[i].name, name) == 0)
            return &s_aliases[i];
    return NULL;
}

bool
cg_alias_prefixed (const char *name)
{
    return strncmp (name, "SANDBOX_", 8) == 0 || strncmp (name, "CODEXEC_", 8) == 0;
}

//  VALUE as a finite number with what follows it in *REST. Returns false when it has none.
static bool
s_number (const char *value, double *number, const char **rest)
{
    char *end = NULL;
    errno = 0;
    *number = strtod (value, &end);
    *rest = end;
    return !errno && end != value && isfinite (*number) && *number >= 0;
}

//  A Docker size in whole MB (rounded down), or -1.
static double
s_memory_mb (const char *value)
{
    static const struct {
        const char *unit;
        double bytes;
    } units[] = {{"", 1},
                 {"b", 1},
                 {"k", 1024},
                 {"kb", 1024},
                 {"kib", 1024},
                 {"m", 1024 * 1024},
                 {"mb", 1024 * 1024},
                 {"mib", 1024 * 1024},
                 {"g", 1024.0 * 1024 * 1024},
                 {"gb", 1024.0 * 1024 * 1024},
                 {"gib", 1024.0 * 1024 * 1024}};
    double number;
    const char *unit;
    if (!s_number (value, &number, &unit))
        return -1;
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (strcasecmp (unit, units[i].unit) == 0)
            return floor (number * units[i].bytes / (1024 * 1024));
    return -1;
}

char *
cg_alias_convert (const cg_alias_t *alias, const char *value, cg_error_t **err)
{
    double number;
    const char *rest;
    switch (alias->kind) {
        case CG_ALIAS_SAME:
            return cg_xstrdup (value);
        case CG_ALIAS_MINUTES:
        case CG_ALIAS_MS:
            if (!s_number (value, &number, &rest) || *rest) {
                cg_error_set (err, EINVAL, "%s: '%s' is not a number of %s", alias->name, value,
                              alias->kind == CG_ALIAS_MS ? "milliseconds" : "minutes");
                return NULL;
            }
            return cg_strdupf ("%.0f", alias->kind == CG_ALIAS_MS ? ceil (number / 1000)
                                                                  : round (number * 60));
        case CG_ALIAS_MEMORY:
            number = s_memory_mb (value);
            if (number < 0) {
                cg_error_set (err, EINVAL, "%s: '%s' is not a size such as 512m, 1g or 512MB",
                              alias->name, value);
                return NULL;
            }
            return cg_strdupf ("%.0f", number);
        case CG_ALIAS_PORT:
            if (!s_number (value, &number, &rest) || *rest || number < 1 || number > 65535
                || number != floor (number) || strspn (value, "0123456789") != strlen (value)) {
                cg_error_set (err, EINVAL, "%s: '%s' is not a port from 1 to 65535", alias->name,
                              value);
                return NULL;
            }
            return cg_strdupf ("127.0.0.1:%s", value);
        case CG_ALIAS_PATH:
            if (strncmp (value, "~/", 2) == 0 && getenv ("HOME"))
                return cg_strdupf ("%s/%s", getenv ("HOME"), value + 2);
            return cg_xstrdup (value);
    }
    return cg_xstrdup (value);
}
