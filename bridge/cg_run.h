/*  cg_run — what one execution produced: bounded output buffers, the run record, and
    the kernel messages that fill it (iopub output, the execute_reply, input requests). */
#ifndef CG_RUN_H
#define CG_RUN_H

#include "bridge/cg_wire.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*  A growing text buffer that keeps at most MAX bytes: everything while it fits, then
    the first MAX/2 bytes and the last MAX - MAX/2, counting what it dropped between. */
typedef struct {
    char *data; /* NUL-terminated: the kept bytes (after cg_text_finish) */
    size_t len;
    size_t max;
    size_t dropped;       /* bytes dropped between the head and the tail */
    size_t dropped_chars; /* the same in UTF-8 characters */
    size_t cut;           /* where in DATA the dropped bytes were (valid when dropped) */
    char *tail;           /* while over MAX: the newest bytes, NULL before */
    size_t tail_len;
} cg_text_t;

/*  Appends LEN bytes of DATA, keeping what fits as described above. */
void cg_text_append (cg_text_t *text, const char *data, size_t len);

/*  Joins the kept head and tail in DATA (after a run, before reading DATA). */
void cg_text_finish (cg_text_t *text);

/*  Told of output as it arrives: STREAM is "stdout", "stderr" or "display" (TEXT then
    names the display's MIME types); TEXT is LEN bytes, not NUL-terminated. */
typedef void (cg_output_fn) (void *arg, const char *stream, const char *text, size_t len);

/*  What one execution produced. */
typedef struct {
    cg_text_t out;        /* stream stdout */
    cg_text_t err;        /* stream stderr, plus the traceback of an error */
    json_t *outputs;      /* [{type, data, metadata}] display_data/execute_result/... */
    json_t *return_value; /* the execute_result's data, or NULL */
    char *reply_status;   /* execute_reply status: "ok", "error", "aborted", or NULL */
    char *ename;          /* exception name when reply_status is "error" */
    char *evalue;
    int execution_count;
    bool timed_out;       /* the deadline passed and the kernel was interrupted */
    bool cancelled;       /* a cancel arrived and the kernel was interrupted */
    bool stdin_exhausted; /* input() asked for more lines than stdin had */
    size_t display_bytes; /* display data held so far */
    size_t display_max;   /* the budget for it; past it outputs are dropped and counted */
    size_t displays_dropped, display_bytes_dropped;
    size_t messages_refused; /* iopub messages over the size limit, refused by libzmq */
    bool started;            /* the kernel said anything about this request: it took it */
    int64_t started_us, ended_us;
    cg_output_fn *on_output; /* live output, or NULL */
    void *on_output_arg;
    //  When the cell's stdin is used up and it asks for more (input(), getpass): ask the
    //  user for the line (the answer comes back through the control callback as
    //  CG_CONTROL_INPUT); NULL: answer EOF at once.
    void (*ask) (void *arg, const char *prompt, bool password);
    void *ask_arg;
} cg_run_t;

/*  Sets up RUN, empty, keeping at most MAX_OUTPUT bytes per stream and display data
    without a budget (display_max SIZE_MAX). Free with cg_run_clear. */
void cg_run_init (cg_run_t *run, size_t max_output);

/*  Frees what RUN holds and zeroes it. */
void cg_run_clear (cg_run_t *run);

/*  Empties RUN for another try of the same request, keeping its limits, live output and
    ask callback. */
void cg_run_reset (cg_run_t *run);

/*  What cg_run_feed keeps between the messages of one execution. */
typedef struct {
    const char *stdin_next; /* the rest of the cell's stdin (borrowed), NULL when none */
    bool idle;              /* status idle arrived */
    bool replied;           /* execute_reply arrived */
    int64_t replied_us;     /* when it did (cg_now_us clock) */
    bool clear_pending;     /* clear_output(wait=True) arrived; the next output clears */
    json_t *asking;         /* the header of the input request the user was asked to answer
                               (RUN's ask), owned; NULL when none waits */
} cg_feed_t;

/*  Applies MSG (borrowed; untrusted content, already verified and parented to the
    running cell) as it arrived on CHANNEL ("iopub", "shell" or "stdin"; others are
    ignored) to RUN and FEED. For an input_request, returns the value to answer it with:
    the next line of FEED's stdin, or "\x04" (EOF: ipykernel raises EOFError) once that
    is exhausted; the caller owns it and sends it as the input_reply. Returns NULL for
    every other message. cg_kernel_execute applies every message of a cell through here;
    the fuzz targets (tests/fuzz) drive it as a compromised kernel would. */
char *cg_run_feed (cg_run_t *run, cg_feed_t *feed, const char *channel, cg_msg_t *msg);

#endif
