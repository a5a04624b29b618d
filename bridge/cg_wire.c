/*  cg_wire — the Jupyter wire protocol (messaging 5.3): framing, HMAC-SHA256 signing and
    verification. The only module that touches ZeroMQ frames. */
#include "bridge/cg_wire.h"
#include "base/cg_utf8.h"
#include "base/cg_util.h"

#include <sodium.h>
#include <string.h>
#include <time.h>

#define DELIMITER "<IDS|MSG>"
#define DELIMITER_LEN 9
#define SIGNATURE_HEX 64
#define MAX_FRAMES 1024

struct cg_wire_t {
    crypto_auth_hmacsha256_state keyed; /* the HMAC's state after the key: each message's
                                           starts as a copy (two SHA-256 blocks fewer) */
    size_t max_msg_size;
    char session[33]; /* our session id in every header we send */
    size_t rejected;  /* messages dropped, all reasons */
};

cg_wire_t *
cg_wire_new (const char *key, size_t key_len, size_t max_msg_size)
{
    cg_wire_t *self = cg_xcalloc (1, sizeof *self);
    crypto_auth_hmacsha256_init (&self->keyed, (const unsigned char *)key, key_len);
    self->max_msg_size = max_msg_size;
    cg_random_hex (self->session, 16);
    return self;
}

void
cg_wire_destroy (cg_wire_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    cg_wire_t *self = *self_p;
    sodium_memzero (&self->keyed, sizeof self->keyed);
    free (self);
    *self_p = NULL;
}

static void
s_hmac (cg_wire_t *self, const cg_frame_t parts[4], unsigned char mac[32])
{
    crypto_auth_hmacsha256_state state = self->keyed;
    for (int i = 0; i < 4; i++)
        crypto_auth_hmacsha256_update (&state, parts[i].data, parts[i].size);
    crypto_auth_hmacsha256_final (&state, mac);
    sodium_memzero (&state, sizeof state);
}

void
cg_wire_sign (cg_wire_t *self, const cg_frame_t parts[4], char out[65])
{
    unsigned char mac[32];
    s_hmac (self, parts, mac);
    sodium_bin2hex (out, 65, mac, sizeof mac);
}

static bool
s_is_hex (const char *data, size_t size)
{
    for (size_t i = 0; i < size; i++) {
        char c = data[i];
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')))
            return false;
    }
    return true;
}

//  Returns the value of the 4 hex digits at S, or -1.
static long
s_hex4 (const char *s, size_t left)
{
    if (left < 4)
        return -1;
    long value = 0;
    for (int i = 0; i < 4; i++) {
        char c = s[i];
        int digit = c >= '0' && c <= '9'   ? c - '0'
                    : c >= 'a' && c <= 'f' ? c - 'a' + 10
                    : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                           : -1;
        if (digit < 0)
            return -1;
        value = value * 16 + digit;
    }
    return value;
}

//  A lone UTF-16 surrogate written as an escape (JavaScript's JSON.stringify does) is
//  refused by jansson, losing the whole message. Rewrites, in
//  place, every surrogate escape in TEXT that is not half of a valid pair as "\ufffd"
//  (the same length). Returns true when it changed anything.
static bool
s_replace_lone_surrogates (char *text, size_t len)
{
    bool changed = false;
    for (size_t i = 0; i + 1 < len; i++) {
        if (text[i] != '\\')
            continue;
        if (text[i + 1] != 'u') {
            i++; /* another escape: skip its character */
            continue;
        }
        long unit = s_hex4 (text + i + 2, len - i - 2);
        if (unit < 0xD800 || unit > 0xDFFF) {
            i += 1;
            continue;
        }
        long low = unit <= 0xDBFF && i + 11 < len && text[i + 6] == '\\' && text[i + 7] == 'u'
                       ? s_hex4 (text + i + 8, len - i - 8)
                       : -1;
        if (low >= 0xDC00 && low <= 0xDFFF) {
            i += 11; /* a valid pair */
            continue;
        }
        memcpy (text + i + 2, "fffd", 4);
        changed = true;
        i += 5;
    }
    return changed;
}

