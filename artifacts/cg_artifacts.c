/*  cg_artifacts — what a run leaves in its workspace: rich display outputs and full
    stdout/stderr saved as files, cut output for results, and the files a run created,
    modified or deleted. */
#include "artifacts/cg_artifacts.h"

#include "base/cg_util.h"

#include <assert.h>
#include <sodium.h>
#include <string.h>

//  ---------------------------------------------------------------------------------------
//  Cutting output

static bool
s_continuation (char c)
{
    return ((unsigned char)c & 0xC0) == 0x80;
}

static size_t
s_chars (const char *data, size_t len)
{
    size_t chars = 0;
    for (size_t i = 0; i < len; i++)
        chars += !s_continuation (data[i]);
    return chars;
}

//  Returns where a head of the first HEAD bytes of DATA ends without cutting a character
//  short: HEAD, or the start of a multi-byte sequence that HEAD would leave incomplete.
static size_t
s_head_end (const char *data, size_t head)
{
    size_t lead = head;
    while (lead > 0 && head - lead < 3 && s_continuation (data[lead - 1]))
        lead--;
    if (lead == 0)
        return head;
    unsigned char c = (unsigned char)data[lead - 1];
    size_t need = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
    return head - (lead - 1) < need ? lead - 1 : head;
}

static char *
s_marked (const char *head, size_t head_len, const char *tail, size_t tail_len, size_t omitted,
          size_t *out_len)
{
    char marker[64];
    int marker_len =
        snprintf (marker, sizeof marker, "\n\n[... truncated %zu characters ...]\n\n", omitted);
    char *text = cg_xmalloc (head_len + (size_t)marker_len + tail_len + 1);
    memcpy (text, head, head_len);
    memcpy (text + head_len, marker, (size_t)marker_len);
    memcpy (text + head_len + marker_len, tail, tail_len);
    text[head_len + marker_len + tail_len] = '\0';
    *out_len = head_len + (size_t)marker_len + tail_len;
    return text;
}

char *
cg_output_cut (const char *data, size_t len, size_t head, size_t tail, size_t cut,
               size_t extra_chars, size_t *out_len)
{
    //  When bytes were dropped already (at CUT), the head and the tail stay on their sides,
    //  even when the dropped bytes held no whole character (EXTRA_CHARS 0).
    bool dropped = cut != CG_OUTPUT_NO_CUT;
    assert (!dropped || cut <= len);
    if (dropped && head > cut)
        head = cut;
    if (head > len)
        head = len;
    if (dropped && tail > len - cut)
        tail = len - cut;
    if (tail > len - head)
        tail = len - head;
    //  A cut never splits a character: the head ends before one, the tail starts at one.
    //  The head is judged by its own bytes: at CUT the next byte belongs to another part
    //  of the stream and says nothing about the head's last character.
    head = s_head_end (data, head);
    size_t tail_at = len - tail;
    while (tail_at < len && s_continuation (data[tail_at]))
        tail_at++;
    size_t omitted = s_chars (data + head, tail_at - head) + extra_chars;
    return s_marked (data, head, data + tail_at, len - tail_at, omitted, out_len);
}

char *
cg_output_join (const char *data, size_t len, size_t cut, size_t extra_chars, size_t *out_len)
{
    return s_marked (data, cut, data + cut, len - cut, extra_chars, out_len);
}

//  ---------------------------------------------------------------------------------------
//  Display outputs

static const struct {
    const char *mime;
    const char *ext;
    bool base64;
    unsigned kind; /* CG_DISPLAYS_* */
} s_rich[] = {
    {"image/png", "png", true, CG_DISPLAYS_FIGURES},
    {"image/jpeg", "jpg", true, CG_DISPLAYS_FIGURES},
    {"image/svg+xml", "svg", false, CG_DISPLAYS_FIGURES},
    {"application/pdf", "pdf", true, CG_DISPLAYS_FIGURES},
    {"text/html", "html", false, CG_DISPLAYS_DOCUMENTS},
    {"application/json", "json", false, CG_DISPLAYS_DOCUMENTS},
};

