/*  cg_result — what one tools/call result may weigh: each heavy payload once, and the
    whole result within the client's budget, with what was left out replaced by links to
    the files the server saved and a note saying so. */
#include "mcp/cg_result.h"

#include "artifacts/cg_artifacts.h"
#include "base/cg_util.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

//  Strings and display data shorter than this are never worth leaving out.
#define S_MIN_CUT 1024
//  What a cut string keeps at least (head + tail).
#define S_KEEP_MIN 512
//  The note lists at most this many bytes of what was left out, then a count.
#define S_NOTE_MAX 3000
//  As the transports send JSON: 15 significant digits, which every double holds, so that a
//  number (a calculation's result, a Python float) is sent as a person would write it.
#define S_DUMP_FLAGS (JSON_COMPACT | JSON_REAL_PRECISION (15))

//  --------------------------------------------------------------------------
//  Sizes

static int
s_count_cb (const char *buffer, size_t size, void *arg)
{
    (void)buffer;
    *(size_t *)arg += size;
    return 0;
}

size_t
cg_result_size (json_t *value)
{
    size_t size = 0;
    json_dump_callback (value, s_count_cb, &size, S_DUMP_FLAGS | JSON_ENCODE_ANY);
    return size;
}

//  The decoded size of base64 TEXT (whitespace, which kernels may put in, not counted).
static size_t
s_base64_bytes (const char *text)
{
    size_t digits = 0, padding = 0;
    for (const char *p = text; p && *p; p++) {
        if (*p == '=')
            padding++;
        else if (*p != '\n' && *p != '\r' && *p != ' ')
            digits++;
    }
    return (digits + padding) / 4 * 3 - (padding > 2 ? 2 : padding);
}

static void
s_add_omitted (json_t *item, const char *mime)
{
    json_t *omitted = json_object_get (item, "omitted");
    if (!json_is_array (omitted)) {
        omitted = json_array ();
        json_object_set_new (item, "omitted", omitted);
    }
    json_array_append_new (omitted, json_string (mime));
}

void
cg_result_link_output (json_t *item, const char *mime, size_t content_index)
{
    json_t *data = json_object_get (item, "data");
    const char *text = json_string_value (json_object_get (data, mime));
    if (!text)
        return;
    json_object_set_new (item, "mime_type", json_string (mime));
    json_object_set_new (item, "size_bytes", json_integer ((json_int_t)s_base64_bytes (text)));
    json_object_set_new (item, "content_index", json_integer ((json_int_t)content_index));
    s_add_omitted (item, mime);
    json_object_del (data, mime);
}

//  --------------------------------------------------------------------------
//  Fitting

typedef struct {
    json_t *content;     /* the result's content blocks */
    json_t *structured;  /* its structuredContent, or NULL */
    size_t size;         /* the result's serialized size, kept current */
    size_t budget;       /* what SIZE must come down to (the note's room taken off) */
    size_t total_budget; /* the budget the caller gave, for the note */
    bool links;          /* resource_link blocks are allowed */
    char *note;          /* what was left out, one line each */
    size_t note_len;
    size_t left_out; /* things left out */
    size_t unlisted; /* of those, not in the note (it was full) */
} s_fit_t;

static bool
s_over (const s_fit_t *fit)
{
    return fit->size > fit->budget;
}

static void s_note (s_fit_t *fit, const char *fmt, ...) __attribute__ ((format (printf, 2, 3)));

static void
s_note (s_fit_t *fit, const char *fmt, ...)
{
    fit->left_out++;
    if (fit->note_len >= S_NOTE_MAX) {
        fit->unlisted++;
        return;
    }
    va_list args;
    va_start (args, fmt);
    cleanup_free char *line = cg_vstrdupf (fmt, args);
    va_end (args);
    size_t len = strlen (line);
    if (len > 400) {
        len = 397;
        while (len > 0 && ((unsigned char)line[len] & 0xC0) == 0x80)
            len--; /* never inside a UTF-8 character */
        memcpy (line + len, "...", 4);
        len += 3;
    }
    fit->note = cg_xrealloc (fit->note, fit->note_len + len + 4);
    memcpy (fit->note + fit->note_len, "\n- ", 3);
    memcpy (fit->note + fit->note_len + 3, line, len);
    fit->note_len += len + 3;
    fit->note[fit->note_len] = '\0';
}

