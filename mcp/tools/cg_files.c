/*  cg_files — seed 004's file tools on a session's workspace: upload_file, read_artifact,
    list_artifacts, and the download URLs added to results. */
#include "mcp/tools/cg_files.h"
#include "mcp/cg_result.h"
#include "mcp/tools/cg_tools.h"

#include "artifacts/cg_downloads.h"
#include "base/cg_util.h"

#include <errno.h>
#include <sodium.h>
#include <string.h>

//  "15MB", "10MB", "1.5MB": the seeds' way of writing sizes in messages.
static void
s_megabytes (char out[32], double bytes)
{
    double mb = bytes / (1024.0 * 1024.0);
    if (mb >= 0.1)
        snprintf (out, 32, mb == (double)(long long)mb ? "%.0fMB" : "%.1fMB", mb);
    else
        snprintf (out, 32, "%.0f bytes", bytes);
}

static json_t *
s_error (const char *error, const char *message, const cg_files_t *self)
{
    return cg_tools_error_object (error, message, self ? self->session_id : NULL);
}

json_t *
cg_files_upload_check (const cg_config_t *config, json_t *arguments, const char *session_id,
                       char **rel_p)
{
    *rel_p = NULL;
    json_t *filename = json_object_get (arguments, "filename");
    json_t *content = json_object_get (arguments, "content_base64");
    json_t *overwrite = json_object_get (arguments, "overwrite");
    if (!json_is_string (filename) || !json_is_string (content))
        return cg_tools_error_object (
            "invalid_params", "'filename' and 'content_base64' are required strings", session_id);
    if (overwrite && !json_is_boolean (overwrite))
        return cg_tools_error_object ("invalid_params", "'overwrite' must be true or false",
                                      session_id);
    cg_error_t *err = NULL;
    cleanup_free char *rel = cg_workspace_sanitize_filename (json_string_value (filename), &err);
    if (!rel) {
        cleanup_free char *message = cg_strdupf ("invalid filename: %s", cg_error_message (err));
        cg_error_destroy (&err);
        return cg_tools_error_object ("invalid_filename", message, session_id);
    }
    //  Base64 holds 3 bytes in 4 characters; reject what cannot fit before decoding.
    size_t encoded = json_string_length (content);
    if (encoded / 4 * 3 > config->max_upload_bytes + 3) {
        char size[32], limit[32];
        s_megabytes (size, (double)encoded / 4 * 3);
        s_megabytes (limit, (double)config->max_upload_bytes);
        cleanup_free char *message =
            cg_strdupf ("%s is about %s, exceeds the %s upload limit (%zu bytes).", rel, size,
                        limit, config->max_upload_bytes);
        return cg_tools_error_object ("file_too_large", message, session_id);
    }
    *rel_p = rel;
    rel = NULL;
    return NULL;
}

cg_files_t
cg_files_of (const cg_config_t *config, cg_http_t *http, const cg_registry_session_t *session)
{
    return (cg_files_t){.config = config,
                        .ws = session->ws,
                        .session_id = session->id,
                        .token = session->token,
                        .http = http};
}

json_t *
cg_files_put (const cg_files_t *self, const char *rel, const void *bytes, size_t len,
              bool overwrite, const char *text)
{
    cg_error_t *err = NULL;
    cg_workspace_write (self->ws, rel, bytes, len, overwrite, (uid_t)self->config->sandbox_uid,
                        (gid_t)self->config->sandbox_gid, &err);
    return cg_files_written (self, rel, len, &err, text);
}

json_t *
cg_files_written (const cg_files_t *self, const char *rel, size_t len, cg_error_t **err,
                  const char *text)
{
    if (*err) {
        int code = (*err)->code;
        cleanup_free char *message =
            code == EEXIST ? cg_strdupf ("%s already exists. Set overwrite=true to replace.", rel)
                           : cg_xstrdup (cg_error_message (*err));
        cg_error_destroy (err);
        return s_error (code == EEXIST                  ? "file_exists"
                        : code == EIO || code == ENOSPC ? "write_failed"
                                                        : "invalid_path",
                        message, self);
    }
    cleanup_free char *path = cg_strdupf ("%s/%s", CG_WORKSPACE_MOUNT, rel);
    const char *slash = strrchr (rel, '/');
    const char *name = slash ? slash + 1 : rel;
    json_t *structured = json_pack (
        "{s:s, s:s, s:s, s:I, s:s, s:b}", "session_id", self->session_id, "path", path, "filename",
        name, "size_bytes", (json_int_t)len, "mime_type", cg_mime_type (name), "success", 1);
    cleanup_free char *url = cg_files_url (self, rel);
    if (url)
        json_object_set_new (structured, "download_url", json_string (url));
    return cg_tools_object_result (structured, text, false);
}

