/*  cg_notebook — a session's executions as a Jupyter notebook (nbformat 4.5), kept as
    one cell line per run in the session's host directory. */
#define _GNU_SOURCE
#include "artifacts/cg_notebook.h"
#include "base/cg_kernels.h"

#include "base/cg_util.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

//  --------------------------------------------------------------------------
//  A run's cell

//  A MIME type whose value nbformat takes as any JSON (application/json, ...+json).
static bool
s_json_type (const char *mime)
{
    size_t len = strlen (mime);
    return len >= 4 && strcmp (mime + len - 4, "json") == 0;
}

//  True when VALUE is a string or an array of strings (nbformat's multiline string).
static bool
s_multiline (const json_t *value)
{
    if (json_is_string (value))
        return true;
    if (!json_is_array (value))
        return false;
    size_t i;
    const json_t *line;
    json_array_foreach (value, i, line)
    {
        if (!json_is_string (line))
            return false;
    }
    return true;
}

//  A copy of the MIME bundle DATA with what nbformat allows: JSON types as any JSON, the
//  others as (multiline) strings. Caller owns it.
static json_t *
s_bundle (json_t *data)
{
    json_t *bundle = json_object ();
    const char *mime;
    json_t *value;
    json_object_foreach (data, mime, value)
    {
        if (s_json_type (mime) || s_multiline (value))
            json_object_set (bundle, mime, value);
    }
    return bundle;
}

static json_t *
s_metadata (const json_t *item)
{
    json_t *metadata = json_object_get (item, "metadata");
    return json_is_object (metadata) ? json_deep_copy (metadata) : json_object ();
}

//  The output of the displays so far (in OUTPUTS, each matched by index in IDS) that
//  DISPLAY_ID names, or NULL.
static json_t *
s_display (json_t *outputs, json_t *ids, const char *display_id)
{
    size_t i;
    json_t *id;
    json_array_foreach (ids, i, id)
    {
        if (json_is_string (id) && strcmp (json_string_value (id), display_id) == 0)
            return json_array_get (outputs, i);
    }
    return NULL;
}

//  Appends RUN's displays and results to OUTPUTS (IDS: their display ids, by index).
static void
s_add_displays (json_t *outputs, json_t *ids, const cg_notebook_run_t *run)
{
    size_t i;
    json_t *item;
    json_array_foreach (run->outputs, i, item)
    {
        const char *type = json_string_value (json_object_get (item, "type"));
        json_t *data = json_object_get (item, "data");
        const char *display_id = json_string_value (json_object_get (item, "display_id"));
        if (!type || !json_is_object (data))
            continue;
        if (strcmp (type, "update_display_data") == 0) {
            json_t *shown = display_id ? s_display (outputs, ids, display_id) : NULL;
            if (shown) {
                json_object_set_new (shown, "data", s_bundle (data));
                json_object_set_new (shown, "metadata", s_metadata (item));
            }
            continue;
        }
        bool result = strcmp (type, "execute_result") == 0;
        if (!result && strcmp (type, "display_data") != 0)
            continue;
        json_t *output = json_pack ("{s:s, s:o, s:o}", "output_type", type, "data", s_bundle (data),
                                    "metadata", s_metadata (item));
        if (result)
            json_object_set_new (output, "execution_count",
                                 run->execution_count > 0 ? json_integer (run->execution_count)
                                                          : json_null ());
        json_array_append_new (outputs, output);
        json_array_append_new (ids, display_id ? json_string (display_id) : json_null ());
    }
}

static void
s_add_stream (json_t *outputs, json_t *ids, const char *name, const char *text)
{
    if (!text || !*text)
        return;
    json_array_append_new (outputs, json_pack ("{s:s, s:s, s:s}", "output_type", "stream", "name",
                                               name, "text", text));
    json_array_append_new (ids, json_null ());
}

