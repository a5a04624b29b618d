/*  fuzz_args — the small parsers of a client's words that are not JSON-RPC: the Accept
    header of a POST to /mcp (cg_streamable_accepts) and calculate's expression, checked
    before any sandbox starts (cg_tools_calc_refusal).

    Input: one byte choosing the parser, then the bytes of the header or the expression
    (NULs cut a header short, as a C string; an expression is a JSON string and may hold
    them).

    Invariants: the Accept answer is a subset of JSON | SSE, and names both when the
    header is exactly a type the server serves; an expression that is accepted holds only
    ASCII letters, digits and the allowed operators, no "__", no '.' outside a number,
    and at most CG_CALC_EXPRESSION_MAX characters; a refusal always says why. */
#define _GNU_SOURCE
#include "cg_fuzz.h"

#include "mcp/cg_streamable.h"
#include "mcp/tools/cg_tools.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

static void
s_accept (const uint8_t *data, size_t size)
{
    char *header = strndup ((const char *)data, size);
    CG_FUZZ_CHECK (header != NULL, "out of memory");
    int accepts = cg_streamable_accepts (header);
    CG_FUZZ_CHECK ((accepts & ~(CG_ACCEPT_JSON | CG_ACCEPT_SSE)) == 0, "JSON and SSE only");
    if (strcmp (header, "application/json") == 0)
        CG_FUZZ_CHECK (accepts == CG_ACCEPT_JSON, "application/json alone is JSON");
    if (strcmp (header, "text/event-stream") == 0)
        CG_FUZZ_CHECK (accepts == CG_ACCEPT_SSE, "text/event-stream alone is SSE");
    free (header);
}

static void
s_expression (const uint8_t *data, size_t size)
{
    json_t *expression = json_stringn_nocheck ((const char *)data, size);
    CG_FUZZ_CHECK (expression != NULL, "out of memory");
    const char *error = NULL;
    char *why = cg_tools_calc_refusal (expression, &error);
    if (why) {
        CG_FUZZ_CHECK (*why && error && *error, "a refusal says why, with a code");
        free (why);
    }
    else {
        CG_FUZZ_CHECK (size > 0 && size <= CG_CALC_EXPRESSION_MAX, "accepted within the limit");
        CG_FUZZ_CHECK (!memmem (data, size, "__", 2), "no dunder accepted");
        for (size_t i = 0; i < size; i++) {
            unsigned char c = data[i];
            CG_FUZZ_CHECK (c && c < 0x80 && (isalnum (c) || strchr (" \t\r\n_+-*/^()[],.=<>!%", c)),
                           "ASCII math only");
            if (c == '.')
                CG_FUZZ_CHECK ((i > 0 && isdigit (data[i - 1]))
                                   || (i + 1 < size && isdigit (data[i + 1])),
                               "a '.' only in a number");
        }
    }
    json_decref (expression);
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
    cg_fuzz_init ();
    if (size == 0)
        return 0;
    if (data[0] & 1)
        s_expression (data + 1, size - 1);
    else
        s_accept (data + 1, size - 1);
    return 0;
}