json_t *
cg_files_upload (const cg_files_t *self, json_t *arguments, const char *rel)
{
    json_t *content = json_object_get (arguments, "content_base64");
    bool overwrite = json_is_true (json_object_get (arguments, "overwrite"));
    size_t encoded = json_string_length (content);
    size_t cap = encoded / 4 * 3 + 3, len = 0;
    cleanup_free unsigned char *bytes = cg_xmalloc (cap ? cap : 1);
    const char *end = NULL;
    if (sodium_base642bin (bytes, cap, json_string_value (content), encoded, " \t\r\n", &len, &end,
                           sodium_base64_VARIANT_ORIGINAL)
            != 0
        || (end && *end)) {
        return s_error ("invalid_base64",
                        "content_base64 is not valid base64 (standard alphabet with '=' padding)",
                        self);
    }
    if (len > self->config->max_upload_bytes) {
        char size[32], limit[32];
        s_megabytes (size, (double)len);
        s_megabytes (limit, (double)self->config->max_upload_bytes);
        cleanup_free char *message =
            cg_strdupf ("%s is %s, exceeds the %s upload limit (%zu bytes).", rel, size, limit,
                        self->config->max_upload_bytes);
        return s_error ("file_too_large", message, self);
    }
    cleanup_free char *text = cg_strdupf ("Uploaded %s/%s (%zu bytes) to session %s.",
                                          CG_WORKSPACE_MOUNT, rel, len, self->session_id);
    return cg_files_put (self, rel, bytes, len, overwrite, text);
}

//  True for the MIME types an MCP image content block may carry.
static bool
s_image_type (const char *mime)
{
    return strcmp (mime, "image/png") == 0 || strcmp (mime, "image/jpeg") == 0
           || strcmp (mime, "image/gif") == 0 || strcmp (mime, "image/webp") == 0;
}

static bool
s_text_type (const char *mime)
{
    return strncmp (mime, "text/", 5) == 0 || strcmp (mime, "application/json") == 0
           || strcmp (mime, "image/svg+xml") == 0 || strcmp (mime, "application/xml") == 0;
}

//  read_artifact's answer for the LEN BYTES of the workspace file REL. FORMAT (checked)
//  says where an image's base64 goes: "base64" or NULL (seed 004: content_base64 only),
//  "image" (an image block only; content_base64 is "" and content_index names the block)
//  or "both". Other files always have content_base64, short text ones their text shown.
static json_t *
s_read_answer (const cg_files_t *self, const char *rel, const char *bytes, size_t len,
               const char *format)
{
    cleanup_free char *path = cg_strdupf ("%s/%s", CG_WORKSPACE_MOUNT, rel);
    const char *slash = strrchr (rel, '/');
    const char *filename = slash ? slash + 1 : rel;
    const char *mime = cg_mime_type (filename);
    bool image = s_image_type (mime);
    bool block = image && format && strcmp (format, "base64") != 0;
    bool inline_base64 = !block || strcmp (format, "both") == 0;
    size_t b64_len = sodium_base64_encoded_len (len, sodium_base64_VARIANT_ORIGINAL);
    cleanup_free char *b64 = cg_xmalloc (b64_len);
    sodium_bin2base64 (b64, b64_len, (const unsigned char *)bytes, len,
                       sodium_base64_VARIANT_ORIGINAL);
    json_t *structured =
        json_pack ("{s:s, s:s, s:s, s:s, s:I, s:s}", "session_id", self->session_id, "path", path,
                   "filename", filename, "mime_type", mime, "size_bytes", (json_int_t)len,
                   "content_base64", inline_base64 ? b64 : "");
    cleanup_free char *url = cg_files_url (self, rel);
    if (url)
        json_object_set_new (structured, "download_url", json_string (url));
    if (block && !inline_base64)
        json_object_set_new (structured, "content_index", json_integer (1));
    //  The model sees short text files as text, and images as images when asked.
    json_t *text_value = NULL;
    if (s_text_type (mime) && len <= CG_TEXT_FILE_INLINE_MAX)
        text_value = json_stringn (bytes, len);
    const char *where = !inline_base64 ? ", shown below."
                        : block        ? ", shown below; content_base64 holds the bytes."
                        : image ? "; content_base64 holds the bytes (format 'image' shows it)."
                                : "; content_base64 holds the bytes.";
    cleanup_free char *text = text_value
                                  ? cg_strdupf ("%s (%s, %zu bytes):\n%s", path, mime, len,
                                                json_string_value (text_value))
                                  : cg_strdupf ("%s (%s, %zu bytes)%s", path, mime, len, where);
    json_decref (text_value);
    json_t *result = cg_tools_object_result (structured, text, false);
    if (block)
        json_array_append_new (
            json_object_get (result, "content"),
            json_pack ("{s:s, s:s, s:s}", "type", "image", "data", b64, "mimeType", mime));
    return result;
}

