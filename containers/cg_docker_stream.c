/*  cg_docker_stream — parsing the exec attach stream of the Docker Engine API. */
#define _GNU_SOURCE
#include "containers/cg_docker_stream.h"

#include <string.h>

long
cg_docker_head_parse (const char *data, size_t len, int *status)
{
    //  Untrusted (the engine's bytes): "HTTP/1.x NNN ..." first, bounded everywhere.
    size_t check = len < 12 ? len : 12;
    if (memcmp (data, "HTTP/1.", check < 7 ? check : 7) != 0)
        return -1;
    if (len >= 12) {
        if ((data[7] != '0' && data[7] != '1') || data[8] != ' ' || data[9] < '1' || data[9] > '5'
            || data[10] < '0' || data[10] > '9' || data[11] < '0' || data[11] > '9')
            return -1;
    }
    size_t scan = len < CG_DOCKER_HEAD_MAX ? len : CG_DOCKER_HEAD_MAX;
    const char *end = scan >= 4 ? memmem (data, scan, "\r\n\r\n", 4) : NULL;
    if (!end)
        return len >= CG_DOCKER_HEAD_MAX ? -1 : 0;
    if (len < 12 || (size_t)(end - data) < 12)
        return -1;
    *status = (data[9] - '0') * 100 + (data[10] - '0') * 10 + (data[11] - '0');
    return (long)(end - data) + 4;
}

int
cg_docker_demux_feed (cg_docker_demux_t *demux, const char *data, size_t len,
                      cg_docker_frame_fn *fn, void *arg)
{
    while (len > 0) {
        if (demux->left == 0 && demux->header_len < sizeof demux->header) {
            size_t take = sizeof demux->header - demux->header_len;
            take = take < len ? take : len;
            memcpy (demux->header + demux->header_len, data, take);
            demux->header_len += take;
            data += take;
            len -= take;
            if (demux->header_len < sizeof demux->header)
                return 0;
            const unsigned char *h = demux->header;
            if (h[0] > 2)
                return -1;
            demux->stream = h[0];
            demux->left = (uint32_t)h[4] << 24 | (uint32_t)h[5] << 16 | (uint32_t)h[6] << 8 | h[7];
            demux->header_len = demux->left ? sizeof demux->header : 0;
            continue;
        }
        size_t take = demux->left < len ? demux->left : len;
        if (fn (demux->stream, data, take, arg) < 0)
            return -1;
        data += take;
        len -= take;
        demux->left -= (uint32_t)take;
        if (demux->left == 0)
            demux->header_len = 0;
    }
    return 0;
}
