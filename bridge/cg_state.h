/*  cg_state — the state dir's format: a version kept in STATE/format, read before anything
    else reads the dir, and the migrations that bring an older layout up to this one. */
#ifndef CG_STATE_H
#define CG_STATE_H

#include "base/cg_error.h"

/*  The format this cellgate writes. Format 0 is a state dir with no format file (0.1.0 and
    before); format 1 is the same layout with the file. A new format adds a migration from
    the one before it (cg_state.c) and a fixture of its predecessor (tests/state). */
#define CG_STATE_FORMAT 1

/*  Makes STATE_DIR (0755 when new) and brings it to CG_STATE_FORMAT: a new or empty dir gets
    the format file; an older format is migrated step by step, each step logged, and the file
    written after the last. Returns 0, or -1 with *err set when the dir is of a newer format
    (written by a later cellgate: nothing is touched), its format file is not one, or a
    migration fails. FORMAT_P, when not NULL, gets the format the dir had (-1: new). */
int cg_state_open (const char *state_dir, int *format_p, cg_error_t **err);

#endif
