/*  Unit tests: cg_image_size reads PNG and JPEG sizes from their headers and refuses what
    is neither; cg_image_preview scales a real image (made here with libgd) to fit a byte
    limit, refuses an image whose header claims too many pixels before decoding it, and one
    that does not decode; cg_image_check caps a PNG's ancillary chunks and a JPEG's scans
    without decoding; cg_preview_make makes previews in the helper process (this program
    run as `test_image preview ...`, as the server runs itself) and stops it at its
    deadline. */
#define _GNU_SOURCE
#include "artifacts/cg_image.h"
#include "artifacts/cg_preview.h"
#include "base/cg_util.h"
#include "cg_test.h"

#include <errno.h>
#include <gd.h>
#include <signal.h>
#include <stdint.h>
#include <zlib.h>
#include <stdlib.h>
#include <string.h>

//  A W x H noisy truecolor image encoded as PNG (or JPEG); caller frees with gdFree.
static unsigned char *
s_image (int w, int h, bool png, int *size)
{
    gdImagePtr im = gdImageCreateTrueColor (w, h);
    unsigned seed = 7;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            seed = seed * 1103515245 + 12345;
            gdImageSetPixel (im, x, y, (int)(seed >> 8) & 0xFFFFFF);
        }
    void *bytes = png ? gdImagePngPtrEx (im, size, 6) : gdImageJpegPtr (im, size, 90);
    gdImageDestroy (im);
    return bytes;
}

static void
s_sizes (void)
{
    const char *name = "sizes";
    int size = 0, w = 0, h = 0;
    unsigned char *png = s_image (300, 200, true, &size);
    CHECK (cg_image_size (png, (size_t)size, "image/png", &w, &h, NULL) == 0 && w == 300
               && h == 200,
           "PNG %dx%d", w, h);
    unsigned char *jpeg = s_image (123, 45, false, &size);
    CHECK (cg_image_size (jpeg, (size_t)size, "image/jpeg", &w, &h, NULL) == 0 && w == 123
               && h == 45,
           "JPEG %dx%d", w, h);
    CHECK (cg_image_size (jpeg, (size_t)size, "image/png", &w, &h, NULL) < 0, "a JPEG is no PNG");
    CHECK (cg_image_size (png, 20, "image/png", &w, &h, NULL) < 0, "a cut header");
    CHECK (cg_image_size (jpeg, 3, "image/jpeg", &w, &h, NULL) < 0, "a cut JPEG");
    CHECK (cg_image_size (png, (size_t)size, "image/gif", &w, &h, NULL) < 0, "not PNG or JPEG");
    gdFree (png);
    gdFree (jpeg);
    s_passes++;
}

static void
s_previews (void)
{
    const char *name = "previews";
    int size = 0;
    unsigned char *png = s_image (1600, 1200, true, &size);
    CHECK (size > 1000000, "the noise PNG is %d bytes", size);
    size_t len = 0;
    const char *mime = NULL;
    int w = 0, h = 0;
    cg_error_t *err = NULL;
    unsigned char *made =
        cg_image_preview (png, (size_t)size, "image/png", 40000, &len, &mime, &w, &h, &err);
    CHECK (made && len <= 40000 && w <= CG_IMAGE_PREVIEW_SIDE && w * 3 == h * 4,
           "preview %zu bytes %dx%d: %s", len, w, h, cg_error_message (err));
    int pw = 0, ph = 0;
    CHECK (cg_image_size (made, len, mime, &pw, &ph, NULL) == 0 && pw == w && ph == h,
           "the preview is a %s of %dx%d", mime, pw, ph);
    free (made);
    made = cg_image_preview (png, (size_t)size, "image/png", 10, &len, &mime, &w, &h, &err);
    CHECK (!made && err && err->code == EFBIG, "nothing fits 10 bytes");
    cg_error_destroy (&err);
    gdFree (png);
    s_passes++;
}

