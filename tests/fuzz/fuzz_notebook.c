/*  fuzz_notebook — a session's notebook: a run's outputs as a kernel sent them (any JSON)
    made into a cell (cg_notebook_cell), and the cells file read back as lines of any bytes
    (cg_notebook_from_lines), and streamed (cg_notebook_write).

    Input: one byte of mode; mode even: the rest is a JSON document used as a run's outputs
    list, with the stream texts "out" and "err"; mode odd: the rest is the cells file.

    Invariants: a cell is always made and is a code cell whose outputs are an array of
    nbformat outputs; written as a line and read back, it is one code cell of the notebook;
    the notebook always serializes, with every cell carrying an id, and counts its code
    cells right; the streamed notebook is valid JSON and the same notebook as the one made
    in memory. */
#define _GNU_SOURCE
#include "cg_fuzz.h"

#include "artifacts/cg_notebook.h"
#include "base/cg_util.h"

#include <stdlib.h>
#include <string.h>

static void
s_check_notebook (json_t *notebook, size_t code_cells)
{
    char *text = json_dumps (notebook, JSON_COMPACT);
    CG_FUZZ_CHECK (text != NULL, "the notebook serializes");
    free (text);
    json_t *cells = json_object_get (notebook, "cells");
    CG_FUZZ_CHECK (json_is_array (cells), "cells is an array");
    size_t i, codes = 0;
    json_t *cell;
    json_array_foreach (cells, i, cell)
    {
        CG_FUZZ_CHECK (json_is_string (json_object_get (cell, "id")), "every cell has an id");
        const char *type = json_string_value (json_object_get (cell, "cell_type"));
        CG_FUZZ_CHECK (type != NULL, "every cell has a type");
        if (strcmp (type, "code") == 0) {
            codes++;
            CG_FUZZ_CHECK (json_is_array (json_object_get (cell, "outputs")), "outputs array");
        }
    }
    CG_FUZZ_CHECK (codes == code_cells, "code cells counted");
}

//  Streams the LEN bytes at TEXT as the record through cg_notebook_write and checks it
//  makes NOTEBOOK (with CODE_CELLS code cells) again.
static void
s_check_stream (const uint8_t *text, size_t len, json_t *notebook, size_t code_cells)
{
    FILE *in = len ? fmemopen (CG_UNCONST (text), len, "r") : fopen ("/dev/null", "r");
    char *written = NULL;
    size_t written_len = 0, cells = 0, codes = 0;
    FILE *out = open_memstream (&written, &written_len);
    CG_FUZZ_CHECK (in && out, "streams open");
    cg_error_t *err = NULL;
    int rc = cg_notebook_write (in, "python", len + 1, out, &cells, &codes, &err);
    fclose (in);
    fclose (out);
    CG_FUZZ_CHECK (rc == 0, "the notebook streams");
    json_t *streamed = json_loadb (written, written_len, 0, NULL);
    CG_FUZZ_CHECK (streamed != NULL, "the streamed notebook is JSON");
    CG_FUZZ_CHECK (json_equal (streamed, notebook), "the same notebook, streamed or not");
    CG_FUZZ_CHECK (codes == code_cells
                       && cells == json_array_size (json_object_get (notebook, "cells")),
                   "the same counts");
    json_decref (streamed);
    free (written);
    cg_error_destroy (&err);
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    size_t code_cells = 0;
    if (data[0] % 2) {
        json_t *notebook =
            cg_notebook_from_lines ((const char *)data + 1, size - 1, "python", &code_cells);
        s_check_notebook (notebook, code_cells);
        s_check_stream (data + 1, size - 1, notebook, code_cells);
        json_decref (notebook);
        return 0;
    }
    json_t *outputs = json_loadb ((const char *)data + 1, size - 1, 0, NULL);
    cg_notebook_run_t run = {.language = "python",
                             .code = "x",
                             .stdout_text = "out",
                             .stderr_text = "err",
                             .outputs = json_is_array (outputs) ? outputs : NULL,
                             .execution_count = 3,
                             .error = size > 8 ? "Error: boom" : NULL,
                             .status = "success"};
    json_t *cell = cg_notebook_cell (&run);
    CG_FUZZ_CHECK (cell != NULL, "a cell is always made");
    CG_FUZZ_CHECK (json_is_array (json_object_get (cell, "outputs")), "its outputs are an array");
    char *line = json_dumps (cell, JSON_COMPACT);
    CG_FUZZ_CHECK (line != NULL, "the cell serializes");
    json_t *notebook = cg_notebook_from_lines (line, strlen (line), "python", &code_cells);
    CG_FUZZ_CHECK (code_cells == 1, "the cell reads back as one code cell");
    s_check_notebook (notebook, code_cells);
    free (line);
    json_decref (notebook);
    json_decref (cell);
    json_decref (outputs);
    return 0;
}
