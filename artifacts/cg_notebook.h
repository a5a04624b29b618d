/*  cg_notebook — a session's executions as a Jupyter notebook (nbformat 4.5): each run is
    kept as one cell line in a JSON-lines file of the session's host directory (never in
    its workspace, which the sandbox writes), and the lines become a notebook on demand.
    Names no protocol but nbformat's; keeps no state (the export runs on a worker thread). */
#ifndef CG_NOTEBOOK_H
#define CG_NOTEBOOK_H

#include "base/cg_error.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/*  The file's name in a session's host directory. */
#define CG_NOTEBOOK_FILE "notebook.jsonl"

/*  The default of --notebook-max-mb: at most this many bytes of cells are kept per
    session; near it a run's cell keeps its code and drops its outputs (its metadata says
    so), at it later runs are left out (one line says so, and the notebook). */
#define CG_NOTEBOOK_MAX_BYTES (64 * 1024 * 1024)

/*  The bytes below MAX kept for the line that says later runs were left out. */
#define CG_NOTEBOOK_FULL_ROOM 256

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

/*  Appends CELL (borrowed) as one line to the file PATH (made 0600 when missing), which
    never grows past MAX bytes: when the line would take it past MAX - CG_NOTEBOOK_FULL_ROOM
    the cell goes without its outputs and with metadata.cellgate.outputs_dropped true; when
    even that does not fit it is left out, and the first cell left out writes one short line
    saying the record is full instead. Returns 0 (*LEFT_OUT, when not NULL, true when the
    cell was left out), or -1 with *err set. */
int cg_notebook_append (const char *path, json_t *cell, size_t max, bool *left_out,
                        cg_error_t **err);

/*  Returns a new nbformat 4.5 notebook for LANGUAGE from the cell lines in the LEN bytes
    of TEXT (NUL-terminated, untrusted; lines that are not cell objects are skipped): its
    runs as code cells with fresh cell ids, runs in other languages as markdown cells that
    show their code, and a last note when the record says runs were left out. *CODE_CELLS
    (when not NULL) gets the number of code cells. Never fails. */
json_t *cg_notebook_from_lines (const char *text, size_t len, const char *language,
                                size_t *code_cells);

/*  The same notebook as cg_notebook_from_lines, streamed: reads the cell lines from IN
    (untrusted) one at a time and writes the notebook's JSON to OUT as it goes, so memory
    holds one line and its cell at a time, never the whole record. Lines longer than
    LINE_MAX bytes are skipped. *CELLS and *CODE_CELLS (when not NULL) get the numbers of
    cells and code cells. Returns 0, or -1 with *err set when OUT cannot be written (EIO,
    ENOSPC, ...) or IN not read. */
int cg_notebook_write (FILE *in, const char *language, size_t line_max, FILE *out, size_t *cells,
                       size_t *code_cells, cg_error_t **err);

#endif
