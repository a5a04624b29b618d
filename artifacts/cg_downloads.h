/*  cg_downloads — artifact downloads over the HTTP listener: GET|HEAD
    /files/<session_id>/<path>?token=<token> streams a file of that session's workspace. */
#ifndef CG_DOWNLOADS_H
#define CG_DOWNLOADS_H

#include "artifacts/cg_http.h"
#include "artifacts/cg_workspace.h"

#define CG_DOWNLOADS_PREFIX "/files/" /* the route's path on the listener */
#define CG_DOWNLOADS_TOKEN_MAX 256    /* longer tokens are never compared */

typedef struct cg_downloads_t cg_downloads_t;

/*  Looks up the session SESSION_ID (at most CG_SESSION_ID_MAX bytes) whose download token
    is the TOKEN_LEN bytes at TOKEN (at most CG_DOWNLOADS_TOKEN_MAX; compared in constant
    time): returns its workspace (an open cg_workspace_t, borrowed), or NULL when there is
    no such session or the token is not its. Called on the thread that calls
    cg_http_process, and only while it runs; the workspace must stay valid until
    cg_http_process returns. */
typedef cg_workspace_t *(cg_downloads_lookup_fn)(void *arg, const char *session_id,
                                                 const char *token, size_t token_len);

/*  Serves downloads on HTTP under CG_DOWNLOADS_PREFIX, resolving sessions with LOOKUP (and
    ARG). Every refusal before the file is open (no or wrong token, unknown session, a path
    outside the workspace, a symlink, a directory, a missing file) is the same 404, so a
    client without the token learns nothing; methods other than GET and HEAD get 405, a
    request body 413, a malformed percent-escape 400. Files go out with their MIME type,
    nosniff, no-store and "Content-Security-Policy: sandbox"; types a browser would run
    script in (HTML, SVG, XML) as attachments. Returns a new object the caller owns; HTTP
    must be destroyed first (or no longer processed) when it is destroyed. */
cg_downloads_t *cg_downloads_new (cg_http_t *http, cg_downloads_lookup_fn *lookup, void *arg);

/*  Frees *self_p and sets it to NULL. Safe on NULL. */
void cg_downloads_destroy (cg_downloads_t **self_p);

/*  Returns "<base>/files/<session_id>/<rel>?token=<token>" on HTTP (<base> as
    cg_http_base_url gives it: "http://HOST:PORT" or the public URL), with SESSION_ID, each segment of REL and TOKEN percent-encoded
    (all but RFC 3986 unreserved bytes). REL is a workspace path as cg_workspace_normalize
    takes it ("sub/data.csv" or "/mnt/data/sub/data.csv"). Returns the URL (caller owns
    the result), or NULL when REL is not a valid workspace path. */
char *cg_downloads_url (cg_http_t *http, const char *session_id, const char *token,
                        const char *rel);

#endif
