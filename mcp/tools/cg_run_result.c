/*  cg_run_result — the one place a run's result takes the seeds' shape: the
    structuredContent of a run (seeds 001-004's field names) from a cg_outcome_t, the
    tools/call result with its content blocks, seed 001's status names, and the results
    of runs refused before they started. */
#include "mcp/tools/cg_run_result.h"
#include "mcp/cg_result.h"
#include "artifacts/cg_image.h"
#include "base/cg_log.h"
#include "base/cg_util.h"

#include <ctype.h>
#include <math.h>
#include <sodium.h>
#include <string.h>

//  --------------------------------------------------------------------------
//  structuredContent

static const char *
s_status (cg_outcome_end_t end)
{
    switch (end) {
        case CG_OUTCOME_OK:
            return "success";
        case CG_OUTCOME_TIMEOUT:
            return "timeout";
        case CG_OUTCOME_RUNTIME_ERROR:
            return "execution_error";
        case CG_OUTCOME_CANCELLED:
            return "execution_error";
        case CG_OUTCOME_SETUP_FAILURE:
            return "setup_error";
    }
    return "setup_error";
}

//  Seed 001's error_code for ERROR, or NULL for none.
static const char *
s_error_code (cg_outcome_error_t error)
{
    switch (error) {
        case CG_OUTCOME_ERROR_NONE:
            return NULL;
        case CG_OUTCOME_ERROR_RUNTIME:
            return "RUNTIME_ERROR";
        case CG_OUTCOME_ERROR_TIMEOUT:
            return "EXECUTION_TIMEOUT";
        case CG_OUTCOME_ERROR_SANDBOX:
            return "SANDBOX_SETUP_FAILED";
        case CG_OUTCOME_ERROR_INVALID_PARAMS:
            return "INVALID_PARAMS";
    }
    return NULL;
}

static json_t *
s_string_or_null (const char *text)
{
    return text ? json_string (text) : json_null ();
}

//  What the run produced besides its streams: the whole outputs' files, the value of the
//  last expression (its own copy: a result's images are taken out of it), the execution
//  count and the time in milliseconds.
static void
s_add_run (json_t *structured, const cg_outcome_t *outcome)
{
    if (outcome->out.file)
        json_object_set_new (structured, "stdout_file", json_string (outcome->out.file));
    if (outcome->err.file)
        json_object_set_new (structured, "stderr_file", json_string (outcome->err.file));
    if (outcome->return_value) {
        //  The value itself; its rich forms (HTML, images) are in its outputs item only.
        json_t *value = json_object ();
        const char *kept[] = {"text/plain", "application/json"};
        for (size_t k = 0; k < 2; k++)
            if (json_object_get (outcome->return_value, kept[k]))
                json_object_set_new (
                    value, kept[k],
                    json_deep_copy (json_object_get (outcome->return_value, kept[k])));
        json_object_set_new (structured, "return_value", value);
        //  Seed 003's returnValue: the JSON value when the kernel gave one, else the text.
        json_t *given = json_object_get (value, "application/json");
        if (!given)
            given = json_object_get (value, "text/plain");
        if (given)
            json_object_set_new (structured, "returnValue", json_deep_copy (given));
    }
    if (outcome->execution_count > 0)
        json_object_set_new (structured, "execution_count",
                             json_integer (outcome->execution_count));
    json_object_set_new (structured, "executionTimeMs", json_integer (outcome->duration_us / 1000));
}

//  What the run did to the workspace (seeds 002, 003 and 004) and seed 003's memoryUsedMB.
static void
s_add_workspace (json_t *structured, const cg_outcome_t *outcome)
{
    json_object_set (structured, "artifacts", outcome->artifacts);
    json_object_set (structured, "files", outcome->files);
    json_object_set (structured, "artifacts_created", outcome->created);
    json_object_set (structured, "artifacts_modified", outcome->modified);
    json_object_set (structured, "artifacts_deleted", outcome->deleted);
    if (outcome->memory_known)
        json_object_set_new (structured, "memoryUsedMB",
                             json_real (round (outcome->memory_peak_mb * 10) / 10));
}

