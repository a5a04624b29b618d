/*  cg_resources — the workspaces' files as MCP resources: list, templates, read, subscribe. */
#include "mcp/cg_resources.h"
#include "mcp/cg_listen.h"
#include "mcp/cg_jsonrpc.h"
#include "artifacts/cg_downloads.h"
#include "artifacts/cg_wsfs.h"
#include "base/cg_utf8.h"
#include "base/cg_util.h"
#include "base/cg_worker.h"

#include <ctype.h>
#include <errno.h>
#include <sodium.h>
#include <string.h>
#include <sys/stat.h>

//  Resources per resources/list page.
#define S_PAGE 500

//  The error code MCP gives an unknown resource.
#define S_NOT_FOUND CG_JSONRPC_RESOURCE_NOT_FOUND

//  client id -> {uri: true}: what each client subscribed to.
static json_t *s_subscriptions;

//  What the providers (the conformance fixtures) list before the workspaces' files: each
//  one's FIELD (resources or templates), appended to a new array.
static json_t *
s_provided (cg_server_t *server, bool templates)
{
    json_t *all = json_array ();
    const cg_provider_t *p;
    for (size_t i = 0; (p = cg_server_provider (server, i)); i++) {
        json_t *(*list) (void) = templates ? p->templates : p->resources;
        json_t *some = list ? list () : NULL;
        json_array_extend (all, some);
        json_decref (some);
    }
    return all;
}

//  --------------------------------------------------------------------------
//  URIs

char *
cg_resources_uri (const char *session_id, const char *rel)
{
    //  A path's bytes outside RFC 3986's unreserved set (and '/') are percent-encoded.
    size_t len = strlen (rel);
    char *path = cg_xmalloc (len * 3 + 1), *at = path;
    for (const unsigned char *p = (const unsigned char *)rel; *p; p++)
        if (isalnum (*p) || strchr ("-._~/", *p))
            *at++ = (char)*p;
        else
            at += sprintf (at, "%%%02X", *p);
    *at = '\0';
    char *uri = cg_strdupf (CG_RESOURCES_PREFIX "%s/files/%s", session_id, path);
    free (path);
    return uri;
}

static int
s_hex (int c)
{
    return isdigit (c) ? c - '0' : isxdigit (c) ? tolower (c) - 'a' + 10 : -1;
}

int
cg_resources_parse (const char *uri, char **session_id, char **rel)
{
    size_t prefix = strlen (CG_RESOURCES_PREFIX);
    if (strncmp (uri, CG_RESOURCES_PREFIX, prefix) != 0)
        return -1;
    const char *sid = uri + prefix;
    const char *files = strstr (sid, "/files/");
    if (!files || files == sid || (size_t)(files - sid) > 64
        || memchr (sid, '/', (size_t)(files - sid)))
        return -1;
    const char *path = files + strlen ("/files/");
    char *decoded = cg_xmalloc (strlen (path) + 1), *at = decoded;
    for (const char *p = path; *p; p++) {
        if (*p != '%') {
            *at++ = *p;
            continue;
        }
        int hi = s_hex ((unsigned char)p[1]), lo = hi < 0 ? -1 : s_hex ((unsigned char)p[2]);
        if (lo < 0 || (hi == 0 && lo == 0)) {
            free (decoded);
            return -1;
        }
        *at++ = (char)(hi * 16 + lo);
        p += 2;
    }
    *at = '\0';
    *session_id = cg_strdupf ("%.*s", (int)(files - sid), sid);
    *rel = decoded;
    return 0;
}

//  --------------------------------------------------------------------------
//  resources/list and resources/templates/list