static json_t *
s_parse_object (const cg_frame_t *frame)
{
    //  A NUL inside a string is legal JSON ("\u0000") and printable output may hold one:
    //  accepted, and replaced where the text becomes a result (cg_utf8_clean).
    json_t *value =
        json_loadb (frame->data, frame->size, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, NULL);
    //  Text a kernel could not decode reaches us as invalid UTF-8 (jupyter_client encodes
    //  with surrogateescape) or as lone surrogate escapes: refused by jansson, it would cost
    //  the whole message. One retry with just those replaced by U+FFFD.
    if (!value) {
        size_t len;
        char *copy = cg_utf8_clean ((const char *)frame->data, frame->size, &len);
        bool changed = len != frame->size || memcmp (copy, frame->data, len) != 0;
        changed |= s_replace_lone_surrogates (copy, len);
        if (changed)
            value = json_loadb (copy, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, NULL);
        free (copy);
    }
    if (value && !json_is_object (value)) {
        json_decref (value);
        return NULL;
    }
    return value;
}

static cg_wire_verdict_t
s_reject (cg_wire_t *self, cg_wire_verdict_t verdict)
{
    self->rejected++;
    return verdict;
}

cg_wire_verdict_t
cg_wire_decode (cg_wire_t *self, const cg_frame_t *frames, size_t count, cg_msg_t **msg_p)
{
    *msg_p = NULL;
    //  Untrusted: these frames come from a kernel running model-written code.
    size_t total = 0;
    for (size_t i = 0; i < count; i++)
        total += frames[i].size;
    if (count > MAX_FRAMES || total > self->max_msg_size)
        return s_reject (self, CG_WIRE_TOO_LARGE);

    size_t delim = 0;
    while (delim < count
           && !(frames[delim].size == DELIMITER_LEN
                && memcmp (frames[delim].data, DELIMITER, DELIMITER_LEN) == 0))
        delim++;
    if (delim == count)
        return s_reject (self, CG_WIRE_NO_DELIMITER);
    if (count - delim - 1 < 5)
        return s_reject (self, CG_WIRE_TOO_FEW_FRAMES);

    const cg_frame_t *signature = &frames[delim + 1];
    const cg_frame_t *parts = &frames[delim + 2];
    if (signature->size != SIGNATURE_HEX || !s_is_hex (signature->data, signature->size))
        return s_reject (self, CG_WIRE_BAD_SIGNATURE_LENGTH);

    unsigned char expected[32], received[32];
    s_hmac (self, parts, expected);
    if (sodium_hex2bin (received, sizeof received, signature->data, signature->size, NULL, NULL,
                        NULL)
            != 0
        || sodium_memcmp (expected, received, sizeof expected) != 0)
        return s_reject (self, CG_WIRE_BAD_SIGNATURE);

    //  Signature verified: only now is the JSON parsed.
    json_t *objects[4];
    for (int i = 0; i < 4; i++) {
        objects[i] = s_parse_object (&parts[i]);
        if (!objects[i]) {
            for (int j = 0; j < i; j++)
                json_decref (objects[j]);
            return s_reject (self, CG_WIRE_BAD_JSON);
        }
    }
    const char *msg_id = json_string_value (json_object_get (objects[0], "msg_id"));
    const char *msg_type = json_string_value (json_object_get (objects[0], "msg_type"));
    if (!msg_id || !msg_type) {
        for (int i = 0; i < 4; i++)
            json_decref (objects[i]);
        return s_reject (self, CG_WIRE_BAD_HEADER);
    }
    cg_msg_t *msg = cg_xcalloc (1, sizeof *msg);
    msg->header = objects[0];
    msg->parent_header = objects[1];
    msg->metadata = objects[2];
    msg->content = objects[3];
    msg->msg_id = msg_id;
    msg->msg_type = msg_type;
    msg->parent_msg_id = json_string_value (json_object_get (objects[1], "msg_id"));
    msg->buffer_count = count - delim - 6;
    *msg_p = msg;
    return CG_WIRE_OK;
}