//  The structuredContent of OUTCOME, with ERROR_CODE in place of its error's code when
//  not NULL (a refusal's own code).
static json_t *
s_structured (const cg_outcome_t *outcome, const char *error_code)
{
    const char *code = error_code ? error_code : s_error_code (outcome->error);
    double seconds = (double)outcome->duration_us / 1e6;
    json_t *structured = json_pack (
        "{s:s%, s:s%, s:i, s:s, s:o, s:o, s:f, s:I, s:s, s:o, s:s, s:o, s:b, s:b, s:b, s:b, s:b, "
        "s:b}",
        "stdout", outcome->out.text, outcome->out.len, "stderr", outcome->err.text,
        outcome->err.len, "exit_code", outcome->exit_code, "status", s_status (outcome->end),
        "error_code", s_string_or_null (code), "error_message", s_string_or_null (outcome->message),
        "execution_time", round (seconds * 1e6) / 1e6, "duration_ms",
        (json_int_t)(outcome->duration_us / 1000), "execution_id", outcome->execution_id,
        "session_id", s_string_or_null (outcome->session_id), "language", outcome->language,
        "outputs", json_deep_copy (outcome->outputs), "success", outcome->end == CG_OUTCOME_OK,
        "timed_out", outcome->timed_out, "kernel_restarted", outcome->kernel_restarted, "cancelled",
        outcome->cancelled, "stdout_truncated", outcome->out.truncated, "stderr_truncated",
        outcome->err.truncated);
    if (!structured)
        abort ();
    if (outcome->ran)
        s_add_run (structured, outcome);
    if (outcome->notice)
        json_object_set_new (structured, "notice", json_string (outcome->notice));
    if (outcome->ran)
        s_add_workspace (structured, outcome);
    return structured;
}

json_t *
cg_run_result_structured (const cg_outcome_t *outcome, const cg_files_t *files, const char *run_id)
{
    json_t *structured = s_structured (outcome, NULL);
    if (files)
        cg_files_add_urls (files, structured);
    json_object_set_new (structured, "truncated",
                         json_boolean (outcome->out.truncated || outcome->err.truncated));
    if (!json_object_get (structured, "artifacts"))
        json_object_set_new (structured, "artifacts", json_array ());
    if (run_id)
        json_object_set_new (structured, "run_id", json_string (run_id));
    return structured;
}

//  --------------------------------------------------------------------------
//  Runs refused before they started

//  The structuredContent of a run that never started: a setup failure with ERROR_CODE.
static json_t *
s_never_ran (const char *language, const char *session_id, const char *error_code,
             const char *message)
{
    char execution_id[18] = "exec_";
    cg_random_hex (execution_id + 5, 6);
    cg_outcome_t *outcome = cg_outcome_setup_failure (language ? language : "", execution_id,
                                                      session_id, CG_OUTCOME_ERROR_NONE, message);
    json_t *structured = s_structured (outcome, error_code);
    cg_outcome_destroy (&outcome);
    return structured;
}

json_t *
cg_run_result_refused (const char *language, const char *session_id, const char *error,
                       const char *message)
{
    char error_code[64];
    size_t i = 0;
    for (; error[i] && i < sizeof error_code - 1; i++)
        error_code[i] = (char)toupper ((unsigned char)error[i]);
    error_code[i] = '\0';
    json_t *structured = s_never_ran (language, session_id, error_code, message);
    json_object_set_new (structured, "error", json_string (error));
    json_object_set_new (structured, "message", json_string (message));
    return cg_run_result_call (structured, NULL);
}

json_t *
cg_run_result_invalid (const char *language, const char *error_code, const char *message)
{
    return cg_run_result_call (s_never_ran (language, NULL, error_code, message), NULL);
}

//  --------------------------------------------------------------------------
//  Seed 001

