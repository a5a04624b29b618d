/*  fuzz_workspace — client paths into a workspace: cg_workspace_normalize (and its
    length-taking form, which sees embedded NULs) and cg_workspace_sanitize_filename.

    Input: the path's bytes.

    Invariants: a refusal always says why (EINVAL); an accepted path is canonical — not
    empty, relative, no empty, "." or ".." component, no trailing slash, components of at
    most 255 bytes, at most 1024 bytes in all, valid UTF-8 without control characters —
    and normalizing it again, or with /mnt/data/ in front, gives it back; the NUL-taking
    and NUL-terminated forms agree; a sanitized upload name normalizes to itself. */
#include "cg_fuzz.h"

#include "artifacts/cg_workspace.h"
#include "base/cg_util.h"

#include <errno.h>
#include <string.h>

//  Checks that REL is canonical as cg_workspace_normalize promises.
static void
s_check_canonical (const char *rel)
{
    size_t len = strlen (rel);
    CG_FUZZ_CHECK (len > 0 && len <= CG_WORKSPACE_PATH_MAX, "1 to 1024 bytes");
    CG_FUZZ_CHECK (rel[0] != '/' && rel[len - 1] != '/', "relative, no trailing slash");
    CG_FUZZ_CHECK (cg_fuzz_utf8_valid (rel, len), "valid UTF-8");
    for (size_t i = 0; i < len; i++)
        CG_FUZZ_CHECK ((unsigned char)rel[i] >= 0x20 && rel[i] != 0x7f, "no control characters");
    for (const char *segment = rel;;) {
        const char *end = strchr (segment, '/');
        size_t n = end ? (size_t)(end - segment) : strlen (segment);
        CG_FUZZ_CHECK (n > 0 && n <= CG_WORKSPACE_NAME_MAX, "components of 1 to 255 bytes");
        CG_FUZZ_CHECK (!(n == 1 && segment[0] == '.')
                           && !(n == 2 && segment[0] == '.' && segment[1] == '.'),
                       "no . or .. component");
        if (!end)
            break;
        segment = end + 1;
    }
    cg_error_t *err = NULL;
    cleanup_free char *again = cg_workspace_normalize (rel, &err);
    CG_FUZZ_CHECK (again && strcmp (again, rel) == 0, "normalizing is idempotent");
    cleanup_free char *mounted = cg_strdupf ("%s/%s", CG_WORKSPACE_MOUNT, rel);
    cleanup_free char *inside = cg_workspace_normalize (mounted, &err);
    CG_FUZZ_CHECK (inside && strcmp (inside, rel) == 0, "/mnt/data/REL normalizes to REL");
    CG_FUZZ_CHECK (cg_mime_type (rel) != NULL, "a MIME type");
    cg_error_destroy (&err);
}

//  Checks a result RESULT with its error ERR; returns RESULT.
static char *
s_check_outcome (char *result, cg_error_t **err)
{
    if (result) {
        CG_FUZZ_CHECK (*err == NULL, "no error with a result");
        s_check_canonical (result);
    }
    else
        CG_FUZZ_CHECK (*err && (*err)->code == EINVAL && cg_error_message (*err)[0],
                       "EINVAL with a message");
    cg_error_destroy (err);
    return result;
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
    cg_fuzz_init ();
    cg_error_t *err = NULL;
    cleanup_free char *with_len =
        s_check_outcome (cg_workspace_normalize_len ((const char *)data, size, &err), &err);
    bool has_nul = memchr (data, '\0', size) != NULL;
    CG_FUZZ_CHECK (!has_nul || !with_len, "an embedded NUL is refused");
    cleanup_free char *text = cg_xstrndup ((const char *)data, size);
    cleanup_free char *plain = s_check_outcome (cg_workspace_normalize (text, &err), &err);
    if (!has_nul)
        CG_FUZZ_CHECK ((!plain && !with_len)
                           || (plain && with_len && strcmp (plain, with_len) == 0),
                       "both forms agree");
    cleanup_free char *upload = s_check_outcome (cg_workspace_sanitize_filename (text, &err), &err);
    CG_FUZZ_CHECK (!upload || (plain && strcmp (upload, plain) == 0),
                   "an upload name is a normalized path");
    return 0;
}
