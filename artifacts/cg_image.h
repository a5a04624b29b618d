/*  cg_image — what cellgate does to images that kernels made (untrusted bytes): reads their
    size from the header alone, and makes a smaller preview with libgd (Debian's libgd3)
    only after that size passed the limit, so a decompression bomb is never decoded. */
#ifndef CG_IMAGE_H
#define CG_IMAGE_H

#include "../bridge/cg_error.h"

#include <stddef.h>

/*  Images with more pixels than this are never decoded. */
#define CG_IMAGE_MAX_PIXELS (25 * 1000 * 1000)

/*  A preview's longest side at most. */
#define CG_IMAGE_PREVIEW_SIDE 1024

/*  Reads the width and height of the LEN bytes at BYTES, a PNG or JPEG by MIME
    ("image/png", "image/jpeg"), from its header (PNG's IHDR, JPEG's SOF). Returns 0, or -1
    with *err set when they are not such an image or do not say. */
int cg_image_size (const unsigned char *bytes, size_t len, const char *mime, int *width,
                   int *height, cg_error_t **err);

/*  A preview of the image BYTES (LEN, MIME as above) of at most MAX bytes: scaled down to
    a longest side of CG_IMAGE_PREVIEW_SIDE at most, then halved until it fits, as PNG (a
    chart's flat colours) or else JPEG on white. Returns the encoded bytes (caller frees)
    with *OUT_LEN, *OUT_MIME (static), *OUT_WIDTH and *OUT_HEIGHT; NULL with *err set when
    the image is larger than CG_IMAGE_MAX_PIXELS, cannot be decoded, or no preview of at
    least 32 pixels a side fits MAX. */
unsigned char *cg_image_preview (const unsigned char *bytes, size_t len, const char *mime,
                                 size_t max, size_t *out_len, const char **out_mime, int *out_width,
                                 int *out_height, cg_error_t **err);

#endif
