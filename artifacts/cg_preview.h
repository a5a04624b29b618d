/*  cg_preview — previews of the images a run made, made outside the server process. The
    server (a session's runner thread, never the main loop) only checks headers and sizes
    (cg_image_check); the decoding is done by a short-lived helper, this same binary run as
    `cellgate preview`, which locks itself down before it reads a byte: no new privileges,
    the nobody user when started as root, no open files but its pipes, limits on address
    space, CPU time and file size, and a seccomp filter that leaves it read, write, memory
    and exit. The runner kills it at a wall-clock deadline. A preview that fails or times
    out becomes a note in the result, never a hang. */
#ifndef CG_PREVIEW_H
#define CG_PREVIEW_H

#include "artifacts/cg_workspace.h"
#include "base/cg_error.h"

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

/*  The largest image (encoded bytes) a preview is made of. */
#define CG_PREVIEW_INPUT_MAX (64 * 1024 * 1024)

/*  Saved display outputs too large for a message (the Python kernel's startup file names
    them so) are previewed from the workspace file. */
#define CG_PREVIEW_LARGE_PREFIX "/mnt/data/outputs/large-"

typedef struct {
    size_t budget;  /* image bytes a result carries inline (--image-budget) */
    int timeout_ms; /* wall-clock time all previews of one run may take together */
    int memory_mb;  /* the helper's address space */
} cg_preview_limits_t;

/*  The helper's main: `cellgate preview MIME LEN MAX MEMORY_MB CPU_S` reads LEN bytes of
    image from stdin and writes "P" and a preview of at most MAX bytes (cg_image_preview)
    to stdout, or "E" and why not. Locks itself down first (see above). Never returns: exits
    (without exit handlers) with 0 with a preview, 1 without, 2 for a bad command line. */
void cg_preview_main (int argc, char **argv) __attribute__ ((noreturn));

/*  Makes a preview of the image BYTES (LEN, MIME "image/png" or "image/jpeg") of at most
    MAX bytes in a helper process with LIMITS' memory, killed at DEADLINE_US (cg_now_us
    time). Checks the image first (cg_image_check: nothing is started for one that fails)
    and the preview after (its header says a PNG or JPEG of at most CG_IMAGE_PREVIEW_SIDE a
    side, within MAX). Returns the preview (caller frees) with *OUT_LEN, *OUT_MIME (static),
    *OUT_WIDTH and *OUT_HEIGHT, or NULL with *err saying why (the check, the helper's own
    message, its timeout, its signal). Blocks until then: call it off the main loop. */
unsigned char *cg_preview_make (const unsigned char *bytes, size_t len, const char *mime,
                                size_t max, const cg_preview_limits_t *limits, int64_t deadline_us,
                                size_t *out_len, const char **out_mime, int *out_width,
                                int *out_height, cg_error_t **err);

/*  The previews a run's result will carry, made now (cg_preview_make) so that the server's
    main loop decodes nothing. OUTPUTS (the Jupyter outputs, borrowed) are walked as
    cg_run_result_call walks them: PNG and JPEG images go inline while they fit
    LIMITS->budget, and each one past it gets a preview that fits what is left; then each
    image file of ARTIFACTS (borrowed, may be NULL) under CG_PREVIEW_LARGE_PREFIX, read from
    WS (may be NULL), gets one the same way. Returns NULL when no image is past the budget,
    else {"outputs": [null | PREVIEW | {"error": why}] (one per output), "files": {path:
    PREVIEW | {"error": why}}} where PREVIEW is {mime_type, data (base64), width, height,
    size_bytes}. Caller owns the result. */
json_t *cg_preview_plan (json_t *outputs, json_t *artifacts, cg_workspace_t *ws,
                         const cg_preview_limits_t *limits);

#endif
