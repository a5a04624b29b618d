/*  cg_http_guard — Host, Origin and bearer-token checks for the listener's routes. */
#include "cg_http_guard.h"
#include "../bridge/cg_util.h"

#include <sodium.h>
#include <string.h>
#include <strings.h>

//  True when AUTHORITY ("host:port", LEN bytes) names HTTP on loopback.
static bool
s_loopback_authority (cg_http_t *http, const char *authority, size_t len)
{
    int port = cg_http_port (http);
    const char *hosts[] = {"127.0.0.1", "localhost", "[::1]", NULL};
    for (int i = 0; hosts[i]; i++) {
        cleanup_free char *expected = cg_strdupf ("%s:%d", hosts[i], port);
        if (strlen (expected) == len && strncasecmp (expected, authority, len) == 0)
            return true;
    }
    return false;
}

bool
cg_http_guard_origin (cg_http_t *http, cg_http_exchange_t *ex)
{
    //  Untrusted: Host and Origin are the client's.
    const char *host = cg_http_exchange_header (ex, "Host");
    if (cg_http_loopback (http) && (!host || !s_loopback_authority (http, host, strlen (host))))
        return false;
    const char *origin = cg_http_exchange_header (ex, "Origin");
    if (!origin)
        return true;
    const char *authority = strstr (origin, "://");
    if (!authority || (strncmp (origin, "http://", 7) != 0 && strncmp (origin, "https://", 8) != 0))
        return false;
    authority += 3;
    size_t len = strcspn (authority, "/");
    return s_loopback_authority (http, authority, len)
           || (host && strlen (host) == len && strncasecmp (host, authority, len) == 0);
}

int
cg_http_guard_token_index (cg_http_exchange_t *ex, const char *expected)
{
    if (!expected)
        return 0;
    const char *given = cg_http_exchange_header (ex, "Authorization");
    if (!given || strncasecmp (given, "Bearer ", 7) != 0)
        return -1;
    given += 7;
    size_t len = strlen (given);
    //  EXPECTED may list several tokens, comma-separated (one per client): each is compared
    //  in constant time, and all of them are.
    int match = -1;
    for (int index = 0; *expected; index++) {
        size_t token_len = strcspn (expected, ",");
        if (len == token_len && sodium_memcmp (given, expected, len) == 0)
            match = index;
        expected += token_len + (expected[token_len] == ',');
    }
    return match;
}

bool
cg_http_guard_token (cg_http_exchange_t *ex, const char *expected)
{
    return cg_http_guard_token_index (ex, expected) >= 0;
}

void
cg_http_guard_unauthorized (cg_http_exchange_t *ex)
{
    static const char *bearer[] = {"WWW-Authenticate", "Bearer realm=\"cellgate\"", NULL};
    static const char body[] = "{\"error\":\"unauthorized\",\"message\":\"send "
                               "Authorization: Bearer <token>\"}";
    cg_http_respond (ex, 401, "application/json", body, sizeof body - 1, bearer);
}
