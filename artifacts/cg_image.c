/*  cg_image — header checks and libgd previews of images kernels made. */
#define _GNU_SOURCE
#include "artifacts/cg_image.h"

#include "base/cg_util.h"

#include <errno.h>
#include <gd.h>
#include <inttypes.h>
#include <stdint.h>
#include <string.h>

static uint32_t
s_be32 (const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static const unsigned char s_png_signature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};

static int
s_png_size (const unsigned char *b, size_t len, uint32_t *w, uint32_t *h)
{
    //  The signature, then the first chunk, which must be IHDR: length, type, width, height.
    if (len < 24 || memcmp (b, s_png_signature, 8) != 0 || memcmp (b + 12, "IHDR", 4) != 0)
        return -1;
    *w = s_be32 (b + 16);
    *h = s_be32 (b + 20);
    return 0;
}

//  A JPEG's frame header (SOF0-15 but DHT C4, JPG C8, DAC CC) before its first scan.
static int
s_jpeg_size (const unsigned char *b, size_t len, uint32_t *w, uint32_t *h)
{
    if (len < 4 || b[0] != 0xFF || b[1] != 0xD8)
        return -1;
    size_t at = 2;
    while (at + 4 <= len) {
        if (b[at] != 0xFF)
            return -1;
        unsigned marker = b[at + 1];
        if (marker == 0xFF) { //  fill byte
            at++;
            continue;
        }
        if (marker == 0x01 || (marker >= 0xD0 && marker <= 0xD7)) { //  no length
            at += 2;
            continue;
        }
        if (marker == 0xD9 || marker == 0xDA) //  the end, or the scan: no frame header
            return -1;
        size_t seg = (size_t)b[at + 2] << 8 | b[at + 3];
        if (seg < 2)
            return -1;
        if (marker >= 0xC0 && marker <= 0xCF && marker != 0xC4 && marker != 0xC8
            && marker != 0xCC) {
            //  length (2), precision (1), height (2), width (2)
            if (seg < 7 || at + 9 > len)
                return -1;
            *h = (uint32_t)b[at + 5] << 8 | b[at + 6];
            *w = (uint32_t)b[at + 7] << 8 | b[at + 8];
            return 0;
        }
        at += 2 + seg;
    }
    return -1;
}

int
cg_image_size (const unsigned char *bytes, size_t len, const char *mime, int *width, int *height,
               cg_error_t **err)
{
    uint32_t w = 0, h = 0;
    bool png = strcmp (mime, "image/png") == 0;
    if (!png && strcmp (mime, "image/jpeg") != 0)
        return cg_error_set (err, EINVAL, "%s: not a PNG or JPEG", mime);
    if ((png ? s_png_size (bytes, len, &w, &h) : s_jpeg_size (bytes, len, &w, &h)) < 0)
        return cg_error_set (err, EINVAL, "not a %s image: no size in its header",
                             png ? "PNG" : "JPEG");
    if (w == 0 || h == 0 || w > INT32_MAX || h > INT32_MAX)
        return cg_error_set (err, EINVAL, "the image says it is %" PRIu32 "x%" PRIu32, w, h);
    *width = (int)w;
    *height = (int)h;
    return 0;
}

//  Calls CHUNK (when not NULL) for each chunk of the PNG B (LEN bytes) up to IEND, counting
//  the ancillary ones and their bytes. Returns 0, or -1 with *err set when a chunk does not
//  fit the bytes, there is no IEND, or a cap is passed.
static int
s_png_walk (const unsigned char *b, size_t len,
            void (*chunk) (void *, const unsigned char *, size_t), void *arg, cg_error_t **err)
{
    size_t at = 8, ancillary = 0, ancillary_bytes = 0;
    while (at + 12 <= len) {
        uint32_t length = s_be32 (b + at);
        const unsigned char *type = b + at + 4;
        if (length > INT32_MAX || (size_t)length > len - at - 12)
            return cg_error_set (err, EINVAL,
                                 "a PNG chunk of %" PRIu32 " bytes at byte %zu does "
                                 "not fit the %zu bytes",
                                 length, at, len);
        if (type[0] & 0x20) {
            ancillary++;
            ancillary_bytes += length;
            if (ancillary > CG_IMAGE_MAX_ANCILLARY)
                return cg_error_set (err, EFBIG,
                                     "the PNG has more than %d ancillary chunks (the limit "
                                     "before a preview is decoded)",
                                     CG_IMAGE_MAX_ANCILLARY);
            if (ancillary_bytes > CG_IMAGE_MAX_ANCILLARY_BYTES)
                return cg_error_set (err, EFBIG,
                                     "the PNG's ancillary chunks hold more than %d bytes (the "
                                     "limit before a preview is decoded)",
                                     CG_IMAGE_MAX_ANCILLARY_BYTES);
        }
        if (chunk)
            chunk (arg, b + at, 12 + (size_t)length);
        if (memcmp (type, "IEND", 4) == 0)
            return 0;
        at += 12 + (size_t)length;
    }
    return cg_error_set (err, EINVAL, "the PNG ends without IEND");
}

