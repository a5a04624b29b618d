/*  cg_http — the HTTP listener (GNU libmicrohttpd, driven from the caller's poll loop):
    artifact downloads under /files/, and room for more routes (MCP's /mcp later). */
#ifndef CG_HTTP_H
#define CG_HTTP_H

#include "../bridge/cg_error.h"
#include "cg_workspace.h"

/*  Bounds on what a client may send. */
#define CG_HTTP_URL_MAX 4096                 /* request target, query included (else 414) */
#define CG_HTTP_CONNECTIONS_MAX 256          /* concurrent connections; more are refused */
#define CG_HTTP_CONNECTION_TIMEOUT_S 30      /* an idle connection is closed after this */
#define CG_HTTP_CONNECTION_MEMORY (16 * 1024) /* per connection: request line, headers, I/O */
#define CG_HTTP_TOKEN_MAX 256                /* longer tokens are never compared */

typedef struct cg_http_t cg_http_t;

/*  Looks up the session SESSION_ID whose download token is the TOKEN_LEN bytes at TOKEN
    (compared in constant time): returns its workspace (an open cg_workspace_t, borrowed),
    or NULL when there is no such session or the token is not its. Called on the thread
    that calls cg_http_process, and only while it runs; the workspace must stay valid
    until cg_http_process returns. */
typedef cg_workspace_t *(cg_http_lookup_fn) (void *arg, const char *session_id, const char *token,
                                             size_t token_len);

/*  One request to the MCP endpoint (/mcp), from its arrival until both the listener and
    the handler are done with it. */
typedef struct cg_http_exchange_t cg_http_exchange_t;

/*  Called on the cg_http_process thread once a request to /mcp has arrived whole (a body
    larger than the limit gets 413 without a call). The handler answers with
    cg_http_respond, or with cg_http_stream_open, writes and cg_http_stream_close, now or
    later; when it keeps EXCHANGE past the call it takes a reference
    (cg_http_exchange_keep) and gives it back with cg_http_exchange_release. */
typedef void (cg_http_mcp_fn) (void *arg, cg_http_exchange_t *exchange);

/*  Starts listening on LISTEN, "HOST:PORT" where HOST is a numeric IPv4 address
    ("127.0.0.1", "0.0.0.0") or a numeric IPv6 address in brackets ("[::1]", "[::]";
    IPv6 sockets are IPv6-only), and PORT is 0 to 65535 (0 picks a free port, see
    cg_http_port). No default is applied and no name is resolved: the socket is bound to
    exactly that address. LOOKUP (with ARG) resolves the sessions of /files/ requests.
    The listener runs no thread of its own: the caller polls cg_http_fd and calls
    cg_http_process. Returns a new listener the caller owns (destroy with cg_http_destroy),
    or NULL with *err set: EINVAL for a malformed LISTEN, the errno of socket, bind or
    listen (EADDRINUSE, EADDRNOTAVAIL, EACCES, ...), or EIO when libmicrohttpd refuses
    to start. */
cg_http_t *cg_http_new (const char *listen, cg_http_lookup_fn *lookup, void *arg,
                        cg_error_t **err);

/*  Routes /mcp to HANDLER (with ARG); request bodies over BODY_MAX bytes get 413. */
void cg_http_set_mcp (cg_http_t *self, size_t body_max, cg_http_mcp_fn *handler, void *arg);

/*  The request's method ("POST", ...), a request header (NULL when absent; the first
    when repeated), and its body (*LEN bytes, NUL-terminated; "" when none). */
const char *cg_http_exchange_method (cg_http_exchange_t *exchange);
const char *cg_http_exchange_header (cg_http_exchange_t *exchange, const char *name);
const char *cg_http_exchange_body (cg_http_exchange_t *exchange, size_t *len);

/*  Returns false once the client's connection is gone (writes are then dropped). */
bool cg_http_exchange_alive (cg_http_exchange_t *exchange);

/*  Takes a reference to EXCHANGE (returns it); cg_http_exchange_release gives it back
    and sets *exchange_p to NULL. */
cg_http_exchange_t *cg_http_exchange_keep (cg_http_exchange_t *exchange);
void cg_http_exchange_release (cg_http_exchange_t **exchange_p);

/*  Answers with STATUS, CONTENT_TYPE (NULL: none) and the LEN bytes at BODY (copied).
    HEADERS: NULL, or a NULL-terminated list of name, value, name, value... Once only. */
void cg_http_respond (cg_http_exchange_t *exchange, unsigned int status, const char *content_type,
                      const char *body, size_t len, const char *const *headers);

/*  Answers 200 with a text/event-stream body that stays open: cg_http_stream_write sends
    the LEN bytes at DATA (one or more complete SSE events), cg_http_stream_close ends it. */
void cg_http_stream_open (cg_http_exchange_t *exchange, const char *const *headers);
void cg_http_stream_write (cg_http_exchange_t *exchange, const char *data, size_t len);
void cg_http_stream_close (cg_http_exchange_t *exchange);

/*  Returns true when the listener is bound to a loopback address (127.0.0.0/8, ::1). */
bool cg_http_loopback (cg_http_t *self);

/*  Closes every connection and the listening socket, frees *self_p and sets it to NULL.
    Safe on NULL. */
void cg_http_destroy (cg_http_t **self_p);

/*  Returns the one file descriptor (an epoll fd) to poll for reading; when it is readable,
    call cg_http_process. The fd stays owned by the listener. */
int cg_http_fd (cg_http_t *self);

/*  Returns how many milliseconds the caller may wait at most before calling
    cg_http_process even when cg_http_fd is not readable (connection timeouts, work
    already pending; 0 means call it now), or -1 when there is no such deadline. Ask
    again before every wait. */
int cg_http_timeout_ms (cg_http_t *self);

/*  Accepts connections, reads requests, answers them and sends what the sockets take,
    without blocking (file reads aside). Calls the lookup function. */
void cg_http_process (cg_http_t *self);

/*  Returns the port the listener is bound to (the chosen one when LISTEN asked for 0). */
int cg_http_port (cg_http_t *self);

/*  Returns "http://HOST:PORT/files/<session_id>/<rel>?token=<token>" with SESSION_ID,
    each segment of REL and TOKEN percent-encoded (all but RFC 3986 unreserved bytes).
    REL is a workspace path as cg_workspace_normalize takes it ("sub/data.csv" or
    "/mnt/data/sub/data.csv"). HOST is the listen address, or the loopback address of
    its family when the listener is bound to a wildcard address (0.0.0.0, [::]). Returns
    the URL (caller owns the result), or NULL when REL is not a valid workspace path. */
char *cg_http_download_url (cg_http_t *self, const char *session_id, const char *token,
                            const char *rel);

#endif
