/*  cg_files — seed 004's file tools on a session's workspace: upload_file, read_artifact,
    list_artifacts, and the download URLs added to results. */
#ifndef CG_FILES_H
#define CG_FILES_H

#include "artifacts/cg_http.h"
#include "artifacts/cg_workspace.h"
#include "base/cg_config.h"
#include "bridge/cg_registry.h"

#include <jansson.h>

/*  One session's files, as the tools see them; all borrowed. */
typedef struct {
    const cg_config_t *config;
    cg_workspace_t *ws;
    const char *session_id;
    const char *token; /* the session's download token */
    cg_http_t *http;   /* NULL when the download listener is off */
} cg_files_t;

/*  The files of SESSION (its workspace may be NULL) with CONFIG and the download listener
    HTTP (NULL: off); all borrowed. */
cg_files_t cg_files_of (const cg_config_t *config, cg_http_t *http,
                        const cg_registry_session_t *session);

/*  Checks upload_file's ARGUMENTS (borrowed) without touching the workspace. Returns
    NULL when they are well-formed and sets *REL to the canonical file name (caller
    frees), else a tools/call error result the caller owns (SESSION_ID, may be NULL, is
    echoed). */
json_t *cg_files_upload_check (const cg_config_t *config, json_t *arguments, const char *session_id,
                               char **rel);

/*  upload_file: decodes ARGUMENTS' content and writes it to REL (from
    cg_files_upload_check). Returns a tools/call result (caller owns). */
json_t *cg_files_upload (const cg_files_t *self, json_t *arguments, const char *rel);

/*  Writes LEN BYTES to the workspace file REL (canonical; replacing an existing one only
    when OVERWRITE) as the sandbox's user. Returns a tools/call result (caller owns): the
    file's artifact fields {session_id, path, filename, size_bytes, mime_type, success,
    download_url?} with TEXT as its text content, or the error. */
json_t *cg_files_put (const cg_files_t *self, const char *rel, const void *bytes, size_t len,
                      bool overwrite, const char *text);

/*  cg_files_put's answer for the workspace file REL of LEN bytes written by the caller:
    the error *ERR (consumed) when it is set, else the file's artifact fields. */
json_t *cg_files_written (const cg_files_t *self, const char *rel, size_t len, cg_error_t **err,
                          const char *text);

/*  read_artifact. Returns a tools/call result (caller owns). */
json_t *cg_files_read (const cg_files_t *self, json_t *arguments);

/*  list_artifacts. Returns a tools/call result (caller owns). */
json_t *cg_files_list (const cg_files_t *self);

/*  Returns the download URL of workspace path PATH ("/mnt/data/x" or "x"), or NULL when
    the listener is off. Caller owns the result. */
char *cg_files_url (const cg_files_t *self, const char *path);

/*  Adds download URLs to a run result STRUCTURED (borrowed): "download_url" to every
    artifact and every output that has a "path", and stdout_url/stderr_url next to
    stdout_file/stderr_file. Does nothing when the listener is off. */
void cg_files_add_urls (const cg_files_t *self, json_t *structured);

#endif
