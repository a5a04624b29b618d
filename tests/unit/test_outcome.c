/*  Unit tests: a run's outcome (cg_outcome) as the seeds' result (cg_run_result) — the
    structuredContent fields, the content blocks, seed 001's status names, and the
    results of runs refused before they started. */
#include "bridge/cg_outcome.h"
#include "base/cg_util.h"
#include "mcp/tools/cg_run_result.h"
#include "cg_test.h"

#include <string.h>

static const char *
s_str (json_t *object, const char *key)
{
    return json_string_value (json_object_get (object, key));
}

static bool
s_is (json_t *object, const char *key, const char *expected)
{
    const char *value = s_str (object, key);
    return value && strcmp (value, expected) == 0;
}

static json_int_t
s_int (json_t *object, const char *key)
{
    return json_integer_value (json_object_get (object, key));
}

static const char *
s_text_block (json_t *result)
{
    return s_str (json_array_get (json_object_get (result, "content"), 0), "text");
}

//  An outcome that ran in session "s1": its workspace lists empty, 2.5 ms long.
static cg_outcome_t *
s_ran (const char *language)
{
    cg_outcome_t *outcome = cg_outcome_new (language, "exec_0123456789ab", "s1");
    outcome->ran = true;
    outcome->duration_us = 2500;
    outcome->created = json_array ();
    outcome->modified = json_array ();
    outcome->deleted = json_array ();
    outcome->artifacts = json_array ();
    outcome->files = json_object ();
    return outcome;
}

//  The seeds' base fields, in the order every run result has them.
static void
s_base_order (void)
{
    const char *name = "the base fields come in order";
    static const char *keys[] = {"stdout",
                                 "stderr",
                                 "exit_code",
                                 "status",
                                 "error_code",
                                 "error_message",
                                 "execution_time",
                                 "duration_ms",
                                 "execution_id",
                                 "session_id",
                                 "language",
                                 "outputs",
                                 "success",
                                 "timed_out",
                                 "kernel_restarted",
                                 "cancelled",
                                 "stdout_truncated",
                                 "stderr_truncated",
                                 NULL};
    cg_outcome_t *outcome = s_ran ("python");
    json_t *structured = cg_run_result_structured (outcome, NULL, NULL);
    void *iter = json_object_iter (structured);
    for (int i = 0; keys[i]; i++, iter = json_object_iter_next (structured, iter))
        CHECK (iter && strcmp (json_object_iter_key (iter), keys[i]) == 0, "key %d is %s, not %s",
               i, iter ? json_object_iter_key (iter) : "(none)", keys[i]);
    json_decref (structured);
    cg_outcome_destroy (&outcome);
    s_passes++;
}

