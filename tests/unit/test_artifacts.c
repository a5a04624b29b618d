/*  Unit tests: the output buffer that keeps a head and a tail (cg_text_t), seed 002's
    head + tail cut with its marker, and the artifact list built from a workspace diff. */
#include "artifacts/cg_artifacts.h"
#include "bridge/cg_run.h"
#include "base/cg_util.h"
#include "cg_test.h"

#include <string.h>

static void
s_text_under_max (void)
{
    const char *name = "text under max";
    cg_run_t run;
    cg_run_init (&run, 10);
    cg_text_append (&run.out, "hello", 5);
    cg_text_append (&run.out, "world", 5);
    cg_text_finish (&run.out);
    int ok = run.out.len == 10 && strcmp (run.out.data, "helloworld") == 0 && run.out.dropped == 0;
    cg_run_clear (&run);
    CHECK (ok, "ten bytes fit a max of ten");
    s_passes++;
}

//  Appends TEXT in chunks of CHUNK bytes to a buffer of MAX and checks what is kept.
static void
s_text_case (const char *name, size_t max, const char *text, size_t chunk, const char *kept,
             size_t cut, size_t dropped, size_t dropped_chars)
{
    cg_run_t run;
    cg_run_init (&run, max);
    size_t len = strlen (text);
    for (size_t at = 0; at < len; at += chunk)
        cg_text_append (&run.out, text + at, len - at < chunk ? len - at : chunk);
    cg_text_finish (&run.out);
    cleanup_free char *got = cg_xstrdup (run.out.data);
    size_t got_cut = run.out.cut, got_dropped = run.out.dropped, got_chars = run.out.dropped_chars;
    cg_run_clear (&run);
    CHECK (strcmp (got, kept) == 0, "kept '%s', want '%s'", got, kept);
    CHECK (got_dropped == dropped, "dropped %zu, want %zu", got_dropped, dropped);
    CHECK (got_chars == dropped_chars, "dropped chars %zu, want %zu", got_chars, dropped_chars);
    CHECK (dropped == 0 || got_cut == cut, "cut %zu, want %zu", got_cut, cut);
    s_passes++;
}

static void
s_cut_case (const char *name, const char *text, size_t head, size_t tail, size_t cut, size_t extra,
            const char *want)
{
    size_t got_len = 0;
    cleanup_free char *got = cg_output_cut (text, strlen (text), head, tail, cut, extra, &got_len);
    CHECK (got_len == strlen (got), "length %zu, want %zu", got_len, strlen (got));
    CHECK (strcmp (got, want) == 0, "got '%s', want '%s'", got, want);
    s_passes++;
}

static void
s_join (void)
{
    const char *name = "join puts the marker at the cut";
    size_t got_len = 0;
    cleanup_free char *got = cg_output_join ("abcdef", 6, 3, 7, &got_len);
    CHECK (got_len == strlen (got), "length %zu", got_len);
    CHECK (strcmp (got, "abc\n\n[... truncated 7 characters ...]\n\ndef") == 0, "got '%s'", got);
    s_passes++;
}

static void
s_from_diff (void)
{
    const char *name = "artifacts from a diff";
    json_t *before = json_pack ("{s:[i,i], s:[i,i], s:[i,i]}", "a.csv", 5, 1, "keep.txt", 3, 1,
                                "gone.txt", 1, 1);
    json_t *after = json_pack ("{s:[i,i], s:[i,i], s:[i,i]}", "a.csv", 9, 2, "keep.txt", 3, 1,
                               "out/chart.png", 70, 2);
    json_t *diff = cg_workspace_diff (before, after);
    json_t *list = cg_artifacts_from_diff (diff, after);
    cleanup_free char *text = json_dumps (list, JSON_COMPACT | JSON_SORT_KEYS);
    cleanup_free char *diff_text = json_dumps (diff, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref (before);
    json_decref (after);
    json_decref (diff);
    json_decref (list);
    CHECK (
        strcmp (
            diff_text,
            "{\"created\":[\"out/chart.png\"],\"deleted\":[\"gone.txt\"],\"modified\":[\"a.csv\"]}")
            == 0,
        "diff %s", diff_text);
    CHECK (strcmp (text, "[{\"filename\":\"a.csv\",\"mime_type\":\"text/csv\",\"path\":\"/mnt/data/"
                         "a.csv\",\"size_bytes\":9},"
                         "{\"filename\":\"chart.png\",\"mime_type\":\"image/png\",\"path\":\"/mnt/"
                         "data/out/chart.png\",\"size_bytes\":70}]")
               == 0,
           "list %s", text);
    s_passes++;
}

int
main (void)
{
    s_text_under_max ();
    //  Over max 10: the first 5 bytes and the last 5, whatever the chunking.
    const char *alphabet = "abcdefghijklmnopqrstuvwxyz";
    s_text_case ("one big append", 10, alphabet, 26, "abcdevwxyz", 5, 16, 16);
    s_text_case ("byte by byte", 10, alphabet, 1, "abcdevwxyz", 5, 16, 16);
    s_text_case ("chunks of 3", 10, alphabet, 3, "abcdevwxyz", 5, 16, 16);
    s_text_case ("chunks of 7", 10, alphabet, 7, "abcdevwxyz", 5, 16, 16);
    s_text_case ("just over", 10, "abcdefghijk", 4, "abcdeghijk", 5, 1, 1);
    s_text_case ("odd max", 7, "0123456789", 2, "0126789", 3, 3, 3);
    //  é is two bytes: 11 of them are 22 bytes; 12 dropped bytes are 6 characters.
    s_text_case ("utf-8 counted in characters", 10, "ééééééééééé", 3, "ééééé", 5, 12, 6);

    //  Seed 002's cut: head + marker + tail, N the characters left out.
    s_cut_case ("plain cut", "0123456789", 3, 2, CG_OUTPUT_NO_CUT, 0,
                "012\n\n[... truncated 5 characters ...]\n\n89");
    s_cut_case ("utf-8 head and tail move to boundaries", "aéééb", 2, 2, CG_OUTPUT_NO_CUT, 0,
                "a\n\n[... truncated 3 characters ...]\n\nb");
    s_cut_case ("dropped characters are counted", "abcdefgh", 2, 2, 4, 100,
                "ab\n\n[... truncated 104 characters ...]\n\ngh");
    s_cut_case ("the head stops at the cut", "abcdefgh", 6, 2, 3, 10,
                "abc\n\n[... truncated 13 characters ...]\n\ngh");
    s_cut_case ("zero head", "abcdef", 0, 2, CG_OUTPUT_NO_CUT, 0,
                "\n\n[... truncated 4 characters ...]\n\nef");
    //  Found by fuzz_text: the head's last character split at the cut is left out whole,
    //  and a drop of only continuation bytes (0 characters) still keeps head and tail apart.
    s_cut_case ("a character split at the cut", "ab\xc3xyz", 10, 10, 3, 1,
                "ab\n\n[... truncated 2 characters ...]\n\nxyz");
    s_cut_case ("a drop of continuation bytes only", "\xf0\x9f\x98\x80\xf0 2end", 24, 0, 5, 0,
                "\xf0\x9f\x98\x80\n\n[... truncated 6 characters ...]\n\n");
    s_join ();
    s_from_diff ();
    printf ("%d passed, %d failed\n", s_passes, s_failures);
    return s_failures ? 1 : 0;
}
