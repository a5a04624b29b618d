/*  fuzz_image — images from kernels (untrusted bytes): cg_image_size's PNG and JPEG header
    readers, cg_image_check's chunk and marker walks with their caps, cg_image_png_critical,
    and cg_image_preview (libgd, the preview helper's decoder) on what passes them.

    Input: one byte of kind (even: PNG, odd: JPEG), one byte of limit (times 256 bytes),
    then the image.

    Invariants: a size read is positive; an image that passes cg_image_check has the size
    cg_image_size reads; a PNG's critical copy is no larger and passes the check itself; a
    preview is made only for an image whose header
    size is within CG_IMAGE_MAX_PIXELS, is no larger than the limit, and is itself an image
    whose header says the size the preview reported. (Images over 512 x 512 pixels are not
    previewed here, to keep each run short.) */
#define _GNU_SOURCE
#include "cg_fuzz.h"

#include "artifacts/cg_image.h"

#include <stdlib.h>

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    const char *mime = data[0] % 2 ? "image/jpeg" : "image/png";
    size_t max = (size_t)data[1] * 256;
    const unsigned char *image = data + 2;
    size_t len = size - 2;
    int w = 0, h = 0;
    if (cg_image_size (image, len, mime, &w, &h, NULL) < 0)
        return 0;
    CG_FUZZ_CHECK (w > 0 && h > 0, "a size read is positive");
    int cw = 0, ch = 0;
    cg_error_t *check_err = NULL;
    bool checked = cg_image_check (image, len, mime, &cw, &ch, &check_err) == 0;
    CG_FUZZ_CHECK (checked ? cw == w && ch == h : check_err != NULL, "the check agrees");
    cg_error_destroy (&check_err);
    if (checked && data[0] % 2 == 0) {
        size_t critical_len = 0;
        unsigned char *critical = cg_image_png_critical (image, len, &critical_len);
        CG_FUZZ_CHECK (critical && critical_len <= len
                           && cg_image_check (critical, critical_len, mime, &cw, &ch, NULL) == 0,
                       "the critical copy of a checked PNG passes the check");
        free (critical);
    }
    if ((long long)w * h > 512 * 512)
        return 0;
    size_t made_len = 0;
    const char *made_mime = NULL;
    int mw = 0, mh = 0;
    cg_error_t *err = NULL;
    unsigned char *made =
        cg_image_preview (image, len, mime, max, &made_len, &made_mime, &mw, &mh, &err);
    if (made) {
        CG_FUZZ_CHECK (made_len <= max, "the preview fits the limit");
        int pw = 0, ph = 0;
        CG_FUZZ_CHECK (cg_image_size (made, made_len, made_mime, &pw, &ph, NULL) == 0 && pw == mw
                           && ph == mh,
                       "the preview is the image it says");
        free (made);
    }
    else
        CG_FUZZ_CHECK (err != NULL, "no preview says why");
    cg_error_destroy (&err);
    return 0;
}
