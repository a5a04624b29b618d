/*  cg_runtime — finding the OCI runtime (auto, a name on PATH, or a path) and what its
    version is known to lack. */
#ifndef CG_RUNTIME_H
#define CG_RUNTIME_H

#include "base/cg_error.h"

#include <stdbool.h>

/*  Resolves SPEC, the --runtime value: "auto" (crun when CGROUP_V2 and crun is found,
    else runc), any other name (runc, crun, a renamed or wrapped runc) looked up on PATH
    and then in /usr/sbin and /usr/local/sbin, or a path (anything with a '/', relative
    to the working directory or absolute) to an executable. Returns the path found
    (absolute; caller owns it), or NULL with *err set saying what was looked for and why it
    failed: ENOENT (no such file, not on PATH) or EACCES (found, not executable). Whether
    it is runc or crun is for its --version to say (cg_runtime_parse_version). */
char *cg_runtime_locate (const char *spec, bool cgroup_v2, cg_error_t **err);

/*  Parses the output of `<runtime> --version` ("runc version 1.1.5+ds1", "crun version
    1.8.1"). Fills *KIND with "runc" or "crun" and *VERSION with the version string (both
    owned by the caller). Returns 0, or -1 with *err set when the output names neither. */
int cg_runtime_parse_version (const char *text, char **kind, char **version, cg_error_t **err);

/*  Returns the advisories a KIND at VERSION has no fix for, as one static string such as
    "CVE-2025-31133, CVE-2025-52565, CVE-2025-52881 (fixed in runc 1.2.8, 1.3.3, 1.4.0)",
    or NULL when none is known. Upstream versions only: a distribution may have backported
    a fix without changing the version. */
const char *cg_runtime_advisory (const char *kind, const char *version);

#endif