//  Walks the JPEG B (LEN bytes) from SOI: every marker segment must fit the bytes; the
//  entropy-coded data after each SOS is skipped to the next marker. Returns 0, or -1 with
//  *err set when a segment does not fit or there are more than CG_IMAGE_MAX_SCANS scans.
static int
s_jpeg_walk (const unsigned char *b, size_t len, cg_error_t **err)
{
    size_t at = 2, scans = 0;
    while (at + 2 <= len) {
        if (b[at] != 0xFF)
            return cg_error_set (err, EINVAL, "no JPEG marker at byte %zu", at);
        unsigned marker = b[at + 1];
        if (marker == 0xFF) { //  fill byte
            at++;
            continue;
        }
        if (marker == 0xD9) //  EOI
            return 0;
        if (marker == 0x01 || marker == 0xD8 || (marker >= 0xD0 && marker <= 0xD7)) {
            at += 2;
            continue;
        }
        if (at + 4 > len)
            break;
        size_t seg = (size_t)b[at + 2] << 8 | b[at + 3];
        if (seg < 2 || seg > len - at - 2)
            return cg_error_set (err, EINVAL, "a JPEG segment at byte %zu does not fit", at);
        at += 2 + seg;
        if (marker != 0xDA)
            continue;
        if (++scans > CG_IMAGE_MAX_SCANS)
            return cg_error_set (err, EFBIG,
                                 "the JPEG has more than %d scans (the limit before a preview "
                                 "is decoded)",
                                 CG_IMAGE_MAX_SCANS);
        //  The scan's data: up to a marker that is not a stuffed 0 or a restart.
        while (at + 1 < len
               && !(b[at] == 0xFF && b[at + 1] != 0x00 && b[at + 1] != 0xFF
                    && !(b[at + 1] >= 0xD0 && b[at + 1] <= 0xD7)))
            at++;
        if (at + 1 >= len)
            return 0; //  no EOI: libjpeg ends the image there too
    }
    return 0;
}

int
cg_image_check (const unsigned char *bytes, size_t len, const char *mime, int *width, int *height,
                cg_error_t **err)
{
    int w = 0, h = 0;
    if (cg_image_size (bytes, len, mime, &w, &h, err) < 0)
        return -1;
    if ((int64_t)w * h > CG_IMAGE_MAX_PIXELS)
        return cg_error_set (err, EFBIG, "%dx%d is over %d pixels: not decoded", w, h,
                             CG_IMAGE_MAX_PIXELS);
    if (len > INT32_MAX)
        return cg_error_set (err, EFBIG, "%zu bytes: not decoded", len);
    bool png = strcmp (mime, "image/png") == 0;
    if ((png ? s_png_walk (bytes, len, NULL, NULL, err) : s_jpeg_walk (bytes, len, err)) < 0)
        return -1;
    *width = w;
    *height = h;
    return 0;
}

typedef struct {
    unsigned char *out;
    size_t len;
} s_copy_t;

static void
s_keep_critical (void *arg, const unsigned char *chunk, size_t len)
{
    s_copy_t *copy = arg;
    const unsigned char *type = chunk + 4;
    if (!(type[0] & 0x20) || memcmp (type, "tRNS", 4) == 0) {
        memcpy (copy->out + copy->len, chunk, len);
        copy->len += len;
    }
}

unsigned char *
cg_image_png_critical (const unsigned char *bytes, size_t len, size_t *out_len)
{
    if (len < 8 || memcmp (bytes, s_png_signature, 8) != 0)
        return NULL;
    s_copy_t copy = {cg_xmalloc (len), 8};
    memcpy (copy.out, bytes, 8);
    if (s_png_walk (bytes, len, s_keep_critical, &copy, NULL) < 0) {
        free (copy.out);
        return NULL;
    }
    *out_len = copy.len;
    return copy.out;
}

//  libgd's messages about a broken image are what the caller's error says; not printed.
static void
s_quiet (int priority, const char *format, va_list args)
{
    (void)priority;
    (void)format;
    (void)args;
}

