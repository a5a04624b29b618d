/*  Unit tests: a tools/call result within its byte budget (cg_result) — images and
    display data become links to their saved files, long text is cut, long lists lose
    their tails, each with the note — and a display's bytes carried once. */
#include "base/cg_util.h"
#include "mcp/cg_result.h"
#include "cg_test.h"

#include <string.h>

//  A base64-looking string of LEN characters (a multiple of 4).
static char *
s_base64 (size_t len)
{
    char *text = cg_xmalloc (len + 1);
    for (size_t i = 0; i < len; i++)
        text[i] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"[i % 64];
    text[len] = '\0';
    return text;
}

//  A run result with one PNG display of PNG_B64 characters, saved at PATH (may be NULL),
//  its bytes moved into an image block as cg_run_result_call does.
static json_t *
s_run_result (size_t png_b64, const char *path, const char *url)
{
    cleanup_free char *png = s_base64 (png_b64);
    json_t *item = json_pack ("{s:s, s:{s:s, s:s}, s:{}}", "type", "display_data", "data",
                              "image/png", png, "text/plain", "<Figure>", "metadata");
    if (path)
        json_object_set_new (item, "path", json_string (path));
    if (url)
        json_object_set_new (item, "download_url", json_string (url));
    json_t *structured = json_pack ("{s:s, s:s, s:s, s:[o]}", "stdout", "hi\n", "stderr", "",
                                    "status", "success", "outputs", item);
    json_t *content = json_pack ("[{s:s, s:s}, {s:s, s:s, s:s}]", "type", "text", "text", "hi\n",
                                 "type", "image", "data", png, "mimeType", "image/png");
    cg_result_link_output (item, "image/png", 1);
    return json_pack ("{s:o, s:o, s:b}", "content", content, "structuredContent", structured,
                      "isError", 0);
}

static const char *
s_last_text (json_t *result)
{
    json_t *content = json_object_get (result, "content");
    return json_string_value (
        json_object_get (json_array_get (content, json_array_size (content) - 1), "text"));
}

static void
s_link_output (void)
{
    const char *name = "a display's bytes are carried once";
    json_t *result = s_run_result (4000, "/mnt/data/outputs/x-1.png", NULL);
    json_t *item = json_array_get (
        json_object_get (json_object_get (result, "structuredContent"), "outputs"), 0);
    int ok = !json_object_get (json_object_get (item, "data"), "image/png")
             && json_object_get (json_object_get (item, "data"), "text/plain")
             && json_integer_value (json_object_get (item, "size_bytes")) == 3000
             && json_integer_value (json_object_get (item, "content_index")) == 1
             && strcmp (json_string_value (json_array_get (json_object_get (item, "omitted"), 0)),
                        "image/png")
                    == 0
             && strcmp (json_string_value (json_object_get (item, "mime_type")), "image/png") == 0;
    size_t left = cg_result_fit (result, 64 * 1024, true);
    json_decref (result);
    CHECK (ok, "the output names the image block instead of repeating the base64");
    CHECK (left == 0, "a result within its budget is left alone (%zu left out)", left);
    s_passes++;
}

static void
s_image_to_link (bool links)
{
    const char *name = links ? "an image over the budget becomes a resource_link"
                             : "an image over the budget becomes a text link";
    const char *url = "http://127.0.0.1:8080/files/s/outputs/x-1.png?token=t";
    json_t *result = s_run_result (400 * 1024, "/mnt/data/outputs/x-1.png", url);
    size_t budget = 64 * 1024;
    size_t left = cg_result_fit (result, budget, links);
    size_t size = cg_result_size (result);
    json_t *block = json_array_get (json_object_get (result, "content"), 1);
    const char *type = json_string_value (json_object_get (block, "type"));
    const char *note = s_last_text (result);
    json_t *item = json_array_get (
        json_object_get (json_object_get (result, "structuredContent"), "outputs"), 0);
    bool indexed = json_object_get (item, "content_index") != NULL;
    bool linked = links
                      ? strcmp (type, "resource_link") == 0
                            && strcmp (json_string_value (json_object_get (block, "uri")), url) == 0
                            && json_integer_value (json_object_get (block, "size")) == 300 * 1024
                      : strcmp (type, "text") == 0
                            && strstr (json_string_value (json_object_get (block, "text")), url);
    bool noted = note && strstr (note, "left out") && strstr (note, url)
                 && strstr (note, "/mnt/data/outputs/x-1.png");
    json_decref (result);
    CHECK (size <= budget, "%zu bytes over a %zu budget", size, budget);
    CHECK (left == 1, "%zu things left out, want 1", left);
    CHECK (linked, "the image block is replaced by a link to the saved file");
    CHECK (!indexed, "the output no longer points at an image block");
    CHECK (noted, "the note names the file and its URL: %s", note ? note : "(none)");
    s_passes++;
}