static void
s_hostile (void)
{
    const char *name = "hostile";
    //  A header that claims 100000 x 100000: refused before any decoding.
    unsigned char bomb[33] = {0x89, 'P', 'N',  'G',  '\r', '\n', 0x1a, '\n', 0,    0,
                              0,    13,  'I',  'H',  'D',  'R',  0,    1,    0x86, 0xA0,
                              0,    1,   0x86, 0xA0, 8,    2,    0,    0,    0};
    size_t len = 0;
    const char *mime = NULL;
    int w = 0, h = 0;
    cg_error_t *err = NULL;
    unsigned char *made =
        cg_image_preview (bomb, sizeof bomb, "image/png", 40000, &len, &mime, &w, &h, &err);
    CHECK (!made && err && err->code == EFBIG && strstr (cg_error_message (err), "not decoded"),
           "bomb: %s", cg_error_message (err));
    cg_error_destroy (&err);
    //  A valid header, then garbage.
    unsigned char junk[400];
    memcpy (junk, bomb, 33);
    junk[17] = 0, junk[18] = 1, junk[19] = 0; /* 256 wide */
    junk[21] = 0, junk[22] = 1, junk[23] = 0; /* 256 high */
    memset (junk + 33, 'x', sizeof junk - 33);
    made = cg_image_preview (junk, sizeof junk, "image/png", 40000, &len, &mime, &w, &h, &err);
    CHECK (!made && err && err->code == EINVAL, "junk: %s", cg_error_message (err));
    cg_error_destroy (&err);
    s_passes++;
}

//  Appends a PNG chunk of TYPE with LEN bytes of DATA at P; returns the end.
static unsigned char *
s_chunk (unsigned char *p, const char *type, const void *data, uint32_t len)
{
    unsigned char *start = p;
    for (int i = 3; i >= 0; i--)
        *p++ = (unsigned char)(len >> (8 * i));
    memcpy (p, type, 4);
    memcpy (p + 4, data, len);
    p += 4 + len;
    uint32_t crc = (uint32_t)crc32 (0, start + 4, 4 + len);
    for (int i = 3; i >= 0; i--)
        *p++ = (unsigned char)(crc >> (8 * i));
    return p;
}

//  A 2048 x 2048 grey progressive JPEG of SCANS empty DC scans (headers, no data) in BUF;
//  returns its length.
static size_t
s_scans_jpeg (unsigned char *buf, int scans)
{
    static const unsigned char dqt[] = {0xFF, 0xD8, 0xFF, 0xDB, 0, 67, 0};
    static const unsigned char sof_dht[] = {
        0xFF, 0xC2, 0, 11, 8, 8, 0, 8, 0, 1, 1, 0x11, 0, /* SOF2 2048 x 2048, one component */
        0xFF, 0xC4, 0, 20, 0, 1, 0, 0, 0, 0, 0, 0,    0, 0, 0, 0, 0, 0, 0, 0, 0, 0}; /* DHT */
    static const unsigned char sos[] = {0xFF, 0xDA, 0, 8, 1, 1, 0, 0, 0, 0};
    memcpy (buf, dqt, sizeof dqt);
    memset (buf + sizeof dqt, 1, 64);
    memcpy (buf + sizeof dqt + 64, sof_dht, sizeof sof_dht);
    size_t len = sizeof dqt + 64 + sizeof sof_dht;
    for (int i = 0; i < scans; i++, len += sizeof sos)
        memcpy (buf + len, sos, sizeof sos);
    buf[len++] = 0xFF;
    buf[len++] = 0xD9;
    return len;
}