//  Replaces CONTAINER's member (KEY for an object, else INDEX of an array) by VALUE
//  (stolen), keeping FIT's size current.
static void
s_replace (s_fit_t *fit, json_t *container, const char *key, size_t index, json_t *value)
{
    json_t *old = key ? json_object_get (container, key) : json_array_get (container, index);
    size_t before = old ? cg_result_size (old) : 0;
    size_t after = value ? cg_result_size (value) : 0;
    if (key && !old && value)
        after += strlen (key) + 4; /* a new member brings its key, quotes, colon, comma */
    if (key && !value) {
        //  A removed member takes its key, quotes, colon and a comma with it.
        before += strlen (key) + 4;
        json_object_del (container, key);
    }
    else if (key)
        json_object_set_new (container, key, value);
    else
        json_array_set_new (container, index, value);
    fit->size = fit->size - before + after;
}

//  The output item of structuredContent.outputs whose image is content block INDEX.
static json_t *
s_output_for_block (s_fit_t *fit, size_t index)
{
    size_t i;
    json_t *item;
    json_array_foreach (json_object_get (fit->structured, "outputs"), i, item)
    {
        json_t *at = json_object_get (item, "content_index");
        if (json_is_integer (at) && (size_t)json_integer_value (at) == index)
            return item;
    }
    return NULL;
}

static const char *
s_basename (const char *path)
{
    const char *slash = strrchr (path, '/');
    return slash ? slash + 1 : path;
}

//  Where a left-out payload can be had: " (the file PATH, download: URL)" or a reason.
static char *
s_where (const char *path, const char *url)
{
    if (path && url)
        return cg_strdupf ("the file %s, download: %s", path, url);
    if (path)
        return cg_strdupf ("the file %s (read_artifact or list_artifacts; no download listener)",
                           path);
    return cg_xstrdup ("not saved as a file (a one-shot run, or --save-displays left it out)");
}

//  Something that could be left out: a content block, a display's data, a string.
typedef struct {
    json_t *json; /* the block, the output, or the string (borrowed) */
    char *name;   /* the data's MIME type, or where the string is */
    size_t index; /* the block's index in content */
    size_t size;  /* what it weighs */
} s_piece_t;

typedef struct {
    s_piece_t *list;
    size_t count, cap;
} s_pieces_t;

static void
s_pieces_add (s_pieces_t *pieces, json_t *json, const char *name, size_t index, size_t size)
{
    if (pieces->count == pieces->cap) {
        pieces->cap = pieces->cap ? pieces->cap * 2 : 16;
        pieces->list = cg_xrealloc (pieces->list, pieces->cap * sizeof *pieces->list);
    }
    pieces->list[pieces->count++] = (s_piece_t){json, name ? cg_xstrdup (name) : NULL, index, size};
}

static int
s_piece_desc (const void *a, const void *b)
{
    const s_piece_t *x = a, *y = b;
    return x->size < y->size ? 1 : x->size > y->size ? -1 : 0;
}

//  Orders PIECES largest first.
static void
s_pieces_sort (s_pieces_t *pieces)
{
    if (pieces->count > 1)
        qsort (pieces->list, pieces->count, sizeof *pieces->list, s_piece_desc);
}

static void
s_pieces_clear (s_pieces_t *pieces)
{
    for (size_t k = 0; k < pieces->count; k++)
        free (pieces->list[k].name);
    free (pieces->list);
    *pieces = (s_pieces_t){0};
}

//  Image and audio blocks, largest first, give way to links.
static void
s_fit_blocks (s_fit_t *fit)
{
    s_pieces_t blocks = {0};
    size_t i;
    json_t *block;
    json_array_foreach (fit->content, i, block)
    {
        const char *type = json_string_value (json_object_get (block, "type"));
        json_t *data = json_object_get (block, "data");
        if (type && (strcmp (type, "image") == 0 || strcmp (type, "audio") == 0)
            && json_is_string (data))
            s_pieces_add (&blocks, block, NULL, i, json_string_length (data));
    }
    s_pieces_sort (&blocks);
    for (size_t k = 0; k < blocks.count && s_over (fit); k++) {
        size_t index = blocks.list[k].index;
        block = blocks.list[k].json;
        const char *type = json_string_value (json_object_get (block, "mimeType"));
        cleanup_free char *mime =
            cg_xstrdup (type ? type : "application/octet-stream"); /* outlives BLOCK */
        size_t bytes = s_base64_bytes (json_string_value (json_object_get (block, "data")));
        //  A run's display names its saved file; read_artifact's file is the result's own.
        json_t *item = s_output_for_block (fit, index);
        json_t *owner = item ? item : fit->structured;
        const char *path = json_string_value (json_object_get (owner, "path"));
        const char *url = json_string_value (json_object_get (owner, "download_url"));
        cleanup_free char *where = s_where (path, url);
        json_t *replacement;
        if (fit->links && url && path)
            replacement =
                json_pack ("{s:s, s:s, s:s, s:s, s:I}", "type", "resource_link", "uri", url, "name",
                           s_basename (path), "mimeType", mime, "size", (json_int_t)bytes);
        else {
            cleanup_free char *text =
                cg_strdupf ("[%s, %zu bytes, left out: %s]", mime, bytes, where);
            replacement = json_pack ("{s:s, s:s}", "type", "text", "text", text);
        }
        s_replace (fit, fit->content, NULL, index, replacement);
        if (json_object_get (owner, "content_index"))
            s_replace (fit, owner, "content_index", 0, NULL);
        s_note (fit, "%s image (%zu bytes): %s", mime, bytes, where);
    }
    s_pieces_clear (&blocks);
}

