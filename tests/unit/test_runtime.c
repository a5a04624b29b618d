/*  Unit tests: the OCI runtime's version and what it lacks (cg_runtime), and finding it by
    name, by path and on PATH. */
#include "base/cg_util.h"
#include "base/cg_fs.h"
#include "containers/cg_runtime.h"
#include "cg_test.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

//  A temporary directory holding a file NAME with MODE; returns the directory.
static char *
s_dir_with (const char *name, int mode)
{
    char *dir = cg_xstrdup ("/tmp/cg-test-runtime-XXXXXX");
    if (!mkdtemp (dir))
        abort ();
    cleanup_free char *file = cg_strdupf ("%s/%s", dir, name);
    if (cg_write_file (file, "#!/bin/sh\n", 10, mode, NULL) < 0)
        abort ();
    return dir;
}

//  cg_runtime_locate (SPEC) with PATH set to DIR_PATH (NULL: unchanged); *ERR as it says.
static char *
s_locate_on (const char *spec, const char *dir_path, bool cgroup_v2, cg_error_t **err)
{
    cleanup_free char *old_path = cg_xstrdup (getenv ("PATH") ? getenv ("PATH") : "");
    if (dir_path)
        setenv ("PATH", dir_path, 1);
    char *path = cg_runtime_locate (spec, cgroup_v2, err);
    setenv ("PATH", old_path, 1);
    return path;
}

static void
s_locate (void)
{
    const char *name = "locate";
    cg_error_t *err = NULL;
    char *path = cg_runtime_locate ("/nonexistent/runc", false, &err);
    CHECK (!path && strstr (cg_error_message (err), "OCI runtime /nonexistent/runc: No such file"),
           "a missing path is named: %s", cg_error_message (err));
    cg_error_destroy (&err);
    path = cg_runtime_locate ("youki", false, &err);
    CHECK (!path && err->code == ENOENT
               && strstr (cg_error_message (err), "OCI runtime 'youki' is not on PATH"),
           "a name on no PATH: %s", cg_error_message (err));
    cg_error_destroy (&err);

    //  auto on cgroup v2: crun found on PATH only (a directory no fallback covers).
    cleanup_free char *dir = s_dir_with ("crun", 0755);
    cleanup_free char *fake = cg_strdupf ("%s/crun", dir);
    path = s_locate_on ("auto", dir, true, NULL);
    CHECK (path && strcmp (path, fake) == 0, "auto on cgroup v2 finds crun on PATH");
    free (path);
    //  Any name is looked up there: a renamed runtime, and crun by its name.
    cleanup_free char *renamed = cg_strdupf ("%s/runc-patched", dir);
    CHECK (rename (fake, renamed) == 0, "rename");
    path = s_locate_on ("runc-patched", dir, false, NULL);
    CHECK (path && strcmp (path, renamed) == 0, "a bare name is found on PATH: %s",
           path ? path : "(null)");
    free (path);
    //  An absolute and a relative path.
    path = cg_runtime_locate (renamed, false, NULL);
    CHECK (path && strcmp (path, renamed) == 0, "an absolute path");
    free (path);
    cleanup_free char *cwd = getcwd (NULL, 0);
    CHECK (chdir (dir) == 0, "chdir");
    path = cg_runtime_locate ("./runc-patched", false, NULL);
    CHECK (chdir (cwd) == 0, "chdir back");
    CHECK (path && strcmp (path, renamed) == 0, "a relative path becomes absolute: %s",
           path ? path : "(null)");
    free (path);
    //  Found but not executable: said so, by path and by name.
    CHECK (chmod (renamed, 0644) == 0, "chmod");
    path = cg_runtime_locate (renamed, false, &err);
    CHECK (!path && err->code == EACCES
               && strstr (cg_error_message (err), "is not an executable file"),
           "a path that is not executable: %s", cg_error_message (err));
    cg_error_destroy (&err);
    path = s_locate_on ("runc-patched", dir, false, &err);
    CHECK (!path && err->code == EACCES && strstr (cg_error_message (err), renamed),
           "a name found but not executable: %s", cg_error_message (err));
    cg_error_destroy (&err);
    cg_rm_rf (dir, NULL);
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
