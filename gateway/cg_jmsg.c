/*  cg_jmsg — Jupyter messages over the gateway's WebSocket (legacy JSON and binary, v1). */
#include "gateway/cg_jmsg.h"
#include "base/cg_util.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

static const char *const s_part_names[4] = {"header", "parent_header", "metadata", "content"};

void
cg_jmsg_clear (cg_jmsg_t *msg)
{
    for (int i = 0; i < 4; i++)
        zstr_free (&msg->parts[i]);
    memset (msg, 0, sizeof *msg);
}

//  Checks CHANNEL (LEN bytes) and copies it into MSG. Returns 0, or -1 with *WHY.
static int
s_channel (cg_jmsg_t *msg, const char *channel, size_t len, const char **why)
{
    static const char *const allowed[] = {"shell", "control", "stdin"};
    for (size_t i = 0; i < sizeof allowed / sizeof *allowed; i++)
        if (len == strlen (allowed[i]) && memcmp (channel, allowed[i], len) == 0) {
            memcpy (msg->channel, allowed[i], len + 1);
            return 0;
        }
    *why = "the channel must be shell, control or stdin";
    return -1;
}

//  Takes the header's msg_id and msg_type into MSG (refusing what a front end may not
//  send through the gateway). Returns 0, or -1 with *WHY.
static int
s_header (cg_jmsg_t *msg, const json_t *header, const char **why)
{
    const char *msg_id = json_string_value (json_object_get (header, "msg_id"));
    const char *msg_type = json_string_value (json_object_get (header, "msg_type"));
    if (!msg_id || !msg_type || !*msg_type || strlen (msg_id) >= sizeof msg->msg_id
        || strlen (msg_type) >= sizeof msg->msg_type) {
        *why = "the header needs msg_id and msg_type strings";
        return -1;
    }
    //  The kernel's life is the server's: restart and delete it through the REST API.
    if (strcmp (msg_type, "shutdown_request") == 0) {
        *why = "shutdown_request is refused: restart or delete the kernel through the REST API";
        return -1;
    }
    snprintf (msg->msg_id, sizeof msg->msg_id, "%s", msg_id);
    snprintf (msg->msg_type, sizeof msg->msg_type, "%s", msg_type);
    return 0;
}

//  Whether PART (the metadata of a message a front end sent) carries the mark of the
//  bridge's own requests, which gives agent behaviour (CG_WIRE_AGENT_MARK); removes it.
//  Behaviour follows the door a request came through: a front end attached through the
//  gateway gets the stock kernel, even if it sends the mark (a notebook copied from a
//  wire capture, or on purpose: nothing to gain, as it may run any code in the kernel).
static bool
s_unmark (json_t *part)
{
    return json_object_get (part, CG_WIRE_AGENT_MARK)
           && json_object_del (part, CG_WIRE_AGENT_MARK) == 0;
}

//  Fills MSG's parts from the JSON object ROOT (a legacy message). Returns 0, or -1.
static int
s_from_object (cg_jmsg_t *msg, json_t *root, const char **why)
{
    if (!json_is_object (root)) {
        *why = "a message must be a JSON object";
        return -1;
    }
    for (int i = 0; i < 4; i++) {
        json_t *part = json_object_get (root, s_part_names[i]);
        bool optional = i == 1 || i == 2;
        if (!part && optional)
            part = json_object ();
        else if (json_is_object (part)) {
            json_incref (part);
            if (i == 2)
                s_unmark (part);
        }
        else {
            *why = "header, parent_header, metadata and content must be objects";
            return -1;
        }
        msg->parts[i] = json_dumps (part, JSON_COMPACT);
        json_decref (part);
        if (!msg->parts[i])
            abort (); /* out of memory */
        msg->part_len[i] = strlen (msg->parts[i]);
    }
    //  As Jupyter Server's handler: no channel is shell.
    json_t *given = json_object_get (root, "channel");
    const char *channel = given ? json_string_value (given) : "shell";
    if (!channel) {
        *why = "the channel must be a string";
        return -1;
    }
    return s_channel (msg, channel, strlen (channel), why) < 0
               ? -1
               : s_header (msg, json_object_get (root, "header"), why);
}

//  A legacy JSON message (LEN bytes at DATA). Returns 0, or -1 with *WHY.
static int
s_decode_json (cg_jmsg_t *msg, const uint8_t *data, size_t len, const char **why)
{
    json_error_t error;
    json_t *root = json_loadb ((const char *)data, len, 0, &error);
    if (!root) {
        *why = "the message is not JSON";
        return -1;
    }
    int rc = s_from_object (msg, root, why);
    json_decref (root);
    return rc;
}

