/*  fuzz_remote_msg — a relay's messages as the server gets them, and the server's as a
    relay gets them (cg_remote_decode), and an EXEC's spec (cg_remote_spec_parse): outside
    input, since a sandbox's code may have taken its relay over.

    Input: one byte (bit 0: the direction, up or down), then length-prefixed frames
    (cg_fuzz_frame), at most CG_REMOTE_FRAMES_MAX + 2 of them. With bit 1 set instead, the
    rest is a kernel's connection file as the sandbox's code may have written it, read by
    cg_remote_connection_read (the relay and the server both read it).

    Invariants: a refused message says why (EPROTO); an accepted one has the verb's own
    fields within their limits (ids of [0-9a-z_-], 1 to 64, the kernel's of TO and FROM too; a channel 0 to 4 with a peer
    exactly when it is not iopub; 1 to 64 parts; texts UTF-8 without NUL), encodes to the
    very frames it came from, and decodes from them to the same message; an EXEC's spec,
    when it parses, has 1 to 256 arguments, KEY=VALUE variables and an absolute cwd, and
    cg_remote_spec_text of it parses back to the same. A connection file, when taken, gives a
    base name of 1 to 64 of [A-Za-z0-9._-] starting with a letter or digit, and five ports from
    1 to 65535. */
#define _GNU_SOURCE
#include "cg_fuzz.h"

#include "remote/cg_remote_msg.h"

#include "base/cg_fs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>
#include <string.h>

static void
s_check_id (const cg_remote_bytes_t *id)
{
    CG_FUZZ_CHECK (id->size >= 1 && id->size <= CG_REMOTE_ID_MAX, "an id's length");
    for (size_t i = 0; i < id->size; i++) {
        char c = ((const char *)id->data)[i];
        CG_FUZZ_CHECK ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || c == '_' || c == '-'
                           || (id->size == 1 && c == '*'),
                       "an id's characters");
    }
}

static void
s_check_spec (const cg_remote_bytes_t *text)
{
    cg_remote_spec_t spec;
    cg_error_t *err = NULL;
    if (cg_remote_spec_parse (text->data, text->size, &spec, &err) < 0) {
        CG_FUZZ_CHECK (err && err->code == EPROTO && !spec.argv && !spec.env && !spec.cwd,
                       "a refused spec says why and keeps nothing");
        cg_error_destroy (&err);
        return;
    }
    size_t argc = 0, envc = 0;
    while (spec.argv[argc])
        argc++;
    while (spec.env[envc]) {
        CG_FUZZ_CHECK (strchr (spec.env[envc], '=') && spec.env[envc][0] != '=', "KEY=VALUE");
        envc++;
    }
    CG_FUZZ_CHECK (argc >= 1 && argc <= CG_REMOTE_ARGS_MAX && envc <= CG_REMOTE_ARGS_MAX,
                   "argument counts");
    CG_FUZZ_CHECK (spec.cwd[0] == '/', "an absolute cwd");
    char *again =
        cg_remote_spec_text ((const char *const *)spec.argv, (const char *const *)spec.env,
                             spec.cwd, spec.stdin, spec.output, spec.seccomp);
    cg_remote_spec_t back;
    CG_FUZZ_CHECK (cg_remote_spec_parse (again, strlen (again), &back, &err) == 0,
                   "a spec's own text parses");
    for (size_t i = 0; i <= argc; i++)
        CG_FUZZ_CHECK (
            (!spec.argv[i] && !back.argv[i])
                || (spec.argv[i] && back.argv[i] && strcmp (spec.argv[i], back.argv[i]) == 0),
            "the same arguments");
    CG_FUZZ_CHECK (strcmp (spec.cwd, back.cwd) == 0 && spec.stdin == back.stdin
                       && spec.output == back.output
                       && (spec.seccomp ? json_equal (spec.seccomp, back.seccomp) : !back.seccomp),
                   "the same cwd and stdio");
    free (again);
    cg_remote_spec_free (&back);
    cg_remote_spec_free (&spec);
}