static json_t *
s_resource (const char *session_id, json_t *artifact)
{
    const char *path = json_string_value (json_object_get (artifact, "path"));
    const char *rel = path + strlen (CG_WORKSPACE_MOUNT) + 1;
    cleanup_free char *uri = cg_resources_uri (session_id, rel);
    cleanup_free char *description = cg_strdupf ("%s in session %s's workspace", path, session_id);
    return json_pack ("{s:s, s:s, s:s, s:O, s:O}", "uri", uri, "name", rel, "description",
                      description, "mimeType", json_object_get (artifact, "mime_type"), "size",
                      json_object_get (artifact, "size_bytes"));
}

void
cg_resources_list (const cg_request_t *req, json_t *params)
{
    const char *cursor = json_string_value (json_object_get (params, "cursor"));
    char *end = NULL;
    long start = cursor ? strtol (cursor, &end, 10) : 0;
    if (cursor && (!*cursor || *end || start < 0)) {
        cg_request_error (req, CG_JSONRPC_INVALID_PARAMS, "resources/list: unknown cursor");
        return;
    }
    //  The page [start, stop) of the providers' resources followed by each session's files
    //  in order; each session's are served from its workspace's index, O(page), and a
    //  session before or after the page costs only its count.
    size_t stop = (size_t)start + S_PAGE, at = 0;
    json_t *page = json_array ();
    json_t *provided = s_provided (req->server, false);
    size_t i;
    json_t *item;
    json_array_foreach (provided, i, item)
    {
        if (at >= (size_t)start && at < stop)
            json_array_append (page, item);
        at++;
    }
    json_decref (provided);
    zlistx_t *mine = cg_registry_sessions (cg_server_registry (req->server), req->client->id);
    for (cg_registry_session_t *s = zlistx_first (mine); s && at <= stop; s = zlistx_next (mine)) {
        size_t skip = (size_t)start > at ? (size_t)start - at : 0;
        size_t want = stop > at + skip ? stop - at - skip : 0;
        json_t *listing = s->ws ? cg_workspace_list_page (s->ws, skip, want, NULL) : NULL;
        json_array_foreach (json_object_get (listing, "artifacts"), i, item)
            json_array_append_new (page, s_resource (s->id, item));
        at += (size_t)json_integer_value (json_object_get (listing, "total"));
        json_decref (listing);
    }
    zlistx_destroy (&mine);
    json_t *result = json_pack ("{s:o}", "resources", page);
    if (at > stop)
        json_object_set_new (result, "nextCursor", json_sprintf ("%ld", start + S_PAGE));
    cg_request_result (req, result);
}

void
cg_resources_templates (const cg_request_t *req, json_t *params)
{
    (void)params;
    json_t *templates = s_provided (req->server, true);
    json_array_append_new (templates,
                           json_pack ("{s:s, s:s, s:s}", "uriTemplate", CG_RESOURCES_TEMPLATE,
                                      "name", "workspace file", "description",
                                      "A file in one of your sessions' " CG_WORKSPACE_MOUNT
                                      " (path relative to it)."));
    cg_request_result (req, json_pack ("{s:o}", "resourceTemplates", templates));
}

//  --------------------------------------------------------------------------
//  resources/read

//  The contents entry of URI for the LEN bytes at BYTES of type MIME: text when they are
//  valid UTF-8 without NUL, else base64.
static json_t *
s_contents (const char *uri, const char *mime, const char *bytes, size_t len)
{
    json_t *text = memchr (bytes, '\0', len) ? NULL : json_stringn (bytes, len);
    if (text)
        return json_pack ("{s:s, s:s, s:o}", "uri", uri, "mimeType", mime, "text", text);
    size_t size = sodium_base64_ENCODED_LEN (len, sodium_base64_VARIANT_ORIGINAL);
    cleanup_free char *b64 = cg_xmalloc (size);
    sodium_bin2base64 (b64, size, (const unsigned char *)bytes, len,
                       sodium_base64_VARIANT_ORIGINAL);
    return json_pack ("{s:s, s:s, s:s}", "uri", uri, "mimeType", mime, "blob", b64);
}

