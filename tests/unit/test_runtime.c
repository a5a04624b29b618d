/*  Unit tests: the OCI runtime's version and what it lacks (cg_runtime), and finding it by
    name, by path and on PATH. */
#include "../../bridge/cg_util.h"
#include "../../containers/cg_runtime.h"
#include "cg_test.h"

#include <string.h>
#include <sys/stat.h>

static void
s_advisory (const char *version, bool vulnerable)
{
    const char *name = version;
    const char *says = cg_runtime_advisory ("runc", version);
    CHECK ((says != NULL) == vulnerable, "runc %s: expected %s, got %s", version,
           vulnerable ? "an advisory" : "none", says ? says : "none");
    if (says)
        CHECK (strstr (says, "CVE-2025-31133") && strstr (says, "CVE-2025-52565")
                   && strstr (says, "CVE-2025-52881"),
               "names the three: %s", says);
    s_passes++;
}

static void
s_parse (void)
{
    const char *name = "parse --version";
    char *kind = NULL, *version = NULL;
    CHECK (cg_runtime_parse_version ("runc version 1.1.5+ds1\ncommit: x\n", &kind, &version, NULL)
               == 0,
           "runc parses");
    CHECK (strcmp (kind, "runc") == 0 && strcmp (version, "1.1.5+ds1") == 0, "runc %s", version);
    free (kind), free (version);
    CHECK (cg_runtime_parse_version ("crun version 1.8.1\n", &kind, &version, NULL) == 0,
           "crun parses");
    CHECK (strcmp (kind, "crun") == 0 && !cg_runtime_advisory (kind, version), "crun: no advisory");
    free (kind), free (version);
    cg_error_t *err = NULL;
    CHECK (cg_runtime_parse_version ("youki version 0.3\n", &kind, &version, &err) < 0
               && strstr (cg_error_message (err), "not runc or crun"),
           "another runtime is refused");
    cg_error_destroy (&err);
    s_passes++;
}

static void
s_locate (void)
{
    const char *name = "locate";
    cg_error_t *err = NULL;
    char *path = cg_runtime_locate ("/nonexistent/runc", false, &err);
    CHECK (!path && strstr (cg_error_message (err), "/nonexistent/runc"),
           "a missing path is named");
    cg_error_destroy (&err);
    path = cg_runtime_locate ("youki", false, &err);
    CHECK (!path && strstr (cg_error_message (err), "expected auto, runc, crun or a path"),
           "bad name");
    cg_error_destroy (&err);
    //  A runtime found on PATH only (a directory no fallback covers).
    char dir[] = "/tmp/cg-test-runtime-XXXXXX";
    CHECK (mkdtemp (dir), "mkdtemp");
    cleanup_free char *fake = cg_strdupf ("%s/crun", dir);
    CHECK (cg_write_file (fake, "#!/bin/sh\n", 10, 0755, NULL) == 0, "write");
    cleanup_free char *old_path = cg_xstrdup (getenv ("PATH") ? getenv ("PATH") : "");
    setenv ("PATH", dir, 1);
    path = cg_runtime_locate ("auto", true, NULL);
    setenv ("PATH", old_path, 1);
    bool found = path && strcmp (path, fake) == 0;
    free (path);
    cg_rm_rf (dir, NULL);
    CHECK (found, "auto on cgroup v2 finds crun on PATH");
    s_passes++;
}

int
main (void)
{
    s_advisory ("1.1.5+ds1", true);
    s_advisory ("1.1.15", true);
    s_advisory ("1.2.7", true);
    s_advisory ("1.2.8", false);
    s_advisory ("1.3.0-rc.1", true);
    s_advisory ("1.3.2", true);
    s_advisory ("1.3.3", false);
    s_advisory ("1.4.0-rc.2", true);
    s_advisory ("1.4.0-rc.3", false);
    s_advisory ("1.4.0", false);
    s_advisory ("1.5.0", false);
    s_parse ();
    s_locate ();
    printf ("%d passed, %d failed\n", s_passes, s_failures);
    return s_failures ? 1 : 0;
}