cg_msg_t *
cg_wire_recv (cg_wire_t *self, zsock_t *sock)
{
    cg_wire_raw_t *raw = cg_wire_recv_raw (self, sock);
    cg_msg_t *msg = raw ? raw->msg : NULL;
    if (raw)
        raw->msg = NULL;
    cg_wire_raw_destroy (&raw);
    return msg;
}

cg_wire_raw_t *
cg_wire_recv_raw (cg_wire_t *self, zsock_t *sock)
{
    zmsg_t *zmsg = zmsg_recv (sock);
    return zmsg ? cg_wire_decode_raw (self, &zmsg) : NULL;
}

cg_wire_raw_t *
cg_wire_decode_raw (cg_wire_t *self, zmsg_t **zmsg_p)
{
    zmsg_t *zmsg = *zmsg_p;
    *zmsg_p = NULL;
    size_t count = zmsg_size (zmsg);
    cg_frame_t frames[MAX_FRAMES];
    size_t i = 0;
    for (zframe_t *frame = zmsg_first (zmsg); frame && i < MAX_FRAMES;
         frame = zmsg_next (zmsg), i++)
        frames[i] = (cg_frame_t){zframe_data (frame), zframe_size (frame)};
    cg_msg_t *msg = NULL;
    cg_wire_verdict_t verdict = count > MAX_FRAMES ? s_reject (self, CG_WIRE_TOO_LARGE)
                                                   : cg_wire_decode (self, frames, count, &msg);
    if (verdict != CG_WIRE_OK) {
        cg_log (1, "dropped a kernel message: %s (%zu frames; %zu dropped so far)",
                cg_wire_verdict_name (verdict), count, self->rejected);
        zmsg_destroy (&zmsg);
        return NULL;
    }
    size_t delim = 0;
    while (!(frames[delim].size == DELIMITER_LEN
             && memcmp (frames[delim].data, DELIMITER, DELIMITER_LEN) == 0))
        delim++; /* there is one: cg_wire_decode checked */
    cg_wire_raw_t *raw = cg_xcalloc (1, sizeof *raw);
    raw->msg = msg;
    raw->frames = zmsg;
    memcpy (raw->parts, frames + delim + 2, sizeof raw->parts);
    raw->buffer_count = count - delim - 6;
    raw->buffers = cg_xcalloc (raw->buffer_count + 1, sizeof *raw->buffers);
    memcpy (raw->buffers, frames + delim + 6, raw->buffer_count * sizeof *raw->buffers);
    return raw;
}

void
cg_wire_raw_destroy (cg_wire_raw_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    cg_wire_raw_t *self = *self_p;
    cg_msg_destroy (&self->msg);
    zmsg_destroy (&self->frames);
    free (self->buffers);
    free (self);
    *self_p = NULL;
}

int
cg_wire_send_raw (cg_wire_t *self, zsock_t *sock, const cg_frame_t parts[4],
                  const cg_frame_t *buffers, size_t buffer_count)
{
    char signature[65];
    cg_wire_sign (self, parts, signature);
    zmsg_t *zmsg = zmsg_new ();
    zmsg_addmem (zmsg, DELIMITER, DELIMITER_LEN);
    zmsg_addmem (zmsg, signature, SIGNATURE_HEX);
    for (int i = 0; i < 4; i++)
        zmsg_addmem (zmsg, parts[i].data, parts[i].size);
    for (size_t i = 0; i < buffer_count; i++)
        zmsg_addmem (zmsg, buffers[i].data, buffers[i].size);
    if (zmsg_send (&zmsg, sock) != 0) {
        zmsg_destroy (&zmsg);
        return -1;
    }
    return 0;
}

