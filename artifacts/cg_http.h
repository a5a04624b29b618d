/*  cg_http — the HTTP listener (GNU libmicrohttpd, driven from the caller's poll loop):
    requests dispatched to the routes its callers register, with bounded URLs, headers,
    bodies and connections. */
#ifndef CG_HTTP_H
#define CG_HTTP_H

#include "base/cg_error.h"
#include "base/cg_loop.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*  Bounds on what a client may send. */
#define CG_HTTP_URL_MAX 4096                  /* request target, query included (else 414) */
#define CG_HTTP_CONNECTIONS_MAX 256           /* concurrent connections; more are refused */
#define CG_HTTP_CONNECTIONS_CLOSING 32        /* more, closed by the policy, not yet freed */
#define CG_HTTP_CONNECTION_TIMEOUT_S 30       /* an idle connection is closed after this */
#define CG_HTTP_CONNECTION_MEMORY (16 * 1024) /* per connection: request line, headers, I/O */

typedef struct cg_http_t cg_http_t;

/*  Who may hold the listener's connections, before and between requests (see
    cg_http_set_limits; the defaults are in bridge/cg_limits.h). */
typedef struct {
    unsigned per_address;       /* connections from one peer address */
    unsigned owner_reserve;     /* of CG_HTTP_CONNECTIONS_MAX, kept for 127.0.0.1 and ::1 */
    unsigned request_timeout_s; /* a connection's next request must arrive whole within this */
} cg_http_limits_t;

/*  Route flags. A route's PATH matches a request path equal to it; with CG_HTTP_PREFIX, any
    path that starts with it ("/files/", "/api/"). CG_HTTP_GET_ONLY: only GET and HEAD
    (other methods get 405 with "Allow: GET, HEAD") and no request body (413 when one is
    declared), both refused before the handler is called. */
#define CG_HTTP_PREFIX 1u
#define CG_HTTP_GET_ONLY 2u

/*  One request to a route, from its arrival until both the listener and the handler are
    done with it. */
typedef struct cg_http_exchange_t cg_http_exchange_t;

/*  Called on the cg_http_process thread once a request to the route has arrived whole (a
    body larger than the route's limit gets 413 without a call). The handler answers with
    cg_http_respond, cg_http_respond_error or cg_http_respond_file, or with
    cg_http_stream_open, writes and cg_http_stream_close, now or later; when it keeps
    EXCHANGE past the call it takes a reference (cg_http_exchange_keep) and gives it back
    with cg_http_exchange_release. */
typedef void (cg_http_handler_fn) (void *arg, cg_http_exchange_t *exchange);

/*  Starts listening on LISTEN, "HOST:PORT" where HOST is a numeric IPv4 address
    ("127.0.0.1", "0.0.0.0") or a numeric IPv6 address in brackets ("[::1]", "[::]";
    IPv6 sockets are IPv6-only), and PORT is 0 to 65535 (0 picks a free port, see
    cg_http_port). No default is applied and no name is resolved: the socket is bound to
    exactly that address. It serves no route until cg_http_route adds them; every other
    path gets 404. The listener runs no thread of its own: the caller polls cg_http_fd and
    calls cg_http_process. Returns a new listener the caller owns (destroy with
    cg_http_destroy), or NULL with *err set: EINVAL for a malformed LISTEN, the errno of
    socket, bind or listen (EADDRINUSE, EADDRNOTAVAIL, EACCES, ...), or EIO when
    libmicrohttpd refuses to start. */
cg_http_t *cg_http_new (const char *listen, cg_error_t **err);

/*  Routes requests for PATH (copied; exact, or a prefix with CG_HTTP_PREFIX, see the
    flags above) to HANDLER with ARG, which must stay valid while the listener runs.
    Request bodies over BODY_MAX bytes get 413. When several routes match, an exact one
    wins, else the longest path; registering a PATH again replaces its route. */
void cg_http_route (cg_http_t *self, const char *path, unsigned flags, size_t body_max,
                    cg_http_handler_fn *handler, void *arg);

/*  The request's method ("POST", ...); its path, raw (percent-escapes left in, no query;
    it starts with the route's path); the raw value of query argument NAME (NULL when
    absent, "" when it has no value; the first when repeated); a request header (NULL
    when absent; the first when repeated); and its body (*LEN bytes, NUL-terminated; ""
    when none). Query arguments and headers read NULL once the connection is gone.
    Untrusted: all of it is the client's, bounded by CG_HTTP_URL_MAX,
    CG_HTTP_CONNECTION_MEMORY and the route's body limit. */
const char *cg_http_exchange_method (cg_http_exchange_t *exchange);
const char *cg_http_exchange_path (cg_http_exchange_t *exchange);
const char *cg_http_exchange_query (cg_http_exchange_t *exchange, const char *name);
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

/*  Answers STATUS with BODY (taken: the call releases it) as compact JSON, with HEADERS as
    for cg_http_respond. Once only. */
void cg_http_respond_json (cg_http_exchange_t *exchange, unsigned int status, json_t *body,
                           const char *const *headers);

/*  Answers STATUS with the JSON body {"error": CODE, "message": MESSAGE}. Once only. */
void cg_http_respond_error (cg_http_exchange_t *exchange, unsigned int status, const char *code,
                            const char *message);

