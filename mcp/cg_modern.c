/*  cg_modern — MCP revision 2026-07-28 (stateless), per request. */
#include "mcp/cg_modern.h"
#include "mcp/cg_jsonrpc.h"
#include "mcp/cg_mcp.h"
#include "mcp/cg_methods.h"
#include "base/cg_utf8.h"
#include "base/cg_util.h"
#include "base/cg_version.h"

#include <string.h>

#define S_META_CAPABILITIES "io.modelcontextprotocol/clientCapabilities"
#define S_META_LOG_LEVEL "io.modelcontextprotocol/logLevel"
#define S_META_SERVER "io.modelcontextprotocol/serverInfo"

//  The versions we speak, newest first (2026-07-28, then the handshake ones).
static json_t *
s_supported (void)
{
    json_t *versions = json_pack ("[s]", CG_MODERN_VERSION);
    for (int i = 0; cg_server_versions[i]; i++)
        json_array_append_new (versions, json_string (cg_server_versions[i]));
    return versions;
}

void
cg_modern_handle (cg_request_t *req, json_t *params)
{
    json_t *meta = json_object_get (params, "_meta");
    const char *version = json_string_value (json_object_get (meta, CG_MODERN_META_VERSION));
    json_t *capabilities = json_object_get (meta, S_META_CAPABILITIES);
    json_t *level = json_object_get (meta, S_META_LOG_LEVEL);
    req->modern = true;
    if (!version || !json_is_object (capabilities)) {
        cg_channel_status (req->channel, 400);
        cg_request_error (req, CG_JSONRPC_INVALID_PARAMS,
                          "a 2026-07-28 request's _meta needs io.modelcontextprotocol/"
                          "protocolVersion (a string) and io.modelcontextprotocol/"
                          "clientCapabilities (an object)");
        return;
    }
    if (strcmp (version, CG_MODERN_VERSION) != 0) {
        cg_channel_status (req->channel, 400);
        cg_request_error_data (
            req, CG_JSONRPC_UNSUPPORTED_VERSION, "Unsupported protocol version",
            json_pack ("{s:o, s:s}", "supported", s_supported (), "requested", version));
        return;
    }
    if (level && cg_server_log_level_of (json_string_value (level)) < 0) {
        cg_channel_status (req->channel, 400);
        cg_request_error (req, CG_JSONRPC_INVALID_PARAMS,
                          "io.modelcontextprotocol/logLevel must be an MCP logging level");
        return;
    }
    //  What 2026-07-28 removed (the handshake revisions' methods) is an unknown method.
    unsigned flags = 0;
    if (cg_server_has_method (req->server, req->method, &flags) && flags & CG_METHOD_HANDSHAKE) {
        cleanup_free char *text = cg_strdupf ("Method not found: %s is not a method of %s",
                                              req->method, CG_MODERN_VERSION);
        cg_channel_status (req->channel, 404);
        cg_request_error (req, CG_JSONRPC_METHOD_NOT_FOUND, text);
        return;
    }
    req->modern_tasks =
        json_object_get (json_object_get (capabilities, "extensions"), CG_MODERN_TASKS) != NULL;
    //  The tasks methods need the extension in this request.
    if (strncmp (req->method, "tasks/", 6) == 0 && !req->modern_tasks) {
        cg_modern_missing (req,
                           "the tasks methods need the io.modelcontextprotocol/tasks "
                           "extension in the request's clientCapabilities",
                           json_pack ("{s:{s:{}}}", "extensions", CG_MODERN_TASKS));
        return;
    }
    json_t *elicitation = json_object_get (capabilities, "elicitation");
    req->modern_elicit =
        json_is_object (elicitation)
        && (json_object_size (elicitation) == 0 || json_object_get (elicitation, "form"));
    //  Who it is, for the logs, when no initialize said it.
    json_t *info = json_object_get (meta, "io.modelcontextprotocol/clientInfo");
    const char *name = json_string_value (json_object_get (info, "name"));
    const char *client_version = json_string_value (json_object_get (info, "version"));
    if (name && !req->client->name[0])
        snprintf (req->client->name, sizeof req->client->name, "%.*s",
                  cg_utf8_prefix (name, sizeof req->client->name - 1), name);
    if (client_version && !req->client->client_version[0])
        snprintf (req->client->client_version, sizeof req->client->client_version, "%.*s",
                  cg_utf8_prefix (client_version, sizeof req->client->client_version - 1),
                  client_version);
    //  A peer that speaks 2026-07-28 without a handshake has its links too (resource_link).
    if (!req->client->version[0])
        snprintf (req->client->version, sizeof req->client->version, "%s", CG_MODERN_VERSION);
    cg_server_dispatch (req, params);
}

