/*  fuzz_kernel_msg — the handling of kernel messages that fills a run result
    (cg_run_feed: iopub stream, display_data, update_display_data, execute_result,
    error, clear_output, status; shell execute_reply; stdin input_request), reached
    through the real decoder with correctly signed messages, as a compromised kernel that
    holds its key sends them.

    Input: one flags byte (bit 0: the first frame is the cell's stdin; bit 1: a live
    output callback; bits 2-7: the kept-output limit, 1 to 253 bytes), then messages:
    a selector byte (bits 0-1: iopub, shell, stdin, control; bits 2-7: the msg_type from
    the table below, or past its end the next frame) and one frame, the content's JSON
    text, taken as it comes. */
#include "cg_fuzz.h"

#include "bridge/cg_run.h"
#include "base/cg_util.h"
#include "bridge/cg_wire.h"

#include <string.h>

#define KEY "fuzz-kernel-key"
#define MAX_MESSAGES 64

static const char *s_channels[] = {"iopub", "shell", "stdin", "control"};
static const char *s_types[] = {
    "status",         "stream",        "display_data",      "update_display_data",
    "execute_result", "error",         "clear_output",      "execute_input",
    "execute_reply",  "input_request", "kernel_info_reply", "comm_msg",
};
#define TYPE_COUNT (sizeof s_types / sizeof s_types[0])

static void
s_on_output (void *arg, const char *stream, const char *text, size_t len)
{
    (void)arg;
    CG_FUZZ_CHECK (strcmp (stream, "stdout") == 0 || strcmp (stream, "stderr") == 0
                       || strcmp (stream, "display") == 0,
                   "a known stream name");
    //  Touches every byte, so ASan sees a length that overstates the text.
    size_t sum = 0;
    for (size_t i = 0; i < len; i++)
        sum += (unsigned char)text[i];
    (void)sum;
}

//  Checks a stream buffer after cg_text_finish.
static void
s_check_text (const cg_text_t *text)
{
    CG_FUZZ_CHECK (text->len <= text->max, "kept text within its limit");
    CG_FUZZ_CHECK (text->data && text->data[text->len] == '\0', "kept text NUL-terminated");
    CG_FUZZ_CHECK (!text->tail, "tail joined");
    CG_FUZZ_CHECK (text->dropped_chars <= text->dropped, "dropped characters within bytes");
    CG_FUZZ_CHECK (!text->dropped || text->cut <= text->len, "cut inside the text");
}

static void
s_check_outputs (const cg_run_t *run)
{
    CG_FUZZ_CHECK (json_is_array (run->outputs), "outputs an array");
    size_t i;
    json_t *item;
    json_array_foreach (run->outputs, i, item)
    {
        CG_FUZZ_CHECK (json_is_string (json_object_get (item, "type")), "output type");
        CG_FUZZ_CHECK (json_is_object (json_object_get (item, "data")), "output data");
        CG_FUZZ_CHECK (json_is_object (json_object_get (item, "metadata")), "output metadata");
    }
    CG_FUZZ_CHECK (!run->return_value || json_is_object (run->return_value), "return value");
    //  What the result building does next: everything must serialize.
    char *text = json_dumps (run->outputs, JSON_COMPACT);
    CG_FUZZ_CHECK (text != NULL, "outputs serialize");
    free (text);
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
    cg_fuzz_init ();
    cg_fuzz_in_t in = {data, size};
    uint8_t flags = cg_fuzz_byte (&in);
    cleanup_free char *stdin_text = NULL;
    const uint8_t *frame;
    size_t len;
    if ((flags & 1) && cg_fuzz_frame (&in, &frame, &len))
        stdin_text = cg_xstrndup ((const char *)frame, len);

    cg_run_t run;
    cg_run_init (&run, 1 + (size_t)(flags >> 2) * 4);
    if (flags & 2)
        run.on_output = s_on_output;
    cg_feed_t feed = {.stdin_next = stdin_text};
    cg_wire_t *wire = cg_wire_new (KEY, strlen (KEY), 1024 * 1024);
    for (unsigned serial = 0; serial < MAX_MESSAGES && cg_fuzz_more (&in); serial++) {
        uint8_t selector = cg_fuzz_byte (&in);
        const char *channel = s_channels[selector & 3];
        size_t pick = (size_t)(selector >> 2) % (TYPE_COUNT + 1);
        const char *type = pick < TYPE_COUNT ? s_types[pick] : NULL;
        size_t type_len = type ? strlen (type) : 0;
        if (!type) {
            if (!cg_fuzz_frame (&in, &frame, &len))
                break;
            type = (const char *)frame;
            type_len = len;
        }
        if (!cg_fuzz_frame (&in, &frame, &len))
            break;
        cg_msg_t *msg = cg_fuzz_kernel_msg (wire, type, type_len, frame, len, serial);
        cleanup_free char *value = msg ? cg_run_feed (&run, &feed, channel, msg) : NULL;
        CG_FUZZ_CHECK (!value || strcmp (channel, "stdin") == 0, "an answer only on stdin");
        cg_msg_destroy (&msg);
        CG_FUZZ_CHECK (!stdin_text
                           || (feed.stdin_next >= stdin_text
                               && feed.stdin_next <= stdin_text + strlen (stdin_text)),
                       "stdin consumed within the text");
    }
    cg_text_finish (&run.out);
    cg_text_finish (&run.err);
    s_check_text (&run.out);
    s_check_text (&run.err);
    s_check_outputs (&run);
    cg_wire_destroy (&wire);
    cg_run_clear (&run);
    return 0;
}
