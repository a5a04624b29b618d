/*  cg_methods — the MCP methods of the handshake: initialize (version negotiation), ping
    and logging/setLevel, and the capabilities the server declares. */
#include "mcp/cg_methods.h"
#include "mcp/cg_tasks.h"
#include "mcp/cg_jsonrpc.h"
#include "mcp/cg_mcp.h"
#include "base/cg_utf8.h"
#include "base/cg_version.h"

#include <string.h>

const char *const cg_server_versions[] = {"2025-11-25", "2025-06-18", "2025-03-26", NULL};

const char *
cg_server_version_supported (const char *version)
{
    for (int i = 0; version && cg_server_versions[i]; i++)
        if (strcmp (version, cg_server_versions[i]) == 0)
            return cg_server_versions[i];
    return NULL;
}

json_t *
cg_methods_capabilities (const cg_request_t *req, bool modern)
{
    //  2026-07-28 has no logging/setLevel; it subscribes to resources with
    //  subscriptions/listen (cg_listen).
    json_t *caps = modern ? json_pack ("{s:{s:b}, s:{s:b, s:b}}", "tools", "listChanged", 0,
                                       "resources", "subscribe", 1, "listChanged", 0)
                          : json_pack ("{s:{s:b}, s:{}, s:{s:b, s:b}}", "tools", "listChanged", 0,
                                       "logging", "resources", "subscribe", 1, "listChanged", 0);
    //  Prompts and completions when a provider serves them (the conformance fixtures).
    if (cg_server_has_method (req->server, "prompts/list", NULL))
        json_object_set_new (caps, "prompts", json_pack ("{s:b}", "listChanged", 0));
    if (cg_server_has_method (req->server, "completion/complete", NULL))
        json_object_set_new (caps, "completions", json_object ());
    return caps;
}

void
cg_methods_initialize (const cg_request_t *req, json_t *params)
{
    const char *requested = json_string_value (json_object_get (params, "protocolVersion"));
    if (!requested) {
        cg_request_error (req, CG_JSONRPC_INVALID_PARAMS,
                          "initialize: 'protocolVersion' is required");
        return;
    }
    //  Echo a version we support; otherwise offer our latest (the client decides).
    const char *version = cg_server_version_supported (requested);
    if (!version)
        version = cg_server_versions[0];
    req->client->initialized = true;
    //  Form elicitation: "elicitation": {} (2025-06-18's form) or with "form" in it.
    json_t *elicitation = json_object_get (json_object_get (params, "capabilities"), "elicitation");
    req->client->elicitation =
        json_is_object (elicitation)
        && (json_object_size (elicitation) == 0 || json_object_get (elicitation, "form"));
    snprintf (req->client->version, sizeof req->client->version, "%s", version);
    const char *name =
        json_string_value (json_object_get (json_object_get (params, "clientInfo"), "name"));
    //  Cut at a character, not inside one: the name goes into JSON (logs, execution logs).
    name = name ? name : "";
    snprintf (req->client->name, sizeof req->client->name, "%.*s",
              cg_utf8_prefix (name, sizeof req->client->name - 1), name);
    const char *client_version =
        json_string_value (json_object_get (json_object_get (params, "clientInfo"), "version"));
    client_version = client_version ? client_version : "";
    snprintf (req->client->client_version, sizeof req->client->client_version, "%.*s",
              cg_utf8_prefix (client_version, sizeof req->client->client_version - 1),
              client_version);
    json_t *result = json_pack ("{s:s, s:o, s:{s:s, s:s, s:s}, s:s}", "protocolVersion", version,
                                "capabilities", cg_methods_capabilities (req, false), "serverInfo",
                                "name", "cellgate", "title", "cellgate code sandbox", "version",
                                CG_VERSION, "instructions", cg_methods_instructions (req));
    //  Tasks (2025-11-25's): the tools that run code take params.task.
    if (strcmp (version, "2025-11-25") >= 0)
        json_object_set_new (json_object_get (result, "capabilities"), "tasks",
                             cg_tasks_capability ());
    cg_request_result (req, result);
}

static const char *s_mcp_levels[] = {"debug",    "info",  "notice",    "warning", "error",
                                     "critical", "alert", "emergency", NULL};

int
cg_server_log_level_of (const char *name)
{
    static const int levels[] = {3, 2, 2, 1, 0, 0, 0, 0};
    for (int i = 0; name && s_mcp_levels[i]; i++)
        if (strcmp (name, s_mcp_levels[i]) == 0)
            return levels[i];
    return -1;
}

void
cg_methods_set_log_level (const cg_request_t *req, json_t *params)
{
    int level = cg_server_log_level_of (json_string_value (json_object_get (params, "level")));
    if (level < 0) {
        cg_request_error (req, CG_JSONRPC_INVALID_PARAMS,
                          "logging/setLevel: 'level' must be debug, info, notice, warning, error, "
                          "critical, alert or emergency");
        return;
    }
    req->client->log_level = level;
    cg_request_result (req, json_object ());
}

const char *
cg_methods_instructions (const cg_request_t *req)
{
    const char *text = cg_server_instructions (req->server);
    return text ? text : "";
}

static void
s_ping (const cg_request_t *req, json_t *params)
{
    (void)params;
    cg_request_result (req, json_object ());
}

void
cg_methods_register (cg_server_t *server)
{
    cg_server_add_method (server, "initialize", cg_methods_initialize,
                          CG_METHOD_ANYTIME | CG_METHOD_HANDSHAKE);
    cg_server_add_method (server, "ping", s_ping, CG_METHOD_ANYTIME | CG_METHOD_HANDSHAKE);
    cg_server_add_method (server, "logging/setLevel", cg_methods_set_log_level,
                          CG_METHOD_HANDSHAKE);
}
