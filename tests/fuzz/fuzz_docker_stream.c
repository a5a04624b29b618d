/*  fuzz_docker_stream — the Docker Engine API's exec attach stream: the HTTP head that
    answers the upgrade (cg_docker_head_parse) and the multiplexed frames after it
    (cg_docker_demux_feed), fed in pieces of random sizes as a socket would deliver them.

    Input: one byte of piece size (1-256), then the bytes of a stream.

    Invariants: the head parser never claims more than it was given, gives a status from
    100 to 599 with a complete head, and says "not yet" only under CG_DOCKER_HEAD_MAX;
    given the same frames in any pieces, the demultiplexer delivers the same bytes per
    stream as in one piece, never more than was fed, and stops at the same bad header. */
#define _GNU_SOURCE
#include "cg_fuzz.h"

#include "containers/cg_docker_stream.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    char *out[3];
    size_t len[3];
} s_sink_t;

static int
s_collect (int stream, const char *data, size_t len, void *arg)
{
    s_sink_t *sink = arg;
    CG_FUZZ_CHECK (stream >= 0 && stream <= 2, "stream 0, 1 or 2");
    sink->out[stream] = realloc (sink->out[stream], sink->len[stream] + len + 1);
    if (!sink->out[stream])
        abort ();
    memcpy (sink->out[stream] + sink->len[stream], data, len);
    sink->len[stream] += len;
    return 0;
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    size_t piece = (size_t)data[0] + 1;
    const char *stream = (const char *)data + 1;
    size_t len = size - 1;

    for (size_t upto = 0; upto <= len; upto += piece) {
        int status = 0;
        long head = cg_docker_head_parse (stream, upto, &status);
        CG_FUZZ_CHECK (head <= (long)upto, "head within what was given");
        if (head > 0)
            CG_FUZZ_CHECK (status >= 100 && status <= 599, "a status code");
        if (head == 0)
            CG_FUZZ_CHECK (upto < CG_DOCKER_HEAD_MAX, "not yet only under the cap");
    }

    s_sink_t whole = {0}, pieces = {0};
    cg_docker_demux_t one = {0}, many = {0};
    int rc_one = cg_docker_demux_feed (&one, stream, len, s_collect, &whole);
    int rc_many = 0;
    for (size_t at = 0; at < len && rc_many == 0; at += piece)
        rc_many = cg_docker_demux_feed (&many, stream + at, len - at < piece ? len - at : piece,
                                        s_collect, &pieces);
    CG_FUZZ_CHECK (rc_one == rc_many, "the same verdict in pieces");
    size_t total = 0;
    for (int i = 0; i < 3; i++) {
        CG_FUZZ_CHECK (whole.len[i] == pieces.len[i], "the same bytes per stream");
        CG_FUZZ_CHECK (whole.len[i] == 0 || memcmp (whole.out[i], pieces.out[i], whole.len[i]) == 0,
                       "the same content per stream");
        total += whole.len[i];
        free (whole.out[i]);
        free (pieces.out[i]);
    }
    CG_FUZZ_CHECK (total <= len, "never more than fed");
    return 0;
}
