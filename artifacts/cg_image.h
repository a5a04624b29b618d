/*  cg_image — what cellgate does to images that kernels made (untrusted bytes): reads their
    size and structure from the headers alone (the server does only this), and makes a
    smaller preview with libgd (Debian's libgd3) only after the checks passed. The server
    never calls cg_image_preview: the preview helper process does (cg_preview.h). */
#ifndef CG_IMAGE_H
#define CG_IMAGE_H

#include "base/cg_error.h"

#include <jansson.h>
#include <stddef.h>

/*  Images with more pixels than this are never decoded. */
#define CG_IMAGE_MAX_PIXELS (25 * 1000 * 1000)

/*  A preview's longest side at most. */
#define CG_IMAGE_PREVIEW_SIDE 1024

/*  Caps on what a decoder would otherwise work through (cg_image_check): a PNG's
    ancillary chunks (text, zTXt and iCCP inflate; each is kept in memory by libpng) and
    their bytes, and a JPEG's scans (a progressive decoder passes over the whole image
    for each one, empty or not). Ordinary images are far below them: a matplotlib PNG
    has 2 or 3 ancillary chunks, a progressive JPEG about 10 scans. */
#define CG_IMAGE_MAX_ANCILLARY 64
#define CG_IMAGE_MAX_ANCILLARY_BYTES (1024 * 1024)
#define CG_IMAGE_MAX_SCANS 100

/*  The base64 PNG (preferred) or JPEG of the Jupyter display output OUTPUT (its "data"),
    borrowed, with *MIME ("image/png" or "image/jpeg"); NULL when it has neither. */
const char *cg_image_of_output (const json_t *output, const char **mime);

/*  The number of bytes the base64 text B64 decodes to (padding and trailing newlines
    allowed), without decoding it. */
size_t cg_image_base64_size (const char *b64);

/*  Reads the width and height of the LEN bytes at BYTES, a PNG or JPEG by MIME
    ("image/png", "image/jpeg"), from its header (PNG's IHDR, JPEG's SOF). Returns 0, or -1
    with *err set when they are not such an image or do not say. */
int cg_image_size (const unsigned char *bytes, size_t len, const char *mime, int *width,
                   int *height, cg_error_t **err);

/*  Checks the LEN bytes at BYTES, a PNG or JPEG by MIME, without decoding anything: the
    size in its header (cg_image_size) within CG_IMAGE_MAX_PIXELS; for a PNG every chunk's
    length within the bytes up to IEND, at most CG_IMAGE_MAX_ANCILLARY ancillary chunks of
    CG_IMAGE_MAX_ANCILLARY_BYTES in all; for a JPEG every marker segment within the bytes
    and at most CG_IMAGE_MAX_SCANS scans (SOS markers, found by walking the entropy-coded
    data). Linear in LEN. Returns 0 with *WIDTH and *HEIGHT, or -1 with *err naming the
    limit or the flaw. */
int cg_image_check (const unsigned char *bytes, size_t len, const char *mime, int *width,
                    int *height, cg_error_t **err);

/*  Returns a copy of the PNG at BYTES (LEN, passed cg_image_check) with only its
    critical chunks (IHDR, PLTE, IDAT, IEND) and tRNS, so that no ancillary chunk
    (text, compressed text, colour profiles) reaches a decoder. Sets *OUT_LEN; caller
    frees. NULL when BYTES is not a PNG whose chunks fit LEN. */
unsigned char *cg_image_png_critical (const unsigned char *bytes, size_t len, size_t *out_len);

/*  A preview of the image BYTES (LEN, MIME as above) of at most MAX bytes: scaled down to
    a longest side of CG_IMAGE_PREVIEW_SIDE at most, then halved until it fits, as PNG (a
    chart's flat colours) or else JPEG on white. Returns the encoded bytes (caller frees)
    with *OUT_LEN, *OUT_MIME (static), *OUT_WIDTH and *OUT_HEIGHT; NULL with *err set when
    the image fails cg_image_check, cannot be decoded, or no preview of at least 32
    pixels a side fits MAX. A PNG is decoded without its ancillary chunks
    (cg_image_png_critical). Decodes untrusted bytes with libgd: call it only in a
    process made for it (the preview helper, cg_preview.h), never in the server. */
unsigned char *cg_image_preview (const unsigned char *bytes, size_t len, const char *mime,
                                 size_t max, size_t *out_len, const char **out_mime, int *out_width,
                                 int *out_height, cg_error_t **err);

#endif
