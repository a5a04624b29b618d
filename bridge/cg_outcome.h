/*  cg_outcome — what one run came to, in C values: how it ended, what it printed and
    displayed, and what it did to the workspace. It names no protocol's fields; mcp/
    (cg_run_result) gives it the seeds' shape. */
#ifndef CG_OUTCOME_H
#define CG_OUTCOME_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*  How a run ended. */
typedef enum {
    CG_OUTCOME_OK,            /* the code ran and finished without an error */
    CG_OUTCOME_RUNTIME_ERROR, /* the code raised or exited non-zero, or the kernel died under it */
    CG_OUTCOME_TIMEOUT,       /* the deadline passed and the code was stopped */
    CG_OUTCOME_CANCELLED,     /* a cancel stopped the code */
    CG_OUTCOME_SETUP_FAILURE, /* the code did not run, or the sandbox could not be made whole after it */
} cg_outcome_end_t;

/*  What went wrong, when a run did not end OK. Independent of the end: a timeout whose
    kernel could not be restarted ends in SETUP_FAILURE with the error TIMEOUT. */
typedef enum {
    CG_OUTCOME_ERROR_NONE,
    CG_OUTCOME_ERROR_RUNTIME,        /* the code failed, was cancelled, or the kernel died */
    CG_OUTCOME_ERROR_TIMEOUT,        /* the deadline passed */
    CG_OUTCOME_ERROR_SANDBOX,        /* the sandbox or its kernel could not be started or reached */
    CG_OUTCOME_ERROR_INVALID_PARAMS, /* the request's input (its files) could not be used */
} cg_outcome_error_t;

/*  One output stream as a result carries it. */
typedef struct {
    char *text; /* valid UTF-8 without NUL, LEN bytes, NUL-terminated; "" when none */
    size_t len;
    bool truncated; /* TEXT is the head and tail of a longer output */
    char *file;     /* the sandbox path (/mnt/data/...) of the whole output, or NULL */
    char *full;     /* when TRUNCATED and the log wants it: the output as kept, cleaned as
                       TEXT is, from at most a cap's bytes (cg_outcome_stream_set_full) */
    size_t full_len;
    bool full_cut; /* FULL is not the whole output: the cap or the kept limit cut it */
} cg_outcome_stream_t;

typedef struct {
    //  The request, echoed.
    char *language;
    char *execution_id;
    char *session_id; /* NULL for a one-shot sandbox */
    //  How it ended.
    cg_outcome_end_t end;
    cg_outcome_error_t error;
    char *message; /* what went wrong, for the user; NULL when nothing did */
    int exit_code;
    bool timed_out;
    bool cancelled;
    bool kernel_restarted;
    char *notice; /* sentences for the model about what happened besides the
                                   output (a kernel restarted, outputs dropped), or NULL */
    //  What it produced. Before a run (a setup failure) only the empty streams and outputs.
    bool ran; /* the code was given to a kernel or shell: the timing, the
                                   execution count, the files and the workspace diff are set */
    cg_outcome_stream_t out;
    cg_outcome_stream_t err;
    json_t *egress;       /* --egress proxy: the session's requests since its last run
                             (cg_egress_take), or NULL */
    json_t *outputs;      /* the Jupyter outputs [{type, data, metadata, display_id?,
                                   path?}] in order; never NULL */
    json_t *return_value; /* the execute_result's MIME bundle (the same object as that
                                   output's data), or NULL */
    int execution_count;  /* 0 when the kernel gave none */
    int64_t duration_us;
    //  What it did to the workspace, when it ran (NULL otherwise).
    json_t *created; /* workspace-relative names, as cg_workspace_diff gives them */
    json_t *modified;
    json_t *deleted;
    json_t *artifacts; /* cg_artifacts_from_diff's list of created and modified files */
    json_t *files;     /* {name: text}: the small text files it created or modified */
    bool memory_known;
    double memory_peak_mb; /* the sandbox's peak memory, when MEMORY_KNOWN */
    //  Made off the main loop for the result (cg_preview_plan), or NULL.
    json_t *previews; /* previews of the images past the result's image budget */
    char *kept_dir;   /* a one-shot run's files, copied out of its sandbox before it went
                         (cg_kept), or NULL */
    size_t kept_bytes;
} cg_outcome_t;

/*  Returns a new outcome for a request in LANGUAGE with EXECUTION_ID and SESSION_ID (all
    copied; SESSION_ID may be NULL): ended OK, exit code 0, not run, empty streams and
    outputs. Caller owns it. */
cg_outcome_t *cg_outcome_new (const char *language, const char *execution_id,
                              const char *session_id);

/*  Returns a new outcome for a request that never ran (as cg_outcome_new) ended in
    SETUP_FAILURE with exit code -1, ERROR and MESSAGE (copied). Caller owns it. */
cg_outcome_t *cg_outcome_setup_failure (const char *language, const char *execution_id,
                                        const char *session_id, cg_outcome_error_t error,
                                        const char *message);

/*  Frees the outcome and the references it holds; sets *self_p to NULL. */
void cg_outcome_destroy (cg_outcome_t **self_p);

/*  Records that the run failed: END, EXIT_CODE, ERROR and MESSAGE (copied; may be NULL),
    replacing what was recorded before. */
void cg_outcome_fail (cg_outcome_t *self, cg_outcome_end_t end, int exit_code,
                      cg_outcome_error_t error, const char *message);

/*  Appends TEXT to the notice, after a space when there is one already. */
void cg_outcome_add_notice (cg_outcome_t *self, const char *text);

/*  Sets STREAM's text to the LEN bytes at DATA, untrusted: every valid UTF-8 character is
    kept, and only what JSON text cannot carry (invalid UTF-8, NUL) becomes U+FFFD. */
void cg_outcome_stream_set (cg_outcome_stream_t *stream, const char *data, size_t len);

/*  Sets STREAM's full text (for the execution log) to the LEN bytes at DATA, untrusted,
    cleaned as cg_outcome_stream_set does: all of them when LEN is at most CAP, else the
    first CAP at most, ending before a character CAP would split, and FULL_CUT set. CUT
    also sets FULL_CUT (DATA is itself short of the whole output). */
void cg_outcome_stream_set_full (cg_outcome_stream_t *stream, const char *data, size_t len,
                                 size_t cap, bool cut);

/*  Appends TEXT (valid UTF-8) to STREAM on a line of its own (to its full text too, when
    it has one). */
void cg_outcome_stream_append_line (cg_outcome_stream_t *stream, const char *text);

#endif