void
cg_run_result_seed001_status (json_t *structured)
{
    const char *status = json_string_value (json_object_get (structured, "status"));
    if (!status)
        return;
    const char *mapped = strcmp (status, "success") == 0           ? "completed"
                         : strcmp (status, "timeout") == 0         ? "timeout"
                         : strcmp (status, "execution_error") == 0 ? "error_runtime"
                                                                   : "error_setup";
    json_object_set_new (structured, "status", json_string (mapped));
}

//  --------------------------------------------------------------------------
//  The tools/call result

static void
s_append (char **text, const char *more)
{
    char *joined = cg_strdupf ("%s%s", *text, more);
    free (*text);
    *text = joined;
}

//  The text block's last line for a run that failed: "[STATUS] MESSAGE", or "[STATUS]"
//  alone when ERR (its stderr) already ends with MESSAGE (a timeout's, seed 004; a
//  traceback's last line), so that the message is said once. Caller frees.
static char *
s_status_line (const char *status, const char *message, const char *err)
{
    size_t said = err ? strlen (err) : 0, len = strlen (message);
    while (said > 0 && err[said - 1] == '\n')
        said--;
    if (len > 0 && said >= len && strncmp (err + said - len, message, len) == 0)
        return cg_strdupf ("[%s]", status);
    return cg_strdupf ("[%s] %s", status, message);
}

//  --------------------------------------------------------------------------
//  Images past the budget

//  The preview made for the image past the budget (cg_preview_plan's ENTRY, may be NULL)
//  when it fits LEFT bytes: appends its image block to CONTENT and records it in ITEM's
//  "preview". Returns its size (0: none), and in *WHY_NOT why there is none.
static size_t
s_add_preview (json_t *content, json_t *item, const json_t *entry, size_t left,
               const char **why_not)
{
    const char *data = json_string_value (json_object_get (entry, "data"));
    size_t size = (size_t)json_integer_value (json_object_get (entry, "size_bytes"));
    *why_not = json_string_value (json_object_get (entry, "error"));
    if (!data || size > left) {
        if (!*why_not)
            *why_not = "the result's image budget is used up";
        return 0;
    }
    const char *mime = json_string_value (json_object_get (entry, "mime_type"));
    json_array_append_new (
        content, json_pack ("{s:s, s:s, s:s}", "type", "image", "data", data, "mimeType", mime));
    json_object_set_new (item, "preview",
                         json_pack ("{s:s, s:O, s:O, s:I}", "mime_type", mime, "width",
                                    json_object_get (entry, "width"), "height",
                                    json_object_get (entry, "height"), "size_bytes",
                                    (json_int_t)size));
    return size;
}

//  The output ITEM's MIME image, past the budget of IMAGES with SENT bytes inline so far:
//  the preview made for it (ENTRY, cg_preview_plan's, may be NULL) when it fits what is
//  left, then a link to the saved file (a resource_link, or a line of *TEXT). Nothing is
//  decoded here: the server's loop only places what the runner made. Returns the
//  preview's size (0: none).
static size_t
s_preview (json_t *content, json_t *item, const char *mime, const cg_run_images_t *images,
           const json_t *entry, size_t sent, char **text)
{
    size_t left = images->budget > sent ? images->budget - sent : 0;
    const char *why_not = NULL;
    size_t made = s_add_preview (content, item, entry, left, &why_not);
    cg_result_link_output (item, mime, made ? json_array_size (content) : 0);
    if (!made)
        json_object_del (item, "content_index");
    const char *path = json_string_value (json_object_get (item, "path"));
    const char *url = json_string_value (json_object_get (item, "download_url"));
    size_t full = (size_t)json_integer_value (json_object_get (item, "size_bytes"));
    if (images->links && path && url) {
        const char *slash = strrchr (path, '/');
        json_array_append_new (content,
                               json_pack ("{s:s, s:s, s:s, s:s, s:I}", "type", "resource_link",
                                          "uri", url, "name", slash ? slash + 1 : path, "mimeType",
                                          mime, "size", (json_int_t)full));
    }
    cleanup_free char *line = cg_strdupf (
        "%s[%s image of %zu bytes, over the result's image budget of %zu bytes: %s%s%s; the "
        "whole image is %s%s%s]",
        **text ? "\n" : "", mime, full, images->budget,
        made ? "a smaller preview is sent" : "not sent inline (no preview: ", made ? "" : why_not,
        made ? "" : ")", path ? path : "not saved (the session has no workspace)", url ? " " : "",
        url ? url : "");
    s_append (text, line);
    return made;
}

