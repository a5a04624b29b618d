/*  Unit tests: cg_image_size reads PNG and JPEG sizes from their headers and refuses what
    is neither; cg_image_preview scales a real image (made here with libgd) to fit a byte
    limit, refuses an image whose header claims too many pixels before decoding it, and one
    that does not decode. */
#include "../../artifacts/cg_image.h"
#include "../../bridge/cg_util.h"
#include "cg_test.h"

#include <errno.h>
#include <gd.h>
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

int
main (void)
{
    s_sizes ();
    s_previews ();
    s_hostile ();
    printf ("%d passed, %d failed\n", s_passes, s_failures);
    return s_failures ? 1 : 0;
}