static void
s_success (void)
{
    const char *name = "a run that printed and returned a value";
    cg_outcome_t *outcome = s_ran ("python");
    cg_outcome_stream_set (&outcome->out, "hi\n", 3);
    json_t *data = json_pack ("{s:s, s:i}", "text/plain", "3", "application/json", 3);
    json_array_append_new (
        outcome->outputs,
        json_pack ("{s:s, s:O, s:{}}", "type", "execute_result", "data", data, "metadata"));
    outcome->return_value = data;
    outcome->execution_count = 4;
    outcome->memory_known = true;
    outcome->memory_peak_mb = 41.26;
    json_array_append_new (outcome->created, json_string ("a.txt"));
    json_object_set_new (outcome->files, "a.txt", json_string ("x"));
    json_t *structured = cg_run_result_structured (outcome, NULL, "run_1");
    cg_outcome_destroy (&outcome);
    CHECK (s_is (structured, "stdout", "hi\n") && s_is (structured, "stderr", ""), "streams");
    CHECK (s_is (structured, "status", "success")
               && json_is_true (json_object_get (structured, "success")),
           "status");
    CHECK (s_int (structured, "exit_code") == 0
               && json_is_null (json_object_get (structured, "error_code"))
               && json_is_null (json_object_get (structured, "error_message")),
           "no error");
    CHECK (s_is (structured, "execution_id", "exec_0123456789ab")
               && s_is (structured, "session_id", "s1") && s_is (structured, "language", "python")
               && s_is (structured, "run_id", "run_1"),
           "echoes");
    CHECK (json_real_value (json_object_get (structured, "execution_time")) == 0.0025
               && s_int (structured, "duration_ms") == 2
               && s_int (structured, "executionTimeMs") == 2,
           "times");
    CHECK (s_int (structured, "execution_count") == 4, "execution_count");
    CHECK (s_int (json_object_get (structured, "return_value"), "application/json") == 3
               && json_integer_value (json_object_get (structured, "returnValue")) == 3,
           "return value");
    CHECK (json_object_get (structured, "return_value") != data, "the return value is a copy");
    CHECK (json_is_false (json_object_get (structured, "truncated"))
               && !json_object_get (structured, "stdout_file"),
           "not truncated");
    CHECK (json_array_size (json_object_get (structured, "artifacts_created")) == 1
               && s_is (json_object_get (structured, "files"), "a.txt", "x")
               && json_is_array (json_object_get (structured, "artifacts_deleted")),
           "workspace");
    CHECK (json_real_value (json_object_get (structured, "memoryUsedMB")) == 41.3, "memoryUsedMB");
    CHECK (!json_object_get (structured, "notice"), "no notice");
    json_t *result = cg_run_result_call (structured, NULL);
    CHECK (s_is (json_array_get (json_object_get (result, "content"), 0), "type", "text")
               && strcmp (s_text_block (result), "hi\n\n[result]\n3") == 0,
           "text block: %s", s_text_block (result));
    CHECK (json_is_false (json_object_get (result, "isError")), "isError");
    cg_run_result_seed001_status (json_object_get (result, "structuredContent"));
    CHECK (s_is (json_object_get (result, "structuredContent"), "status", "completed"),
           "seed 001 status");
    json_decref (result);
    s_passes++;
}

static void
s_runtime_error (void)
{
    const char *name = "a run that raised";
    cg_outcome_t *outcome = s_ran ("python");
    cg_outcome_stream_set (&outcome->err, "Traceback\nZeroDivisionError: division by zero\n", 46);
    cg_outcome_fail (outcome, CG_OUTCOME_RUNTIME_ERROR, 1, CG_OUTCOME_ERROR_RUNTIME,
                     "ZeroDivisionError: division by zero");
    json_t *result = cg_run_result_call (cg_run_result_structured (outcome, NULL, NULL), NULL);
    cg_outcome_destroy (&outcome);
    json_t *structured = json_object_get (result, "structuredContent");
    CHECK (s_is (structured, "status", "execution_error") && s_int (structured, "exit_code") == 1
               && s_is (structured, "error_code", "RUNTIME_ERROR")
               && s_is (structured, "error_message", "ZeroDivisionError: division by zero")
               && json_is_false (json_object_get (structured, "success")),
           "failure fields");
    CHECK (!json_object_get (structured, "run_id") && !json_object_get (structured, "return_value")
               && !json_object_get (structured, "execution_count"),
           "absent fields");
    CHECK (strcmp (s_text_block (result),
                   "[stderr]\nTraceback\nZeroDivisionError: division by zero\n\n"
                   "[execution_error]")
               == 0,
           "text block: %s", s_text_block (result));
    CHECK (json_is_true (json_object_get (result, "isError")), "isError");
    cg_run_result_seed001_status (structured);
    CHECK (s_is (structured, "status", "error_runtime"), "seed 001 status");
    json_decref (result);
    s_passes++;
}

