/*  cg_tools_files — the file tools: upload_file, read_artifact, list_artifacts (the work
    on the workspace is cg_files'); an upload's decoding and writing and a read's reading
    and encoding run on the files worker, a notebook's export on the store worker, off the
    loop. */
#include "mcp/tools/cg_files.h"
#include "mcp/tools/cg_tools.h"
#include "artifacts/cg_notebook.h"
#include "artifacts/cg_wsfs.h"
#include "base/cg_kernels.h"
#include "base/cg_util.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

static const char *s_no_workspace =
    "the session's workspace could not be created; see the server log";

static cg_files_t
s_files (const cg_request_t *req, cg_registry_session_t *session)
{
    return cg_files_of (cg_server_config (req->server), cg_server_http (req->server), session);
}

//  Finds the existing session that a file tool's ARGUMENTS name. Returns it, or NULL
//  with *refusal set to the error result.
static cg_registry_session_t *
s_file_session (const cg_request_t *req, json_t *arguments, json_t **refusal)
{
    json_t *session_id = json_object_get (arguments, "session_id");
    cg_registry_session_t *session = NULL;
    if (!json_is_string (session_id))
        *refusal =
            cg_tools_error_object ("invalid_params", "'session_id' is a required string", NULL);
    else if (!cg_tools_valid_session_id (json_string_value (session_id)))
        *refusal = cg_tools_error_object ("invalid_params", CG_SESSION_ID_RULE, NULL);
    else if (!(session = cg_registry_find (cg_server_registry (req->server), req->client->id,
                                           json_string_value (session_id)))) {
        cleanup_free char *message =
            cg_strdupf ("No active session with id %s", json_string_value (session_id));
        *refusal =
            cg_tools_error_object ("session_not_found", message, json_string_value (session_id));
    }
    else if (!session->ws) {
        *refusal = cg_tools_error_object ("sandbox_setup_failed", s_no_workspace, session->id);
        session = NULL;
    }
    return session;
}

//  read_artifact (READ) or list_artifacts on an existing session's workspace.
static void
s_file_tool (const cg_request_t *req, json_t *arguments, bool read)
{
    json_t *result = NULL;
    cg_registry_session_t *session = s_file_session (req, arguments, &result);
    if (session) {
        cg_files_t files = s_files (req, session);
        result = read ? cg_files_read (&files, arguments) : cg_files_list (&files);
        cg_registry_touch (session);
    }
    cg_request_result (req, result);
}

//  upload_file's and read_artifact's work on the files worker: cg_files' own, on a
//  workspace handle of the job's (opened from the host directory, as export_notebook's),
//  the session found again on the loop for what is the registry's.
typedef struct {
    cg_tool_job_t job;
    const cg_config_t *config; /* the server's, read only */
    cg_http_t *http;           /* for download URLs: its base URL is fixed at start */
    char *workspace;           /* the workspace's host directory */
    char *owner, *session_id, *token;
    json_t *arguments; /* the call's (a reference; nothing changes them) */
    char *rel;         /* upload_file: the file, checked (cg_files_upload_check) */
    bool made;         /* upload_file: the session was made for this call, unnamed */
} s_file_job_t;

static void
s_file_job_free (cg_tool_job_t *job)
{
    s_file_job_t *self = (s_file_job_t *)job;
    free (self->workspace);
    free (self->owner);
    free (self->session_id);
    free (self->token);
    free (self->rel);
    json_decref (self->arguments);
}

//  On the worker: the upload written (REL set) or the file read.
static void
s_file_job_run (cg_tool_job_t *job)
{
    s_file_job_t *self = (s_file_job_t *)job;
    cg_error_t *err = NULL;
    cg_workspace_t *ws = cg_workspace_open (self->workspace, &err);
    if (!ws) {
        job->result = cg_tools_error_object ("sandbox_setup_failed", cg_error_message (err),
                                             self->session_id);
        cg_error_destroy (&err);
        return;
    }
    cg_files_t files = {.config = self->config,
                        .ws = ws,
                        .session_id = self->session_id,
                        .token = self->token,
                        .http = self->http};
    job->result = self->rel ? cg_files_upload (&files, self->arguments, self->rel)
                            : cg_files_read (&files, self->arguments);
    cg_workspace_destroy (&ws);
}

