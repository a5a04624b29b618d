/*  cg_jmsg — Jupyter messages as a front end sends and receives them over the gateway's
    WebSocket: the legacy JSON text framing (a "channel" field, as jupyter_server's
    GatewayClient and Notebook 6 speak it), the legacy binary framing of a message with
    buffers, and the v1.kernel.websocket.jupyter.org binary framing. Pure functions over
    bytes: the parsers of outside input here are fuzzed (tests/fuzz/fuzz_jmsg.c). */
#ifndef CG_JMSG_H
#define CG_JMSG_H

#include "bridge/cg_wire.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*  The WebSocket protocols: legacy (JSON text, buffers in the legacy binary form) or v1. */
typedef enum { CG_JMSG_LEGACY, CG_JMSG_V1 } cg_jmsg_protocol_t;

#define CG_JMSG_PROTOCOL_V1 "v1.kernel.websocket.jupyter.org"
#define CG_JMSG_BUFFERS_MAX 256

/*  A message from a front end, checked: its channel (shell, control or stdin), its four
    parts as JSON text (objects) to sign and send, and its buffers. */
typedef struct {
    char channel[8];
    char msg_id[128];
    char msg_type[64];
    char *parts[4]; /* header, parent_header, metadata, content; owned */
    size_t part_len[4];
    cg_frame_t buffers[CG_JMSG_BUFFERS_MAX]; /* borrowed from the input */
    size_t buffer_count;
} cg_jmsg_t;

/*  Parses one WebSocket message (BINARY or text, LEN bytes at DATA) of PROTOCOL. Returns
    0 with *MSG filled (free it with cg_jmsg_clear), or -1 with *WHY saying what is wrong
    (a static string). The mark of the bridge's own requests (CG_WIRE_AGENT_MARK) is
    removed from the metadata: a front end gets the stock kernel. */
int cg_jmsg_decode (cg_jmsg_protocol_t protocol, bool binary, const uint8_t *data, size_t len,
                    cg_jmsg_t *msg, const char **why);
void cg_jmsg_clear (cg_jmsg_t *msg);

/*  Encodes a kernel's message (RAW, verified) from CHANNEL for a front end of PROTOCOL:
    a new buffer of *LEN bytes the caller frees, to send binary when *BINARY. */
char *cg_jmsg_encode (cg_jmsg_protocol_t protocol, const char *channel, const cg_wire_raw_t *raw,
                      size_t *len, bool *binary);

#endif