static void
s_timeout (void)
{
    const char *name = "a run that timed out, then one cancelled";
    cg_outcome_t *outcome = s_ran ("bash");
    cg_outcome_stream_set (&outcome->out, "tick", 4);
    cg_outcome_fail (outcome, CG_OUTCOME_TIMEOUT, -1, CG_OUTCOME_ERROR_TIMEOUT,
                     "Execution timed out after 1 seconds.");
    cg_outcome_stream_append_line (&outcome->err, "Execution timed out after 1 seconds.");
    outcome->timed_out = true;
    outcome->kernel_restarted = true;
    cg_outcome_add_notice (outcome, "One.");
    cg_outcome_add_notice (outcome, "Two.");
    json_t *result = cg_run_result_call (cg_run_result_structured (outcome, NULL, NULL), NULL);
    json_t *structured = json_object_get (result, "structuredContent");
    CHECK (s_is (structured, "status", "timeout") && s_int (structured, "exit_code") == -1
               && s_is (structured, "error_code", "EXECUTION_TIMEOUT")
               && s_is (structured, "stderr", "Execution timed out after 1 seconds.")
               && json_is_true (json_object_get (structured, "timed_out"))
               && json_is_true (json_object_get (structured, "kernel_restarted"))
               && s_is (structured, "notice", "One. Two."),
           "timeout fields");
    CHECK (strcmp (s_text_block (result), "tick\n[stderr]\nExecution timed out after 1 seconds.\n"
                                          "[timeout]\n[notice] One. Two.")
               == 0,
           "text block: %s", s_text_block (result));
    cg_run_result_seed001_status (structured);
    CHECK (s_is (structured, "status", "timeout"), "seed 001 status");
    json_decref (result);

    cg_outcome_fail (outcome, CG_OUTCOME_CANCELLED, 130, CG_OUTCOME_ERROR_RUNTIME,
                     "Execution was cancelled.");
    outcome->timed_out = false;
    outcome->cancelled = true;
    structured = cg_run_result_structured (outcome, NULL, NULL);
    cg_outcome_destroy (&outcome);
    CHECK (s_is (structured, "status", "execution_error") && s_int (structured, "exit_code") == 130
               && s_is (structured, "error_code", "RUNTIME_ERROR")
               && json_is_true (json_object_get (structured, "cancelled")),
           "cancel fields");
    cg_run_result_seed001_status (structured);
    CHECK (s_is (structured, "status", "error_runtime"), "seed 001 status of a cancel");
    json_decref (structured);
    s_passes++;
}

static void
s_setup_failure (void)
{
    const char *name = "a run that never started";
    cg_outcome_t *outcome =
        cg_outcome_setup_failure ("javascript", "exec_aaaaaaaaaaaa", NULL, CG_OUTCOME_ERROR_SANDBOX,
                                  "start kernel javascript: no such container");
    json_t *result = cg_run_result_call (cg_run_result_structured (outcome, NULL, NULL), NULL);
    cg_outcome_destroy (&outcome);
    json_t *structured = json_object_get (result, "structuredContent");
    CHECK (s_is (structured, "status", "setup_error") && s_int (structured, "exit_code") == -1
               && s_is (structured, "error_code", "SANDBOX_SETUP_FAILED")
               && json_is_null (json_object_get (structured, "session_id")),
           "failure fields");
    CHECK (json_real_value (json_object_get (structured, "execution_time")) == 0.0
               && s_int (structured, "duration_ms") == 0
               && !json_object_get (structured, "executionTimeMs")
               && !json_object_get (structured, "files")
               && !json_object_get (structured, "memoryUsedMB"),
           "nothing of a run");
    CHECK (json_array_size (json_object_get (structured, "artifacts")) == 0
               && json_array_size (json_object_get (structured, "outputs")) == 0
               && json_is_false (json_object_get (structured, "truncated")),
           "empty lists");
    CHECK (
        strcmp (s_text_block (result), "[setup_error] start kernel javascript: no such container")
            == 0,
        "text block: %s", s_text_block (result));
    cg_run_result_seed001_status (structured);
    CHECK (s_is (structured, "status", "error_setup"), "seed 001 status");
    json_decref (result);

    outcome =
        cg_outcome_setup_failure ("python", "exec_aaaaaaaaaaaa", "s1",
                                  CG_OUTCOME_ERROR_INVALID_PARAMS, "files: x: not valid base64");
    structured = cg_run_result_structured (outcome, NULL, NULL);
    cg_outcome_destroy (&outcome);
    CHECK (s_is (structured, "error_code", "INVALID_PARAMS"), "invalid files");
    json_decref (structured);
    s_passes++;
}