json_t *
cg_notebook_cell (const cg_notebook_run_t *run)
{
    json_t *outputs = json_array ();
    json_t *ids = json_array ();
    s_add_stream (outputs, ids, "stdout", run->stdout_text);
    s_add_stream (outputs, ids, "stderr", run->stderr_text);
    if (run->outputs)
        s_add_displays (outputs, ids, run);
    json_decref (ids);
    if (run->error) {
        //  "Name: value"; the traceback is in the stderr stream already.
        const char *colon = strstr (run->error, ": ");
        json_t *ename = colon ? json_stringn (run->error, (size_t)(colon - run->error))
                              : json_string (run->error);
        json_array_append_new (outputs, json_pack ("{s:s, s:o, s:s, s:[]}", "output_type", "error",
                                                   "ename", ename ? ename : json_string ("Error"),
                                                   "evalue", colon ? colon + 2 : "", "traceback"));
    }
    json_t *cellgate = json_pack ("{s:s, s:s?, s:s?}", "language", run->language, "execution_id",
                                  run->execution_id, "status", run->status);
    return json_pack ("{s:s, s:{s:o}, s:o, s:s, s:o}", "cell_type", "code", "metadata", "cellgate",
                      cellgate, "execution_count",
                      run->execution_count > 0 ? json_integer (run->execution_count) : json_null (),
                      "source", run->code ? run->code : "", "outputs", outputs);
}

//  The line that says the record is full: runs after it were left out.
#define S_FULL_LINE "{\"cellgate_notebook_full\":true}"

//  True when the file FD of SIZE bytes ends with the full line already.
static bool
s_ends_full (int fd, off_t size)
{
    char tail[sizeof S_FULL_LINE];
    off_t len = (off_t)sizeof tail; /* the line and its newline */
    return size >= len && pread (fd, tail, sizeof tail, size - len) == len
           && memcmp (tail, S_FULL_LINE "\n", sizeof tail) == 0;
}

//  A copy of CELL's line without its outputs (metadata.cellgate.outputs_dropped). Caller frees.
static char *
s_slim_line (json_t *cell)
{
    json_t *slim = json_deep_copy (cell);
    json_object_set_new (slim, "outputs", json_array ());
    json_object_set_new (json_object_get (json_object_get (slim, "metadata"), "cellgate"),
                         "outputs_dropped", json_true ());
    char *line = json_dumps (slim, JSON_COMPACT);
    json_decref (slim);
    return line;
}