//  resources/read of a workspace file, on the files worker (as read_artifact's): the file
//  read and encoded there, on a workspace handle of its own; the answer given on the loop
//  through a call (cg_server_call_new), which a cancel or the client's end takes away.
typedef struct {
    cg_work_t work;
    cg_server_t *server;
    char key[32];              /* the call's */
    const cg_config_t *config; /* the server's, read only */
    char *workspace;           /* the workspace's host directory */
    char *owner, *session_id, *token;
    char *uri, *rel;
    char *canonical; /* REL normalized, set by the worker */
    json_t *contents;
    struct stat st;
    cg_error_t *err;
} s_read_t;

static void
s_read_work (cg_work_t *work)
{
    s_read_t *self = (s_read_t *)work;
    cg_workspace_t *ws = cg_workspace_open (self->workspace, &self->err);
    self->canonical = ws ? cg_workspace_normalize (self->rel, &self->err) : NULL;
    size_t len = 0;
    cleanup_free char *bytes =
        self->canonical ? cg_workspace_read (
            ws, self->canonical, self->config->max_artifact_read_bytes, &len, &self->st, &self->err)
                        : NULL;
    if (bytes)
        self->contents = s_contents (self->uri, cg_mime_type (self->canonical), bytes, len);
    cg_workspace_destroy (&ws);
}

//  Answers REQ, a resources/read of SELF's file, as it was read.
static void
s_read_answer (const cg_request_t *req, s_read_t *self)
{
    const cg_config_t *config = self->config;
    cg_error_t *err = self->err;
    if (self->contents)
        cg_request_result (req, json_pack ("{s:[O]}", "contents", self->contents));
    else if (err && err->code == EFBIG) {
        cg_http_t *http = cg_server_http (req->server);
        cleanup_free char *url =
            http ? cg_downloads_url (http, self->session_id, self->token, self->canonical) : NULL;
        cleanup_free char *message = cg_strdupf (
            "%s is %lld bytes, over the %zu-byte read limit (--max-artifact-read-bytes)%s%s",
            self->uri, (long long)self->st.st_size, config->max_artifact_read_bytes,
            url ? "; download it: " : "", url ? url : "");
        cg_request_error (req, CG_JSONRPC_INVALID_PARAMS, message);
    }
    else {
        cleanup_free char *message =
            cg_strdupf ("Resource not found: %.*s (%s)", cg_utf8_prefix (self->uri, 256), self->uri,
                        cg_error_message (err));
        cg_request_error_data (req,
                               err && (err->code == ENOENT || err->code == EISDIR)
                                   ? S_NOT_FOUND
                                   : CG_JSONRPC_INVALID_PARAMS,
                               message, json_pack ("{s:s}", "uri", self->uri));
    }
}

//  Back on the loop: the call, if it is still there and not cancelled, is answered.
static void
s_read_after (cg_work_t *work, bool ran)
{
    s_read_t *self = (s_read_t *)work;
    cg_call_t *call = cg_server_call (self->server, self->key);
    if (call) {
        cg_request_t req = cg_server_call_request (self->server, call);
        req.method = "resources/read";
        req.call_name = NULL; /* not a tool call: no operations-log record */
        if (!ran && !call->cancelled)
            cg_request_error (&req, CG_JSONRPC_INTERNAL_ERROR,
                              "the server is ending: the resource was not read");
        else if (!call->cancelled)
            s_read_answer (&req, self);
        cg_registry_session_t *session =
            cg_registry_find (cg_server_registry (self->server), self->owner, self->session_id);
        if (session)
            cg_registry_touch (session);
        cg_server_call_end (self->server, call);
    }
    free (self->workspace);
    free (self->owner);
    free (self->session_id);
    free (self->token);
    free (self->uri);
    free (self->rel);
    free (self->canonical);
    json_decref (self->contents);
    cg_error_destroy (&self->err);
    free (self);
}

