/*  cg_runtime — finding the OCI runtime (auto, a name on PATH, or a path) and what its
    version is known to lack. */
#define _GNU_SOURCE
#include "containers/cg_runtime.h"
#include "base/cg_util.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static bool
s_executable (const char *path)
{
    struct stat st;
    return stat (path, &st) == 0 && S_ISREG (st.st_mode) && access (path, X_OK) == 0;
}

//  Looks NAME up in the directories of PATH, then in the sbin directories a non-root
//  PATH often lacks. Caller owns the result; NULL when not found. *UNUSABLE (caller owns
//  it) is set to the first file of that name found that is not executable, if any.
static char *
s_search (const char *name, char **unusable)
{
    const char *env = getenv ("PATH");
    cleanup_free char *dirs =
        cg_strdupf ("%s:/usr/sbin:/usr/local/sbin:/usr/bin", env && *env ? env : "/usr/bin:/bin");
    char *save = NULL;
    for (char *dir = strtok_r (dirs, ":", &save); dir; dir = strtok_r (NULL, ":", &save)) {
        if (*dir != '/')
            continue; /* a relative PATH entry would depend on the cwd */
        char *path = cg_strdupf ("%s/%s", dir, name);
        if (s_executable (path))
            return path;
        if (unusable && !*unusable && access (path, F_OK) == 0)
            *unusable = path;
        else
            free (path);
    }
    return NULL;
}

char *
cg_runtime_locate (const char *spec, bool cgroup_v2, cg_error_t **err)
{
    if (strchr (spec, '/')) {
        char *path = realpath (spec, NULL);
        if (!path)
            cg_error_set (err, errno, "OCI runtime %s: %s", spec, strerror (errno));
        else if (!s_executable (path)) {
            cg_error_set (err, EACCES, "OCI runtime %s is not an executable file", spec);
            free (path);
            path = NULL;
        }
        return path;
    }
    if (strcmp (spec, "auto") == 0) {
        //  crun refuses hybrid cgroup layouts (v1 controllers plus a v2 mount); runc works.
        char *crun = cgroup_v2 ? s_search ("crun", NULL) : NULL;
        if (crun)
            return crun;
        spec = "runc";
    }
    cleanup_free char *unusable = NULL;
    char *path = s_search (spec, &unusable);
    if (!path && unusable)
        cg_error_set (err, EACCES, "OCI runtime '%s': %s is not an executable file", spec,
                      unusable);
    else if (!path)
        cg_error_set (err, ENOENT,
                      "OCI runtime '%s' is not on PATH or in /usr/sbin (install runc or crun: "
                      "scripts/setup.sh; or pass --runtime /path/to/runc)",
                      spec);
    return path;
}

int
cg_runtime_parse_version (const char *text, char **kind, char **version, cg_error_t **err)
{
    char name[16], number[64];
    if (!text || sscanf (text, "%15s version %63s", name, number) != 2
        || (strcmp (name, "runc") != 0 && strcmp (name, "crun") != 0))
        return cg_error_set (err, EINVAL, "not runc or crun: --version says \"%.*s\"",
                             text ? (int)strcspn (text, "\n") : 0, text ? text : "");
    *kind = cg_xstrdup (name);
    *version = cg_xstrdup (number);
    return 0;
}

const char *
cg_runtime_advisory (const char *kind, const char *version)
{
    if (strcmp (kind, "runc") != 0)
        return NULL; /* crun: not affected by these (its maintainers' word) */
    int major = 0, minor = 0, patch = 0, rc = 0;
    int parsed = sscanf (version, "%d.%d.%d-rc.%d", &major, &minor, &patch, &rc);
    if (parsed < 3 && sscanf (version, "%d.%d.%d-rc%d", &major, &minor, &patch, &rc) < 3)
        return NULL;
    bool prerelease = strstr (version, "-rc") != NULL;
    long v = (long)major * 1000000 + minor * 1000 + patch;
    bool fixed = v >= 1004001                                  /* 1.4.1 and later */
                 || (v == 1004000 && (!prerelease || rc >= 3)) /* 1.4.0, 1.4.0-rc.3 */
                 || (v >= 1003003 && v < 1004000)              /* 1.3.3 and later 1.3 */
                 || (v >= 1002008 && v < 1003000);             /* 1.2.8 and later 1.2 */
    return fixed ? NULL
                 : "CVE-2025-31133, CVE-2025-52565 and CVE-2025-52881 "
                   "(fixed in runc 1.2.8, 1.3.3 and 1.4.0)";
}