//  The connection file TEXT (SIZE bytes), written where the reader looks, and read.
static void
s_check_connection (const uint8_t *text, size_t size)
{
    static int dir_fd = -1;
    if (dir_fd < 0)
        dir_fd = open (cg_fuzz_scratch_dir ("remote_msg"), O_RDONLY | O_DIRECTORY);
    CG_FUZZ_CHECK (dir_fd >= 0
                       && cg_write_file_at (dir_fd, "kernel.json", text, size, 0600, (uid_t)-1,
                                            (gid_t)-1, NULL)
                              == 0,
                   "the scratch file");
    int ports[CG_REMOTE_CHANNELS];
    char *base = cg_remote_connection_read (dir_fd, "kernel.json", ports);
    if (!base)
        return;
    size_t len = strlen (base);
    CG_FUZZ_CHECK (len >= 1 && len <= 64 && base[0] != '.' && base[0] != '-' && base[0] != '_',
                   "a base name's length and first character");
    for (size_t i = 0; i < len; i++)
        CG_FUZZ_CHECK (
            strchr ("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-", base[i]),
            "a base name's characters");
    for (int c = 0; c < CG_REMOTE_CHANNELS; c++)
        CG_FUZZ_CHECK (ports[c] >= 1 && ports[c] <= 65535, "a port");
    free (base);
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
    cg_fuzz_init ();
    if (size > 0 && (data[0] & 2)) {
        s_check_connection (data + 1, size - 1);
        return 0;
    }
    cg_fuzz_in_t in = {data, size};
    cg_remote_dir_t dir = (cg_fuzz_byte (&in) & 1) ? CG_REMOTE_DOWN : CG_REMOTE_UP;
    cg_remote_bytes_t frames[CG_REMOTE_FRAMES_MAX + 2];
    size_t count = 0;
    const uint8_t *frame;
    size_t len;
    while (count < CG_REMOTE_FRAMES_MAX + 2 && cg_fuzz_frame (&in, &frame, &len))
        frames[count++] = (cg_remote_bytes_t){frame, len};

    cg_remote_msg_t msg;
    cg_error_t *err = NULL;
    if (cg_remote_decode (frames, count, dir, &msg, &err) < 0) {
        CG_FUZZ_CHECK (err && err->code == EPROTO, "a refused message says why");
        cg_error_destroy (&err);
        return 0;
    }
    switch (msg.verb) {
        case CG_REMOTE_HELLO:
        case CG_REMOTE_STARTED:
        case CG_REMOTE_EXITED:
        case CG_REMOTE_FAILED:
        case CG_REMOTE_EXEC:
        case CG_REMOTE_SIGNAL:
        case CG_REMOTE_ATTACH:
        case CG_REMOTE_OUT:
        case CG_REMOTE_IN:
            s_check_id (&msg.id);
            break;
        case CG_REMOTE_FROM:
        case CG_REMOTE_TO:
            s_check_id (&msg.id);
            CG_FUZZ_CHECK (msg.channel >= 0 && msg.channel < CG_REMOTE_CHANNELS, "a channel");
            CG_FUZZ_CHECK ((msg.channel == CG_REMOTE_IOPUB) == (msg.peer.size == 0),
                           "a peer unless iopub");
            CG_FUZZ_CHECK (msg.peer.size <= CG_REMOTE_PEER_MAX, "a peer's length");
            CG_FUZZ_CHECK (msg.part_count >= 1 && msg.part_count <= CG_REMOTE_PARTS_MAX, "parts");
            break;
        default:
            break;
    }
    if (msg.verb == CG_REMOTE_OUT)
        CG_FUZZ_CHECK (msg.number[0] == 1 || msg.number[0] == 2, "a stream");
    if (msg.verb == CG_REMOTE_FAILED || msg.verb == CG_REMOTE_BYE)
        CG_FUZZ_CHECK (msg.text.size <= CG_REMOTE_TEXT_MAX
                           && cg_fuzz_utf8_valid (msg.text.data, msg.text.size)
                           && !memchr (msg.text.data, 0, msg.text.size),
                       "a text is UTF-8 without NUL");
    if (msg.verb == CG_REMOTE_EXEC)
        s_check_spec (&msg.text);

    //  Encoded, the message is the frames it came from, and decodes to itself.
    zmsg_t *zmsg = cg_remote_encode (&msg);
    cg_remote_bytes_t again[CG_REMOTE_FRAMES_MAX];
    int again_count = cg_remote_frames_of (zmsg, again, CG_REMOTE_FRAMES_MAX);
    CG_FUZZ_CHECK (again_count == (int)count, "the same number of frames");
    for (size_t i = 0; i < count; i++)
        CG_FUZZ_CHECK (again[i].size == frames[i].size
                           && memcmp (again[i].data, frames[i].data, frames[i].size) == 0,
                       "the same frames");
    cg_remote_msg_t back;
    CG_FUZZ_CHECK (cg_remote_decode (again, count, dir, &back, &err) == 0 && back.verb == msg.verb
                       && memcmp (back.number, msg.number, sizeof back.number) == 0
                       && back.version == msg.version && back.channel == msg.channel,
                   "decodes to itself");
    zmsg_destroy (&zmsg);
    return 0;
}
