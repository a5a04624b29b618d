/*  Unit tests: what a new user reads first — numbers in messages as people write them
    (cg_number_text) and which answers a POST's Accept header allows
    (cg_streamable_accepts). */
#include "base/cg_util.h"
#include "mcp/cg_streamable.h"
#include "cg_test.h"

#include <string.h>

static void
s_number (double value, const char *want)
{
    const char *name = "number";
    char out[32];
    CHECK (strcmp (cg_number_text (value, out), want) == 0, "%.17g: wanted %s, got %s", value, want,
           out);
    s_passes++;
}

static void
s_accept (const char *header, int want)
{
    const char *name = "accept";
    int got = cg_streamable_accepts (header);
    CHECK (got == want, "Accept %s: wanted %d, got %d", header ? header : "(none)", want, got);
    s_passes++;
}

int
main (void)
{
    s_number (1048576, "1048576");
    s_number (1 << 30, "1073741824");
    s_number (2147483647, "2147483647");
    s_number (0, "0");
    s_number (-64, "-64");
    s_number (0.01, "0.01");
    s_number (1.5, "1.5");
    s_number (1e20, "1e+20");

    const int both = CG_ACCEPT_JSON | CG_ACCEPT_SSE;
    //  No header answers as application/json alone does.
    s_accept (NULL, CG_ACCEPT_JSON);
    s_accept ("application/json", CG_ACCEPT_JSON);
    s_accept ("Application/JSON; charset=utf-8", CG_ACCEPT_JSON);
    s_accept ("application/*", CG_ACCEPT_JSON);
    s_accept ("text/event-stream", CG_ACCEPT_SSE);
    s_accept ("text/*", CG_ACCEPT_SSE);
    s_accept ("application/json, text/event-stream", both);
    s_accept ("text/event-stream,application/json", both);
    s_accept ("*/*", both);
    s_accept ("text/html, */*;q=0.8", both);
    s_accept ("application/json, text/event-stream;q=0", CG_ACCEPT_JSON);
    s_accept ("application/json;q=0, text/event-stream", CG_ACCEPT_SSE);
    s_accept ("text/html", 0);
    s_accept ("", 0);
    s_accept ("application/jsonx, text/event-streams", 0);
    s_accept (" , ;;, ", 0);
    printf ("%d passed, %d failed\n", s_passes, s_failures);
    return s_failures ? 1 : 0;
}