//  Forgets the session SESSION that an upload_file without session_id made for a call
//  that failed: it holds a sandbox slot, and RESULT does not give its id out.
static void
s_unmake (cg_server_t *server, cg_registry_session_t *session, json_t *result)
{
    cg_registry_retire (cg_server_registry (server), session);
    json_object_del (json_object_get (result, "structuredContent"), "session_id");
}

//  Adds SESSION's notice (cg_registry_take_notice), if it has one, to RESULT: as its
//  structured notice and a line of its text.
static void
s_notice (json_t *result, cg_registry_session_t *session)
{
    cleanup_free char *notice = cg_registry_take_notice (session);
    json_t *text =
        json_object_get (json_array_get (json_object_get (result, "content"), 0), "text");
    if (!notice || !json_is_string (text))
        return;
    json_object_set_new (json_object_get (result, "structuredContent"), "notice",
                         json_string (notice));
    cleanup_free char *joined = cg_strdupf ("%s\n[notice] %s", json_string_value (text), notice);
    json_string_set (text, joined);
}

//  Back on the loop: the session touched, an upload's notice, or the session made for a
//  failed unnamed upload forgotten.
static json_t *
s_file_job_answer (cg_tool_job_t *job, cg_call_t *call)
{
    s_file_job_t *self = (s_file_job_t *)job;
    (void)call;
    cg_registry_session_t *session =
        cg_registry_find (cg_server_registry (job->server), self->owner, self->session_id);
    if (session && self->rel) {
        s_notice (job->result, session);
        if (self->made && json_is_true (json_object_get (job->result, "isError")))
            s_unmake (job->server, session, job->result);
    }
    if (session)
        cg_registry_touch (session);
    return json_incref (job->result);
}

//  Queues SESSION's upload (REL, taken; MADE: the session was made for it) or read.
static void
s_file_job_start (const cg_request_t *req, cg_registry_session_t *session, json_t *arguments,
                  char *rel, bool made)
{
    s_file_job_t *job = cg_xcalloc (1, sizeof *job);
    *job = (s_file_job_t){
        .job = {.run = s_file_job_run, .answer = s_file_job_answer, .free = s_file_job_free},
        .config = cg_server_config (req->server),
        .http = cg_server_http (req->server),
        .workspace = cg_strdupf ("%s/" CG_WSFS_WORKSPACE, session->dir),
        .owner = cg_xstrdup (session->owner),
        .session_id = cg_xstrdup (session->id),
        .token = cg_xstrdup (session->token),
        .arguments = json_incref (arguments),
        .rel = rel,
        .made = made};
    cg_registry_touch (session);
    cg_tools_job_start_on (req, &job->job, cg_server_files_worker (req->server));
}

void
cg_tools_read_artifact (const cg_request_t *req, json_t *arguments)
{
    json_t *result = NULL;
    cg_registry_session_t *session = s_file_session (req, arguments, &result);
    if (session)
        s_file_job_start (req, session, arguments, NULL, false);
    else
        cg_request_result (req, result);
}

void
cg_tools_list_artifacts (const cg_request_t *req, json_t *arguments)
{
    s_file_tool (req, arguments, false);
}

//  The notebook language for export_notebook's ARGUMENTS on SESSION: the one asked for,
//  else the session's own when a kernel runs it, else the first kernel language its runs
//  used, else python. NULL with *refusal set for a language no notebook kernel runs.
static const char *
s_notebook_language (cg_registry_session_t *session, json_t *arguments, json_t **refusal)
{
    const char *asked = json_string_value (json_object_get (arguments, "language"));
    const char *candidates[] = {asked, session->language,
                                session->languages ? zlistx_first (session->languages) : NULL};
    for (size_t c = 0; c < 3; c++) {
        const cg_language_t *l =
            candidates[c] ? cg_kernels_find (cg_kernels (), candidates[c]) : NULL;
        if (l && !l->command)
            return l->name;
        if (c == 0 && asked) {
            cleanup_free char *message = cg_strdupf (
                "'language' must name a kernel (bash has none): %s", cg_tools_language_list ());
            *refusal = cg_tools_error_object ("invalid_params", message, session->id);
            return NULL;
        }
    }
    return "python";
}

