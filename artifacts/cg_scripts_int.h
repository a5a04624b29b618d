/*  cg_scripts_int — what the script library's two halves share: cg_scripts.c (files,
    saving, the index, the caps) and cg_scripts_search.c (search). Internal to them. */
#ifndef CG_SCRIPTS_INT_H
#define CG_SCRIPTS_INT_H

#include "artifacts/cg_scripts.h"

#define CG_SCRIPTS_INDEX "index.json"

/*  Opens the scripts directory DIR, creating it when CREATE. Returns an fd or -1 with *err. */
int cg_scripts_open_top (const char *dir, bool create, cg_error_t **err);

/*  Opens directory NAME in DIR_FD without following a link, creating it when CREATE.
    Returns an fd, or -1 with *err set (ELOOP: NAME is a link; ENOENT: missing). */
int cg_scripts_open_dir_at (int dir_fd, const char *name, bool create, cg_error_t **err);

/*  Reads the regular file NAME in DIR_FD (no link, no FIFO, at most 16 MB). Caller frees;
    NULL with *err. */
char *cg_scripts_read_at (int dir_fd, const char *name, cg_error_t **err);

/*  Returns DIR_FD's (DIR's) index's scripts, a new array, rebuilt when missing or
    malformed. */
json_t *cg_scripts_index (int dir_fd, const char *dir);

#endif
