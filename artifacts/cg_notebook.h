/*  cg_notebook — a session's executions as a Jupyter notebook (nbformat 4.5): each run is
    kept as one cell line in a JSON-lines file of the session's host directory (never in
    its workspace, which the sandbox writes), and the lines become a notebook on demand.
    Names no protocol but nbformat's; single-threaded. */
#ifndef CG_NOTEBOOK_H
#define CG_NOTEBOOK_H

#include "../bridge/cg_error.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/*  The file's name in a session's host directory. */
#define CG_NOTEBOOK_FILE "notebook.jsonl"

/*  At most this many bytes of cells are kept per session; past it a run's cell keeps its
    code and drops its outputs (its metadata says so). */
#define CG_NOTEBOOK_MAX_BYTES (64 * 1024 * 1024)

/*  One run, as the caller knows it. Strings are valid UTF-8; all borrowed. */
typedef struct {
    const char *language;     /* "python", "javascript", "bash" */
    const char *execution_id; /* may be NULL */
    const char *code;
    const char *stdout_text; /* may be NULL or "" */
    const char *stderr_text;
    json_t *outputs;     /* [{type, data, metadata, display_id?}] in order, or NULL */
    int execution_count; /* 0: none */
    const char *error;   /* "Name: value" when the run raised, else NULL */
    const char *status;  /* "success", "execution_error", "timeout", ... */
} cg_notebook_run_t;

/*  Returns a new nbformat code cell for RUN: its source, its outputs (streams, then
    display_data and execute_result in order, update_display_data applied to the display it
    names, then the error), and metadata.cellgate {language, execution_id, status}. A MIME
    bundle keeps only what nbformat allows (text types as strings, JSON types as any JSON).
    Caller owns it. */
json_t *cg_notebook_cell (const cg_notebook_run_t *run);

/*  Appends CELL (borrowed) as one line to the file PATH (made 0600 when missing). When the
    file holds MAX bytes or more already, or the line would take it past MAX, the cell goes
    without its outputs and with metadata.cellgate.outputs_dropped true. Returns 0, or -1
    with *err set. */
int cg_notebook_append (const char *path, json_t *cell, size_t max, cg_error_t **err);

/*  Reads the cells of PATH (a missing file has none; lines that are not cell objects are
    skipped) and returns a new nbformat 4.5 notebook for LANGUAGE: its runs as code cells
    with fresh cell ids, and runs in other languages as markdown cells that show their
    code. *CODE_CELLS (when not NULL) gets the number of code cells. NULL with *err set when
    PATH cannot be read (more than MAX bytes: EFBIG). */
json_t *cg_notebook_build (const char *path, const char *language, size_t max, size_t *code_cells,
                           cg_error_t **err);

/*  The same from the bytes TEXT (LEN, NUL-terminated, untrusted). Never fails. */
json_t *cg_notebook_from_lines (const char *text, size_t len, const char *language,
                                size_t *code_cells);

#endif
