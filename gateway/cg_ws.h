/*  cg_ws — one server-side WebSocket (RFC 6455) over a connection the HTTP listener handed
    over (cg_http_respond_upgrade): framing, masking, fragments, ping/pong and the closing
    handshake are libwslay's; this wraps it for the server's poll loop. */
#ifndef CG_WS_H
#define CG_WS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct cg_ws_t cg_ws_t;

/*  Called for each whole message the peer sent: text (valid UTF-8, checked by the
    caller) or BINARY. DATA is borrowed for the call. */
typedef void (cg_ws_message_fn) (void *arg, bool binary, const uint8_t *data, size_t len);

/*  Sec-WebSocket-Accept for the client's Sec-WebSocket-Key KEY, into OUT (29 bytes).
    Returns 0, or -1 when KEY is not the base64 of 16 bytes. */
int cg_ws_accept_key (const char *key, char out[29]);

/*  Wraps FD (non-blocking; borrowed, never closed here). EXTRA (EXTRA_LEN bytes, copied)
    is read before FD. Messages over MAX_MESSAGE bytes close the connection (1009).
    Returns a new WebSocket the caller destroys with cg_ws_destroy. */
cg_ws_t *cg_ws_new (int fd, const char *extra, size_t extra_len, size_t max_message,
                    cg_ws_message_fn *on_message, void *arg);
void cg_ws_destroy (cg_ws_t **self_p);

/*  What to poll FD for now (POLLIN, POLLOUT); 0 once the connection failed. */
short cg_ws_events (cg_ws_t *self);

/*  Reads and writes what FD is ready for (REVENTS as poll gave them; the extra bytes
    are read on the first call whatever REVENTS says). Returns 0 while the connection
    lives, -1 once it is over (closed, failed, or the peer went away). */
int cg_ws_process (cg_ws_t *self, short revents);

/*  Queues a message (a copy of LEN bytes at DATA) and sends what FD takes now. Returns
    0, or -1 when the connection is closing or over. */
int cg_ws_send (cg_ws_t *self, bool binary, const void *data, size_t len);

/*  True while something queued (a close frame included) may still go out: the peer has
    not gone away. A failed connection's queue never goes out, whatever it holds. */
bool cg_ws_flushing (cg_ws_t *self);

/*  Bytes queued and not yet sent (a peer that does not read piles them up). */
size_t cg_ws_queued (cg_ws_t *self);

/*  Messages queued and not yet sent, the pongs wslay answers pings with included. */
size_t cg_ws_queued_count (cg_ws_t *self);

/*  Starts the closing handshake with CODE and REASON (ASCII, short). */
void cg_ws_close (cg_ws_t *self, uint16_t code, const char *reason);

#endif