static void
s_caps (void)
{
    const char *name = "caps";
    int w = 0, h = 0;
    cg_error_t *err = NULL;
    unsigned char *jpeg = cg_xmalloc (200 + 10 * (CG_IMAGE_MAX_SCANS + 1));
    size_t len = s_scans_jpeg (jpeg, CG_IMAGE_MAX_SCANS);
    CHECK (cg_image_check (jpeg, len, "image/jpeg", &w, &h, &err) == 0 && w == 2048,
           "%d scans pass: %s", CG_IMAGE_MAX_SCANS, cg_error_message (err));
    len = s_scans_jpeg (jpeg, CG_IMAGE_MAX_SCANS + 1);
    CHECK (cg_image_check (jpeg, len, "image/jpeg", &w, &h, &err) < 0 && err->code == EFBIG
               && strstr (cg_error_message (err), "more than 100 scans"),
           "one scan more is refused: %s", cg_error_message (err));
    cg_error_destroy (&err);
    CHECK (cg_image_check (jpeg, len - 35, "image/jpeg", &w, &h, &err) < 0, "cut in a segment");
    cg_error_destroy (&err);
    free (jpeg);

    //  A PNG with ancillary chunks around its pixels; one text chunk too many.
    unsigned char *png = cg_xmalloc (4096), *p = png;
    memcpy (p, "\x89PNG\r\n\x1a\n", 8);
    static const unsigned char ihdr[13] = {0, 0, 0, 8, 0, 0, 0, 8, 8, 0, 0, 0, 0};
    unsigned char raw[8 * 9] = {0}, idat[128];
    uLongf idat_len = sizeof idat;
    compress (idat, &idat_len, raw, sizeof raw);
    p = s_chunk (p + 8, "IHDR", ihdr, sizeof ihdr);
    for (int i = 0; i < CG_IMAGE_MAX_ANCILLARY; i++)
        p = s_chunk (p, "tEXt", "k\0v", 3);
    unsigned char *idat_at = p;
    p = s_chunk (p, "IDAT", idat, (uint32_t)idat_len);
    p = s_chunk (p, "IEND", "", 0);
    len = (size_t)(p - png);
    CHECK (cg_image_check (png, len, "image/png", &w, &h, &err) == 0 && w == 8,
           "%d ancillary chunks pass: %s", CG_IMAGE_MAX_ANCILLARY, cg_error_message (err));
    size_t critical_len = 0;
    unsigned char *critical = cg_image_png_critical (png, len, &critical_len);
    CHECK (critical && critical_len == len - CG_IMAGE_MAX_ANCILLARY * 15u
               && !memmem (critical, critical_len, "tEXt", 4),
           "only the critical chunks are kept (%zu of %zu bytes)", critical_len, len);
    free (critical);
    memmove (idat_at + 15, idat_at, (size_t)(p - idat_at));
    s_chunk (idat_at, "zTXt", "k\0v", 3);
    len += 15;
    CHECK (cg_image_check (png, len, "image/png", &w, &h, &err) < 0 && err->code == EFBIG
               && strstr (cg_error_message (err), "ancillary chunks"),
           "one ancillary chunk more is refused: %s", cg_error_message (err));
    cg_error_destroy (&err);
    CHECK (cg_image_check (png, len - 12, "image/png", &w, &h, &err) < 0, "no IEND");
    cg_error_destroy (&err);
    free (png);
    s_passes++;
}

static void
s_helper (void)
{
    const char *name = "helper";
    int size = 0;
    unsigned char *png = s_image (1600, 1200, true, &size);
    cg_preview_limits_t limits = {.budget = 40000, .timeout_ms = 20000, .memory_mb = 512};
    size_t len = 0;
    const char *mime = NULL;
    int w = 0, h = 0;
    cg_error_t *err = NULL;
    unsigned char *made = cg_preview_make (png, (size_t)size, "image/png", 40000, &limits,
                                           cg_now_us () + 20000000, &len, &mime, &w, &h, &err);
    CHECK (made && len <= 40000 && w <= CG_IMAGE_PREVIEW_SIDE && w * 3 == h * 4,
           "a preview from the helper: %s", cg_error_message (err));
    free (made);
    //  The helper's own refusal comes back as its message.
    made = cg_preview_make (png, (size_t)size, "image/png", 10, &limits, cg_now_us () + 20000000,
                            &len, &mime, &w, &h, &err);
    CHECK (!made && err && strstr (cg_error_message (err), "no preview of the 1600x1200 image"),
           "the helper says why: %s", cg_error_message (err));
    cg_error_destroy (&err);
    //  A deadline too short for the work: the helper is killed, the call returns.
    made = cg_preview_make (png, (size_t)size, "image/png", 40000, &limits, cg_now_us () + 2000,
                            &len, &mime, &w, &h, &err);
    CHECK (!made && err && err->code == ETIMEDOUT, "stopped at the deadline: %s",
           cg_error_message (err));
    cg_error_destroy (&err);
    //  Too little memory to decode: no preview, no crash. (A sanitized build's helper has
    //  no address-space limit: AddressSanitizer needs terabytes of it.)
#if !CG_SANITIZED
    limits.memory_mb = 64;
    made = cg_preview_make (png, (size_t)size, "image/png", 40000, &limits, cg_now_us () + 20000000,
                            &len, &mime, &w, &h, &err);
    CHECK (!made && err, "64 MB is too little for 1600x1200");
    cg_error_destroy (&err);
#endif
    gdFree (png);
    s_passes++;
}

int
main (int argc, char **argv)
{
    //  The preview helper, as the server's own binary runs it (cg_main).
    if (argc > 1 && strcmp (argv[1], "preview") == 0)
        cg_preview_main (argc, argv);
    signal (SIGPIPE, SIG_IGN);
    s_sizes ();
    s_previews ();
    s_hostile ();
    s_caps ();
    s_helper ();
    printf ("%d passed, %d failed\n", s_passes, s_failures);
    return s_failures ? 1 : 0;
}
