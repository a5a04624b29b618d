/*  fuzz_text — output cutting and UTF-8 handling: a stream kept by cg_text_append in
    random chunks under a small limit, joined by cg_text_finish, then cut for a result by
    cg_output_cut (and joined for the saved file by cg_output_join) the way a session
    fills stdout/stderr.

    Input: four bytes (the kept limit 1-256, the result's cap 0-255, head 0-255, tail
    0-255), then chunks: a length byte and that many bytes of output.

    Invariants: the kept text is within its limit and is the stream's first bytes, then
    its last bytes at the cut; the dropped counts add up; the cut result is a prefix of
    the stream, the marker, a suffix of the stream, within HEAD and TAIL bytes, and its
    marker counts exactly the characters left out; when the stream is valid UTF-8 the
    cut result is valid UTF-8 too (no character is ever split). */
#define _GNU_SOURCE
#include "cg_fuzz.h"

#include "artifacts/cg_artifacts.h"
#include "bridge/cg_run.h"
#include "base/cg_util.h"

#include <stdio.h>
#include <string.h>

//  Checks the text as kept against the whole stream ALL (ALL_LEN bytes).
static void
s_check_kept (const cg_text_t *text, const uint8_t *all, size_t all_len)
{
    CG_FUZZ_CHECK (text->len <= text->max, "kept within the limit");
    CG_FUZZ_CHECK (text->data[text->len] == '\0', "kept text NUL-terminated");
    CG_FUZZ_CHECK (text->len + text->dropped == all_len, "kept + dropped = stream");
    if (!text->dropped) {
        CG_FUZZ_CHECK (memcmp (text->data, all, all_len) == 0, "all kept when it fits");
        return;
    }
    size_t cut = text->cut;
    CG_FUZZ_CHECK (cut <= text->len, "cut within the kept text");
    CG_FUZZ_CHECK (memcmp (text->data, all, cut) == 0, "head is the stream's start");
    CG_FUZZ_CHECK (memcmp (text->data + cut, all + all_len - (text->len - cut), text->len - cut)
                       == 0,
                   "tail is the stream's end");
    CG_FUZZ_CHECK (text->dropped_chars == cg_fuzz_utf8_leads (all + cut, text->dropped),
                   "dropped characters counted");
}

//  Returns true when RESULT (RESULT_LEN bytes) read with its marker at byte HEAD_LEN is a
//  correct cut of the stream ALL: the head its start within HEAD bytes, the tail its end
//  within TAIL bytes, not overlapping, and the marker counting exactly the characters
//  left out (UTF-8 lead bytes, so that it holds for any bytes).
static bool
s_cut_ok (const char *result, size_t result_len, size_t head_len, size_t head, size_t tail,
          const uint8_t *all, size_t all_len)
{
    //  By hand, not sscanf: a format's whitespace would also eat the tail's.
    static const char prefix[] = "\n\n[... truncated ", suffix[] = " characters ...]\n\n";
    const char *p = result + head_len;
    if (head_len > head || head_len > all_len || memcmp (result, all, head_len) != 0
        || strncmp (p, prefix, sizeof prefix - 1) != 0)
        return false;
    p += sizeof prefix - 1;
    size_t omitted = 0, digits = 0;
    for (; p[digits] >= '0' && p[digits] <= '9' && digits < 20; digits++)
        omitted = omitted * 10 + (size_t)(p[digits] - '0');
    if (digits == 0 || strncmp (p + digits, suffix, sizeof suffix - 1) != 0)
        return false;
    size_t used = (size_t)(p + digits + sizeof suffix - 1 - (result + head_len));
    const char *tail_text = result + head_len + used;
    size_t tail_len = result_len - head_len - used;
    return tail_len <= tail && head_len + tail_len <= all_len
           && memcmp (tail_text, all + all_len - tail_len, tail_len) == 0
           && cg_fuzz_utf8_leads (result, head_len) + omitted
                      + cg_fuzz_utf8_leads (tail_text, tail_len)
                  == cg_fuzz_utf8_leads (all, all_len);
}

//  Checks cg_output_cut's result for the kept text TEXT of the stream ALL.
static void
s_check_cut (const cg_text_t *text, size_t head, size_t tail, const uint8_t *all, size_t all_len)
{
    size_t result_len = 0;
    cleanup_free char *result = cg_output_cut (text->data, text->len, head, tail,
                                               text->dropped ? text->cut : CG_OUTPUT_NO_CUT,
                                               text->dropped_chars, &result_len);
    CG_FUZZ_CHECK (result[result_len] == '\0', "the cut is NUL-terminated");
    //  The stream may hold marker-like text (and NULs) itself: one reading must be right.
    static const char marker[] = "\n\n[... truncated ";
    bool ok = false;
    for (const char *m = memmem (result, result_len, marker, sizeof marker - 1); m && !ok;
         m = memmem (m + 1, result_len - (size_t)(m + 1 - result), marker, sizeof marker - 1))
        ok = s_cut_ok (result, result_len, (size_t)(m - result), head, tail, all, all_len);
    CG_FUZZ_CHECK (
        ok, "the cut is the stream's start, a marker counting what is left out, the stream's end");
    if (cg_fuzz_utf8_valid (all, all_len))
        CG_FUZZ_CHECK (cg_fuzz_utf8_valid (result, result_len), "valid UTF-8 stays valid when cut");
}

//  Checks cg_output_join: the kept text with the marker for what was dropped at the cut.
static void
s_check_join (const cg_text_t *text)
{
    size_t whole_len = 0;
    cleanup_free char *whole =
        cg_output_join (text->data, text->len, text->cut, text->dropped_chars, &whole_len);
    char marker[64];
    int used = snprintf (marker, sizeof marker, "\n\n[... truncated %zu characters ...]\n\n",
                         text->dropped_chars);
    CG_FUZZ_CHECK (
        whole_len == text->len + (size_t)used && whole[whole_len] == '\0'
            && memcmp (whole, text->data, text->cut) == 0
            && memcmp (whole + text->cut, marker, (size_t)used) == 0
            && memcmp (whole + text->cut + used, text->data + text->cut, text->len - text->cut)
                   == 0,
        "the saved text is head, marker, tail");
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
    cg_fuzz_init ();
    cg_fuzz_in_t in = {data, size};
    size_t max = 1 + (size_t)cg_fuzz_byte (&in);
    size_t cap = cg_fuzz_byte (&in);
    size_t head = cg_fuzz_byte (&in);
    size_t tail = cg_fuzz_byte (&in);

    cg_run_t run;
    cg_run_init (&run, max);
    cg_text_t *text = &run.out;
    uint8_t *all = cg_xmalloc (size + 1);
    size_t all_len = 0;
    while (cg_fuzz_more (&in)) {
        size_t want = cg_fuzz_byte (&in);
        size_t len = want < in.size ? want : in.size;
        //  A copy of exactly the chunk, so ASan sees a read past it.
        char *chunk = cg_xmalloc (len ? len : 1);
        memcpy (chunk, in.data, len);
        cg_text_append (text, chunk, len);
        free (chunk);
        memcpy (all + all_len, in.data, len);
        all_len += len;
        in.data += len;
        in.size -= len;
    }
    cg_text_finish (text);
    s_check_kept (text, all, all_len);
    //  As a session does: cut when the stream is over the result's cap, save the whole.
    if (text->len + text->dropped > cap)
        s_check_cut (text, head, tail, all, all_len);
    if (text->dropped)
        s_check_join (text);
    free (all);
    cg_run_clear (&run);
    return 0;
}