static void
s_unsaved_image (void)
{
    const char *name = "an image of a one-shot run says it was not saved";
    json_t *result = s_run_result (400 * 1024, NULL, NULL);
    cg_result_fit (result, 64 * 1024, true);
    json_t *block = json_array_get (json_object_get (result, "content"), 1);
    bool text = strcmp (json_string_value (json_object_get (block, "type")), "text") == 0;
    bool said = strstr (s_last_text (result), "not saved") != NULL;
    json_decref (result);
    CHECK (text, "no resource_link without a file");
    CHECK (said, "the note says the output was not saved");
    s_passes++;
}

static void
s_display_data (void)
{
    const char *name = "large display data in outputs is left out, largest first";
    cleanup_free char *html = s_base64 (200 * 1024);
    cleanup_free char *svg = s_base64 (40 * 1024);
    json_t *structured = json_pack (
        "{s:s, s:[{s:s, s:{s:s, s:s}, s:s}, {s:s, s:{s:s}}]}", "status", "success", "outputs",
        "type", "display_data", "data", "text/html", html, "text/plain", "t", "path",
        "/mnt/data/outputs/e-1.html", "type", "display_data", "data", "image/svg+xml", svg);
    json_t *result = json_pack ("{s:[{s:s, s:s}], s:o}", "content", "type", "text", "text", "x",
                                "structuredContent", structured);
    size_t budget = 128 * 1024;
    size_t left = cg_result_fit (result, budget, true);
    json_t *first = json_array_get (json_object_get (structured, "outputs"), 0);
    json_t *second = json_array_get (json_object_get (structured, "outputs"), 1);
    bool html_gone = !json_object_get (json_object_get (first, "data"), "text/html")
                     && json_object_get (json_object_get (first, "data"), "text/plain");
    bool svg_kept = json_object_get (json_object_get (second, "data"), "image/svg+xml") != NULL;
    bool omitted = json_array_size (json_object_get (first, "omitted")) == 1;
    size_t size = cg_result_size (result);
    json_decref (result);
    CHECK (size <= budget, "%zu bytes over %zu", size, budget);
    CHECK (left == 1 && html_gone && omitted,
           "the HTML (largest) is left out and listed in omitted");
    CHECK (svg_kept, "the SVG that fits stays");
    s_passes++;
}

static void
s_long_text (void)
{
    const char *name = "long text is cut to head and tail";
    cleanup_free char *out = cg_xmalloc (300 * 1024 + 1);
    memset (out, 'x', 300 * 1024);
    out[300 * 1024] = '\0';
    json_t *result = json_pack ("{s:[{s:s, s:s}], s:{s:s, s:s}}", "content", "type", "text", "text",
                                out, "structuredContent", "stdout", out, "status", "success");
    size_t budget = 128 * 1024;
    cg_result_fit (result, budget, true);
    size_t size = cg_result_size (result);
    const char *stdout_text = json_string_value (
        json_object_get (json_object_get (result, "structuredContent"), "stdout"));
    bool marked = strstr (stdout_text, "[... truncated ") != NULL;
    bool noted = strstr (s_last_text (result), "stdout") != NULL;
    json_decref (result);
    CHECK (size <= budget, "%zu bytes over %zu", size, budget);
    CHECK (marked, "the cut carries seed 002's marker");
    CHECK (noted, "the note names the cut field");
    s_passes++;
}

