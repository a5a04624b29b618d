/*  cg_kept — the files of one-shot runs, kept for download after their sandbox is gone.
    A one-shot run (no session_id) destroys its sandbox and workspace once its result is
    made; the files it created or changed (a figure too large for a message, a CSV it
    wrote) would then be listed in the result and lost. Its runner copies them out first
    (cg_kept_copy, on the runner's thread), and the server keeps the copy for --oneshot-keep
    seconds under its own id and random token, like a session's downloads, at most
    S_KEPT_MAX runs and --oneshot-keep-mb bytes in all, the oldest dropped first. */
#ifndef CG_KEPT_H
#define CG_KEPT_H

#include "bridge/cg_outcome.h"
#include "artifacts/cg_workspace.h"

#include <stddef.h>
#include <stdint.h>

/*  The most files one run's copy holds. */
#define CG_KEPT_FILES_MAX 64

typedef struct cg_kept_t cg_kept_t;

/*  Returns the directory kept copies go to for the sessions in SESSIONS_DIR: "kept" beside
    it, in the instance's state (removed with it). Caller frees. */
char *cg_kept_root (const char *sessions_dir);

/*  On a one-shot runner's thread, before its sandbox goes: copies the regular files of
    OUTCOME's artifacts (borrowed, changed) out of WS into a new directory under ROOT
    (made 0700 if missing), at most CG_KEPT_FILES_MAX files and MAX_BYTES bytes, reading
    through WS (no symbolic link is followed). Sets OUTCOME's kept_dir and kept_bytes when
    anything was copied; marks each artifact that was not with "kept": false. Failures are
    logged and leave the artifact unkept. */
void cg_kept_copy (cg_workspace_t *ws, cg_outcome_t *outcome, const char *root, size_t max_bytes);

/*  Returns a new, empty table of kept runs: each kept TTL_S seconds, MAX_BYTES in all.
    Caller owns it (cg_kept_destroy). */
cg_kept_t *cg_kept_new (int ttl_s, size_t max_bytes);

/*  Removes every kept copy from disk, frees *SELF_P and sets it to NULL. Safe on NULL. */
void cg_kept_destroy (cg_kept_t **self_p);

/*  Takes over the copy in *DIR_P (an outcome's kept_dir, BYTES long; *DIR_P is set to
    NULL) under a new id and token, dropping expired copies and then the oldest until it
    fits. Returns 0 with *ID and *TOKEN (borrowed: valid until the next call on SELF), or
    -1 with the copy removed when it alone is over the table's bytes or cannot be opened. */
int cg_kept_add (cg_kept_t *self, char **dir_p, size_t bytes, const char **id, const char **token);

/*  The download lookup (cg_downloads_lookup_fn) for kept copies: the workspace of the
    unexpired copy ID whose token is the TOKEN_LEN bytes at TOKEN (constant-time compare),
    or NULL. ARG is the table. */
cg_workspace_t *cg_kept_download (void *arg, const char *id, const char *token, size_t token_len);

/*  How many copies are kept and their bytes (expired ones dropped first). */
size_t cg_kept_count (cg_kept_t *self, size_t *bytes);

#endif
