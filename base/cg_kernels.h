/*  cg_kernels — the languages a server offers: one per Jupyter kernel spec it found, plus
    bash (a one-shot command, no kernel). Kernels are configuration, not code: the specs come
    from cellgate's own kernels/ (--kernels-dir, bound read-only into every sandbox), from
    --kernelspecs directories, and from the sandbox's root file system's
    share/jupyter/kernels (the image's, or the host's /usr in the host-/usr mode).

    A spec's language name and aliases come from its metadata.cellgate ("language",
    "aliases", "kernel_name", "file_extension", "language_info", "title", "preinstalled": the
    packages the tools' descriptions name); a spec without them is
    named by its directory, as Jupyter names kernels. A spec whose name, kernel name or an
    alias is already taken by an earlier one is left out (cellgate's own python shadows the
    stock "python3" spec, its r the stock "ir"). The catalogue is read once at start-up and
    never changes after: cg_kernels_install makes it the process's, read from every thread. */
#ifndef CG_KERNELS_H
#define CG_KERNELS_H

#include "base/cg_error.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#define CG_KERNELS_MAX 32      /* languages in one catalogue, bash included */
#define CG_KERNELS_ALIASES 8   /* aliases of one language */
#define CG_KERNELS_NAME_MAX 32 /* bytes of a language name, alias or kernel name */

typedef struct {
    char *name;            /* the tools' language: "python", "r", "bash" (lower case) */
    char **aliases;        /* other names it answers to, lower case (a strv; may be empty) */
    char *kernel_name;     /* the Jupyter kernel name (/api/kernelspecs): "python3", "ir" */
    char *display_name;    /* the spec's display_name */
    char *title;           /* metadata.cellgate.title ("Python", "R"), else the spec's language */
    char *spec_language;   /* the spec's "language" ("python", "R") */
    char *spec_dir;        /* the host directory holding its kernel.json; NULL for bash */
    char *extension;       /* a script's file extension without the dot ("py"), or NULL */
    json_t *language_info; /* a notebook's metadata.language_info ({"name": ...}) */
    char *preinstalled;    /* metadata.cellgate.preinstalled, joined: "numpy, pandas", or NULL */
    char *warmup; /* metadata.cellgate.warmup: code a pooled kernel runs silently before it is
                     claimed (python's is --pool-preload's), or NULL */
    bool command; /* bash: each call a fresh process, no kernel */
    bool own;     /* from --kernels-dir: cellgate's own kernels/ */
} cg_language_t;

typedef struct cg_kernels cg_kernels_t;

/*  Where the specs come from: OWN_DIR (cellgate's kernels/; its entries first, python
    first of them), then each of MORE (a NULL-terminated list of directories laid out as
    Jupyter's share/jupyter/kernels, in order), each read as <dir>/<name>/kernel.json. A
    directory that does not exist is skipped; a spec that cannot be read, or is shadowed,
    is left out with a line in *NOTES (a strv the caller frees; NULL when NOTES is NULL).
    ONLY, when not NULL or "all", is a comma-separated list of the languages to offer
    (names or aliases; bash included only when named). Returns the catalogue, or NULL with
    *err set when ONLY names a language none of the specs offers or OWN_DIR has no spec. */
cg_kernels_t *cg_kernels_load (const char *own_dir, const char *const *more, const char *only,
                               char ***notes, cg_error_t **err);
void cg_kernels_destroy (cg_kernels_t **self_p);

/*  Makes SELF the process's catalogue (taking it), before any thread reads it. */
void cg_kernels_install (cg_kernels_t *self);

/*  The process's catalogue: the installed one, else (unit tests, tools) one loaded once
    from the compiled-in kernels/ alone. Never NULL. */
const cg_kernels_t *cg_kernels (void);

size_t cg_kernels_count (const cg_kernels_t *self);
const cg_language_t *cg_kernels_at (const cg_kernels_t *self, size_t index);

/*  The language NAME names (its name, an alias or its kernel name, any case), or NULL. */
const cg_language_t *cg_kernels_find (const cg_kernels_t *self, const char *name);

/*  The language whose Jupyter kernel name is KERNEL_NAME, or NULL (bash has none). */
const cg_language_t *cg_kernels_by_kernel_name (const cg_kernels_t *self, const char *kernel_name);

/*  The index of LANGUAGE in SELF, or -1. */
int cg_kernels_index (const cg_kernels_t *self, const cg_language_t *language);

/*  "python (py, python3), javascript (js, node, nodejs), r, bash (sh, shell)": every
    language with its aliases, for errors and descriptions. Caller frees. */
char *cg_kernels_describe (const cg_kernels_t *self);

/*  "python, javascript, r, bash": the names alone, joined by SEP. Caller frees. */
char *cg_kernels_names (const cg_kernels_t *self, const char *sep);

/*  "Python has numpy and pandas. R has dplyr.": what each language's spec says it has
    preinstalled, for the tools' descriptions; "" when none says. Caller frees. */
char *cg_kernels_preinstalled (const cg_kernels_t *self);

/*  The names as a JSON array (a tool schema's enum); KERNELS_ONLY leaves bash out. New
    reference. */
json_t *cg_kernels_enum (const cg_kernels_t *self, bool kernels_only);

#endif
