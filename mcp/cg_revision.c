/*  cg_revision — 2026-07-28's wire: its requests and its HTTP header values. */
#include "mcp/cg_revision.h"
#include "base/cg_util.h"

#include <sodium.h>
#include <string.h>

bool
cg_modern_request (json_t *message)
{
    json_t *meta = json_object_get (json_object_get (message, "params"), "_meta");
    return json_object_get (meta, CG_MODERN_META_VERSION) != NULL;
}

char *
cg_modern_header_value (const char *raw)
{
    //  A field value has no leading or trailing whitespace (RFC 9110, 5.5).
    if (!raw)
        return NULL;
    raw += strspn (raw, " \t");
    size_t raw_len = strlen (raw);
    while (raw_len && (raw[raw_len - 1] == ' ' || raw[raw_len - 1] == '\t'))
        raw_len--;
    cleanup_free char *value = cg_xstrndup (raw, raw_len);
    size_t len = strlen (value);
    if (len < 12 || strncmp (value, "=?base64?", 9) != 0 || strcmp (value + len - 2, "?=") != 0)
        return cg_xstrdup (value);
    size_t bin_len = 0;
    char *out = cg_xcalloc (1, len);
    if (sodium_base642bin ((unsigned char *)out, len, value + 9, len - 11, NULL, &bin_len, NULL,
                           sodium_base64_VARIANT_ORIGINAL)
            != 0
        || memchr (out, '\0', bin_len)) {
        free (out);
        return NULL;
    }
    out[bin_len] = '\0';
    return out;
}