//  The line of *TEXT for the run's file ITEM (an artifact), with the preview made of it
//  (cg_preview_plan's, in IMAGES) placed in CONTENT when one was made and fits the budget
//  past SENT. Returns the preview's size (0: none).
static size_t
s_artifact_line (json_t *content, json_t *item, size_t i, const cg_run_images_t *images,
                 size_t sent, char **text)
{
    const char *path = json_string_value (json_object_get (item, "path"));
    const char *url = json_string_value (json_object_get (item, "download_url"));
    const json_t *entry =
        images && path ? json_object_get (json_object_get (images->previews, "files"), path) : NULL;
    const char *why_not = NULL;
    size_t left = images && images->budget > sent ? images->budget - sent : 0;
    size_t made = entry ? s_add_preview (content, item, entry, left, &why_not) : 0;
    cleanup_free char *line = cg_strdupf (
        "%s%s (%s, %" JSON_INTEGER_FORMAT " bytes)%s%s%s%s%s",
        i == 0 ? (*text ? "\n[files created or changed]\n" : "[files created or changed]\n") : "\n",
        path, json_string_value (json_object_get (item, "mime_type")),
        json_integer_value (json_object_get (item, "size_bytes")), url ? " " : "", url ? url : "",
        made    ? " (a smaller preview is sent)"
        : entry ? " (no preview: "
                : "",
        !made && entry ? why_not : "", !made && entry ? ")" : "");
    s_append (text, line);
    return made;
}

//  "image/png 640x480" for the base64 image B64 of MIME: its size read from the header of
//  its first bytes (decoded up to 3 KB; the image itself never is), or the MIME alone when
//  those do not say. Caller frees.
static char *
s_image_words (const char *b64, const char *mime)
{
    char prefix[4096];
    size_t n = 0;
    for (const char *c = b64; *c && n < sizeof prefix - 1; c++)
        if (!isspace ((unsigned char)*c))
            prefix[n++] = *c;
    n -= n % 4;
    unsigned char bytes[3072];
    size_t len = 0;
    int width, height;
    if (sodium_base642bin (bytes, sizeof bytes, prefix, n, NULL, &len, NULL,
                           sodium_base64_VARIANT_ORIGINAL)
            == 0
        && cg_image_size (bytes, len, mime, &width, &height, NULL) == 0)
        return cg_strdupf ("%s %dx%d", mime, width, height);
    return cg_xstrdup (mime);
}

//  The text block of a run that printed nothing: "(no output)", or when CONTENT carries
//  images (a plt.show()), what they are: "(no text output; 1 image: image/png 640x480)".
//  Caller frees.
static char *
s_no_text (const json_t *content)
{
    char *words = cg_xstrdup ("");
    size_t count = 0, i;
    json_t *block;
    json_array_foreach (content, i, block)
    {
        const char *type = json_string_value (json_object_get (block, "type"));
        const char *data = json_string_value (json_object_get (block, "data"));
        const char *mime = json_string_value (json_object_get (block, "mimeType"));
        if (!type || strcmp (type, "image") != 0 || !data || !mime)
            continue;
        cleanup_free char *one = s_image_words (data, mime);
        s_append (&words, count++ ? ", " : "");
        s_append (&words, one);
    }
    if (!count) {
        free (words);
        return cg_xstrdup ("(no output)");
    }
    char *text =
        cg_strdupf ("(no text output; %zu image%s: %s)", count, count == 1 ? "" : "s", words);
    free (words);
    return text;
}