/*  Answers 200 with the SIZE bytes of the open file *FD_P (read with pread from offset 0
    as the client takes them; a file that shrinks meanwhile ends the body short), typed
    CONTENT_TYPE, with HEADERS as for cg_http_respond. Takes the descriptor in every case
    and sets *FD_P to -1. HEAD requests get the headers alone. Once only. */
void cg_http_respond_file (cg_http_exchange_t *exchange, int *fd_p, uint64_t size,
                           const char *content_type, const char *const *headers);

/*  Answers 200 with a text/event-stream body that stays open: cg_http_stream_write sends
    the LEN bytes at DATA (one or more complete SSE events), cg_http_stream_close ends it. */
void cg_http_stream_open (cg_http_exchange_t *exchange, const char *const *headers);
void cg_http_stream_write (cg_http_exchange_t *exchange, const char *data, size_t len);
void cg_http_stream_close (cg_http_exchange_t *exchange);

/*  A connection handed over after "101 Switching Protocols" (a WebSocket). */
typedef struct cg_http_upgraded_t cg_http_upgraded_t;

/*  Called on the cg_http_process thread once the 101 answer went out: FD is the
    connection's socket (non-blocking), now the callee's to read and write but never to
    close; EXTRA (EXTRA_LEN bytes, borrowed for the call) is what the client sent after
    its request, to be treated as read from FD first. The callee ends the connection with
    cg_http_upgraded_close, always, and before cg_http_destroy. */
typedef void (cg_http_upgrade_fn) (void *arg, int fd, const char *extra, size_t extra_len,
                                   cg_http_upgraded_t *upgraded);

/*  Answers "101 Switching Protocols" with HEADERS (as for cg_http_respond; an "Upgrade"
    header among them) and hands the connection to FN with ARG. Once only. */
void cg_http_respond_upgrade (cg_http_exchange_t *exchange, const char *const *headers,
                              cg_http_upgrade_fn *fn, void *arg);

/*  Closes an upgraded connection (the socket FN was given). */
void cg_http_upgraded_close (cg_http_upgraded_t *upgraded);

/*  Sets who may hold connections (LIMITS, copied; the defaults until then), applied to
    each new connection and each request:
    - at most LIMITS->per_address connections from one peer address;
    - peers other than the owner's addresses (127.0.0.1 and ::1, where the server's own
      user connects from by default) together at most CG_HTTP_CONNECTIONS_MAX minus
      LIMITS->owner_reserve;
    - a connection's request (headers and body) must arrive whole within
      LIMITS->request_timeout_s of the connection's start or of its previous request's end
      (bytes trickled meanwhile do not extend it), else the connection is closed.
    A new connection past a limit takes the place of a connection waiting for its request
    among those the limit counts (the owner's only for the owner; others' first, then
    those that never got a request through, then the longest waiting), or is refused when
    every one of them is busy with a request. Refusals and closings are
    counted in /metrics (cellgate_http_connections_closed_total). */
void cg_http_set_limits (cg_http_t *self, const cg_http_limits_t *limits);

/*  Returns true when the listener is bound to a loopback address (127.0.0.0/8, ::1). */
bool cg_http_loopback (cg_http_t *self);

/*  Returns the host to put in URLs to this listener ("127.0.0.1", "[::1]"): the listen
    address, or the loopback address of its family when the listener is bound to a
    wildcard address (0.0.0.0, [::]). The string stays owned by the listener. */
const char *cg_http_host (cg_http_t *self);

/*  Makes links to this listener start with URL (copied; "https://host/prefix", no
    trailing slash, checked by the caller), or with "http://" cg_http_host ":" port when
    URL is NULL (the default). Logs a URL it is given. */
void cg_http_set_public_url (cg_http_t *self, const char *url);

/*  Returns what links to this listener start with, without a trailing slash
    ("http://127.0.0.1:8080", or the public URL). Owned by the listener. */
const char *cg_http_base_url (cg_http_t *self);

/*  Called once for every response queued, refusals included: ROUTE is the path of the
    route that took the request ("/mcp", "/files/"), or NULL when none did; STATUS is
    the HTTP status. On the cg_http_process thread. */
typedef void (cg_http_observer_fn) (void *arg, const char *route, unsigned int status);

/*  Sets the one observer FN (with ARG; NULL: none). */
void cg_http_set_observer (cg_http_t *self, cg_http_observer_fn *fn, void *arg);

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
    without blocking (file reads aside). Calls the route handlers. */
void cg_http_process (cg_http_t *self);

/*  Puts the listener on LOOP (borrowed; it must outlive the listener's last use of it):
    cg_http_process runs when cg_http_fd is readable and before every wait (what the last
    round resumed, answers and stream writes, goes out then: a resumed connection does not
    wake the loop by itself), and the wait is no longer than cg_http_timeout_ms. */
void cg_http_on_loop (cg_http_t *self, cg_loop_t *loop);

/*  Returns the port the listener is bound to (the chosen one when LISTEN asked for 0). */
int cg_http_port (cg_http_t *self);

/*  Percent-decodes the LEN bytes at IN into a new buffer, NUL-terminated (it may hold NUL
    bytes: callers use *OUT_LEN). Returns NULL on a malformed escape ("%zz", "%4" at the
    end). Caller owns the result. */
char *cg_http_percent_decode (const char *in, size_t len, size_t *out_len);

#endif
