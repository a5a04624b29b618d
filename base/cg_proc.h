/*  cg_proc — running a host helper program to completion. */
#ifndef CG_PROC_H
#define CG_PROC_H

#include "base/cg_error.h"

/*  Runs ARGV (argv[0] an absolute path) to completion with stdin from /dev/null, in ENVP
    (NULL: this process's environment). With OUT and ERR_TEXT both NULL its stdout and
    stderr go to /dev/null; otherwise each is captured (at most CG_RUN_CAPTURE_MAX bytes
    kept) into *OUT and *ERR_TEXT, NUL-terminated, for the caller to free (a NULL one of
    the two is read and dropped). Returns the wait status, or -1 with *err set when it
    could not be started. */
#define CG_RUN_CAPTURE_MAX (4 * 1024 * 1024)
int cg_run (char *const argv[], char *const envp[], char **out, char **err_text, cg_error_t **err);

#endif
