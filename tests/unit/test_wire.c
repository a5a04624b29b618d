/*  test_wire — the wire layer against golden messages produced by jupyter_client:
    signatures, framing, and rejection of forged, short and garbled frames. */
#include "base/cg_util.h"
#include "cg_test.h"
#include "bridge/cg_wire.h"

#include <dirent.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>

static json_t *
s_load (const char *dir, const char *name, const char *file)
{
    cleanup_free char *path = cg_strdupf ("%s/%s/%s", dir, name, file);
    return json_load_file (path, 0, NULL);
}

static unsigned char *
s_base64 (const char *text, size_t *len)
{
    size_t cap = strlen (text) + 1;
    unsigned char *out = cg_xmalloc (cap);
    if (sodium_base642bin (out, cap, text, strlen (text), NULL, len, NULL,
                           sodium_base64_VARIANT_ORIGINAL)
        != 0)
        *len = 0;
    return out;
}

static void
s_receive_case (const char *dir, const char *name)
{
    json_t *input = s_load (dir, name, "input");
    json_t *expected = s_load (dir, name, "expected");
    CHECK (input && expected, "cannot read case files");
    const char *key = json_string_value (json_object_get (input, "key"));
    json_t *frames_json = json_object_get (input, "frames");
    size_t count = json_array_size (frames_json);
    cg_frame_t *frames = cg_xcalloc (count + 1, sizeof *frames);
    unsigned char **bufs = cg_xcalloc (count + 1, sizeof *bufs);
    for (size_t i = 0; i < count; i++) {
        bufs[i] = s_base64 (json_string_value (json_array_get (frames_json, i)), &frames[i].size);
        frames[i].data = bufs[i];
    }
    cg_wire_t *wire = cg_wire_new (key, strlen (key), 1024 * 1024);
    cg_msg_t *msg = NULL;
    cg_wire_verdict_t verdict = cg_wire_decode (wire, frames, count, &msg);
    const char *want = json_string_value (json_object_get (expected, "verdict"));
    if (strcmp (want, "accept") == 0) {
        if (verdict != CG_WIRE_OK)
            fprintf (stderr, "FAIL %s: rejected as %s\n", name, cg_wire_verdict_name (verdict)),
                s_failures++;
        else {
            const char *parent = json_string_value (json_object_get (expected, "parent_msg_id"));
            bool ok =
                strcmp (msg->msg_type, json_string_value (json_object_get (expected, "msg_type")))
                    == 0
                && strcmp (msg->msg_id, json_string_value (json_object_get (expected, "msg_id")))
                       == 0
                && ((parent == NULL) == (msg->parent_msg_id == NULL))
                && (!parent || strcmp (parent, msg->parent_msg_id) == 0)
                && json_equal (msg->content, json_object_get (expected, "content"))
                && (json_int_t)msg->buffer_count
                       == json_integer_value (json_object_get (expected, "buffers"))
                && cg_wire_rejected (wire) == 0;
            if (!ok)
                fprintf (stderr, "FAIL %s: accepted but fields differ\n", name), s_failures++;
            else
                s_passes++;
        }
    }
    else {
        const char *reason = json_string_value (json_object_get (expected, "reason"));
        if (verdict == CG_WIRE_OK || strcmp (cg_wire_verdict_name (verdict), reason) != 0
            || msg != NULL || cg_wire_rejected (wire) != 1)
            fprintf (stderr, "FAIL %s: got %s, want reject %s\n", name,
                     cg_wire_verdict_name (verdict), reason),
                s_failures++;
        else
            s_passes++;
    }
    cg_msg_destroy (&msg);
    cg_wire_destroy (&wire);
    for (size_t i = 0; i < count; i++)
        free (bufs[i]);
    free (bufs);
    free (frames);
    json_decref (input);
    json_decref (expected);
}

