/*  fuzz_gateway — what a Jupyter front end sends the gateway: a WebSocket message
    (cg_jmsg_decode) and a kernel start request's env (cg_gateway_kernel_env).

    Input: one mode byte, then the bytes. Mode & 4: the bytes are a start request's body
    (JSON); its "env" goes to cg_gateway_kernel_env. Otherwise mode & 1 picks the v1
    protocol (else legacy) and mode & 2 a binary message (else text).

    Invariants: a message that decodes has channel shell, control or stdin, a msg_type,
    four parts that are JSON objects, and buffers inside the input; encoded back for a
    front end (as a kernel's message of that channel) and decoded again it keeps its
    channel, msg_id, msg_type and buffers. No decoded metadata carries the mark of the
    bridge's own requests (CG_WIRE_AGENT_MARK). A kept env is an object of strings whose names
    are KERNEL_* (or LANG, LC_ALL, TZ). */
#define _GNU_SOURCE
#include "cg_fuzz.h"

#include "gateway/cg_gateway_int.h"
#include "gateway/cg_jmsg.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

static void
s_env (const uint8_t *data, size_t size)
{
    json_t *body = json_loadb ((const char *)data, size, 0, NULL);
    const char *why = NULL;
    json_t *kept = cg_gateway_kernel_env (json_object_get (body, "env"), &why);
    CG_FUZZ_CHECK ((kept == NULL) == (why != NULL), "an env or a reason");
    const char *name;
    json_t *value;
    json_object_foreach (kept, name, value)
    {
        CG_FUZZ_CHECK (json_is_string (value), "strings only");
        CG_FUZZ_CHECK (strncmp (name, "KERNEL_", 7) == 0 || strcmp (name, "LANG") == 0
                           || strcmp (name, "LC_ALL") == 0 || strcmp (name, "TZ") == 0,
                       "allowed names only");
    }
    json_decref (kept);
    json_decref (body);
}

static void
s_check_parts (const cg_jmsg_t *msg, const uint8_t *data, size_t size)
{
    CG_FUZZ_CHECK (strcmp (msg->channel, "shell") == 0 || strcmp (msg->channel, "control") == 0
                       || strcmp (msg->channel, "stdin") == 0,
                   "a front end's channel");
    CG_FUZZ_CHECK (msg->msg_type[0], "a msg_type");
    for (int i = 0; i < 4; i++) {
        json_t *part = json_loadb (msg->parts[i], msg->part_len[i], 0, NULL);
        CG_FUZZ_CHECK (json_is_object (part), "parts are objects");
        CG_FUZZ_CHECK (i != 2 || !json_object_get (part, CG_WIRE_AGENT_MARK),
                       "the agent's mark never reaches a kernel from a front end");
        json_decref (part);
    }
    for (size_t i = 0; data && i < msg->buffer_count; i++)
        CG_FUZZ_CHECK ((const uint8_t *)msg->buffers[i].data >= data
                           && (const uint8_t *)msg->buffers[i].data + msg->buffers[i].size
                                  <= data + size,
                       "buffers inside the input");
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    uint8_t mode = data[0];
    data++, size--;
    if (mode & 4) {
        s_env (data, size);
        return 0;
    }
    cg_jmsg_protocol_t protocol = mode & 1 ? CG_JMSG_V1 : CG_JMSG_LEGACY;
    cg_jmsg_t msg;
    const char *why = NULL;
    if (cg_jmsg_decode (protocol, mode & 2, data, size, &msg, &why) < 0) {
        CG_FUZZ_CHECK (why && *why, "a refusal says why");
        return 0;
    }
    s_check_parts (&msg, data, size);
    //  Back to a front end, as if the kernel had sent it on that channel.
    cg_msg_t parsed = {.msg_id = msg.msg_id, .msg_type = msg.msg_type};
    cg_wire_raw_t raw = {.msg = &parsed, .buffers = msg.buffers, .buffer_count = msg.buffer_count};
    for (int i = 0; i < 4; i++)
        raw.parts[i] = (cg_frame_t){msg.parts[i], msg.part_len[i]};
    size_t len = 0;
    bool binary = false;
    char *out = cg_jmsg_encode (protocol, msg.channel, &raw, &len, &binary);
    cg_jmsg_t again;
    CG_FUZZ_CHECK (cg_jmsg_decode (protocol, binary, (const uint8_t *)out, len, &again, &why) == 0,
                   "an encoded message decodes");
    s_check_parts (&again, (const uint8_t *)out, len);
    CG_FUZZ_CHECK (
        strcmp (again.channel, msg.channel) == 0 && strcmp (again.msg_id, msg.msg_id) == 0
            && strcmp (again.msg_type, msg.msg_type) == 0 && again.buffer_count == msg.buffer_count,
        "and keeps channel, ids and buffers");
    for (size_t i = 0; i < msg.buffer_count; i++)
        CG_FUZZ_CHECK (
            again.buffers[i].size == msg.buffers[i].size
                && memcmp (again.buffers[i].data, msg.buffers[i].data, msg.buffers[i].size) == 0,
            "byte for byte");
    cg_jmsg_clear (&again);
    free (out);
    cg_jmsg_clear (&msg);
    return 0;
}
