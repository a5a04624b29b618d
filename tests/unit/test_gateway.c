/*  Unit tests for the Jupyter gateway's pure parts: the WebSocket handshake key
    (cg_ws_accept_key), a WebSocket whose peer goes away with output queued (cg_ws), the
    front end's message framings (cg_jmsg) and what of a start request's env reaches a
    kernel (cg_gateway_kernel_env). */
#define _GNU_SOURCE /* memmem */
#include "gateway/cg_gateway_int.h"
#include "gateway/cg_jmsg.h"
#include "gateway/cg_ws.h"
#include "cg_test.h"

#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static void
test_accept_key (void)
{
    const char *name = "accept_key";
    char out[29];
    //  RFC 6455, section 1.3.
    CHECK (cg_ws_accept_key ("dGhlIHNhbXBsZSBub25jZQ==", out) == 0, "the RFC's key");
    CHECK (strcmp (out, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=") == 0, "the RFC's answer, not %s", out);
    CHECK (cg_ws_accept_key ("short", out) < 0, "a short key is refused");
    CHECK (cg_ws_accept_key ("dGhlIHNhbXBsZSBub25jZQ=!", out) < 0, "not base64");
    CHECK (cg_ws_accept_key (NULL, out) < 0, "no key");
    s_passes++;
}

static void
s_ignore_message (void *arg, bool binary, const uint8_t *data, size_t len)
{
    (void)arg, (void)binary, (void)data, (void)len;
}

//  A peer that stops reading, then goes away: what is queued for it can never go out, so
//  the WebSocket is over, flushes nothing and is polled for nothing (issue 23, point 1).
static void
test_peer_gone (void)
{
    const char *name = "peer_gone";
    int pair[2];
    CHECK (socketpair (AF_UNIX, SOCK_STREAM, 0, pair) == 0, "socketpair");
    fcntl (pair[0], F_SETFL, O_NONBLOCK);
    cg_ws_t *ws = cg_ws_new (pair[0], NULL, 0, 1 << 20, s_ignore_message, NULL);
    static char chunk[64 * 1024];
    for (int i = 0; i < 256 && !cg_ws_flushing (ws); i++)
        CHECK (cg_ws_send (ws, true, chunk, sizeof chunk) == 0, "queued %d", i);
    CHECK (cg_ws_flushing (ws), "a peer that does not read leaves output queued");
    CHECK (cg_ws_events (ws) & POLLOUT, "polled for writing meanwhile");
    close (pair[1]);
    CHECK (cg_ws_process (ws, POLLIN | POLLOUT | POLLHUP) < 0, "over once the peer is gone");
    CHECK (!cg_ws_flushing (ws), "nothing queued can go out any more");
    CHECK (cg_ws_queued (ws) > 0, "the queue still holds it (freed with the WebSocket)");
    CHECK (cg_ws_events (ws) == 0, "polled for nothing: no busy loop");
    CHECK (cg_ws_send (ws, false, "x", 1) < 0, "no more sends");
    cg_ws_destroy (&ws);
    close (pair[0]);
    s_passes++;
}

//  A kernel message as cg_wire_recv_raw would give it.
static cg_wire_raw_t
s_raw (cg_msg_t *parsed, const char *parts[4], cg_frame_t *buffers, size_t count)
{
    cg_wire_raw_t raw = {.msg = parsed, .buffers = buffers, .buffer_count = count};
    for (int i = 0; i < 4; i++)
        raw.parts[i] = (cg_frame_t){parts[i], strlen (parts[i])};
    return raw;
}

static void
test_legacy_json (void)
{
    const char *name = "legacy_json";
    const char *text = "{\"header\": {\"msg_id\": \"a1\", \"msg_type\": \"execute_request\"}, "
                       "\"content\": {\"code\": \"1\"}, \"channel\": \"shell\"}";
    cg_jmsg_t msg;
    const char *why = NULL;
    CHECK (cg_jmsg_decode (CG_JMSG_LEGACY, false, (const uint8_t *)text, strlen (text), &msg, &why)
               == 0,
           "decodes: %s", why);
    CHECK (strcmp (msg.channel, "shell") == 0 && strcmp (msg.msg_id, "a1") == 0
               && strcmp (msg.msg_type, "execute_request") == 0,
           "channel and ids");
    CHECK (strcmp (msg.parts[1], "{}") == 0 && strcmp (msg.parts[2], "{}") == 0,
           "absent parent_header and metadata are {}");
    CHECK (strcmp (msg.parts[3], "{\"code\":\"1\"}") == 0, "content re-encoded: %s", msg.parts[3]);
    cg_jmsg_clear (&msg);

    //  A kernel's message to the front end: JSON with channel, msg_id and msg_type.
    cg_msg_t parsed = {.msg_id = "k\"1", .msg_type = "stream"};
    const char *parts[4] = {"{\"msg_id\":\"k\\\"1\"}", "{}", "{}", "{\"text\":\"hi\"}"};
    cg_wire_raw_t raw = s_raw (&parsed, parts, NULL, 0);
    size_t len = 0;
    bool binary = true;
    char *out = cg_jmsg_encode (CG_JMSG_LEGACY, "iopub", &raw, &len, &binary);
    json_t *root = json_loadb (out, len, 0, NULL);
    free (out);
    CHECK (!binary && root, "text JSON");
    CHECK (strcmp (json_string_value (json_object_get (root, "channel")), "iopub") == 0
               && strcmp (json_string_value (json_object_get (root, "msg_id")), "k\"1") == 0
               && json_array_size (json_object_get (root, "buffers")) == 0
               && strcmp (json_string_value (
                              json_object_get (json_object_get (root, "content"), "text")),
                          "hi")
                      == 0,
           "fields as Jupyter Server sends them");
    json_decref (root);
    s_passes++;
}

static void
test_refusals (void)
{
    const char *name = "refusals";
    const char *cases[] = {
        "[1]",
        "{\"header\": {\"msg_id\": \"a\", \"msg_type\": \"x\"}, \"content\": {}, \"channel\": "
        "\"iopub\"}",
        "{\"header\": {\"msg_id\": \"a\", \"msg_type\": \"shutdown_request\"}, \"content\": {}, "
        "\"channel\": \"control\"}",
        "{\"header\": {\"msg_type\": \"x\"}, \"content\": {}, \"channel\": \"shell\"}",
        "{\"header\": {\"msg_id\": \"a\", \"msg_type\": \"x\"}, \"content\": 3, \"channel\": "
        "\"shell\"}",
        "{\"header\": {\"msg_id\": \"a\", \"msg_type\": \"x\"}, \"content\": {}, \"channel\": 1}",
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        cg_jmsg_t msg;
        const char *why = NULL;
        CHECK (cg_jmsg_decode (CG_JMSG_LEGACY, false, (const uint8_t *)cases[i], strlen (cases[i]),
                               &msg, &why)
                       < 0
                   && why,
               "case %zu is refused with a reason", i);
    }
    //  Binary: offsets that fall, point past the end, or a v1 text frame.
    const uint8_t falling[] = {0, 0, 0, 2, 0, 0, 0, 12, 0, 0, 0, 4, '{', '}'};
    cg_jmsg_t msg;
    const char *why = NULL;
    CHECK (cg_jmsg_decode (CG_JMSG_LEGACY, true, falling, sizeof falling, &msg, &why) < 0,
           "falling offsets");
    const uint8_t past[] = {0, 0, 0, 1, 0, 0, 0, 99};
    CHECK (cg_jmsg_decode (CG_JMSG_LEGACY, true, past, sizeof past, &msg, &why) < 0,
           "an offset past the end");
    CHECK (cg_jmsg_decode (CG_JMSG_V1, false, (const uint8_t *)"{}", 2, &msg, &why) < 0,
           "v1 is binary");
    //  No channel: shell, as Jupyter Server takes it.
    const char *bare = "{\"header\": {\"msg_id\": \"a\", \"msg_type\": \"kernel_info_request\"}, "
                       "\"content\": {}}";
    CHECK (cg_jmsg_decode (CG_JMSG_LEGACY, false, (const uint8_t *)bare, strlen (bare), &msg, &why)
                   == 0
               && strcmp (msg.channel, "shell") == 0,
           "no channel is shell");
    cg_jmsg_clear (&msg);
    s_passes++;
}

//  Legacy binary and v1 round trips with buffers: encode a kernel's message, decode it as
//  a front end's.
static void
test_binary (void)
{
    const char *name = "binary";
    cg_msg_t parsed = {.msg_id = "m2", .msg_type = "comm_msg"};
    const char *parts[4] = {"{\"msg_id\":\"m2\",\"msg_type\":\"comm_msg\"}", "{}", "{}",
                            "{\"comm_id\":\"c\"}"};
    cg_frame_t buffers[2] = {{"\x00\x01\x02", 3}, {"", 0}};
    cg_wire_raw_t raw = s_raw (&parsed, parts, buffers, 2);
    for (int p = 0; p < 2; p++) {
        cg_jmsg_protocol_t protocol = p ? CG_JMSG_V1 : CG_JMSG_LEGACY;
        size_t len = 0;
        bool binary = false;
        char *out = cg_jmsg_encode (protocol, "shell", &raw, &len, &binary);
        CHECK (binary, "binary with buffers (%d)", p);
        if (protocol == CG_JMSG_V1)
            CHECK (out[0] == 8 && memcmp (out + 1, "\0\0\0\0\0\0\0", 7) == 0,
                   "v1: 8 offsets (channel, 4 parts, 2 buffers, the end)");
        else
            CHECK (memcmp (out, "\0\0\0\3", 4) == 0, "legacy: 3 parts (JSON, 2 buffers)");
        cg_jmsg_t msg;
        const char *why = NULL;
        CHECK (cg_jmsg_decode (protocol, true, (const uint8_t *)out, len, &msg, &why) == 0,
               "decodes (%d): %s", p, why);
        CHECK (strcmp (msg.channel, "shell") == 0 && strcmp (msg.msg_id, "m2") == 0, "ids");
        CHECK (msg.buffer_count == 2 && msg.buffers[0].size == 3
                   && memcmp (msg.buffers[0].data, "\x00\x01\x02", 3) == 0
                   && msg.buffers[1].size == 0,
               "buffers byte for byte (%d)", p);
        cg_jmsg_clear (&msg);
        free (out);
    }
    s_passes++;
}

//  A front end's message never carries the mark of the bridge's own requests to the
//  kernel (agent behaviour): removed in every framing, the rest of the metadata kept.
static void
test_agent_mark_removed (void)
{
    const char *name = "agent_mark_removed";
    cg_msg_t parsed = {.msg_id = "f1", .msg_type = "execute_request"};
    const char *parts[4] = {"{\"msg_id\":\"f1\",\"msg_type\":\"execute_request\"}", "{}",
                            "{\"cellId\":\"c7\",\"" CG_WIRE_AGENT_MARK "\":true}",
                            "{\"code\":\"1\"}"};
    cg_frame_t buffers[1] = {{"b", 1}};
    for (int form = 0; form < 3; form++) {
        cg_wire_raw_t raw = s_raw (&parsed, parts, buffers, form == 0 ? 0 : 1);
        cg_jmsg_protocol_t protocol = form == 2 ? CG_JMSG_V1 : CG_JMSG_LEGACY;
        size_t len = 0;
        bool binary = false;
        char *out = cg_jmsg_encode (protocol, "shell", &raw, &len, &binary);
        CHECK (memmem (out, len, CG_WIRE_AGENT_MARK, strlen (CG_WIRE_AGENT_MARK)),
               "the front end's message carries the mark (%d)", form);
        cg_jmsg_t msg;
        const char *why = NULL;
        CHECK (cg_jmsg_decode (protocol, binary, (const uint8_t *)out, len, &msg, &why) == 0,
               "decodes (%d): %s", form, why);
        json_t *metadata = json_loadb (msg.parts[2], msg.part_len[2], 0, NULL);
        CHECK (metadata && !json_object_get (metadata, CG_WIRE_AGENT_MARK)
                   && json_object_size (metadata) == 1
                   && strcmp (json_string_value (json_object_get (metadata, "cellId")), "c7") == 0,
               "the mark removed, cellId kept (%d): %.*s", form, (int)msg.part_len[2],
               msg.parts[2]);
        json_decref (metadata);
        cg_jmsg_clear (&msg);
        free (out);
    }
    s_passes++;
}

static void
test_env (void)
{
    const char *name = "env";
    json_t *env = json_pack ("{s:s, s:s, s:s, s:s}", "KERNEL_USERNAME", "ann", "PATH", "/x", "LANG",
                             "C.UTF-8", "KERNEL_WORKING_DIR", "sub/dir");
    const char *why = NULL;
    json_t *kept = cg_gateway_kernel_env (env, &why);
    CHECK (kept && !why, "kept");
    CHECK (json_object_size (kept) == 3 && !json_object_get (kept, "PATH"),
           "PATH dropped, the rest kept");
    json_decref (kept);
    json_object_set_new (env, "KERNEL_WORKING_DIR", json_string ("../etc"));
    CHECK (!cg_gateway_kernel_env (env, &why) && why, "'..' refused");
    json_object_set_new (env, "KERNEL_WORKING_DIR", json_integer (1));
    CHECK (!cg_gateway_kernel_env (env, &why) && why, "a number refused");
    json_decref (env);
    kept = cg_gateway_kernel_env (NULL, &why);
    CHECK (kept && json_object_size (kept) == 0, "no env: none");
    json_decref (kept);
    s_passes++;
}

int
main (void)
{
    test_accept_key ();
    test_peer_gone ();
    test_legacy_json ();
    test_refusals ();
    test_binary ();
    test_agent_mark_removed ();
    test_env ();
    printf ("test_gateway: %d passed, %d failed\n", s_passes, s_failures);
    return s_failures ? 1 : 0;
}
