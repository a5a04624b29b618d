/*  cg_artifacts — what a run leaves in its workspace: rich display outputs and full
    stdout/stderr saved as files, cut output for results, and the files a run created,
    modified or deleted. */
#ifndef CG_ARTIFACTS_H
#define CG_ARTIFACTS_H

#include "artifacts/cg_workspace.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/*  Where saved outputs go, below the workspace. */
#define CG_ARTIFACTS_OUTPUT_DIR "outputs"

/*  No bytes were dropped before cg_output_cut (its CUT). */
#define CG_OUTPUT_NO_CUT ((size_t)-1)

/*  Returns the LEN bytes at DATA cut to at most HEAD bytes of the start and TAIL bytes
    of the end (both moved back to UTF-8 character boundaries) joined by seed 002's
    marker "\n\n[... truncated N characters ...]\n\n", where N counts the characters left
    out plus EXTRA_CHARS (characters dropped earlier, at byte CUT of DATA; the head stays
    before CUT and the tail after it). CUT is CG_OUTPUT_NO_CUT when nothing was dropped
    (EXTRA_CHARS is 0 then, and may be 0 too when only parts of characters were).
    Returns a new NUL-terminated string (caller owns it) and stores its length in
    *OUT_LEN: DATA may hold NUL bytes, and so may the result. */
char *cg_output_cut (const char *data, size_t len, size_t head, size_t tail, size_t cut,
                     size_t extra_chars, size_t *out_len);

/*  Returns the LEN bytes at DATA with the marker for EXTRA_CHARS dropped characters put
    at byte CUT (the text as kept when more than the keep limit came). New NUL-terminated
    string, its length (NUL bytes in DATA included) in *OUT_LEN. */
char *cg_output_join (const char *data, size_t len, size_t cut, size_t extra_chars,
                      size_t *out_len);

/*  Which display outputs cg_artifacts_save_displays saves. */
#define CG_DISPLAYS_FIGURES 1   /* image/png, image/jpeg, image/svg+xml, application/pdf */
#define CG_DISPLAYS_DOCUMENTS 2 /* text/html, application/json */

/*  Saves each item of OUTPUTS (display_data / execute_result items {type, data,
    metadata}) whose first rich type — image/png, image/jpeg, image/svg+xml,
    application/pdf, text/html, application/json (not for an execute_result, whose JSON
    is the cell's value), in that order — is of a kind in KINDS, as the file
    outputs/<PREFIX>-<n>.<ext> in WS, owned by UID:GID, and records its workspace path
    in the item as "path". Returns how many were saved; failures are logged and leave the
    item without a path. */
size_t cg_artifacts_save_displays (cg_workspace_t *ws, json_t *outputs, const char *prefix,
                                   unsigned kinds, uid_t uid, gid_t gid);

/*  Describes the files named in DIFF's "created" and "modified" lists (see
    cg_workspace_diff) from the snapshot AFTER: returns a new array of seed 004
    artifacts {path, filename, size_bytes, mime_type}, sorted by path. */
json_t *cg_artifacts_from_diff (json_t *diff, json_t *after);

#endif