//  Reads workspace file REL of SESSION for URI on the files worker; the answer follows.
static void
s_read_file (const cg_request_t *req, cg_registry_session_t *session, const char *uri,
             const char *rel)
{
    s_read_t *self = cg_xcalloc (1, sizeof *self);
    *self = (s_read_t){.work = {.work_cb = s_read_work, .after_cb = s_read_after},
                       .server = req->server,
                       .config = cg_server_config (req->server),
                       .workspace = cg_strdupf ("%s/" CG_WSFS_WORKSPACE, session->dir),
                       .owner = cg_xstrdup (session->owner),
                       .session_id = cg_xstrdup (session->id),
                       .token = cg_xstrdup (session->token),
                       .uri = cg_xstrdup (uri),
                       .rel = cg_xstrdup (rel)};
    cg_call_t *call = cg_server_call_new (req, "resources/read", NULL);
    call->recorded = true; /* not a tool call: the operations log records tool calls only */
    snprintf (self->key, sizeof self->key, "%s", call->key);
    cg_registry_touch (session);
    cg_error_t *err = NULL;
    if (cg_worker_queue (cg_server_files_worker (req->server), &self->work, false, &err) == 0)
        return;
    cg_request_error (req, CG_JSONRPC_INTERNAL_ERROR, cg_error_message (err));
    cg_error_destroy (&err);
    cg_server_call_end (req->server, call);
    s_read_after (&self->work, false); /* frees it: the call is gone, nothing is sent */
}

void
cg_resources_read (const cg_request_t *req, json_t *params)
{
    const char *uri = json_string_value (json_object_get (params, "uri"));
    if (!uri) {
        cg_request_error (req, CG_JSONRPC_INVALID_PARAMS, "resources/read: 'uri' is required");
        return;
    }
    json_t *fixture = NULL;
    const cg_provider_t *p;
    for (size_t i = 0; !fixture && (p = cg_server_provider (req->server, i)); i++)
        fixture = p->read ? p->read (uri) : NULL;
    if (fixture) {
        cg_request_result (req, json_pack ("{s:o}", "contents", fixture));
        return;
    }
    cleanup_free char *session_id = NULL;
    cleanup_free char *rel = NULL;
    cg_registry_session_t *session =
        cg_resources_parse (uri, &session_id, &rel) == 0
            ? cg_registry_find (cg_server_registry (req->server), req->client->id, session_id)
            : NULL;
    if (!session || !session->ws) {
        cleanup_free char *message =
            cg_strdupf ("Resource not found: %.*s (resources are " CG_RESOURCES_TEMPLATE
                        ", in your own sessions)",
                        cg_utf8_prefix (uri, 256), uri);
        cg_request_error_data (req, S_NOT_FOUND, message, json_pack ("{s:s}", "uri", uri));
        return;
    }
    s_read_file (req, session, uri, rel);
}

//  --------------------------------------------------------------------------
//  Subscriptions

static json_t *
s_mine (const cg_client_t *client, bool make)
{
    if (!s_subscriptions && make)
        s_subscriptions = json_object ();
    json_t *mine = json_object_get (s_subscriptions, client->id);
    if (!mine && make) {
        mine = json_object ();
        json_object_set_new (s_subscriptions, client->id, mine);
    }
    return mine;
}

static void
s_subscription (const cg_request_t *req, json_t *params, bool subscribe)
{
    const char *uri = json_string_value (json_object_get (params, "uri"));
    if (!uri || !*uri || strlen (uri) > 4096) {
        cg_request_error (req, CG_JSONRPC_INVALID_PARAMS,
                          "resources/subscribe: 'uri' must be a string of at most 4096 bytes");
        return;
    }
    json_t *mine = s_mine (req->client, subscribe);
    if (subscribe && !json_object_get (mine, uri)
        && json_object_size (mine) >= CG_RESOURCES_SUBSCRIPTIONS_MAX) {
        cg_request_error (req, CG_JSONRPC_INVALID_PARAMS,
                          "resources/subscribe: at most " CG_STR (
                              CG_RESOURCES_SUBSCRIPTIONS_MAX) " subscriptions per client");
        return;
    }
    if (subscribe)
        json_object_set_new (mine, uri, json_true ());
    else if (mine)
        json_object_del (mine, uri);
    cg_request_result (req, json_object ());
}