json_t *
cg_files_read (const cg_files_t *self, json_t *arguments)
{
    json_t *path_arg = json_object_get (arguments, "path");
    if (!json_is_string (path_arg))
        return s_error ("invalid_params",
                        "'path' is a required string (a file below " CG_WORKSPACE_MOUNT ")", self);
    json_t *format = json_object_get (arguments, "format");
    if (format
        && (!json_is_string (format)
            || (strcmp (json_string_value (format), "base64") != 0
                && strcmp (json_string_value (format), "image") != 0
                && strcmp (json_string_value (format), "both") != 0)))
        return s_error ("invalid_params", "'format' is one of base64, image, both", self);
    cg_error_t *err = NULL;
    cleanup_free char *rel = cg_workspace_normalize_len (json_string_value (path_arg),
                                                         json_string_length (path_arg), &err);
    if (!rel) {
        cleanup_free char *message = cg_strdupf ("invalid path: %s", cg_error_message (err));
        cg_error_destroy (&err);
        return s_error ("invalid_path", message, self);
    }
    cleanup_free char *path = cg_strdupf ("%s/%s", CG_WORKSPACE_MOUNT, rel);
    const char *slash = strrchr (rel, '/');
    const char *filename = slash ? slash + 1 : rel;
    struct stat st = {0};
    size_t len = 0;
    //  The bytes go out as base64 (4 characters per 3 bytes) in one result, which must
    //  fit the result budget with room for the other fields.
    size_t budget = self->config->max_result_bytes;
    size_t fit = budget > 2 * CG_RESULT_NOTE_ROOM ? (budget - 2 * CG_RESULT_NOTE_ROOM) / 4 * 3 : 0;
    size_t max = self->config->max_artifact_read_bytes;
    bool by_budget = fit < max;
    if (by_budget)
        max = fit;
    cleanup_free char *bytes = cg_workspace_read (self->ws, rel, max, &len, &st, &err);
    if (!bytes) {
        int code = (err ? err->code : 0);
        json_t *result;
        if (code == ENOENT || code == ENOTDIR) {
            cleanup_free char *message = cg_strdupf ("No artifact at %s", path);
            result = s_error ("not_found", message, self);
        }
        else if (code == EFBIG) {
            char size[32], limit[32];
            s_megabytes (size, (double)st.st_size);
            s_megabytes (limit, (double)max);
            cleanup_free char *url = cg_files_url (self, rel);
            cleanup_free char *message =
                cg_strdupf ("%s is %s, exceeds %s limit%s. %s", filename, size, limit,
                            by_budget ? " (what one result may carry, --max-result-bytes)" : "",
                            url ? "Use download_url instead."
                                : "Start the server with --http-listen to download it.");
            result = s_error ("artifact_too_large", message, self);
            json_t *structured = json_object_get (result, "structuredContent");
            json_object_set_new (structured, "size_bytes", json_integer ((json_int_t)st.st_size));
            if (url)
                json_object_set_new (structured, "download_url", json_string (url));
        }
        else
            result = s_error ("invalid_path", cg_error_message (err), self);
        cg_error_destroy (&err);
        return result;
    }
    return s_read_answer (self, rel, bytes, len, json_string_value (format));
}

json_t *
cg_files_list (const cg_files_t *self)
{
    cg_error_t *err = NULL;
    json_t *listing = cg_workspace_list (self->ws, &err);
    if (!listing) {
        json_t *result = s_error ("list_failed", cg_error_message (err), self);
        cg_error_destroy (&err);
        return result;
    }
    json_t *artifacts = json_object_get (listing, "artifacts");
    cleanup_free char *text =
        cg_strdupf ("%zu file(s) in %s:", json_array_size (artifacts), CG_WORKSPACE_MOUNT);
    size_t i;
    json_t *item;
    json_array_foreach (artifacts, i, item)
    {
        json_object_del (item, "mtime_ns");
        cleanup_free char *url =
            cg_files_url (self, json_string_value (json_object_get (item, "path")));
        if (url)
            json_object_set_new (item, "download_url", json_string (url));
        if (i < 200) {
            char *more = cg_strdupf ("%s\n%s (%s, %" JSON_INTEGER_FORMAT " bytes)", text,
                                     json_string_value (json_object_get (item, "path")),
                                     json_string_value (json_object_get (item, "mime_type")),
                                     json_integer_value (json_object_get (item, "size_bytes")));
            free (text);
            text = more;
        }
    }
    json_t *structured = json_pack ("{s:s, s:O, s:O}", "session_id", self->session_id, "artifacts",
                                    artifacts, "truncated", json_object_get (listing, "truncated"));
    json_decref (listing);
    return cg_tools_object_result (structured, text, false);
}

char *
cg_files_url (const cg_files_t *self, const char *path)
{
    if (!self->http || !self->token)
        return NULL;
    return cg_downloads_url (self->http, self->session_id, self->token, path);
}

static void
s_add_url (const cg_files_t *self, json_t *object, const char *path_key, const char *url_key)
{
    const char *path = json_string_value (json_object_get (object, path_key));
    cleanup_free char *url = path ? cg_files_url (self, path) : NULL;
    if (url)
        json_object_set_new (object, url_key, json_string (url));
}

void
cg_files_add_urls (const cg_files_t *self, json_t *structured)
{
    if (!self->http)
        return;
    const char *lists[] = {"artifacts", "outputs"};
    for (int k = 0; k < 2; k++) {
        size_t i;
        json_t *item;
        json_array_foreach (json_object_get (structured, lists[k]), i, item)
            s_add_url (self, item, "path", "download_url");
    }
    s_add_url (self, structured, "stdout_file", "stdout_url");
    s_add_url (self, structured, "stderr_file", "stderr_url");
}
