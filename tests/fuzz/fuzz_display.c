/*  fuzz_display — display outputs saved as files: display_data, update_display_data and
    execute_result messages (signed, decoded and applied to a run as the execute loop
    does) turned into files by cg_artifacts_save_displays in a real workspace (a scratch
    directory), into which the sandbox may have planted links, directories and FIFOs.

    Input: one flags byte saying what the sandbox planted before the run (bit 0: outputs/
    is a symlink to the directory above the workspace; bit 1: outputs/fz-1.png is a
    symlink to a canary file outside; bit 2: outputs/fz-2.svg is a directory; bit 3:
    outputs/fz-1.html is a FIFO), then messages: a type byte (display_data,
    update_display_data, execute_result) and one frame, the content's JSON text.

    Invariants: the canary outside the workspace is untouched and nothing appears beside
    the workspace; every output given a path names outputs/fz-<n>.<ext>, a regular file in
    the workspace, and for a PNG holds exactly the decoded bytes. */
#define _GNU_SOURCE
#include "cg_fuzz.h"

#include "artifacts/cg_artifacts.h"
#include "artifacts/cg_workspace.h"
#include "bridge/cg_run.h"
#include "base/cg_util.h"
#include "base/cg_fs.h"

#include <dirent.h>
#include <fcntl.h>
#include <sodium.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define KEY "fuzz-display-key"
#define CANARY "canary: the host's own file\n"
#define MAX_MESSAGES 16

static const char *s_types[] = {"display_data", "update_display_data", "execute_result"};

static const char *s_base; /* scratch: canary and ws/ */
static char *s_ws_dir;

static void
s_setup (void)
{
    if (s_base)
        return;
    s_base = cg_fuzz_scratch_dir ("display");
    cleanup_free char *canary = cg_strdupf ("%s/canary", s_base);
    cg_error_t *err = NULL;
    if (cg_write_file (canary, CANARY, strlen (CANARY), 0600, &err) < 0)
        abort ();
    s_ws_dir = cg_strdupf ("%s/ws", s_base);
}

//  A fresh workspace with what the sandbox planted per FLAGS.
static void
s_plant (uint8_t flags)
{
    cg_error_t *err = NULL;
    if (cg_rm_rf (s_ws_dir, &err) < 0 || mkdir (s_ws_dir, 0755) < 0)
        abort ();
    cleanup_free char *outputs = cg_strdupf ("%s/outputs", s_ws_dir);
    if (flags & 1) {
        if (symlink ("..", outputs) < 0)
            abort ();
        return;
    }
    if ((flags & 14) && mkdir (outputs, 0755) < 0)
        abort ();
    cleanup_free char *png = cg_strdupf ("%s/fz-1.png", outputs);
    cleanup_free char *svg = cg_strdupf ("%s/fz-2.svg", outputs);
    cleanup_free char *html = cg_strdupf ("%s/fz-1.html", outputs);
    if (((flags & 2) && symlink ("../../canary", png) < 0) || ((flags & 4) && mkdir (svg, 0755) < 0)
        || ((flags & 8) && mkfifo (html, 0644) < 0))
        abort ();
}

//  Checks the canary and that the scratch directory holds only it and the workspace.
static void
s_check_outside (void)
{
    cleanup_free char *canary = cg_strdupf ("%s/canary", s_base);
    cg_error_t *err = NULL;
    size_t len = 0;
    cleanup_free char *text = cg_read_file (canary, 4096, &len, &err);
    struct stat st;
    CG_FUZZ_CHECK (text && len == strlen (CANARY) && memcmp (text, CANARY, len) == 0
                       && lstat (canary, &st) == 0 && S_ISREG (st.st_mode)
                       && (st.st_mode & 07777) == 0600,
                   "the canary outside the workspace is untouched");
    cg_error_destroy (&err);
    DIR *dir = opendir (s_base);
    CG_FUZZ_CHECK (dir != NULL, "scratch dir readable");
    for (struct dirent *e; (e = readdir (dir));)
        CG_FUZZ_CHECK (strcmp (e->d_name, ".") == 0 || strcmp (e->d_name, "..") == 0
                           || strcmp (e->d_name, "canary") == 0 || strcmp (e->d_name, "ws") == 0,
                       "nothing written beside the workspace");
    closedir (dir);
}

//  Checks one output ITEM that was given a path.
static void
s_check_saved (cg_workspace_t *ws, json_t *item)
{
    const char *path = json_string_value (json_object_get (item, "path"));
    if (!path)
        return;
    const char *prefix = CG_WORKSPACE_MOUNT "/" CG_ARTIFACTS_OUTPUT_DIR "/fz-";
    CG_FUZZ_CHECK (strncmp (path, prefix, strlen (prefix)) == 0, "saved under outputs/fz-");
    cg_error_t *err = NULL;
    size_t len = 0;
    struct stat st;
    cleanup_free char *bytes = cg_workspace_read (ws, path + strlen (CG_WORKSPACE_MOUNT "/"),
                                                  64 * 1024 * 1024, &len, &st, &err);
    CG_FUZZ_CHECK (bytes != NULL && S_ISREG (st.st_mode),
                   "the saved output is a regular file in the workspace");
    cg_error_destroy (&err);
    const char *png =
        json_string_value (json_object_get (json_object_get (item, "data"), "image/png"));
    size_t path_len = strlen (path);
    if (png && path_len > 4 && strcmp (path + path_len - 4, ".png") == 0) {
        size_t png_len = strlen (png), bin_len = 0;
        cleanup_free unsigned char *bin = cg_xmalloc (png_len / 4 * 3 + 3);
        CG_FUZZ_CHECK (sodium_base642bin (bin, png_len / 4 * 3 + 3, png, png_len, " \r\n", &bin_len,
                                          NULL, sodium_base64_VARIANT_ORIGINAL)
                               == 0
                           && bin_len == len && memcmp (bin, bytes, len) == 0,
                       "a saved PNG holds the decoded bytes");
    }
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
    cg_fuzz_init ();
    s_setup ();
    cg_fuzz_in_t in = {data, size};
    uint8_t flags = cg_fuzz_byte (&in);
    s_plant (flags);

    cg_run_t run;
    cg_run_init (&run, 4096);
    cg_feed_t feed = {0};
    cg_wire_t *wire = cg_wire_new (KEY, strlen (KEY), 16 * 1024 * 1024);
    const uint8_t *frame;
    size_t len;
    for (unsigned serial = 0; serial < MAX_MESSAGES && cg_fuzz_more (&in); serial++) {
        const char *type = s_types[cg_fuzz_byte (&in) % 3];
        if (!cg_fuzz_frame (&in, &frame, &len))
            break;
        cg_msg_t *msg = cg_fuzz_kernel_msg (wire, type, strlen (type), frame, len, serial);
        if (msg)
            free (cg_run_feed (&run, &feed, "iopub", msg));
        cg_msg_destroy (&msg);
    }
    cg_wire_destroy (&wire);

    cg_error_t *err = NULL;
    cg_workspace_t *ws = cg_workspace_open (s_ws_dir, &err);
    CG_FUZZ_CHECK (ws != NULL, "the workspace opens");
    cg_artifacts_save_displays (ws, run.outputs, "fz", CG_DISPLAYS_FIGURES | CG_DISPLAYS_DOCUMENTS,
                                (uid_t)-1, (gid_t)-1);
    s_check_outside ();
    size_t i;
    json_t *item;
    json_array_foreach (run.outputs, i, item) s_check_saved (ws, item);
    cg_workspace_destroy (&ws);
    cg_run_clear (&run);
    return 0;
}