int
cg_notebook_append (const char *path, json_t *cell, size_t max, bool *left_out, cg_error_t **err)
{
    if (left_out)
        *left_out = false;
    cleanup_close int fd = open (path, O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    struct stat st;
    if (fd < 0 || fstat (fd, &st) < 0)
        return cg_error_set (err, errno, "open %s: %s", path, strerror (errno));
    //  The cell, else the cell without outputs, below MAX less the full line's room.
    size_t size = (size_t)st.st_size;
    size_t room = max > CG_NOTEBOOK_FULL_ROOM ? max - CG_NOTEBOOK_FULL_ROOM : 0;
    char *line = json_dumps (cell, JSON_COMPACT);
    if (line && size + strlen (line) + 1 > room) {
        free (line);
        line = s_slim_line (cell);
    }
    if (!line || size + strlen (line) + 1 > room) {
        free (line);
        if (left_out)
            *left_out = true;
        if (s_ends_full (fd, st.st_size) || size + sizeof S_FULL_LINE > max)
            return 0;
        line = cg_xstrdup (S_FULL_LINE);
    }
    size_t len = strlen (line);
    line[len] = '\n'; //  the NUL becomes the line's end
    ssize_t written = write (fd, line, len + 1);
    free (line);
    if (written != (ssize_t)(len + 1))
        return cg_error_set (err, written < 0 ? errno : EIO, "write %s: %s", path,
                             written < 0 ? strerror (errno) : "short write");
    return 0;
}

//  --------------------------------------------------------------------------
//  The notebook

static json_t *
s_kernelspec (const char *language)
{
    const cg_language_t *l = cg_kernels_find (cg_kernels (), language);
    if (l && !l->command)
        return json_pack ("{s:{s:s, s:s, s:s}, s:O}", "kernelspec", "name", l->kernel_name,
                          "display_name", l->display_name, "language", l->spec_language,
                          "language_info", l->language_info);
    return json_pack ("{s:{s:s, s:s, s:s}, s:{s:s}}", "kernelspec", "name", language,
                      "display_name", language, "language", language, "language_info", "name",
                      language);
}

//  A markdown cell showing CELL's code, which ran in another language than the notebook's.
static json_t *
s_foreign (json_t *cell, const char *language)
{
    const char *source = json_string_value (json_object_get (cell, "source"));
    cleanup_free char *text =
        cg_strdupf ("*Ran in %s:*\n\n```%s\n%s\n```", language, language, source ? source : "");
    return json_pack ("{s:s, s:{}, s:s}", "cell_type", "markdown", "metadata", "source", text);
}

//  CELL (a line's object) made into a notebook cell with id N for the notebook's LANGUAGE,
//  or NULL when it is no cell of ours.
static json_t *
s_cell (json_t *cell, const char *language, size_t n, bool *code)
{
    json_t *meta = json_object_get (json_object_get (cell, "metadata"), "cellgate");
    const char *ran = json_string_value (json_object_get (meta, "language"));
    if (!ran || !json_is_string (json_object_get (cell, "source"))
        || !json_is_array (json_object_get (cell, "outputs")))
        return NULL;
    *code = strcmp (ran, language) == 0;
    json_t *count = json_object_get (cell, "execution_count");
    //  Made anew from the fields nbformat has: the line is ours, but a notebook from it
    //  is valid whatever the file holds.
    json_t *made = *code ? json_pack ("{s:s, s:O, s:O, s:O, s:O}", "cell_type", "code", "metadata",
                                      json_object_get (cell, "metadata"), "execution_count",
                                      json_integer_value (count) > 0 ? count : json_null (),
                                      "source", json_object_get (cell, "source"), "outputs",
                                      json_object_get (cell, "outputs"))
                         : s_foreign (cell, ran);
    cleanup_free char *id = cg_strdupf ("cell-%zu", n);
    json_object_set_new (made, "id", json_string (id));
    return made;
}

//  The notebook cell of the LEN bytes at LINE (untrusted) as the notebook's N'th, or NULL
//  when it is no cell of ours; *FULL set when it is the line saying the record is full.
static json_t *
s_line_cell (const char *line, size_t len, const char *language, size_t n, bool *code, bool *full)
{
    json_t *value = json_loadb (line, len, JSON_REJECT_DUPLICATES, NULL);
    json_t *cell = json_is_object (value) ? s_cell (value, language, n, code) : NULL;
    if (json_is_true (json_object_get (value, "cellgate_notebook_full")))
        *full = true;
    json_decref (value);
    return cell;
}

//  The last cell of a notebook whose record was full, the notebook's N'th.
static json_t *
s_full_note (size_t n)
{
    cleanup_free char *id = cg_strdupf ("cell-%zu", n);
    return json_pack ("{s:s, s:s, s:{}, s:s}", "id", id, "cell_type", "markdown", "metadata",
                      "source",
                      "*The session's notebook record reached its limit (--notebook-max-mb): "
                      "later runs are not in this notebook.*");
}

json_t *
cg_notebook_from_lines (const char *text, size_t len, const char *language, size_t *code_cells)
{
    json_t *cells = json_array ();
    size_t codes = 0;
    bool full = false;
    for (const char *at = text, *end = text + len; at < end;) {
        const char *nl = memchr (at, '\n', (size_t)(end - at));
        size_t n = (size_t)((nl ? nl : end) - at);
        bool code = false;
        json_t *cell = s_line_cell (at, n, language, json_array_size (cells) + 1, &code, &full);
        if (cell) {
            json_array_append_new (cells, cell);
            codes += code;
        }
        at += n + 1;
    }
    if (full)
        json_array_append_new (cells, s_full_note (json_array_size (cells) + 1));
    if (code_cells)
        *code_cells = codes;
    return json_pack ("{s:i, s:i, s:o, s:o}", "nbformat", 4, "nbformat_minor", 5, "metadata",
                      s_kernelspec (language), "cells", cells);
}

//  A reader of lines from a stream, holding at most one line (up to its MAX) at a time.
typedef struct {
    FILE *in;
    char chunk[64 * 1024];
    size_t at, end;
    char *line; /* the line read, LEN bytes (of CAP) */
    size_t len, cap, max;
} s_reader_t;

//  Reads the next line into READER's line. Returns false at the end; *TOO_LONG when the
//  line had more than MAX bytes (its start kept, the rest read through).
static bool
s_next_line (s_reader_t *reader, bool *too_long)
{
    reader->len = 0;
    *too_long = false;
    bool any = false;
    while (true) {
        if (reader->at == reader->end) {
            reader->end = fread (reader->chunk, 1, sizeof reader->chunk, reader->in);
            reader->at = 0;
            if (reader->end == 0)
                return any;
        }
        any = true;
        const char *from = reader->chunk + reader->at;
        const char *nl = memchr (from, '\n', reader->end - reader->at);
        size_t n = nl ? (size_t)(nl - from) : reader->end - reader->at;
        if (!*too_long && reader->len + n <= reader->max) {
            if (reader->len + n > reader->cap || !reader->line) { /* an empty first line too */
                size_t cap = (reader->len + n) * 2;
                reader->cap = cap < reader->max ? cap : reader->max;
                reader->line = cg_xrealloc (reader->line, reader->cap + 1);
            }
            memcpy (reader->line + reader->len, from, n);
            reader->len += n;
        }
        else
            *too_long = true;
        reader->at += n + (nl ? 1 : 0);
        if (nl)
            return true;
    }
}

int
cg_notebook_write (FILE *in, const char *language, size_t line_max, FILE *out, size_t *cells_p,
                   size_t *code_cells, cg_error_t **err)
{
    json_t *metadata = s_kernelspec (language);
    fputs ("{\n \"nbformat\": 4,\n \"nbformat_minor\": 5,\n \"metadata\": ", out);
    json_dumpf (metadata, out, JSON_INDENT (1));
    json_decref (metadata);
    fputs (",\n \"cells\": [", out);
    s_reader_t *reader = cg_xcalloc (1, sizeof *reader);
    *reader = (s_reader_t){.in = in, .max = line_max};
    size_t cells = 0, codes = 0;
    bool full = false, too_long = false;
    while (s_next_line (reader, &too_long)) {
        bool code = false;
        json_t *cell =
            too_long ? NULL
                     : s_line_cell (reader->line, reader->len, language, cells + 1, &code, &full);
        if (!cell)
            continue;
        fputs (cells ? ",\n" : "\n", out);
        json_dumpf (cell, out, JSON_INDENT (1));
        json_decref (cell);
        cells++;
        codes += code;
    }
    free (reader->line);
    free (reader);
    if (full) {
        json_t *note = s_full_note (++cells);
        fputs (cells > 1 ? ",\n" : "\n", out);
        json_dumpf (note, out, JSON_INDENT (1));
        json_decref (note);
    }
    fputs ("\n ]\n}\n", out);
    if (cells_p)
        *cells_p = cells;
    if (code_cells)
        *code_cells = codes;
    if (ferror (in))
        return cg_error_set (err, EIO, "read the notebook record: %s", strerror (errno));
    if (fflush (out) != 0 || ferror (out))
        return cg_error_set (err, errno ? errno : EIO, "write the notebook: %s",
                             strerror (errno ? errno : EIO));
    return 0;
}