static uint64_t
s_be32 (const uint8_t *p)
{
    return (uint64_t)p[0] << 24 | (uint64_t)p[1] << 16 | (uint64_t)p[2] << 8 | p[3];
}

static uint64_t
s_le64 (const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

//  Reads COUNT offsets of WIDTH bytes (big-endian 4 or little-endian 8) after the count
//  at DATA into OFFSETS, with LEN appended as the end. Checks that they rise within LEN
//  from the end of the table. Returns 0, or -1 with *WHY.
static int
s_offsets (const uint8_t *data, size_t len, size_t count, int width, uint64_t *offsets,
           const char **why)
{
    size_t table = (count + 1) * (size_t)width;
    if (table > len) {
        *why = "the offset table is longer than the message";
        return -1;
    }
    for (size_t i = 0; i < count; i++) {
        const uint8_t *p = data + (i + 1) * (size_t)width;
        offsets[i] = width == 4 ? s_be32 (p) : s_le64 (p);
        if (offsets[i] < (i ? offsets[i - 1] : table) || offsets[i] > len) {
            *why = "the offsets must rise within the message";
            return -1;
        }
    }
    offsets[count] = len;
    return 0;
}

//  A legacy binary message: a big-endian count N, N offsets, the JSON message, N - 1
//  buffers. Returns 0, or -1 with *WHY.
static int
s_decode_legacy_binary (cg_jmsg_t *msg, const uint8_t *data, size_t len, const char **why)
{
    uint64_t count = len >= 4 ? s_be32 (data) : 0;
    if (count < 1 || count > CG_JMSG_BUFFERS_MAX + 1) {
        *why = "a binary message needs 1 to 257 parts";
        return -1;
    }
    uint64_t offsets[CG_JMSG_BUFFERS_MAX + 2];
    if (s_offsets (data, len, count, 4, offsets, why) < 0
        || s_decode_json (msg, data + offsets[0], offsets[1] - offsets[0], why) < 0)
        return -1;
    for (size_t i = 1; i < count; i++)
        msg->buffers[msg->buffer_count++] =
            (cg_frame_t){data + offsets[i], offsets[i + 1] - offsets[i]};
    return 0;
}

//  A v1 message: a little-endian count N, N offsets (the last is the end), the channel,
//  header, parent_header, metadata, content and buffers. Returns 0, or -1 with *WHY.
static int
s_decode_v1 (cg_jmsg_t *msg, const uint8_t *data, size_t len, const char **why)
{
    uint64_t count = len >= 8 ? s_le64 (data) : 0;
    if (count < 6 || count > CG_JMSG_BUFFERS_MAX + 6) {
        *why = "a v1 message needs a channel and four parts";
        return -1;
    }
    uint64_t offsets[CG_JMSG_BUFFERS_MAX + 7];
    //  The last offset is the end of the message: the parts are between offsets.
    if (s_offsets (data, len, count, 8, offsets, why) < 0)
        return -1;
    if (offsets[count - 1] != len) {
        *why = "the last offset must be the message's end";
        return -1;
    }
    if (s_channel (msg, (const char *)data + offsets[0], offsets[1] - offsets[0], why) < 0)
        return -1;
    json_t *header = NULL;
    for (int i = 0; i < 4; i++) {
        size_t start = offsets[i + 1], size = offsets[i + 2] - start;
        json_error_t error;
        json_t *part = json_loadb ((const char *)data + start, size, 0, &error);
        bool ok = json_is_object (part);
        if (ok && i == 0)
            header = json_incref (part);
        if (!ok) {
            json_decref (part);
            json_decref (header);
            *why = "header, parent_header, metadata and content must be JSON objects";
            return -1;
        }
        if (i == 2 && s_unmark (part)) {
            msg->parts[i] = json_dumps (part, JSON_COMPACT);
            if (!msg->parts[i])
                abort (); /* out of memory */
            msg->part_len[i] = strlen (msg->parts[i]);
        }
        else {
            msg->parts[i] = cg_xcalloc (1, size + 1);
            memcpy (msg->parts[i], data + start, size);
            msg->part_len[i] = size;
        }
        json_decref (part);
    }
    int rc = s_header (msg, header, why);
    json_decref (header);
    for (size_t i = 5; rc == 0 && i + 1 < count; i++)
        msg->buffers[msg->buffer_count++] =
            (cg_frame_t){data + offsets[i], offsets[i + 1] - offsets[i]};
    return rc;
}

int
cg_jmsg_decode (cg_jmsg_protocol_t protocol, bool binary, const uint8_t *data, size_t len,
                cg_jmsg_t *msg, const char **why)
{
    memset (msg, 0, sizeof *msg);
    int rc;
    if (protocol == CG_JMSG_V1 && !binary) {
        *why = "the v1 protocol sends binary messages only";
        rc = -1;
    }
    else if (protocol == CG_JMSG_V1)
        rc = s_decode_v1 (msg, data, len, why);
    else
        rc = binary ? s_decode_legacy_binary (msg, data, len, why)
                    : s_decode_json (msg, data, len, why);
    if (rc < 0)
        cg_jmsg_clear (msg);
    return rc;
}

//  The JSON string of TEXT (quoted, escaped). Caller frees.
static char *
s_quote (const char *text)
{
    json_t *value = json_string (text ? text : "");
    char *quoted = value ? json_dumps (value, JSON_ENCODE_ANY) : NULL;
    json_decref (value);
    if (!quoted)
        abort ();
    return quoted;
}

//  The legacy JSON text of RAW from CHANNEL, with "buffers": [] when WITH_BUFFERS_KEY.
static char *
s_legacy_json (const char *channel, const cg_wire_raw_t *raw, bool with_buffers_key)
{
    cleanup_free char *msg_id = s_quote (raw->msg->msg_id);
    cleanup_free char *msg_type = s_quote (raw->msg->msg_type);
    const cg_frame_t *p = raw->parts;
    return cg_strdupf ("{\"header\":%.*s,\"parent_header\":%.*s,\"metadata\":%.*s,"
                       "\"content\":%.*s,%s\"channel\":\"%s\",\"msg_id\":%s,\"msg_type\":%s}",
                       (int)p[0].size, (const char *)p[0].data, (int)p[1].size,
                       (const char *)p[1].data, (int)p[2].size, (const char *)p[2].data,
                       (int)p[3].size, (const char *)p[3].data,
                       with_buffers_key ? "\"buffers\":[]," : "", channel, msg_id, msg_type);
}

static void
s_put_be32 (uint8_t *p, uint64_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

static void
s_put_le64 (uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

//  Joins COUNT SEGMENTS after an offset table of WIDTH-byte entries (legacy: big-endian
//  count and the start of each segment; v1: little-endian count and the start of each
//  segment and the end). Returns a new buffer of *LEN bytes.
static char *
s_join (const cg_frame_t *segments, size_t count, int width, size_t *len)
{
    size_t entries = width == 4 ? count : count + 1;
    size_t table = (entries + 1) * (size_t)width, total = table;
    for (size_t i = 0; i < count; i++)
        total += segments[i].size;
    uint8_t *out = cg_xcalloc (1, total);
    if (width == 4)
        s_put_be32 (out, entries);
    else
        s_put_le64 (out, entries);
    size_t at = table;
    for (size_t i = 0; i < count; i++) {
        if (width == 4)
            s_put_be32 (out + (i + 1) * 4, at);
        else
            s_put_le64 (out + (i + 1) * 8, at);
        memcpy (out + at, segments[i].data, segments[i].size);
        at += segments[i].size;
    }
    if (width == 8)
        s_put_le64 (out + (count + 1) * 8, at);
    *len = total;
    return (char *)out;
}

char *
cg_jmsg_encode (cg_jmsg_protocol_t protocol, const char *channel, const cg_wire_raw_t *raw,
                size_t *len, bool *binary)
{
    size_t count = 0;
    cg_frame_t *segments = cg_xcalloc (raw->buffer_count + 5, sizeof *segments);
    char *json = NULL;
    if (protocol == CG_JMSG_V1) {
        segments[count++] = (cg_frame_t){channel, strlen (channel)};
        for (int i = 0; i < 4; i++)
            segments[count++] = raw->parts[i];
    }
    else if (raw->buffer_count == 0) {
        free (segments);
        json = s_legacy_json (channel, raw, true);
        *len = strlen (json);
        *binary = false;
        return json;
    }
    else {
        json = s_legacy_json (channel, raw, false);
        segments[count++] = (cg_frame_t){json, strlen (json)};
    }
    for (size_t i = 0; i < raw->buffer_count; i++)
        segments[count++] = raw->buffers[i];
    char *out = s_join (segments, count, protocol == CG_JMSG_V1 ? 8 : 4, len);
    *binary = true;
    free (json);
    free (segments);
    return out;
}
