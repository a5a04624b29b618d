/*  fuzz_modern — what a 2026-07-28 client sends that is parsed outside the JSON-RPC layer:
    an HTTP header value (cg_modern_header_value: plain, or "=?base64?...?=") and a message's
    per-request _meta (cg_modern_request), and the marking of a result (cg_modern_result).

    Input: one mode byte, then the bytes. Mode & 1: the bytes are a header value. Else they
    are a JSON message.

    Invariants: a plain header value without surrounding whitespace comes back unchanged; a decoded one has no NUL and is
    shorter than the value; cg_modern_request is true exactly when params._meta has the
    protocol version key; a marked object result has resultType and the serverInfo _meta. */
#define _GNU_SOURCE
#include "cg_fuzz.h"

#include "mcp/cg_modern.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    uint8_t mode = data[0];
    data++, size--;
    if (mode & 1) {
        char *value = strndup ((const char *)data, size);
        char *decoded = cg_modern_header_value (value);
        size_t lead = strspn (value, " \t");
        if (strncmp (value + lead, "=?base64?", 9) != 0 && lead == 0
            && (!*value || (value[strlen (value) - 1] != ' ' && value[strlen (value) - 1] != '\t')))
            CG_FUZZ_CHECK (decoded && strcmp (decoded, value) == 0, "a plain value is kept");
        else if (decoded && strcmp (decoded, value) != 0)
            CG_FUZZ_CHECK (strlen (decoded) < strlen (value), "a decoded value is shorter");
        free (decoded);
        free (value);
        return 0;
    }
    json_t *message = json_loadb ((const char *)data, size, 0, NULL);
    if (!message)
        return 0;
    json_t *meta = json_object_get (json_object_get (message, "params"), "_meta");
    CG_FUZZ_CHECK (cg_modern_request (message)
                       == (json_object_get (meta, CG_MODERN_META_VERSION) != NULL),
                   "modern exactly when _meta names the version");
    json_t *result = json_object_get (message, "result");
    if (json_is_object (result)) {
        cg_modern_result (result, json_string_value (json_object_get (message, "method")));
        CG_FUZZ_CHECK (json_object_get (result, "resultType") != NULL, "a resultType");
        CG_FUZZ_CHECK (json_object_get (json_object_get (result, "_meta"),
                                        "io.modelcontextprotocol/serverInfo")
                           != NULL,
                       "the serverInfo _meta");
    }
    json_decref (message);
    return 0;
}
