/*  cg_tools_files — the file tools: upload_file, read_artifact, list_artifacts (the work
    on the workspace is cg_files'). */
#include "cg_files.h"
#include "cg_tools.h"
#include "../artifacts/cg_notebook.h"
#include "../bridge/cg_util.h"

#include <string.h>

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

void
cg_tools_read_artifact (const cg_request_t *req, json_t *arguments)
{
    s_file_tool (req, arguments, true);
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
    static const char *const kernels[] = {"python", "javascript", NULL};
    const char *asked = json_string_value (json_object_get (arguments, "language"));
    const char *candidates[] = {asked, session->language,
                                session->languages ? zlistx_first (session->languages) : NULL};
    for (size_t c = 0; c < 3; c++) {
        const char *canonical = candidates[c] ? cg_tools_canonical_language (candidates[c]) : NULL;
        for (size_t k = 0; canonical && kernels[k]; k++)
            if (strcmp (canonical, kernels[k]) == 0)
                return kernels[k];
        if (c == 0 && asked) {
            *refusal = cg_tools_error_object (
                "invalid_params", "'language' must be python or javascript", session->id);
            return NULL;
        }
    }
    return "python";
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
    cleanup_free char *rel = language ? cg_workspace_sanitize_filename (with_suffix, &err) : NULL;
    if (language && !rel) {
        cleanup_free char *message = cg_strdupf ("invalid filename: %s", cg_error_message (err));
        result = cg_tools_error_object ("invalid_filename", message, session->id);
    }
    cleanup_free char *path = rel ? cg_strdupf ("%s/%s", session->dir, CG_NOTEBOOK_FILE) : NULL;
    size_t cells = 0;
    json_t *notebook =
        path ? cg_notebook_build (path, language, 2 * CG_NOTEBOOK_MAX_BYTES, &cells, &err) : NULL;
    if (path && !notebook)
        result = cg_tools_error_object ("write_failed", cg_error_message (err), session->id);
    cleanup_free char *json = notebook ? json_dumps (notebook, JSON_INDENT (1)) : NULL;
    if (json) {
        cg_files_t files = s_files (req, session);
        cleanup_free char *text =
            cg_strdupf ("Exported %zu cells of session %s as the notebook %s/%s.", cells,
                        session->id, CG_WORKSPACE_MOUNT, rel);
        result = cg_files_put (&files, rel, json, strlen (json), true, text);
        json_t *structured = json_object_get (result, "structuredContent");
        if (!json_is_true (json_object_get (result, "isError")))
            json_object_update_new (structured, json_pack ("{s:I, s:s}", "cells", (json_int_t)cells,
                                                           "language", language));
        cg_registry_touch (session);
    }
    cg_error_destroy (&err);
    json_decref (notebook);
    cg_request_result (req, result);
}

//  Forgets the session SESSION that an upload_file without session_id made for a call
//  that failed: it holds a sandbox slot, and RESULT does not give its id out.
static void
s_unmake (const cg_request_t *req, cg_registry_session_t *session, json_t *result)
{
    cg_registry_retire (cg_server_registry (req->server), session);
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
             && !(session = cg_registry_create (registry, req->client->id, name, "python", NULL)))
        result = cg_tools_max_sessions (req, NULL, given);
    else if (!session->ws)
        result = cg_tools_error_object ("sandbox_setup_failed", s_no_workspace, given);
    else {
        cg_files_t files = s_files (req, session);
        result = cg_files_upload (&files, arguments, rel);
        cg_registry_touch (session);
        s_notice (result, session);
    }
    if (session && !found && !given && json_is_true (json_object_get (result, "isError")))
        s_unmake (req, session, result);
    cg_request_result (req, result);
}