void
cg_modern_missing (const cg_request_t *req, const char *message, json_t *required)
{
    cg_channel_status (req->channel, 400);
    cg_request_error_data (req, CG_JSONRPC_MISSING_CAPABILITY, message,
                           json_pack ("{s:o}", "requiredCapabilities", required));
}

void
cg_modern_result (json_t *result, const char *method)
{
    static const char *const cacheable[] = {"tools/list",
                                            "resources/list",
                                            "resources/templates/list",
                                            "resources/read",
                                            "prompts/list",
                                            "server/discover",
                                            NULL};
    if (!json_is_object (result))
        return;
    if (!json_object_get (result, "resultType"))
        json_object_set_new (result, "resultType", json_string ("complete"));
    for (int i = 0; method && cacheable[i]; i++)
        if (strcmp (method, cacheable[i]) == 0 && !json_object_get (result, "ttlMs")) {
            //  Nothing here is the same for long (workspace files change with each run).
            json_object_set_new (result, "ttlMs", json_integer (0));
            json_object_set_new (result, "cacheScope", json_string ("private"));
        }
    json_t *meta = json_object_get (result, "_meta");
    if (!json_is_object (meta)) {
        meta = json_object ();
        json_object_set_new (result, "_meta", meta);
    }
    json_object_set_new (meta, S_META_SERVER,
                         json_pack ("{s:s, s:s}", "name", "cellgate", "version", CG_VERSION));
}

json_t *
cg_modern_discover (const cg_request_t *req)
{
    json_t *discover = json_pack (
        "{s:o, s:o, s:s, s:{s:{s:s, s:s}}}", "supportedVersions", s_supported (), "capabilities",
        cg_methods_capabilities (req, true), "instructions", cg_methods_instructions (req), "_meta",
        S_META_SERVER, "name", "cellgate", "version", CG_VERSION);
    //  Long cells as tasks (io.modelcontextprotocol/tasks), for the clients that declare it.
    json_object_set_new (json_object_get (discover, "capabilities"), "extensions",
                         json_pack ("{s:{}}", CG_MODERN_TASKS));
    return discover;
}

//  The hooks: a request with 2026-07-28's _meta is served here; its answers are marked.
static bool
s_request (cg_request_t *req, json_t *message)
{
    if (!cg_modern_request (message))
        return false;
    cg_modern_handle (req, json_object_get (message, "params"));
    return true;
}

static void
s_answer_shape (cg_answer_t *answer)
{
    if (!answer->modern)
        return;
    if (answer->result)
        cg_modern_result (answer->result, answer->method);
    //  2026-07-28: a resource not found is invalid params (-32002 is 2025's).
    else if (answer->code == CG_JSONRPC_RESOURCE_NOT_FOUND)
        answer->code = CG_JSONRPC_INVALID_PARAMS;
}

static void
s_discover (const cg_request_t *req, json_t *params)
{
    (void)params;
    cg_request_result (req, cg_modern_discover (req));
}

void
cg_modern_register (cg_server_t *server)
{
    static const cg_hooks_t hooks = {.request = s_request, .answer_shape = s_answer_shape};
    cg_server_add_hooks (server, &hooks);
    cg_server_add_method (server, "server/discover", s_discover, CG_METHOD_ANYTIME);
}
