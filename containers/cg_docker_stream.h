/*  cg_docker_stream — the bytes of a Docker Engine API exec attach: the HTTP head that
    answers the upgrade, and the multiplexed stdout/stderr frames that follow it. Parsing
    only, no I/O (fuzzed by fuzz_docker_stream). */
#ifndef CG_DOCKER_STREAM_H
#define CG_DOCKER_STREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*  The longest HTTP head accepted before the stream starts. */
#define CG_DOCKER_HEAD_MAX 16384

/*  Looks for the end of an HTTP response head ("\r\n\r\n") in DATA (LEN bytes). Returns
    its length including that blank line and sets *STATUS to the status code (100 to 599),
    0 when the head is not complete yet, or -1 when DATA is not an HTTP/1.x status line or
    its head is longer than CG_DOCKER_HEAD_MAX. Untrusted input, never read past LEN. */
long cg_docker_head_parse (const char *data, size_t len, int *status);

/*  Receives one frame's payload piece: STREAM is 1 (stdout) or 2 (stderr); 0 (stdin
    echoed) is passed through too. Returns 0, or -1 to stop feeding. */
typedef int (cg_docker_frame_fn) (int stream, const char *data, size_t len, void *arg);

/*  A demultiplexer: the state between the 8-byte headers ([stream, 0, 0, 0, size as 32-bit
    big-endian]) and their payloads, which may arrive in pieces of any size. */
typedef struct {
    unsigned char header[8];
    size_t header_len; /* bytes of HEADER read so far */
    int stream;        /* the current frame's stream */
    uint32_t left;     /* payload bytes of the current frame still to come */
} cg_docker_demux_t;

/*  Feeds LEN bytes of DATA to DEMUX, calling FN for each payload piece. Returns 0, or -1
    when a header names a stream other than 0, 1 or 2 (not a multiplexed stream) or FN
    asked to stop. */
int cg_docker_demux_feed (cg_docker_demux_t *demux, const char *data, size_t len,
                          cg_docker_frame_fn *fn, void *arg);

#endif