static void
s_full_text (void)
{
    const char *name = "the full text for the log: capped at a character, cleaned, appended to";
    cg_outcome_t *outcome = s_ran ("python");
    cg_outcome_stream_set_full (&outcome->out,
                                "ab\xc3\xa9"
                                "cd",
                                6, 64, false);
    CHECK (outcome->out.full_len == 6
               && strcmp (outcome->out.full, "ab\xc3\xa9"
                                             "cd")
                      == 0
               && !outcome->out.full_cut,
           "whole under the cap");
    cg_outcome_stream_set_full (&outcome->out,
                                "ab\xc3\xa9"
                                "cd",
                                6, 3, false);
    CHECK (outcome->out.full_len == 2 && strcmp (outcome->out.full, "ab") == 0
               && outcome->out.full_cut,
           "cut before the character the cap splits: %s", outcome->out.full);
    cg_outcome_stream_set_full (&outcome->err, "x\xff\0y", 4, 64, true);
    CHECK (strcmp (outcome->err.full, "x\xef\xbf\xbd\xef\xbf\xbd"
                                      "y")
                   == 0
               && outcome->err.full_cut,
           "cleaned, and cut when the kept text was: %s", outcome->err.full);
    cg_outcome_stream_append_line (&outcome->err, "timed out");
    CHECK (strcmp (outcome->err.full, "x\xef\xbf\xbd\xef\xbf\xbd"
                                      "y\ntimed out")
                   == 0
               && outcome->err.full_len == strlen (outcome->err.full),
           "a line appended to the full text too: %s", outcome->err.full);
    cg_outcome_destroy (&outcome);
    s_passes++;
}

static void
s_truncated (void)
{
    const char *name = "streams cut, with and without their whole text saved";
    cg_outcome_t *outcome = s_ran ("python");
    cg_outcome_stream_set (&outcome->out, "head\n...\ntail\n", 14);
    outcome->out.truncated = true;
    outcome->out.file = cg_xstrdup ("/mnt/data/outputs/exec_0123456789ab-stdout.txt");
    cg_outcome_stream_set (&outcome->err, "bad \xff byte\0x", 12);
    json_t *structured = cg_run_result_structured (outcome, NULL, NULL);
    CHECK (json_is_true (json_object_get (structured, "stdout_truncated"))
               && json_is_false (json_object_get (structured, "stderr_truncated"))
               && json_is_true (json_object_get (structured, "truncated"))
               && s_is (structured, "stdout_file", "/mnt/data/outputs/exec_0123456789ab-stdout.txt")
               && !json_object_get (structured, "stderr_file"),
           "truncation fields");
    CHECK (s_is (structured, "stderr", "bad \xef\xbf\xbd byte\xef\xbf\xbdx"), "stderr cleaned: %s",
           s_str (structured, "stderr"));
    json_t *result = cg_run_result_call (structured, NULL);
    CHECK (strstr (s_text_block (result), "\n[stdout was cut; the whole text is in "
                                          "/mnt/data/outputs/exec_0123456789ab-stdout.txt]"),
           "text block: %s", s_text_block (result));
    json_decref (result);
    free (outcome->session_id);
    outcome->session_id = NULL;
    free (outcome->out.file);
    outcome->out.file = NULL;
    result = cg_run_result_call (cg_run_result_structured (outcome, NULL, NULL), NULL);
    cg_outcome_destroy (&outcome);
    CHECK (strstr (s_text_block (result),
                   "\n[stdout was cut; run with a session_id to keep the whole text as a file]"),
           "one-shot text block: %s", s_text_block (result));
    json_decref (result);
    s_passes++;
}