json_t *
cg_run_result_call (json_t *structured, const cg_run_images_t *images)
{
    size_t sent = 0; /* image bytes inline so far */
    const char *status = json_string_value (json_object_get (structured, "status"));
    const char *out = json_string_value (json_object_get (structured, "stdout"));
    const char *err = json_string_value (json_object_get (structured, "stderr"));
    const char *message = json_string_value (json_object_get (structured, "error_message"));
    json_t *content = json_array ();

    char *text = cg_xstrdup ("");
    if (out && *out)
        s_append (&text, out);
    if (err && *err) {
        s_append (&text, *text ? "\n[stderr]\n" : "[stderr]\n");
        s_append (&text, err);
    }
    json_t *outputs = json_object_get (structured, "outputs");
    size_t i;
    json_t *item;
    json_array_foreach (outputs, i, item)
    {
        json_t *data = json_object_get (item, "data");
        const char *mime = NULL;
        const char *image = cg_image_of_output (item, &mime);
        if (image) {
            //  The bytes go in the image block only; the output names it and its file.
            size_t bytes = cg_image_base64_size (image);
            if (!images || sent + bytes <= images->budget) {
                json_array_append_new (content, json_pack ("{s:s, s:s, s:s}", "type", "image",
                                                           "data", image, "mimeType", mime));
                cg_result_link_output (item, mime,
                                       json_array_size (content)); /* the text block comes first */
                sent += bytes;
            }
            else
                sent += s_preview (
                    content, item, mime, images,
                    json_array_get (json_object_get (images->previews, "outputs"), i), sent, &text);
        }
        else if (json_object_get (data, "text/plain")
                 && strcmp (json_string_value (json_object_get (item, "type")), "execute_result")
                        == 0) {
            s_append (&text, *text ? "\n[result]\n" : "[result]\n");
            s_append (&text, json_string_value (json_object_get (data, "text/plain")));
        }
    }
    const char *streams[] = {"stdout", "stderr"};
    for (int k = 0; k < 2; k++) {
        cleanup_free char *file_key = cg_strdupf ("%s_file", streams[k]);
        cleanup_free char *url_key = cg_strdupf ("%s_url", streams[k]);
        cleanup_free char *cut_key = cg_strdupf ("%s_truncated", streams[k]);
        const char *file = json_string_value (json_object_get (structured, file_key));
        const char *url = json_string_value (json_object_get (structured, url_key));
        if (!file && json_is_true (json_object_get (structured, cut_key))
            && json_is_null (json_object_get (structured, "session_id"))) {
            cleanup_free char *line = cg_strdupf (
                "%s[%s was cut; run with a session_id to keep the whole text as a file]",
                *text ? "\n" : "", streams[k]);
            s_append (&text, line);
        }
        if (!file)
            continue;
        cleanup_free char *line =
            cg_strdupf ("%s[%s was cut; the whole text is in %s%s%s]", *text ? "\n" : "",
                        streams[k], file, url ? " " : "", url ? url : "");
        s_append (&text, line);
    }
    json_t *artifacts = json_object_get (structured, "artifacts");
    json_array_foreach (artifacts, i, item) sent +=
        s_artifact_line (content, item, i, images, sent, &text);
    if (status && strcmp (status, "success") != 0 && message) {
        s_append (&text, *text ? "\n" : "");
        cleanup_free char *line = s_status_line (status, message, err);
        s_append (&text, line);
    }
    const char *notice = json_string_value (json_object_get (structured, "notice"));
    if (notice) {
        cleanup_free char *line = cg_strdupf ("%s[notice] %s", *text ? "\n" : "", notice);
        s_append (&text, line);
    }
    if (!*text) {
        free (text);
        text = s_no_text (content);
    }
    json_array_insert_new (content, 0, json_pack ("{s:s, s:s}", "type", "text", "text", text));
    free (text);
    return json_pack ("{s:o, s:o, s:b}", "content", content, "structuredContent", structured,
                      "isError", status && strcmp (status, "success") != 0);
}