//  IM encoded as PNG, or when that is over MAX as JPEG on white. Sets *MIME.
static unsigned char *
s_encode (gdImagePtr im, size_t max, size_t *len, const char **mime)
{
    int size = 0;
    void *png = gdImagePngPtrEx (im, &size, 9);
    if (png && size > 0 && (size_t)size <= max) {
        *mime = "image/png";
        *len = (size_t)size;
        unsigned char *copy = cg_xmalloc ((size_t)size);
        memcpy (copy, png, (size_t)size);
        gdFree (png);
        return copy;
    }
    gdFree (png);
    gdImagePtr flat = gdImageCreateTrueColor (gdImageSX (im), gdImageSY (im));
    if (!flat)
        return NULL;
    gdImageFilledRectangle (flat, 0, 0, gdImageSX (im), gdImageSY (im),
                            gdTrueColor (255, 255, 255));
    gdImageAlphaBlending (flat, 1);
    gdImageCopy (flat, im, 0, 0, 0, 0, gdImageSX (im), gdImageSY (im));
    void *jpeg = gdImageJpegPtr (flat, &size, 80);
    gdImageDestroy (flat);
    unsigned char *copy = NULL;
    if (jpeg && size > 0 && (size_t)size <= max) {
        *mime = "image/jpeg";
        *len = (size_t)size;
        copy = cg_xmalloc ((size_t)size);
        memcpy (copy, jpeg, (size_t)size);
    }
    gdFree (jpeg);
    return copy;
}

unsigned char *
cg_image_preview (const unsigned char *bytes, size_t len, const char *mime, size_t max,
                  size_t *out_len, const char **out_mime, int *out_width, int *out_height,
                  cg_error_t **err)
{
    int w = 0, h = 0;
    if (cg_image_check (bytes, len, mime, &w, &h, err) < 0)
        return NULL;
    gdSetErrorMethod (s_quiet);
    bool png = strcmp (mime, "image/png") == 0;
    size_t critical_len = 0;
    cleanup_free unsigned char *critical =
        png ? cg_image_png_critical (bytes, len, &critical_len) : NULL;
    if (png && !critical) {
        cg_error_set (err, EINVAL, "the %dx%d PNG's chunks do not fit its bytes", w, h);
        return NULL;
    }
    //  libgd reads the bytes only.
    gdImagePtr im = png ? gdImageCreateFromPngPtr ((int)critical_len, critical)
                        : gdImageCreateFromJpegPtrEx ((int)len, (void *)(uintptr_t)bytes, 1);
    if (!im || gdImageSX (im) != w || gdImageSY (im) != h) {
        if (im)
            gdImageDestroy (im);
        cg_error_set (err, EINVAL, "the %dx%d image could not be decoded", w, h);
        return NULL;
    }
    int side = w > h ? w : h;
    int target = side > CG_IMAGE_PREVIEW_SIDE ? CG_IMAGE_PREVIEW_SIDE : side;
    unsigned char *made = NULL;
    for (; target >= 32 && !made; target /= 2) {
        int sw = (int)((int64_t)w * target / side), sh = (int)((int64_t)h * target / side);
        sw = sw < 1 ? 1 : sw;
        sh = sh < 1 ? 1 : sh;
        gdImageSetInterpolationMethod (im, GD_BILINEAR_FIXED);
        gdImagePtr scaled = gdImageScale (im, (unsigned)sw, (unsigned)sh);
        if (!scaled)
            break;
        made = s_encode (scaled, max, out_len, out_mime);
        if (made) {
            *out_width = sw;
            *out_height = sh;
        }
        gdImageDestroy (scaled);
    }
    gdImageDestroy (im);
    if (!made)
        cg_error_set (err, EFBIG, "no preview of the %dx%d image fits %zu bytes", w, h, max);
    return made;
}

size_t
cg_image_base64_size (const char *b64)
{
    size_t len = strlen (b64), pad = 0;
    while (len > 0 && (b64[len - 1] == '=' || b64[len - 1] == '\n')) {
        pad += b64[len - 1] == '=';
        len--;
    }
    return (len + pad) / 4 * 3 - pad;
}

const char *
cg_image_of_output (const json_t *output, const char **mime)
{
    json_t *data = json_object_get (output, "data");
    const char *png = json_string_value (json_object_get (data, "image/png"));
    const char *jpeg = json_string_value (json_object_get (data, "image/jpeg"));
    *mime = png ? "image/png" : "image/jpeg";
    return png ? png : jpeg;
}