static void
s_image (void)
{
    const char *name = "an image value goes in its own block, once";
    cg_outcome_t *outcome = s_ran ("python");
    json_t *data = json_pack ("{s:s, s:s}", "image/png", "iVBORw0KGgo=", "text/plain", "<Figure>");
    json_array_append_new (
        outcome->outputs,
        json_pack ("{s:s, s:O, s:{}}", "type", "execute_result", "data", data, "metadata"));
    outcome->return_value = data;
    json_t *result = cg_run_result_call (cg_run_result_structured (outcome, NULL, NULL), NULL);
    cg_outcome_destroy (&outcome);
    json_t *content = json_object_get (result, "content");
    json_t *structured = json_object_get (result, "structuredContent");
    json_t *item = json_array_get (json_object_get (structured, "outputs"), 0);
    CHECK (json_array_size (content) == 2 && s_is (json_array_get (content, 1), "type", "image")
               && s_is (json_array_get (content, 1), "data", "iVBORw0KGgo="),
           "image block");
    CHECK (!json_object_get (json_object_get (structured, "return_value"), "image/png")
               && s_is (json_object_get (structured, "return_value"), "text/plain", "<Figure>"),
           "return_value");
    CHECK (!json_object_get (json_object_get (item, "data"), "image/png")
               && s_int (item, "content_index") == 1 && s_int (item, "size_bytes") == 8,
           "output names its block");
    json_decref (result);
    s_passes++;
}

static void
s_refused (void)
{
    const char *name = "runs refused before they started";
    json_t *result = cg_run_result_refused ("python", "s1", "session_busy", "The session is busy.");
    json_t *structured = json_object_get (result, "structuredContent");
    CHECK (s_is (structured, "status", "setup_error")
               && s_is (structured, "error_code", "SESSION_BUSY")
               && s_is (structured, "error_message", "The session is busy.")
               && s_is (structured, "error", "session_busy")
               && s_is (structured, "message", "The session is busy.")
               && s_is (structured, "session_id", "s1") && s_is (structured, "language", "python"),
           "fields");
    const char *id = s_str (structured, "execution_id");
    CHECK (id && strlen (id) == 17 && strncmp (id, "exec_", 5) == 0, "execution_id %s",
           id ? id : "(none)");
    CHECK (!json_object_get (structured, "truncated") && !json_object_get (structured, "artifacts")
               && !json_object_get (structured, "executionTimeMs"),
           "no run fields");
    CHECK (json_is_true (json_object_get (result, "isError"))
               && strcmp (s_text_block (result), "[setup_error] The session is busy.") == 0,
           "content");
    cg_run_result_seed001_status (structured);
    CHECK (s_is (structured, "status", "error_setup"), "seed 001 status");
    json_decref (result);

    result =
        cg_run_result_invalid (NULL, "UNSUPPORTED_LANGUAGE", "language 'cobol' is not supported");
    structured = json_object_get (result, "structuredContent");
    CHECK (s_is (structured, "error_code", "UNSUPPORTED_LANGUAGE")
               && s_is (structured, "language", "")
               && json_is_null (json_object_get (structured, "session_id"))
               && !json_object_get (structured, "error"),
           "invalid arguments");
    json_decref (result);
    s_passes++;
}

int
main (void)
{
    s_base_order ();
    s_success ();
    s_runtime_error ();
    s_timeout ();
    s_setup_failure ();
    s_truncated ();
    s_full_text ();
    s_image ();
    s_refused ();
    printf ("%d passed, %d failed\n", s_passes, s_failures);
    return s_failures ? 1 : 0;
}
