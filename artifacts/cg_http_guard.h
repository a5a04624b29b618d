/*  cg_http_guard — the checks a route on the listener makes before it trusts a request:
    DNS rebinding (Host and Origin on a loopback listener) and the bearer token. */
#ifndef CG_HTTP_GUARD_H
#define CG_HTTP_GUARD_H

#include "cg_http.h"

#include <stdbool.h>

/*  DNS rebinding: on a loopback listener HTTP, Host must name it, and an Origin (a
    browser's page) must be this listener too (or equal Host). Returns true when the
    request EXCHANGE may go on. */
bool cg_http_guard_origin (cg_http_t *http, cg_http_exchange_t *exchange);

/*  Returns true when EXCHANGE carries "Authorization: Bearer T" for a token T of EXPECTED,
    one token or a comma-separated list of them (compared in constant time), or when
    EXPECTED is NULL (no token configured). */
bool cg_http_guard_token (cg_http_exchange_t *exchange, const char *expected);

/*  As cg_http_guard_token, saying which token of EXPECTED's list EXCHANGE carries: its
    index from 0; 0 when EXPECTED is NULL; -1 when none. */
int cg_http_guard_token_index (cg_http_exchange_t *exchange, const char *expected);

/*  Answers EXCHANGE 401 with a WWW-Authenticate: Bearer challenge and a JSON error body. */
void cg_http_guard_unauthorized (cg_http_exchange_t *exchange);

#endif