//  Display data in structuredContent.outputs (besides text/plain), largest first.
static void
s_fit_output_data (s_fit_t *fit)
{
    s_pieces_t data = {0};
    size_t i;
    json_t *item;
    json_array_foreach (json_object_get (fit->structured, "outputs"), i, item)
    {
        const char *mime;
        json_t *value;
        json_object_foreach (json_object_get (item, "data"), mime, value)
        {
            size_t size = cg_result_size (value);
            if (strcmp (mime, "text/plain") != 0 && size >= S_MIN_CUT)
                s_pieces_add (&data, item, mime, i, size);
        }
    }
    s_pieces_sort (&data);
    for (size_t k = 0; k < data.count && s_over (fit); k++) {
        s_piece_t *pick = &data.list[k];
        cleanup_free char *where =
            s_where (json_string_value (json_object_get (pick->json, "path")),
                     json_string_value (json_object_get (pick->json, "download_url")));
        s_replace (fit, json_object_get (pick->json, "data"), pick->name, 0, NULL);
        size_t before = cg_result_size (pick->json);
        s_add_omitted (pick->json, pick->name);
        fit->size += cg_result_size (pick->json) - before;
        s_note (fit, "%s output (%zu bytes): %s", pick->name, pick->size, where);
    }
    s_pieces_clear (&data);
}

//  Adds the strings of VALUE (at NAME) long enough to be worth cutting to STRINGS.
static void
s_collect_strings (s_pieces_t *strings, json_t *value, const char *name)
{
    if (json_is_string (value)) {
        if (json_string_length (value) >= S_MIN_CUT)
            s_pieces_add (strings, value, name, 0, json_string_length (value));
        return;
    }
    const char *key;
    json_t *member;
    size_t i;
    if (json_is_object (value))
        json_object_foreach (value, key, member)
        {
            cleanup_free char *inner = cg_strdupf ("%s%s%s", name, *name ? "." : "", key);
            s_collect_strings (strings, member, inner);
        }
    else if (json_is_array (value))
        json_array_foreach (value, i, member)
        {
            cleanup_free char *inner = cg_strdupf ("%s[%zu]", name, i);
            s_collect_strings (strings, member, inner);
        }
}

//  Long strings, largest first, are cut to a head and a tail.
static void
s_fit_strings (s_fit_t *fit)
{
    s_pieces_t strings = {0};
    s_collect_strings (&strings, fit->content, "content");
    s_collect_strings (&strings, fit->structured, "structuredContent");
    s_pieces_sort (&strings);
    for (size_t k = 0; k < strings.count && s_over (fit); k++) {
        s_piece_t *s = &strings.list[k];
        const char *text = json_string_value (s->json);
        size_t len = json_string_length (s->json), excess = fit->size - fit->budget;
        size_t before = cg_result_size (s->json);
        //  Base64 cut in the middle is no use to anyone: it goes whole.
        bool bytes = strstr (s->name, "base64") != NULL;
        size_t keep =
            bytes || excess + S_KEEP_MIN + 64 > len ? (bytes ? 0 : S_KEEP_MIN) : len - excess - 64;
        size_t cut_len = 0;
        cleanup_free char *cut = keep ? cg_output_cut (text, len, keep / 2, keep - keep / 2,
                                                       CG_OUTPUT_NO_CUT, 0, &cut_len)
                                      : cg_xstrdup ("");
        json_string_setn (s->json, cut, cut_len);
        fit->size = fit->size - before + cg_result_size (s->json);
        s_note (fit, "%s: %zu of %zu bytes kept%s", s->name, cut_len, len,
                bytes ? " (download_url has the file)"
                      : " (the text's head and tail, with a marker between)");
    }
    s_pieces_clear (&strings);
}