static char *
s_dump (const json_t *value)
{
    char *text = json_dumps (value, JSON_COMPACT | JSON_ENSURE_ASCII);
    if (!text)
        abort ();
    return text;
}

int
cg_wire_send (cg_wire_t *self, zsock_t *sock, const char *msg_type, json_t *content,
              const json_t *parent, char *msg_id_out)
{
    return cg_wire_send_with_metadata (self, sock, msg_type, content, parent, NULL, msg_id_out);
}

int
cg_wire_send_with_metadata (cg_wire_t *self, zsock_t *sock, const char *msg_type, json_t *content,
                            const json_t *parent, const char *metadata, char *msg_id_out)
{
    char msg_id[33];
    cg_random_hex (msg_id, 16);
    char date[40];
    struct timespec ts;
    clock_gettime (CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r (&ts.tv_sec, &tm);
    size_t n = strftime (date, sizeof date, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf (date + n, sizeof date - n, ".%06ldZ", ts.tv_nsec / 1000);

    json_t *header =
        json_pack ("{s:s, s:s, s:s, s:s, s:s, s:s}", "msg_id", msg_id, "session", self->session,
                   "username", "cellgate", "date", date, "msg_type", msg_type, "version", "5.3");
    cleanup_free char *header_text = s_dump (header);
    json_decref (header);
    cleanup_free char *parent_text = parent ? s_dump (parent) : cg_xstrdup ("{}");
    cleanup_free char *content_text = content ? s_dump (content) : cg_xstrdup ("{}");
    json_decref (content);
    const char *metadata_text = metadata ? metadata : "{}";

    cg_frame_t parts[4] = {{header_text, strlen (header_text)},
                           {parent_text, strlen (parent_text)},
                           {metadata_text, strlen (metadata_text)},
                           {content_text, strlen (content_text)}};
    if (cg_wire_send_raw (self, sock, parts, NULL, 0) < 0)
        return -1;
    if (msg_id_out)
        memcpy (msg_id_out, msg_id, 33);
    return 0;
}

size_t
cg_wire_rejected (cg_wire_t *self)
{
    return self->rejected;
}

const char *
cg_wire_verdict_name (cg_wire_verdict_t verdict)
{
    switch (verdict) {
        case CG_WIRE_OK:
            return "ok";
        case CG_WIRE_NO_DELIMITER:
            return "no_delimiter";
        case CG_WIRE_TOO_FEW_FRAMES:
            return "too_few_frames";
        case CG_WIRE_BAD_SIGNATURE_LENGTH:
            return "bad_signature_length";
        case CG_WIRE_BAD_SIGNATURE:
            return "bad_signature";
        case CG_WIRE_BAD_JSON:
            return "bad_json";
        case CG_WIRE_BAD_HEADER:
            return "bad_header";
        case CG_WIRE_TOO_LARGE:
            return "too_large";
    }
    return "unknown";
}

void
cg_msg_destroy (cg_msg_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    cg_msg_t *self = *self_p;
    json_decref (self->header);
    json_decref (self->parent_header);
    json_decref (self->metadata);
    json_decref (self->content);
    free (self);
    *self_p = NULL;
}

size_t
cg_wire_monitor_events (zsock_t *monitor, unsigned event)
{
    size_t matched = 0;
    while (monitor && (zsock_events (monitor) & ZMQ_POLLIN)) {
        zmsg_t *msg = zmsg_recv (monitor);
        zframe_t *head = msg ? zmsg_first (msg) : NULL;
        uint16_t id = 0;
        if (head && zframe_size (head) >= sizeof id)
            memcpy (&id, zframe_data (head), sizeof id);
        matched += (id & event) != 0;
        zmsg_destroy (&msg);
    }
    return matched;
}
