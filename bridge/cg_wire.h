/*  cg_wire — the Jupyter wire protocol (messaging 5.3): framing, HMAC-SHA256 signing and
    verification. The only module that touches ZeroMQ frames. */
#ifndef CG_WIRE_H
#define CG_WIRE_H

#include <czmq.h>
#include <jansson.h>
#include <stdbool.h>

typedef struct cg_wire_t cg_wire_t;

/*  One verified, parsed message from a kernel. */
typedef struct {
    const char *msg_id;        /* borrowed from header */
    const char *msg_type;      /* borrowed from header */
    const char *parent_msg_id; /* borrowed from parent_header, NULL when absent */
    json_t *header;
    json_t *parent_header;
    json_t *metadata;
    json_t *content;
    size_t buffer_count; /* binary buffers after content (kept as a count only) */
} cg_msg_t;

/*  Why an incoming message was dropped. */
typedef enum {
    CG_WIRE_OK = 0,
    CG_WIRE_NO_DELIMITER,
    CG_WIRE_TOO_FEW_FRAMES,
    CG_WIRE_BAD_SIGNATURE_LENGTH,
    CG_WIRE_BAD_SIGNATURE,
    CG_WIRE_BAD_JSON,
    CG_WIRE_BAD_HEADER,
    CG_WIRE_TOO_LARGE,
} cg_wire_verdict_t;

/*  One frame as bytes, for decoding without a socket. */
typedef struct {
    const void *data;
    size_t size;
} cg_frame_t;

/*  Creates a codec signing with KEY (KEY_LEN bytes, the connection file's "key" as
    text) that refuses messages larger than MAX_MSG_SIZE bytes in total. Caller owns
    the result; destroy with cg_wire_destroy. */
cg_wire_t *cg_wire_new (const char *key, size_t key_len, size_t max_msg_size);

/*  Destroys *self_p and sets it to NULL; wipes the key. */
void cg_wire_destroy (cg_wire_t **self_p);

/*  Computes the lowercase hex HMAC-SHA256 of the four JSON parts into OUT (65 bytes). */
void cg_wire_sign (cg_wire_t *self, const cg_frame_t parts[4], char out[65]);

/*  Verifies and parses FRAMES (as received by a DEALER or SUB socket: identities or a
    topic, "<IDS|MSG>", signature, header, parent_header, metadata, content, buffers).
    Checks frame count, delimiter and signature length, then the signature in constant
    time, and only then parses JSON. On CG_WIRE_OK *msg_p gets a new message the caller
    owns (free with cg_msg_destroy); otherwise *msg_p is NULL and the rejection is
    counted. */
cg_wire_verdict_t cg_wire_decode (cg_wire_t *self, const cg_frame_t *frames, size_t count,
                                  cg_msg_t **msg_p);

/*  Receives one message from SOCK (non-blocking callers should poll first) and decodes
    it. Returns a new message the caller owns, or NULL when it was rejected (counted)
    or nothing could be received. */
cg_msg_t *cg_wire_recv (cg_wire_t *self, zsock_t *sock);

/*  Signs and sends a message of MSG_TYPE on SOCK. CONTENT is stolen (NULL sends {}).
    PARENT (borrowed, may be NULL) is a parent header. Writes the new msg_id into
    MSG_ID_OUT (33 bytes) when not NULL. Returns 0, or -1 when the send failed. */
int cg_wire_send (cg_wire_t *self, zsock_t *sock, const char *msg_type, json_t *content,
                  const json_t *parent, char *msg_id_out);

/*  The metadata key (its value true) that marks the execute requests the bridge sends for
    MCP tool calls. The kernels give agent behaviour (kernels/python/cellgate_startup.py:
    short tracebacks, the stdin wording, JSON values...) only to requests that carry it, so
    a Jupyter front end sees the stock kernel; the gateway removes it from what a front
    end sends (cg_jmsg). */
#define CG_WIRE_AGENT_MARK "cellgate_agent"
#define CG_WIRE_AGENT_METADATA "{\"" CG_WIRE_AGENT_MARK "\":true}"

/*  As cg_wire_send, with METADATA (a JSON object's text, sent as given; NULL sends {}) as
    the message's metadata. */
int cg_wire_send_with_metadata (cg_wire_t *self, zsock_t *sock, const char *msg_type,
                                json_t *content, const json_t *parent, const char *metadata,
                                char *msg_id_out);

/*  A verified message with its parts as they came, to relay them unchanged (the Jupyter
    gateway). Its frames own the bytes PARTS and BUFFERS point to. */
typedef struct {
    cg_msg_t *msg;       /* parsed, as cg_wire_recv gives it */
    cg_frame_t parts[4]; /* header, parent_header, metadata, content: JSON text */
    cg_frame_t *buffers; /* the binary buffers after content */
    size_t buffer_count;
    zmsg_t *frames;
} cg_wire_raw_t;

/*  As cg_wire_recv, keeping the parts. Returns a new message the caller destroys with
    cg_wire_raw_destroy, or NULL. */
cg_wire_raw_t *cg_wire_recv_raw (cg_wire_t *self, zsock_t *sock);

/*  As cg_wire_recv_raw for a message already received, *ZMSG_P (taken; set to NULL).
    Touches nothing of SELF but its key and its count of rejected messages: a copy of a
    wire (cg_wire_new with the same key) may decode on another thread. */
cg_wire_raw_t *cg_wire_decode_raw (cg_wire_t *self, zmsg_t **zmsg_p);
void cg_wire_raw_destroy (cg_wire_raw_t **self_p);

/*  Signs PARTS (header, parent_header, metadata, content: JSON text, sent as given) and
    sends them with BUFFER_COUNT binary BUFFERS on SOCK. Returns 0, or -1. */
int cg_wire_send_raw (cg_wire_t *self, zsock_t *sock, const cg_frame_t parts[4],
                      const cg_frame_t *buffers, size_t buffer_count);

/*  Returns how many incoming messages were dropped, in total. */
size_t cg_wire_rejected (cg_wire_t *self);

/*  Returns a short stable name for VERDICT ("ok", "bad_signature", ...). */
const char *cg_wire_verdict_name (cg_wire_verdict_t verdict);

/*  Frees *self_p and sets it to NULL. */
void cg_msg_destroy (cg_msg_t **self_p);

/*  Reads the events waiting on MONITOR (a zmq_socket_monitor PAIR socket, or NULL) and
    returns how many of them were EVENT (a ZMQ_EVENT_* bit). */
size_t cg_wire_monitor_events (zsock_t *monitor, unsigned event);

#endif