static void
s_sign_case (const char *dir, const char *name)
{
    json_t *input = s_load (dir, name, "input");
    json_t *expected = s_load (dir, name, "expected");
    CHECK (input && expected, "cannot read case files");
    const char *key = json_string_value (json_object_get (input, "key"));
    static const char *fields[4] = {"header", "parent_header", "metadata", "content"};
    cg_frame_t parts[4];
    for (int i = 0; i < 4; i++) {
        json_t *part = json_object_get (input, fields[i]);
        parts[i].data = json_string_value (part);
        parts[i].size = json_string_length (part);
    }
    cg_wire_t *wire = cg_wire_new (key, strlen (key), 1024);
    char signature[65];
    cg_wire_sign (wire, parts, signature);
    const char *want = json_string_value (json_object_get (expected, "signature"));
    if (strcmp (signature, want) != 0)
        fprintf (stderr, "FAIL %s: signature %s, want %s\n", name, signature, want), s_failures++;
    else
        s_passes++;
    cg_wire_destroy (&wire);
    json_decref (input);
    json_decref (expected);
}

//  What we send must verify on our own receive path, and a size bound must hold.
static void
s_round_trip (void)
{
    const char *name = "round_trip";
    zsock_t *push = zsock_new_push ("inproc://wire-test");
    zsock_t *pull = zsock_new_pull ("inproc://wire-test");
    cg_wire_t *wire = cg_wire_new ("secret", 6, 1024 * 1024);
    char msg_id[33];
    int rc = cg_wire_send (wire, push, "execute_request", json_pack ("{s:s}", "code", "x=1 ✓"),
                           NULL, msg_id);
    CHECK (rc == 0, "send failed");
    cg_msg_t *msg = cg_wire_recv (wire, pull);
    CHECK (msg && strcmp (msg->msg_id, msg_id) == 0, "own message did not verify");
    CHECK (strcmp (json_string_value (json_object_get (msg->content, "code")), "x=1 ✓") == 0,
           "content changed");
    CHECK (json_object_size (msg->metadata) == 0, "metadata {} by default");
    cg_msg_destroy (&msg);
    //  The agent's mark, as the bridge sends it with an MCP tool's execute_request.
    rc = cg_wire_send_with_metadata (wire, push, "execute_request", NULL, NULL,
                                     CG_WIRE_AGENT_METADATA, NULL);
    msg = rc == 0 ? cg_wire_recv (wire, pull) : NULL;
    CHECK (msg && json_is_true (json_object_get (msg->metadata, CG_WIRE_AGENT_MARK))
               && json_object_size (msg->metadata) == 1,
           "the agent's mark in the metadata, signed");
    cg_msg_destroy (&msg);

    cg_wire_t *small = cg_wire_new ("secret", 6, 64);
    cg_wire_send (wire, push, "execute_request",
                  json_pack ("{s:s}", "code", "too long for 64 bytes"), NULL, NULL);
    msg = cg_wire_recv (small, pull);
    CHECK (msg == NULL && cg_wire_rejected (small) == 1, "oversized message accepted");
    cg_wire_t *other = cg_wire_new ("other", 5, 1024 * 1024);
    cg_wire_send (other, push, "execute_request", NULL, NULL, NULL);
    msg = cg_wire_recv (wire, pull);
    CHECK (msg == NULL && cg_wire_rejected (wire) == 1, "message signed with another key accepted");
    cg_wire_destroy (&small);
    cg_wire_destroy (&other);
    cg_wire_destroy (&wire);
    zsock_destroy (&pull);
    zsock_destroy (&push);
    s_passes++;
}

int
main (int argc, char **argv)
{
    if (argc != 2 || sodium_init () < 0) {
        fprintf (stderr, "usage: test_wire GOLDEN_DIR\n");
        return 2;
    }
    DIR *dir = opendir (argv[1]);
    if (!dir) {
        fprintf (stderr, "cannot open %s\n", argv[1]);
        return 2;
    }
    struct dirent *entry;
    int cases = 0;
    while ((entry = readdir (dir))) {
        if (strncmp (entry->d_name, "accept_", 7) == 0
            || strncmp (entry->d_name, "reject_", 7) == 0)
            s_receive_case (argv[1], entry->d_name), cases++;
        else if (strncmp (entry->d_name, "sign_", 5) == 0)
            s_sign_case (argv[1], entry->d_name), cases++;
    }
    closedir (dir);
    s_round_trip ();
    if (cases < 30) {
        fprintf (stderr, "only %d golden cases found\n", cases);
        s_failures++;
    }
    printf ("%d passed, %d failed\n", s_passes, s_failures);
    return s_failures ? 1 : 0;
}
