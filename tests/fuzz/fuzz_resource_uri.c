/*  fuzz_resource_uri — resources/read's URI (cg_resources_parse), any bytes.

    Invariants: a URI that parses has a session id of 1 to 64 bytes without '/', and a path
    with no NUL; the URI cg_resources_uri makes of that path parses back to the same path. */
#define _GNU_SOURCE
#include "cg_fuzz.h"

#include "mcp/cg_resources.h"

#include <stdlib.h>
#include <string.h>

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
    char *uri = malloc (size + 1);
    if (!uri)
        abort ();
    memcpy (uri, data, size);
    uri[size] = '\0';
    char *sid = NULL, *rel = NULL;
    if (cg_resources_parse (uri, &sid, &rel) == 0) {
        CG_FUZZ_CHECK (strlen (sid) >= 1 && strlen (sid) <= 64 && !strchr (sid, '/'),
                       "a session id of 1 to 64 bytes without '/'");
        char *again = cg_resources_uri (sid, rel);
        char *sid2 = NULL, *rel2 = NULL;
        CG_FUZZ_CHECK (cg_resources_parse (again, &sid2, &rel2) == 0, "a made URI parses");
        CG_FUZZ_CHECK (strcmp (sid, sid2) == 0 && strcmp (rel, rel2) == 0, "and round-trips");
        free (again);
        free (sid2);
        free (rel2);
    }
    free (sid);
    free (rel);
    free (uri);
    return 0;
}
