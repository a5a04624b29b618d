/*  cg_remote_link — the one way in for remote sandboxes (issue 31): CurveZMQ both ways. The
    server's hub listens on one TCP port with a ROUTER that speaks CURVE as a server, and
    admits a relay only when its public key is one the server gave a sandbox
    (cg_remote_hub_allow): the check is the hub's ZAP handler (ZeroMQ RFC 27), and every
    message the hub hands on carries the sandbox id the key was given for, never one the
    relay claims. A relay dials with the server's public key, so it talks to this server
    only. Nothing on the port answers before the handshake, and a client without CURVE, or
    with a key not allowed, gets no message through. */
#ifndef CG_REMOTE_LINK_H
#define CG_REMOTE_LINK_H

#include "base/cg_error.h"

#include <czmq.h>
#include <stdbool.h>
#include <stddef.h>

/*  A CURVE key pair, Z85-encoded (40 characters each). */
typedef struct {
    char public_key[41];
    char secret_key[41];
} cg_remote_keys_t;

/*  Makes a new key pair (libsodium's randomness, through libzmq). Returns 0, or -1 with
    *err set when libzmq lacks CURVE. */
int cg_remote_keys_new (cg_remote_keys_t *keys, cg_error_t **err);

/*  The relays a hub admits at once, at most (the table a caller can grow). */
#define CG_REMOTE_RELAYS_MAX 4096

typedef struct cg_remote_hub_t cg_remote_hub_t;

/*  Starts a hub: binds its ZAP handler (first: without one, libzmq would let any CURVE
    client in), then a ROUTER on ENDPOINT ("tcp://ADDRESS:PORT", PORT * for any free one)
    with KEYS as the server's, refusing frames over MAX_FRAME_BYTES. One hub per process
    (ZeroMQ has one ZAP endpoint per context). Returns it (the caller owns it), or NULL
    with *err set. */
cg_remote_hub_t *cg_remote_hub_new (const char *endpoint, const cg_remote_keys_t *keys,
                                    size_t max_frame_bytes, cg_error_t **err);

/*  Stops the hub, closing every relay's connection. Sets *SELF_P to NULL; safe on NULL. */
void cg_remote_hub_destroy (cg_remote_hub_t **self_p);

/*  The endpoint it listens on, its port resolved ("tcp://127.0.0.1:41234"). Borrowed. */
const char *cg_remote_hub_endpoint (cg_remote_hub_t *self);

/*  The server's public key (for the relays). Borrowed. */
const char *cg_remote_hub_public_key (cg_remote_hub_t *self);

/*  Admits the relay holding the secret key of RELAY_PUBLIC_KEY (Z85) as SANDBOX's (an id,
    1 to 64 of [0-9a-z_-]); a sandbox admitted before gets the new key instead. Returns 0,
    or -1 with *err set: EINVAL for a bad key or id, EAGAIN when CG_REMOTE_RELAYS_MAX are
    admitted, EEXIST when the key is another sandbox's. */
int cg_remote_hub_allow (cg_remote_hub_t *self, const char *sandbox, const char *relay_public_key,
                         cg_error_t **err);

/*  Stops admitting SANDBOX's relay (a connection already made stays until it ends; its
    messages are dropped by the caller, who no longer knows the sandbox). */
void cg_remote_hub_forget (cg_remote_hub_t *self, const char *sandbox);

/*  How many handshakes the hub refused since it started (unknown keys). */
size_t cg_remote_hub_refused (cg_remote_hub_t *self);

/*  The sockets the owner polls for ZMQ_POLLIN: the relays' ROUTER, and the ZAP handler's
    (readable when a handshake waits for its answer: call cg_remote_hub_admit). */
zsock_t *cg_remote_hub_sock (cg_remote_hub_t *self);
zsock_t *cg_remote_hub_zap_sock (cg_remote_hub_t *self);

/*  Answers every handshake waiting: admitted when the key is allowed, refused otherwise. */
void cg_remote_hub_admit (cg_remote_hub_t *self);

/*  Receives one message from a relay without waiting. Returns it (the caller owns it; the
    routing id taken off) with *ROUTE (the caller owns it: the way back, for
    cg_remote_hub_send) and *SANDBOX (the id its key was admitted for; the caller frees),
    or NULL when nothing waits or the message came with no id (dropped). */
zmsg_t *cg_remote_hub_recv (cg_remote_hub_t *self, zframe_t **route, char **sandbox);

/*  Sends *MSG (taken, set to NULL) to the relay at ROUTE (borrowed). Returns 0, or -1 with
    *err set when the relay is gone (the message is dropped: ZMQ_ROUTER_MANDATORY) or its
    queue is full. */
int cg_remote_hub_send (cg_remote_hub_t *self, zframe_t *route, zmsg_t **msg, cg_error_t **err);

/*  A relay's end: a DEALER that dials ENDPOINT as the holder of KEYS, trusting only
    SERVER_PUBLIC_KEY, refusing frames over MAX_FRAME_BYTES. It reconnects by itself.
    Returns it (the caller owns it), or NULL with *err set. */
zsock_t *cg_remote_dial (const char *endpoint, const char *server_public_key,
                         const cg_remote_keys_t *keys, size_t max_frame_bytes, cg_error_t **err);

#endif
