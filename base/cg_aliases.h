/*  cg_aliases — the seeds' environment names for cellgate's settings: seed 004's SANDBOX_*
    and seed 002's CODEXEC_* variables, one table row each, naming the CELLGATE_* variable
    it stands for (or none) and how its value is written in that variable's terms. */
#ifndef CG_ALIASES_H
#define CG_ALIASES_H

#include "base/cg_error.h"

#include <stdbool.h>
#include <stddef.h>

/*  How an alias's value becomes its target's. */
typedef enum {
    CG_ALIAS_SAME,    /* as it is */
    CG_ALIAS_MINUTES, /* whole minutes -> seconds */
    CG_ALIAS_MS,      /* milliseconds -> whole seconds, rounded up */
    CG_ALIAS_MEMORY,  /* a Docker size (bytes, or 512k, 512m, 1g, 512MB, 1GiB) -> whole MB */
    CG_ALIAS_PORT,    /* a port -> 127.0.0.1:PORT */
    CG_ALIAS_PATH,    /* a path; a leading ~/ is $HOME's */
} cg_alias_kind_t;

/*  One of the seeds' variables. */
typedef struct {
    const char *name;   /* "SANDBOX_MEMORY_LIMIT" */
    const char *target; /* the CELLGATE_* variable it stands for; NULL: cellgate has none */
    cg_alias_kind_t kind;
    const char *note; /* for a name without a target: why cellgate has no such setting */
} cg_alias_t;

/*  Returns the table (sets *COUNT to its length), seed 004's names first: when two names
    stand for one setting, the first one set wins. The table is static. */
const cg_alias_t *cg_aliases (size_t *count);

/*  Returns the row of NAME, or NULL when the table has none. */
const cg_alias_t *cg_alias_find (const char *name);

/*  True when NAME starts with one of the seeds' prefixes (SANDBOX_, CODEXEC_). */
bool cg_alias_prefixed (const char *name);

/*  Returns VALUE, given for ALIAS (one with a target), written as its target takes it.
    Returns NULL with *err set (naming the alias) when VALUE is not what the alias takes.
    Caller owns the result. */
char *cg_alias_convert (const cg_alias_t *alias, const char *value, cg_error_t **err);

#endif
