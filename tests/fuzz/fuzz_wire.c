/*  fuzz_wire — the Jupyter wire decoder (cg_wire_decode) as a compromised kernel drives
    it. The kernel holds its own key, so it can sign anything: part of the inputs carry
    a correct HMAC (reaching the JSON parsing behind the check), the rest whatever
    signature the input holds.

    Input: one flags byte, then frames (cg_fuzz_frame: 2-byte big-endian length + bytes).
    Flags bit 0: replace the frame after "<IDS|MSG>" by the correct signature of the four
    frames after it; bit 1: a small message limit (1 KiB) instead of 1 MiB. */
#include "cg_fuzz.h"

#include "base/cg_util.h"
#include "bridge/cg_wire.h"

#include <string.h>
#include <strings.h>

#define KEY "3f6b2c1e-9a4d-4e8b-b7c5-0d2e8f1a6c94"
#define MAX_FRAMES 2048 /* past the decoder's own limit (1024) */

//  Returns the index of the first delimiter frame, or COUNT.
static size_t
s_delimiter (const cg_frame_t *frames, size_t count)
{
    for (size_t i = 0; i < count; i++)
        if (frames[i].size == 9 && memcmp (frames[i].data, "<IDS|MSG>", 9) == 0)
            return i;
    return count;
}

//  Checks what a decoder must guarantee for any input.
static void
s_check_verdict (cg_wire_verdict_t verdict, cg_msg_t *msg, const cg_frame_t *frames, size_t count,
                 bool signed_right)
{
    CG_FUZZ_CHECK ((verdict == CG_WIRE_OK) == (msg != NULL), "a message exactly when accepted");
    CG_FUZZ_CHECK (strcmp (cg_wire_verdict_name (verdict), "unknown") != 0, "a named verdict");
    if (!msg)
        return;
    CG_FUZZ_CHECK (signed_right, "accepted a message whose signature is not the HMAC");
    CG_FUZZ_CHECK (json_is_object (msg->header) && json_is_object (msg->parent_header)
                       && json_is_object (msg->metadata) && json_is_object (msg->content),
                   "four JSON objects");
    CG_FUZZ_CHECK (msg->msg_id && msg->msg_type, "msg_id and msg_type");
    CG_FUZZ_CHECK (msg->msg_type == json_string_value (json_object_get (msg->header, "msg_type")),
                   "msg_type borrowed from the header");
    size_t delim = s_delimiter (frames, count);
    CG_FUZZ_CHECK (delim + 6 <= count && msg->buffer_count == count - delim - 6, "buffer count");
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
    cg_fuzz_init ();
    cg_fuzz_in_t in = {data, size};
    uint8_t flags = cg_fuzz_byte (&in);
    static cg_frame_t frames[MAX_FRAMES];
    size_t count = 0;
    const uint8_t *frame;
    size_t len;
    while (count < MAX_FRAMES && cg_fuzz_frame (&in, &frame, &len))
        frames[count++] = (cg_frame_t){frame, len};

    cg_wire_t *wire = cg_wire_new (KEY, strlen (KEY), flags & 2 ? 1024 : 1024 * 1024);
    //  The signature the kernel would send when it signs right.
    size_t delim = s_delimiter (frames, count);
    char signature[65] = "";
    bool signable = delim + 6 <= count;
    if (signable)
        cg_wire_sign (wire, &frames[delim + 2], signature);
    if (signable && (flags & 1))
        frames[delim + 1] = (cg_frame_t){signature, 64};
    bool signed_right = signable && frames[delim + 1].size == 64
                        && strncasecmp (frames[delim + 1].data, signature, 64) == 0;

    cg_msg_t *msg = NULL;
    cg_wire_verdict_t verdict = cg_wire_decode (wire, frames, count, &msg);
    s_check_verdict (verdict, msg, frames, count, signed_right);
    CG_FUZZ_CHECK (cg_wire_rejected (wire) == (verdict == CG_WIRE_OK ? 0u : 1u),
                   "rejections counted");
    cg_msg_destroy (&msg);
    CG_FUZZ_CHECK (msg == NULL, "destroy clears the pointer");
    cg_wire_destroy (&wire);
    return 0;
}
