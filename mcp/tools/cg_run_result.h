/*  cg_run_result — the one place a run's result takes the seeds' shape: the
    structuredContent of a run (seeds 001-004's field names) from a cg_outcome_t, the
    tools/call result with its content blocks, seed 001's status names, and the results
    of runs refused before they started. */
#ifndef CG_RUN_RESULT_H
#define CG_RUN_RESULT_H

#include "mcp/tools/cg_files.h"
#include "bridge/cg_outcome.h"

#include <jansson.h>

/*  Returns the structuredContent of the run OUTCOME (borrowed) came from: stdout,
    stderr, exit_code, status (success, execution_error, timeout, setup_error),
    error_code, error_message, execution_time, duration_ms, execution_id, session_id,
    language, outputs, success, timed_out, kernel_restarted, cancelled,
    stdout_truncated, stderr_truncated; when it ran also stdout_file/stderr_file,
    return_value, returnValue, execution_count, executionTimeMs, artifacts, files,
    artifacts_created/_modified/_deleted, memoryUsedMB; notice when there is one; then
    the download URLs of FILES' session (cg_files_add_urls; none when FILES is NULL),
    truncated, artifacts ([] when it did not run) and run_id when RUN_ID is not NULL.
    The result holds OUTCOME's workspace lists and artifacts themselves, not copies: once
    the result is changed, they are changed in OUTCOME too. The outputs and the return
    value are copies (the answer takes their images out; the run observers, told after
    the answer, read OUTCOME's). Caller owns the result. */
json_t *cg_run_result_structured (const cg_outcome_t *outcome, const cg_files_t *files,
                                  const char *run_id);

/*  How many image bytes a result may carry inline, and whether the client takes
    resource_link blocks. */
typedef struct {
    size_t budget; /* decoded bytes of image blocks per result */
    bool links;
    const json_t *previews; /* the run's previews (cg_preview_plan, made off the main
                               loop; borrowed), or NULL: none */
} cg_run_images_t;

/*  Turns a run's structuredContent STRUCTURED (stolen) into a tools/call result: one
    text block (the output, the result's value, what was cut and where the whole text
    is, the files made, the error and the notice), an image block per PNG or JPEG
    output (each output then names its block, cg_result_link_output),
    structuredContent, isError. With IMAGES (NULL: no limit), images go inline in order
    while they fit its budget; each one past it is sent as the smaller preview IMAGES'
    previews hold for it when that fits what is left (its output gets "preview":
    {mime_type, width, height, size_bytes} and content_index names the preview's block),
    or as nothing (the text says why: no preview could be made, or none fits), followed
    by a resource_link to the saved file (a text line naming it when the client takes no
    links or it has no URL). An artifact with a preview in IMAGES' previews (a display
    saved as a file for its size) gets an image block the same way. Nothing is decoded
    here. No image is sent twice. Caller owns the result. */
json_t *cg_run_result_call (json_t *structured, const cg_run_images_t *images);

/*  Rewrites a run result's status in seed 001's terms: completed, timeout,
    error_runtime, error_setup. STRUCTURED is borrowed and changed in place; without a
    status it is left alone. */
void cg_run_result_seed001_status (json_t *structured);

/*  Returns a tools/call result for a running tool (execute_code, run_python,
    send_to_session) that was refused before it started: the run result of a setup
    failure for LANGUAGE and SESSION_ID (may be NULL) with a new execution_id, error_code
    ERROR in capitals and error_message MESSAGE, plus seed 004's {error, message}.
    Caller owns it. */
json_t *cg_run_result_refused (const char *language, const char *session_id, const char *error,
                               const char *message);

/*  Returns a tools/call result for a running tool called with arguments it cannot use:
    the run result of a setup failure for LANGUAGE (may be NULL) with a new execution_id,
    ERROR_CODE (INVALID_PARAMS, UNSUPPORTED_LANGUAGE) and MESSAGE. Caller owns it. */
json_t *cg_run_result_invalid (const char *language, const char *error_code, const char *message);

#endif
