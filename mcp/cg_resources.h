/*  cg_resources — MCP resources: every file in a client's sessions' workspaces is a
    resource, cellgate://sessions/{session_id}/files/{path} (path percent-encoded as a URI
    path), listed (resources/list, resources/templates/list), read with read_artifact's rules
    (resources/read: no symlink or '..' out of the workspace, at most
    --max-artifact-read-bytes, larger files answered with their download URL), and
    subscribed to (resources/subscribe: a run that creates, changes or deletes the file sends
    notifications/resources/updated). A client sees only its own sessions' files. Under the
    conformance tool profile the suite's fixture resources are served too (a provider's).
    Main thread only. */
#ifndef CG_RESOURCES_H
#define CG_RESOURCES_H

#include "mcp/cg_server.h"
#include "bridge/cg_outcome.h"

#include <jansson.h>

/*  The URI scheme's prefix and the template. */
#define CG_RESOURCES_PREFIX "cellgate://sessions/"
#define CG_RESOURCES_TEMPLATE CG_RESOURCES_PREFIX "{session_id}/files/{path}"

/*  Subscriptions one client may hold at once. */
#define CG_RESOURCES_SUBSCRIPTIONS_MAX 1000

/*  The methods: each answers REQ. */
void cg_resources_list (const cg_request_t *req, json_t *params);
void cg_resources_templates (const cg_request_t *req, json_t *params);
void cg_resources_read (const cg_request_t *req, json_t *params);
void cg_resources_subscribe (const cg_request_t *req, json_t *params);
void cg_resources_unsubscribe (const cg_request_t *req, json_t *params);

/*  Returns the URI of workspace file REL (canonical, relative) of session SESSION_ID.
    Caller owns it. */
char *cg_resources_uri (const char *session_id, const char *rel);

/*  Splits URI into its session id (at most 64 bytes) and its path, percent-decoded but not
    yet checked against the workspace (caller frees both). Returns 0, or -1 when URI is not
    of the scheme's form or encodes a NUL. */
int cg_resources_parse (const char *uri, char **session_id, char **rel);

/*  After CALL's run in SESSION_ID ended with OUTCOME (borrowed): sends
    notifications/resources/updated on CALL's channel for each file the run created,
    changed or deleted that CALL's client subscribed to, and tells the client's
    2026-07-28 listeners (cg_listen_ran). */
void cg_resources_ran (cg_server_t *server, cg_call_t *call, const char *session_id,
                       const cg_outcome_t *outcome);

/*  Appends to RESULT's content (a run's tools/call result, borrowed, changed in place) a
    resource_link (this scheme's URI, name, mimeType, size) for each file of its
    structuredContent's artifacts (the files the run made or changed in session SESSION_ID)
    that no resource_link block names yet (by its download URL). Nothing when SESSION_ID is
    NULL. */
void cg_resources_link_artifacts (json_t *result, const char *session_id);

/*  Forgets CLIENT's subscriptions (it is ending). */
void cg_resources_forget (const cg_client_t *client);

/*  Registers the resources methods with SERVER, and the hook that forgets a client's
    subscriptions. */
void cg_resources_register (cg_server_t *server);

#endif
