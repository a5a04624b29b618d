/*  cg_methods — the MCP methods besides tools: initialize (version negotiation) and
    logging/setLevel. */
#include "mcp/cg_methods.h"
#include "mcp/cg_listen.h"
#include "mcp/cg_tasks.h"
#include "mcp/cg_conformance.h"
#include "mcp/cg_jsonrpc.h"
#include "mcp/cg_mcp.h"
#include "mcp/cg_resources.h"
#include "mcp/tools/cg_tools.h"
#include "base/cg_utf8.h"

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

static bool
s_conformance (const cg_request_t *req)
{
    return strcmp (cg_server_config (req->server)->tool_profile, "conformance") == 0;
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
    //  The conformance suite's fixture prompts and completions are served under its profile.
    if (s_conformance (req))
        json_object_update_new (
            caps, json_pack ("{s:{s:b}, s:{}}", "prompts", "listChanged", 0, "completions"));
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
                                CG_VERSION, "instructions", CG_METHODS_INSTRUCTIONS);
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

//  prompts/list, prompts/get and completion/complete: the conformance suite's fixtures only.
static void
s_prompts_list (const cg_request_t *req, json_t *params)
{
    (void)params;
    json_t *prompts = cg_conformance_prompts ();
    json_array_append_new (prompts,
                           json_pack ("{s:s, s:s}", "name", "test_input_required_result_prompt",
                                      "description", "Conformance fixture: asks for its context."));
    cg_request_result (req, json_pack ("{s:o}", "prompts", prompts));
}

static void
s_prompts_get (const cg_request_t *req, json_t *params)
{
    const char *name = json_string_value (json_object_get (params, "name"));
    if (cg_conformance_mrtr_prompt (req, name, params))
        return;
    json_t *result =
        name ? cg_conformance_prompt (name, json_object_get (params, "arguments")) : NULL;
    if (result)
        cg_request_result (req, result);
    else
        cg_request_error (req, CG_JSONRPC_INVALID_PARAMS, "prompts/get: unknown prompt");
}

static void
s_complete (const cg_request_t *req, json_t *params)
{
    cg_request_result (req, cg_conformance_complete (params));
}

bool
cg_methods_dispatch (const cg_request_t *req, const char *method, json_t *params)
{
    static const struct {
        const char *method;
        void (*fn) (const cg_request_t *req, json_t *params);
        bool conformance; /* served under the conformance profile only */
    } methods[] = {
        {"logging/setLevel", cg_methods_set_log_level, false},
        {"resources/list", cg_resources_list, false},
        {"resources/templates/list", cg_resources_templates, false},
        {"resources/read", cg_resources_read, false},
        {"resources/subscribe", cg_resources_subscribe, false},
        {"resources/unsubscribe", cg_resources_unsubscribe, false},
        {"prompts/list", s_prompts_list, true},
        {"prompts/get", s_prompts_get, true},
        {"completion/complete", s_complete, true},
        {"tasks/get", cg_tasks_get, false},
        {"tasks/result", cg_tasks_result, false},
        {"tasks/list", cg_tasks_list, false},
        {"tasks/cancel", cg_tasks_cancel, false},
        {"tasks/update", cg_tasks_update, false},
        {"subscriptions/listen", cg_listen, false},
    };
    for (size_t i = 0; i < sizeof methods / sizeof methods[0]; i++)
        if (strcmp (method, methods[i].method) == 0
            && (!methods[i].conformance || s_conformance (req))) {
            methods[i].fn (req, params);
            return true;
        }
    return false;
}