static void
s_many_items (void)
{
    const char *name = "a long list loses its tail";
    json_t *outputs = json_array ();
    for (int i = 0; i < 20000; i++)
        json_array_append_new (outputs, json_pack ("{s:s, s:{s:s}}", "type", "display_data", "data",
                                                   "text/plain", "a small one"));
    json_t *result = json_pack ("{s:[{s:s, s:s}], s:{s:o}}", "content", "type", "text", "text", "x",
                                "structuredContent", "outputs", outputs);
    size_t budget = 64 * 1024;
    cg_result_fit (result, budget, true);
    size_t size = cg_result_size (result);
    size_t kept = json_array_size (
        json_object_get (json_object_get (result, "structuredContent"), "outputs"));
    bool noted = strstr (s_last_text (result), "outputs: the last") != NULL;
    json_decref (result);
    CHECK (size <= budget, "%zu bytes over %zu", size, budget);
    CHECK (kept > 0 && kept < 20000, "kept %zu of 20000", kept);
    CHECK (noted, "the note says how many were left out");
    s_passes++;
}

static void
s_utf8_and_maps (void)
{
    const char *name = "UTF-8 text and a large files map fit, still valid JSON";
    size_t n = 60 * 1024;
    cleanup_free char *text = cg_xmalloc (n * 3 + 1);
    for (size_t i = 0; i < n; i++)
        memcpy (text + i * 3, "\xe2\x82\xac", 3); /* the euro sign, 3 bytes */
    text[n * 3] = '\0';
    json_t *files = json_object ();
    for (int i = 0; i < 4000; i++) {
        char key[32];
        snprintf (key, sizeof key, "data/\xc3\xa9t\xc3\xa9-%d.txt", i);
        json_object_set_new (files, key, json_string ("a line of text\n"));
    }
    json_t *result =
        json_pack ("{s:[{s:s, s:s}], s:{s:s, s:s, s:o}}", "content", "type", "text", "text", text,
                   "structuredContent", "stdout", text, "status", "success", "files", files);
    size_t budget = 64 * 1024;
    cg_result_fit (result, budget, false);
    size_t size = cg_result_size (result);
    char *dumped = json_dumps (result, JSON_COMPACT);
    json_t *back = dumped ? json_loads (dumped, 0, NULL) : NULL;
    bool valid = back != NULL;
    json_decref (back);
    free (dumped);
    json_decref (result);
    CHECK (size <= budget, "%zu bytes over %zu", size, budget);
    CHECK (valid, "the fitted result is valid JSON with valid UTF-8");
    s_passes++;
}

static void
s_encode (void)
{
    const char *name = "the JSON-RPC envelope counts against the budget";
    json_t *message =
        json_pack ("{s:s, s:s, s:o}", "jsonrpc", "2.0", "id", "an-id", "result",
                   s_run_result (400 * 1024, "/mnt/data/outputs/x-1.png", "http://127.0.0.1:1/f"));
    size_t budget = 64 * 1024;
    cleanup_free char *text = cg_result_encode (message, budget, true);
    json_t *small = json_pack ("{s:s, s:i, s:{}}", "jsonrpc", "2.0", "id", 1, "result");
    cleanup_free char *plain = cg_result_encode (small, budget, true);
    json_decref (message);
    json_decref (small);
    CHECK (strlen (text) <= budget, "%zu bytes over %zu", strlen (text), budget);
    CHECK (strcmp (plain, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}") == 0,
           "other messages unchanged: %s", plain);
    s_passes++;
}

int
main (void)
{
    s_link_output ();
    s_image_to_link (true);
    s_image_to_link (false);
    s_unsaved_image ();
    s_display_data ();
    s_long_text ();
    s_many_items ();
    s_utf8_and_maps ();
    s_encode ();
    printf ("%d passed, %d failed\n", s_passes, s_failures);
    return s_failures ? 1 : 0;
}
