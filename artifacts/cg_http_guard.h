/*  cg_http_guard — the checks a route on the listener makes before it trusts a request:
    DNS rebinding (Host and Origin on a loopback listener) and the bearer token. */
#ifndef CG_HTTP_GUARD_H
#define CG_HTTP_GUARD_H

#include "artifacts/cg_http.h"

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

/*  The operator routes' check (/admin/sessions, /metrics): returns true when EXCHANGE
    carries "Authorization: Bearer TOKEN" (the admin token, compared in constant time);
    else answers it 401 saying which token is wanted (503 when TOKEN is NULL: no admin
    token could be made) and returns false. */
bool cg_http_guard_admin (cg_http_exchange_t *exchange, const char *token);

/*  Returns the token kept in DIR/NAME: the file's content when it is a regular file of the
    effective user, mode 0600 or stricter, holding 16 to 256 lowercase hex digits; else a
    new random one (64 hex digits) written there 0600, replacing what was there. Two
    processes that make one at once agree on the first written. Caller owns the result;
    NULL with *err set when DIR cannot be opened or written. */
char *cg_http_guard_kept_token (const char *dir, const char *name, cg_error_t **err);

#endif