//  Returns the bytes of VALUE (a display's data for one MIME type) in *LEN, or NULL.
static unsigned char *
s_display_bytes (json_t *value, bool base64, size_t *len)
{
    if (base64) {
        const char *text = json_string_value (value);
        if (!text)
            return NULL;
        size_t text_len = strlen (text);
        unsigned char *bin = cg_xmalloc (text_len / 4 * 3 + 3);
        if (sodium_base642bin (bin, text_len / 4 * 3 + 3, text, text_len, " \r\n", len, NULL,
                               sodium_base64_VARIANT_ORIGINAL)
            != 0) {
            free (bin);
            return NULL;
        }
        return bin;
    }
    //  Text types may come as a string or (JSON) as a value; lists of lines are joined.
    char *text = NULL;
    if (json_is_string (value))
        text = cg_xstrdup (json_string_value (value));
    else if (json_is_array (value) && json_array_size (value) > 0
             && json_is_string (json_array_get (value, 0))) {
        //  Joined in one pass: a kernel may send millions of lines.
        size_t total = 0, at = 0, i;
        json_t *line;
        json_array_foreach (value, i, line) total += json_string_length (line);
        text = cg_xmalloc (total + 1);
        json_array_foreach (value, i, line)
        {
            memcpy (text + at, json_string_value (line) ? json_string_value (line) : "",
                    json_string_length (line));
            at += json_string_length (line);
        }
        text[at] = '\0';
    }
    else
        text = json_dumps (value, JSON_INDENT (2) | JSON_ENCODE_ANY);
    if (!text)
        return NULL;
    *len = strlen (text);
    return (unsigned char *)text;
}

size_t
cg_artifacts_save_displays (cg_workspace_t *ws, json_t *outputs, const char *prefix, unsigned kinds,
                            uid_t uid, gid_t gid)
{
    size_t i, n = 0, saved = 0;
    json_t *item;
    json_array_foreach (outputs, i, item)
    {
        json_t *data = json_object_get (item, "data");
        const char *type = json_string_value (json_object_get (item, "type"));
        //  A cell's value as JSON is returned inline (returnValue); it is not a file.
        bool result = type && strcmp (type, "execute_result") == 0;
        for (size_t k = 0; k < sizeof s_rich / sizeof s_rich[0]; k++) {
            json_t *value = json_object_get (data, s_rich[k].mime);
            if (!value || (result && strcmp (s_rich[k].mime, "application/json") == 0))
                continue;
            if (!(s_rich[k].kind & kinds))
                break;
            size_t len = 0;
            cleanup_free unsigned char *bytes = s_display_bytes (value, s_rich[k].base64, &len);
            if (!bytes)
                break;
            cleanup_free char *rel =
                cg_strdupf ("%s/%s-%zu.%s", CG_ARTIFACTS_OUTPUT_DIR, prefix, ++n, s_rich[k].ext);
            cg_error_t *err = NULL;
            if (cg_workspace_write (ws, rel, bytes, len, true, uid, gid, &err) == 0) {
                cleanup_free char *path = cg_strdupf ("%s/%s", CG_WORKSPACE_MOUNT, rel);
                json_object_set_new (item, "path", json_string (path));
                saved++;
            }
            else
                cg_log (1, "save display output %s: %s", rel, cg_error_message (err));
            cg_error_destroy (&err);
            break;
        }
    }
    return saved;
}

//  ---------------------------------------------------------------------------------------
//  Scans

static int
s_compare_paths (const void *a, const void *b)
{
    json_t *const *x = a, *const *y = b;
    return strcmp (json_string_value (json_object_get (*x, "path")),
                   json_string_value (json_object_get (*y, "path")));
}

json_t *
cg_artifacts_from_diff (json_t *diff, json_t *after)
{
    json_t *items[2] = {json_object_get (diff, "created"), json_object_get (diff, "modified")};
    size_t total = json_array_size (items[0]) + json_array_size (items[1]), count = 0;
    json_t **list = cg_xcalloc (total ? total : 1, sizeof *list);
    for (int k = 0; k < 2; k++) {
        size_t i;
        json_t *name;
        json_array_foreach (items[k], i, name)
        {
            const char *rel = json_string_value (name);
            const char *slash = strrchr (rel, '/');
            const char *filename = slash ? slash + 1 : rel;
            json_t *size = json_array_get (json_object_get (after, rel), 0);
            cleanup_free char *path = cg_strdupf ("%s/%s", CG_WORKSPACE_MOUNT, rel);
            list[count++] =
                json_pack ("{s:s, s:s, s:I, s:s}", "path", path, "filename", filename, "size_bytes",
                           json_integer_value (size), "mime_type", cg_mime_type (filename));
        }
    }
    qsort (list, count, sizeof *list, s_compare_paths);
    json_t *array = json_array ();
    for (size_t i = 0; i < count; i++)
        json_array_append_new (array, list[i]);
    free (list);
    return array;
}