void
cg_resources_subscribe (const cg_request_t *req, json_t *params)
{
    s_subscription (req, params, true);
}

void
cg_resources_unsubscribe (const cg_request_t *req, json_t *params)
{
    s_subscription (req, params, false);
}

void
cg_resources_ran (cg_server_t *server, cg_call_t *call, const char *session_id,
                  const cg_outcome_t *outcome)
{
    cg_listen_ran (server, call->channel->client, session_id, outcome);
    json_t *mine = session_id && outcome ? s_mine (call->channel->client, false) : NULL;
    if (!mine || !json_object_size (mine))
        return;
    json_t *lists[] = {outcome->created, outcome->modified, outcome->deleted};
    for (size_t k = 0; k < 3; k++) {
        size_t i;
        json_t *name;
        json_array_foreach (lists[k], i, name)
        {
            cleanup_free char *uri = cg_resources_uri (session_id, json_string_value (name));
            if (json_object_get (mine, uri))
                cg_channel_send (call->channel,
                                 json_pack ("{s:s, s:s, s:{s:s}}", "jsonrpc", "2.0", "method",
                                            "notifications/resources/updated", "params", "uri",
                                            uri));
        }
    }
}

void
cg_resources_forget (const cg_client_t *client)
{
    json_object_del (s_subscriptions, client->id);
}

//  True when CONTENT has a resource_link whose uri is URL.
static bool
s_linked (json_t *content, const char *url)
{
    size_t i;
    json_t *block;
    json_array_foreach (content, i, block)
    {
        const char *uri = json_string_value (json_object_get (block, "uri"));
        if (url && uri && strcmp (uri, url) == 0)
            return true;
    }
    return false;
}

void
cg_resources_link_artifacts (json_t *result, const char *session_id)
{
    json_t *content = json_object_get (result, "content");
    json_t *artifacts =
        json_object_get (json_object_get (result, "structuredContent"), "artifacts");
    size_t i;
    json_t *artifact;
    json_array_foreach (session_id ? artifacts : NULL, i, artifact)
    {
        const char *path = json_string_value (json_object_get (artifact, "path"));
        size_t mount = strlen (CG_WORKSPACE_MOUNT);
        if (!path || strncmp (path, CG_WORKSPACE_MOUNT "/", mount + 1) != 0
            || s_linked (content, json_string_value (json_object_get (artifact, "download_url"))))
            continue;
        cleanup_free char *uri = cg_resources_uri (session_id, path + mount + 1);
        json_array_append_new (content,
                               json_pack ("{s:s, s:s, s:s, s:O?, s:O?}", "type", "resource_link",
                                          "uri", uri, "name", path + mount + 1, "mimeType",
                                          json_object_get (artifact, "mime_type"), "size",
                                          json_object_get (artifact, "size_bytes")));
    }
}

static void
s_client_end (cg_server_t *server, cg_client_t *client)
{
    (void)server;
    cg_resources_forget (client);
}

void
cg_resources_register (cg_server_t *server)
{
    static const cg_hooks_t hooks = {.client_end = s_client_end};
    cg_server_add_hooks (server, &hooks);
    cg_server_add_method (server, "resources/list", cg_resources_list, 0);
    cg_server_add_method (server, "resources/templates/list", cg_resources_templates, 0);
    cg_server_add_method (server, "resources/read", cg_resources_read, 0);
    cg_server_add_method (server, "resources/subscribe", cg_resources_subscribe,
                          CG_METHOD_HANDSHAKE);
    cg_server_add_method (server, "resources/unsubscribe", cg_resources_unsubscribe,
                          CG_METHOD_HANDSHAKE);
}