//  export_notebook's work, on the store worker: the notebook streamed from the session's
//  record (notebook.jsonl) into its workspace, one cell at a time.
typedef struct {
    cg_tool_job_t job;
    char *record;         /* the session's notebook.jsonl */
    char *workspace;      /* the workspace's host directory */
    char *rel;            /* the notebook's file in it */
    const char *language; /* static */
    char *owner;          /* the session's client and id, to find it again */
    char *session_id;
    uid_t uid;
    gid_t gid;
    size_t line_max;
    size_t bytes, cells, code_cells; /* what was written */
    cg_error_t *err;                 /* why not */
} s_export_t;

static void
s_export_free (cg_tool_job_t *job)
{
    s_export_t *self = (s_export_t *)job;
    free (self->record);
    free (self->workspace);
    free (self->rel);
    free (self->owner);
    free (self->session_id);
    cg_error_destroy (&self->err);
}

//  Writes the notebook into the new file FD (cg_workspace_fill_fn).
static int
s_export_fill (int fd, void *arg)
{
    s_export_t *self = arg;
    //  The record is the server's (its session's host directory), read without a link.
    int in_fd = open (self->record, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (in_fd < 0 && errno == ENOENT)
        in_fd = open ("/dev/null", O_RDONLY | O_CLOEXEC); /* no run yet: no cells */
    FILE *in = in_fd >= 0 ? fdopen (in_fd, "r") : NULL;
    int out_fd = dup (fd);
    FILE *out = out_fd >= 0 ? fdopen (out_fd, "w") : NULL;
    int rc = 0;
    if (!in || !out)
        rc = -(errno ? errno : EIO);
    else if (cg_notebook_write (in, self->language, self->line_max, out, &self->cells,
                                &self->code_cells, &self->err)
             < 0)
        rc = -self->err->code;
    else
        self->bytes = (size_t)ftello (out);
    if (in)
        fclose (in);
    else if (in_fd >= 0)
        close (in_fd);
    if (out && fclose (out) != 0 && rc == 0)
        rc = -errno;
    else if (!out && out_fd >= 0)
        close (out_fd);
    cg_error_destroy (&self->err); /* cg_workspace_write_with says it again */
    return rc;
}

static void
s_export_run (cg_tool_job_t *job)
{
    s_export_t *self = (s_export_t *)job;
    cg_workspace_t *ws = cg_workspace_open (self->workspace, &self->err);
    if (ws)
        cg_workspace_write_with (ws, self->rel, s_export_fill, self, true, self->uid, self->gid,
                                 &self->err);
    cg_workspace_destroy (&ws);
}

static json_t *
s_export_answer (cg_tool_job_t *job, cg_call_t *call)
{
    s_export_t *self = (s_export_t *)job;
    (void)call;
    cg_registry_session_t *session =
        cg_registry_find (cg_server_registry (job->server), self->owner, self->session_id);
    if (!session || !session->ws) {
        cleanup_free char *message =
            cg_strdupf ("Session %s ended while its notebook was exported", self->session_id);
        return cg_tools_error_object ("session_not_found", message, self->session_id);
    }
    cg_files_t files =
        cg_files_of (cg_server_config (job->server), cg_server_http (job->server), session);
    cleanup_free char *text =
        cg_strdupf ("Exported %zu cells of session %s as the notebook %s/%s.", self->code_cells,
                    session->id, CG_WORKSPACE_MOUNT, self->rel);
    bool failed = self->err != NULL;
    json_t *result = cg_files_written (&files, self->rel, self->bytes, &self->err, text);
    if (!failed)
        json_object_update_new (json_object_get (result, "structuredContent"),
                                json_pack ("{s:I, s:s}", "cells", (json_int_t)self->code_cells,
                                           "language", self->language));
    cg_registry_touch (session);
    return result;
}

void
cg_tools_export_notebook (const cg_request_t *req, json_t *arguments)
{
    json_t *result = NULL;
    cg_registry_session_t *session = s_file_session (req, arguments, &result);
    const char *language = session ? s_notebook_language (session, arguments, &result) : NULL;
    json_t *filename = json_object_get (arguments, "filename");
    cleanup_free char *name = json_is_string (filename)
                                  ? cg_xstrdup (json_string_value (filename))
                                  : cg_strdupf ("%s.ipynb", session ? session->id : "notebook");
    size_t len = strlen (name);
    cleanup_free char *with_suffix = len < 6 || strcmp (name + len - 6, ".ipynb") != 0
                                         ? cg_strdupf ("%s.ipynb", name)
                                         : cg_xstrdup (name);
    cg_error_t *err = NULL;
    char *rel = language ? cg_workspace_sanitize_filename (with_suffix, &err) : NULL;
    if (language && !rel) {
        cleanup_free char *message = cg_strdupf ("invalid filename: %s", cg_error_message (err));
        result = cg_tools_error_object ("invalid_filename", message, session->id);
    }
    cg_error_destroy (&err);
    if (!rel) {
        cg_request_result (req, result);
        return;
    }
    const cg_config_t *config = cg_server_config (req->server);
    s_export_t *job = cg_xcalloc (1, sizeof *job);
    *job =
        (s_export_t){.job = {.run = s_export_run, .answer = s_export_answer, .free = s_export_free},
                     .record = cg_strdupf ("%s/%s", session->dir, CG_NOTEBOOK_FILE),
                     .workspace = cg_strdupf ("%s/" CG_WSFS_WORKSPACE, session->dir),
                     .rel = rel,
                     .language = language,
                     .owner = cg_xstrdup (session->owner),
                     .session_id = cg_xstrdup (session->id),
                     .uid = (uid_t)config->sandbox_uid,
                     .gid = (gid_t)config->sandbox_gid,
                     .line_max = config->notebook_max_bytes};
    cg_registry_touch (session);
    cg_tools_job_start (req, &job->job);
}

void
cg_tools_upload_file (const cg_request_t *req, json_t *arguments)
{
    cg_registry_t *registry = cg_server_registry (req->server);
    json_t *result = NULL;
    json_t *session_id = json_object_get (arguments, "session_id");
    const char *given = json_string_value (session_id);
    if (session_id && !json_is_null (session_id) && (!given || !cg_tools_valid_session_id (given)))
        result = cg_tools_error_object ("invalid_params", CG_SESSION_ID_RULE, NULL);
    char generated[18] = "sess_";
    cg_random_hex (generated + 5, 6); /* seed 004: created and returned when omitted */
    const char *name = given ? given : generated;
    cleanup_free char *rel = NULL;
    if (!result)
        result = cg_files_upload_check (cg_server_config (req->server), arguments, given, &rel);
    cg_registry_session_t *found =
        result ? NULL : cg_registry_find (registry, req->client->id, name);
    cg_registry_session_t *session = found;
    if (result)
        ;
    else if (session && session->busy)
        result = cg_tools_error_object ("session_busy", CG_TOOLS_BUSY_MESSAGE, name);
    else if (!session
             && !(session =
                      cg_registry_create (registry, req->client->id, name, "python", NULL, NULL)))
        result = cg_tools_max_sessions (req, NULL, given);
    else if (!session->ws)
        result = cg_tools_error_object ("sandbox_setup_failed", s_no_workspace, given);
    else {
        char *taken = rel;
        rel = NULL;
        s_file_job_start (req, session, arguments, taken, !found && !given);
        return;
    }
    if (session && !found && !given && json_is_true (json_object_get (result, "isError")))
        s_unmake (req->server, session, result);
    cg_request_result (req, result);
}
