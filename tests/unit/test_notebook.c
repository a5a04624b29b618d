/*  Unit tests for cg_notebook's record: cells appended past the cap never take the file past
    it (cut to their code near it, left out at it with one line saying so), and the notebook
    streamed from the record (cg_notebook_write) is the one made in memory, ending with a
    note when runs were left out. */
#define _GNU_SOURCE
#include "artifacts/cg_notebook.h"
#include "base/cg_util.h"
#include "base/cg_fs.h"
#include "cg_test.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define S_MAX 4096

static json_t *
s_cell (int n, size_t output_bytes)
{
    char *text = cg_xmalloc (output_bytes + 1);
    memset (text, 'o', output_bytes);
    text[output_bytes] = '\0';
    cleanup_free char *code = cg_strdupf ("x = %d", n);
    cg_notebook_run_t run = {.language = "python",
                             .code = code,
                             .stdout_text = text,
                             .execution_count = n,
                             .status = "success"};
    json_t *cell = cg_notebook_cell (&run);
    free (text);
    return cell;
}

int
main (void)
{
    char dir[] = "/tmp/cg-test-notebook-XXXXXX";
    if (!mkdtemp (dir))
        return 1;
    cleanup_free char *path = cg_strdupf ("%s/notebook.jsonl", dir);
    cg_error_t *err = NULL;
    int left = 0, slim = 0;
    for (int n = 1; n <= 40; n++) {
        json_t *cell = s_cell (n, n % 3 == 0 ? 2000 : 100);
        bool left_out = false;
        EXPECT (cg_notebook_append (path, cell, S_MAX, &left_out, &err) == 0, "append %d: %s", n,
                cg_error_message (err));
        json_decref (cell);
        left += left_out;
        struct stat st;
        EXPECT (stat (path, &st) == 0 && st.st_size <= S_MAX, "after %d the file is %ld bytes", n,
                (long)st.st_size);
    }
    EXPECT (left > 0, "cells were left out past the cap");
    size_t len = 0;
    cleanup_free char *text = cg_read_file (path, S_MAX, &len, &err);
    EXPECT (text != NULL, "read the record");
    size_t full_lines = 0;
    for (const char *p = text; p && (p = strstr (p, "cellgate_notebook_full")); p++)
        full_lines++;
    for (const char *p = text; p && (p = strstr (p, "outputs_dropped")); p++)
        slim++;
    EXPECT (full_lines == 1, "one line says the record is full: %zu", full_lines);
    EXPECT (slim > 0, "a cell near the cap kept its code without outputs");
    size_t codes = 0;
    json_t *notebook = cg_notebook_from_lines (text ? text : "", len, "python", &codes);
    json_t *cells = json_object_get (notebook, "cells");
    const char *last = json_string_value (
        json_object_get (json_array_get (cells, json_array_size (cells) - 1), "source"));
    EXPECT (last && strstr (last, "reached its limit"),
            "the notebook ends saying runs were left out");
    EXPECT (codes + 1 == json_array_size (cells), "every line a code cell, and the note");
    //  Streamed: the same notebook.
    FILE *in = fopen (path, "r");
    char *written = NULL;
    size_t written_len = 0, streamed_cells = 0, streamed_codes = 0;
    FILE *out = open_memstream (&written, &written_len);
    EXPECT (cg_notebook_write (in, "python", S_MAX, out, &streamed_cells, &streamed_codes, &err)
                == 0,
            "streamed: %s", cg_error_message (err));
    fclose (in);
    fclose (out);
    json_t *streamed = json_loadb (written, written_len, 0, NULL);
    EXPECT (streamed && json_equal (streamed, notebook), "the streamed notebook is the same");
    EXPECT (streamed_codes == codes && streamed_cells == json_array_size (cells), "same counts");
    //  A line longer than the reader's limit is skipped, the others kept.
    in = fopen (path, "r");
    free (written);
    written = NULL;
    out = open_memstream (&written, &written_len);
    EXPECT (cg_notebook_write (in, "python", 200, out, &streamed_cells, &streamed_codes, &err) == 0,
            "streamed with a small line limit");
    fclose (in);
    fclose (out);
    json_t *short_lines = json_loadb (written, written_len, 0, NULL);
    EXPECT (short_lines && streamed_codes < codes, "long lines skipped: %zu of %zu", streamed_codes,
            codes);
    json_decref (short_lines);
    json_decref (streamed);
    json_decref (notebook);
    free (written);
    cg_error_destroy (&err);
    unlink (path);
    rmdir (dir);
    printf ("%d passed, %d failed\n", s_passes, s_failures);
    return s_failures ? 1 : 0;
}