//  Removes CONTAINER's last member (an array's or an object's), keeping FIT's size.
static void
s_drop_last (s_fit_t *fit, json_t *container)
{
    if (json_is_array (container)) {
        size_t last = json_array_size (container) - 1;
        fit->size -= cg_result_size (json_array_get (container, last)) + 1;
        json_array_remove (container, last);
        return;
    }
    const char *key = NULL;
    for (void *iter = json_object_iter (container); iter;
         iter = json_object_iter_next (container, iter))
        key = json_object_iter_key (iter);
    cleanup_free char *name = cg_xstrdup (key);
    s_replace (fit, container, name, 0, NULL);
}

static size_t
s_members (json_t *container)
{
    return json_is_array (container) ? json_array_size (container) : json_object_size (container);
}

//  The largest lists and maps (outputs, artifacts, files...) lose their last members;
//  the first content block (the text) stays.
static void
s_fit_containers (s_fit_t *fit)
{
    while (s_over (fit)) {
        json_t *container = NULL;
        const char *name = NULL;
        size_t best = 0;
        const char *key;
        json_t *member;
        json_object_foreach (fit->structured, key, member)
        {
            size_t size = s_members (member) > 0 ? cg_result_size (member) : 0;
            if (size > best)
                best = size, container = member, name = key;
        }
        if (json_array_size (fit->content) > 1 && cg_result_size (fit->content) > best)
            container = fit->content, name = "content";
        if (!container)
            return;
        size_t total = s_members (container), keep = total;
        size_t floor = container == fit->content ? 1 : 0;
        cleanup_free char *label = cg_xstrdup (name);
        for (; keep > floor && s_over (fit); keep--)
            s_drop_last (fit, container);
        s_note (fit, "%s: the last %zu of %zu members", label, total - keep, total);
    }
}

//  Appends the note: what was left out and where it is.
static void
s_add_note (s_fit_t *fit)
{
    cleanup_free char *more =
        fit->unlisted ? cg_strdupf ("\n- and %zu more", fit->unlisted) : cg_xstrdup ("");
    cleanup_free char *text = cg_strdupf (
        "[This result was cut to stay within the %zu-byte result budget (--max-result-bytes); "
        "%zu thing(s) left out:%s%s]",
        fit->total_budget, fit->left_out, fit->note ? fit->note : "", more);
    json_array_append_new (fit->content, json_pack ("{s:s, s:s}", "type", "text", "text", text));
}

//  cg_result_fit, with TOTAL the budget of the whole message (for the note).
static size_t
s_fit (json_t *result, size_t budget, size_t total, bool links)
{
    size_t size = cg_result_size (result);
    if (size <= budget)
        return 0;
    json_t *content = json_object_get (result, "content");
    if (!json_is_array (content)) {
        content = json_array ();
        json_object_set_new (result, "content", content);
    }
    json_t *structured = json_object_get (result, "structuredContent");
    s_fit_t fit = {.content = content,
                   .structured = json_is_object (structured) ? structured : NULL,
                   .size = size,
                   .budget =
                       budget > CG_RESULT_NOTE_ROOM ? budget - CG_RESULT_NOTE_ROOM : budget / 2,
                   .total_budget = total,
                   .links = links};
    s_fit_blocks (&fit);
    if (s_over (&fit))
        s_fit_output_data (&fit);
    if (s_over (&fit))
        s_fit_strings (&fit);
    if (s_over (&fit))
        s_fit_containers (&fit);
    s_add_note (&fit);
    free (fit.note);
    return fit.left_out;
}

size_t
cg_result_fit (json_t *result, size_t budget, bool links)
{
    return s_fit (result, budget, budget, links);
}

char *
cg_result_encode (json_t *message, size_t budget, bool links)
{
    char *text = json_dumps (message, S_DUMP_FLAGS);
    if (!text)
        abort ();
    json_t *result = json_object_get (message, "result");
    size_t len = strlen (text);
    if (len <= budget || !json_is_array (json_object_get (result, "content")))
        return text;
    //  The JSON-RPC envelope (id, version) counts against the budget too.
    size_t envelope = len - cg_result_size (result);
    size_t left_out =
        s_fit (result, envelope < budget / 2 ? budget - envelope : budget / 2, budget, links);
    free (text);
    text = json_dumps (message, S_DUMP_FLAGS);
    if (!text)
        abort ();
    cg_log (
        strlen (text) > budget ? 0 : 2,
        "a %zu-byte result was cut to %zu bytes (--max-result-bytes %zu): %zu thing(s) left out",
        len, strlen (text), budget, left_out);
    return text;
}
