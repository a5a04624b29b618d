/*  Unit tests: the MCP core in memory (mcp_harness) — the handshake's order, initialize,
    tools/list, 2026-07-28's per-request checks and server/discover, the refusals (an
    unknown method, an unknown tool, bad arguments), the methods 2026-07-28 removed, and
    the conformance fixtures served only when their provider is registered. Every request
    goes through cg_server_handle, the method table and the hooks, as a transport's does. */
#include "mcp_harness.h"
#include "mcp/conformance/cg_conformance.h"
#include "mcp/cg_jsonrpc.h"
#include "base/cg_util.h"
#include "cg_test.h"

#include <string.h>

//  True when the tools array TOOLS names NAME.
static bool
s_has_tool (json_t *tools, const char *name)
{
    size_t i;
    json_t *tool;
    json_array_foreach (tools, i, tool)
    {
        if (strcmp (json_string_value (json_object_get (tool, "name")), name) == 0)
            return true;
    }
    return false;
}

//  Before initialize only initialize, ping and server/discover are served; initialize
//  agrees on a revision and says what the server offers.
static void
s_test_handshake (void)
{
    h_t h;
    if (h_start (&h, NULL, NULL) < 0) {
        EXPECT (false, "h_start");
        return;
    }
    cg_client_t *client = h_client ("stdio");
    h_channel_t *channel = h_channel (client);
    json_t *sent =
        h_send (&h, channel, "{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": \"tools/list\"}");
    EXPECT (h_error_code (h_answer (sent, 1)) == CG_JSONRPC_INVALID_REQUEST
                && strstr (h_error_text (h_answer (sent, 1)), "not initialized"),
            "tools/list before initialize: %s", h_error_text (h_answer (sent, 1)));
    json_decref (sent);
    sent = h_send (&h, channel, "{\"jsonrpc\": \"2.0\", \"id\": 2, \"method\": \"ping\"}");
    EXPECT (json_is_object (h_result (h_answer (sent, 2))), "ping before initialize");
    json_decref (sent);
    sent = h_send (&h, channel, "{\"jsonrpc\": \"2.0\", \"id\": 3, \"method\": \"nope/nothing\"}");
    EXPECT (h_error_code (h_answer (sent, 3)) == CG_JSONRPC_INVALID_REQUEST,
            "an unknown method before initialize is refused as uninitialized");
    json_decref (sent);
    sent = h_send (&h, channel,
                   "{\"jsonrpc\": \"2.0\", \"id\": 4, \"method\": \"initialize\", \"params\": "
                   "{\"protocolVersion\": \"1999-01-01\", \"capabilities\": {\"elicitation\": {}},"
                   " \"clientInfo\": {\"name\": \"unit\", \"version\": \"2\"}}}");
    json_t *result = h_result (h_answer (sent, 4));
    EXPECT (strcmp (json_string_value (json_object_get (result, "protocolVersion")), "2025-11-25")
                == 0,
            "an unknown revision is offered our latest");
    json_t *caps = json_object_get (result, "capabilities");
    EXPECT (json_object_get (caps, "tasks") && json_object_get (caps, "logging")
                && json_object_get (caps, "resources") && !json_object_get (caps, "prompts")
                && !json_object_get (caps, "completions"),
            "2025-11-25's capabilities, no prompts without their provider");
    EXPECT (strstr (json_string_value (json_object_get (result, "instructions")), "execute_code"),
            "the tools' instructions");
    EXPECT (client->initialized && client->elicitation && strcmp (client->name, "unit") == 0,
            "the client's state");
    json_decref (sent);
    sent = h_send (&h, channel,
                   "{\"jsonrpc\": \"2.0\", \"id\": 5, \"method\": \"initialize\", \"params\": {}}");
    EXPECT (h_error_code (h_answer (sent, 5)) == CG_JSONRPC_INVALID_PARAMS,
            "initialize needs a version");
    json_decref (sent);
    sent = h_send (&h, channel,
                   "{\"jsonrpc\": \"2.0\", \"id\": 6, \"method\": \"logging/setLevel\", "
                   "\"params\": {\"level\": \"warning\"}}");
    EXPECT (json_is_object (h_result (h_answer (sent, 6))) && client->log_level == 1,
            "logging/setLevel");
    json_decref (sent);
    sent = h_send (&h, channel, "[1, 2]");
    EXPECT (h_error_code (json_array_get (sent, 0)) == CG_JSONRPC_INVALID_REQUEST, "not a request");
    json_decref (sent);
    h_channel_free (&channel);
    h_client_free (&client);
    h_stop (&h);
}

//  tools/list is the tool table's; tools/call refuses what it cannot run, in the answer
//  the client expects (a JSON-RPC error for the protocol's mistakes, a tool error result
//  for the tool's); an unknown method is -32601 (HTTP 404).
static void
s_test_tools_and_refusals (void)
{
    h_t h;
    if (h_start (&h, NULL, NULL) < 0) {
        EXPECT (false, "h_start");
        return;
    }
    cg_client_t *client = h_client ("stdio");
    h_channel_t *channel = h_channel (client);
    h_initialize (&h, channel, "2025-11-25");
    json_t *sent =
        h_send (&h, channel, "{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": \"tools/list\"}");
    json_t *tools = json_object_get (h_result (h_answer (sent, 1)), "tools");
    EXPECT (s_has_tool (tools, "execute_code") && s_has_tool (tools, "calculate")
                && !s_has_tool (tools, "test_simple_text"),
            "tools/list: the table's tools, no fixture (%zu)", json_array_size (tools));
    json_decref (sent);
    sent = h_send (&h, channel,
                   "{\"jsonrpc\": \"2.0\", \"id\": 2, \"method\": \"tools/call\", \"params\": "
                   "{\"name\": \"nope\", \"arguments\": {}}}");
    EXPECT (h_error_code (h_answer (sent, 2)) == CG_JSONRPC_INVALID_PARAMS
                && strcmp (h_error_text (h_answer (sent, 2)), "Unknown tool: nope") == 0,
            "an unknown tool: %s", h_error_text (h_answer (sent, 2)));
    json_decref (sent);
    sent = h_send (&h, channel,
                   "{\"jsonrpc\": \"2.0\", \"id\": 3, \"method\": \"tools/call\", \"params\": {}}");
    EXPECT (h_error_code (h_answer (sent, 3)) == CG_JSONRPC_INVALID_PARAMS,
            "a call without a name");
    json_decref (sent);
    sent = h_send (&h, channel,
                   "{\"jsonrpc\": \"2.0\", \"id\": 4, \"method\": \"tools/call\", \"params\": "
                   "{\"name\": \"execute_code\", \"arguments\": {\"code\": \"1\", \"bogus\": 1}}}");
    json_t *result = h_result (h_answer (sent, 4));
    json_t *structured = json_object_get (result, "structuredContent");
    EXPECT (
        json_is_true (json_object_get (result, "isError"))
            && strcmp (json_string_value (json_object_get (structured, "error")), "invalid_params")
                   == 0
            && strstr (json_string_value (json_object_get (structured, "message")),
                       "unknown argument 'bogus'"),
        "bad arguments: a run's refusal");
    json_decref (sent);
    sent = h_send (&h, channel,
                   "{\"jsonrpc\": \"2.0\", \"id\": 5, \"method\": \"tools/call\", \"params\": "
                   "{\"name\": \"list_sessions\", \"arguments\": [1]}}");
    result = h_result (h_answer (sent, 5));
    EXPECT (json_is_true (json_object_get (result, "isError")), "arguments not an object");
    json_decref (sent);
    sent = h_send (&h, channel, "{\"jsonrpc\": \"2.0\", \"id\": 6, \"method\": \"foo/bar\"}");
    EXPECT (h_error_code (h_answer (sent, 6)) == CG_JSONRPC_METHOD_NOT_FOUND
                && strcmp (h_error_text (h_answer (sent, 6)), "Method not found: foo/bar") == 0
                && channel->base.status == 404,
            "an unknown method: %s", h_error_text (h_answer (sent, 6)));
    json_decref (sent);
    //  A tool that answers now: list_sessions, none yet.
    sent = h_send (&h, channel,
                   "{\"jsonrpc\": \"2.0\", \"id\": 7, \"method\": \"tools/call\", \"params\": "
                   "{\"name\": \"list_sessions\"}}");
    result = h_result (h_answer (sent, 7));
    EXPECT (result && !json_is_true (json_object_get (result, "isError")), "list_sessions");
    json_decref (sent);
    h_channel_free (&channel);
    h_client_free (&client);
    h_stop (&h);
}

//  A 2026-07-28 request is served on its own (no initialize), its _meta checked first;
//  what 2026-07-28 removed is an unknown method there; its results are marked.
static void
s_test_modern (void)
{
    h_t h;
    if (h_start (&h, NULL, NULL) < 0) {
        EXPECT (false, "h_start");
        return;
    }
    cg_client_t *client = h_client ("modern");
    h_channel_t *channel = h_channel (client);
    json_t *sent = h_send (&h, channel,
                           "{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": \"server/discover\", "
                           "\"params\": {" H_MODERN_META ("{}") "}}");
    json_t *result = h_result (h_answer (sent, 1));
    EXPECT (strcmp (json_string_value (
                        json_array_get (json_object_get (result, "supportedVersions"), 0)),
                    "2026-07-28")
                == 0,
            "server/discover: 2026-07-28 first");
    EXPECT (strcmp (json_string_value (json_object_get (result, "resultType")), "complete") == 0
                && json_integer_value (json_object_get (result, "ttlMs")) == 0
                && json_object_get (json_object_get (result, "_meta"),
                                    "io.modelcontextprotocol/serverInfo"),
            "server/discover's result is marked");
    json_t *caps = json_object_get (result, "capabilities");
    EXPECT (json_object_get (json_object_get (caps, "extensions"), "io.modelcontextprotocol/tasks")
                && !json_object_get (caps, "logging"),
            "2026-07-28's capabilities");
    EXPECT (!client->initialized && strcmp (client->version, "2026-07-28") == 0,
            "no handshake, the revision taken");
    json_decref (sent);
    sent = h_send (&h, channel,
                   "{\"jsonrpc\": \"2.0\", \"id\": 2, \"method\": \"tools/list\", "
                   "\"params\": {" H_MODERN_META ("{}") "}}");
    result = h_result (h_answer (sent, 2));
    EXPECT (json_array_size (json_object_get (result, "tools")) > 0
                && json_object_get (result, "cacheScope"),
            "tools/list without initialize, cacheable");
    json_decref (sent);
    sent = h_send (&h, channel,
                   "{\"jsonrpc\": \"2.0\", \"id\": 3, \"method\": \"tools/list\", \"params\": "
                   "{\"_meta\": {\"io.modelcontextprotocol/protocolVersion\": \"2026-07-28\"}}}");
    EXPECT (h_error_code (h_answer (sent, 3)) == CG_JSONRPC_INVALID_PARAMS
                && channel->base.status == 400,
            "no clientCapabilities: -32602, 400");
    json_decref (sent);
    sent = h_send (&h, channel,
                   "{\"jsonrpc\": \"2.0\", \"id\": 4, \"method\": \"tools/list\", \"params\": "
                   "{\"_meta\": {\"io.modelcontextprotocol/protocolVersion\": \"2030-01-01\", "
                   "\"io.modelcontextprotocol/clientCapabilities\": {}}}}");
    json_t *error = json_object_get (h_answer (sent, 4), "error");
    EXPECT (h_error_code (h_answer (sent, 4)) == CG_JSONRPC_UNSUPPORTED_VERSION
                && json_object_get (json_object_get (error, "data"), "supported"),
            "an unknown revision: -32022 with what is supported");
    json_decref (sent);
    sent = h_send (&h, channel,
                   "{\"jsonrpc\": \"2.0\", \"id\": 5, \"method\": \"tools/list\", \"params\": "
                   "{\"_meta\": {\"io.modelcontextprotocol/protocolVersion\": \"2026-07-28\", "
                   "\"io.modelcontextprotocol/clientCapabilities\": {}, "
                   "\"io.modelcontextprotocol/logLevel\": \"loud\"}}}");
    EXPECT (h_error_code (h_answer (sent, 5)) == CG_JSONRPC_INVALID_PARAMS, "a bad logLevel");
    json_decref (sent);
    const char *removed[] = {
        "initialize", "ping", "logging/setLevel", "resources/subscribe", "tasks/result",
        "tasks/list", NULL};
    for (int i = 0; removed[i]; i++) {
        sent =
            h_send (&h, channel,
                    "{\"jsonrpc\": \"2.0\", \"id\": 6, \"method\": \"%s\", "
                    "\"params\": {" H_MODERN_META ("{\"extensions\": "
                                                   "{\"io.modelcontextprotocol/tasks\": {}}}") "}}",
                    removed[i]);
        EXPECT (h_error_code (h_answer (sent, 6)) == CG_JSONRPC_METHOD_NOT_FOUND
                    && strstr (h_error_text (h_answer (sent, 6)), "is not a method of 2026-07-28")
                    && channel->base.status == 404,
                "%s is not 2026-07-28's: %s", removed[i], h_error_text (h_answer (sent, 6)));
        json_decref (sent);
    }
    sent = h_send (&h, channel,
                   "{\"jsonrpc\": \"2.0\", \"id\": 7, \"method\": \"tasks/get\", "
                   "\"params\": {\"taskId\": \"x\", " H_MODERN_META ("{}") "}}");
    error = json_object_get (h_answer (sent, 7), "error");
    EXPECT (h_error_code (h_answer (sent, 7)) == CG_JSONRPC_MISSING_CAPABILITY
                && json_object_get (json_object_get (error, "data"), "requiredCapabilities"),
            "the tasks methods need the extension");
    json_decref (sent);
    sent = h_send (
        &h, channel,
        "{\"jsonrpc\": \"2.0\", \"id\": 8, \"method\": \"resources/read\", "
        "\"params\": {\"uri\": \"cellgate://sessions/none/files/a\", " H_MODERN_META ("{}") "}}");
    EXPECT (h_error_code (h_answer (sent, 8)) == CG_JSONRPC_INVALID_PARAMS,
            "2026-07-28: a resource not found is -32602 (-32002 is 2025's)");
    json_decref (sent);
    sent = h_send (&h, channel,
                   "{\"jsonrpc\": \"2.0\", \"id\": 9, \"method\": \"subscriptions/listen\", "
                   "\"params\": {\"notifications\": {}}}");
    EXPECT (h_error_code (h_answer (sent, 9)) == CG_JSONRPC_INVALID_REQUEST,
            "a handshake request of a client that did not initialize");
    json_decref (sent);
    h_channel_free (&channel);
    h_client_free (&client);
    h_stop (&h);
}

//  The conformance fixtures are a provider: served, with prompts and completions, only
//  when registered (the program does under --tool-profile conformance).
static void
s_test_conformance_provider (void)
{
    h_t h;
    if (h_start (&h, NULL, cg_conformance_register) < 0) {
        EXPECT (false, "h_start");
        return;
    }
    cg_client_t *client = h_client ("stdio");
    h_channel_t *channel = h_channel (client);
    json_t *sent = h_send (&h, channel,
                           "{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": \"initialize\", "
                           "\"params\": {\"protocolVersion\": \"2025-11-25\"}}");
    json_t *caps = json_object_get (h_result (h_answer (sent, 1)), "capabilities");
    EXPECT (json_object_get (caps, "prompts") && json_object_get (caps, "completions"),
            "prompts and completions with the fixtures");
    json_decref (sent);
    sent = h_send (&h, channel, "{\"jsonrpc\": \"2.0\", \"id\": 2, \"method\": \"tools/list\"}");
    json_t *tools = json_object_get (h_result (h_answer (sent, 2)), "tools");
    EXPECT (s_has_tool (tools, "execute_code") && s_has_tool (tools, "test_simple_text"),
            "tools/list: the table's, then the fixtures'");
    json_decref (sent);
    sent = h_send (&h, channel,
                   "{\"jsonrpc\": \"2.0\", \"id\": 3, \"method\": \"tools/call\", \"params\": "
                   "{\"name\": \"test_simple_text\"}}");
    json_t *content = json_object_get (h_result (h_answer (sent, 3)), "content");
    EXPECT (strstr (json_string_value (json_object_get (json_array_get (content, 0), "text")),
                    "simple text"),
            "a fixture's call");
    json_decref (sent);
    //  A fixture that asks the client: its response finishes the call.
    sent = h_send (&h, channel,
                   "{\"jsonrpc\": \"2.0\", \"id\": 4, \"method\": \"tools/call\", \"params\": "
                   "{\"name\": \"test_sampling\", \"arguments\": {\"prompt\": \"hi\"}}}");
    json_t *ask = h_note (sent, "sampling/createMessage");
    ask = ask ? ask : json_array_get (sent, 0);
    const char *asked = json_string_value (json_object_get (ask, "id"));
    EXPECT (asked && !h_answer (sent, 4), "the fixture asks first");
    cleanup_free char *asked_id = asked ? cg_xstrdup (asked) : cg_xstrdup ("");
    json_decref (sent);
    sent = h_send (&h, channel,
                   "{\"jsonrpc\": \"2.0\", \"id\": \"%s\", \"result\": {\"content\": "
                   "{\"type\": \"text\", \"text\": \"hello\"}}}",
                   asked_id);
    content = json_object_get (h_result (h_answer (sent, 4)), "content");
    EXPECT (strstr (json_string_value (json_object_get (json_array_get (content, 0), "text")),
                    "LLM response: hello"),
            "the client's response finishes the fixture's call");
    EXPECT (zhashx_size (h.server.calls) == 0, "and ends it");
    json_decref (sent);
    sent = h_send (&h, channel,
                   "{\"jsonrpc\": \"2.0\", \"id\": 5, \"method\": \"resources/read\", "
                   "\"params\": {\"uri\": \"test://static-text\"}}");
    EXPECT (json_array_size (json_object_get (h_result (h_answer (sent, 5)), "contents")) == 1,
            "a fixture resource");
    json_decref (sent);
    sent = h_send (&h, channel,
                   "{\"jsonrpc\": \"2.0\", \"id\": 6, \"method\": \"prompts/get\", "
                   "\"params\": {\"name\": \"test_simple_prompt\"}}");
    EXPECT (json_object_get (h_result (h_answer (sent, 6)), "messages"), "a fixture prompt");
    json_decref (sent);
    h_channel_free (&channel);
    h_client_free (&client);
    h_stop (&h);
    //  Without the provider: none of it.
    if (h_start (&h, NULL, NULL) < 0) {
        EXPECT (false, "h_start");
        return;
    }
    client = h_client ("stdio");
    channel = h_channel (client);
    h_initialize (&h, channel, "2025-11-25");
    sent = h_send (&h, channel, "{\"jsonrpc\": \"2.0\", \"id\": 7, \"method\": \"prompts/list\"}");
    EXPECT (h_error_code (h_answer (sent, 7)) == CG_JSONRPC_METHOD_NOT_FOUND,
            "no prompts by default");
    json_decref (sent);
    sent = h_send (&h, channel,
                   "{\"jsonrpc\": \"2.0\", \"id\": 8, \"method\": \"tools/call\", \"params\": "
                   "{\"name\": \"test_simple_text\"}}");
    EXPECT (h_error_code (h_answer (sent, 8)) == CG_JSONRPC_INVALID_PARAMS,
            "no fixture by default");
    json_decref (sent);
    h_channel_free (&channel);
    h_client_free (&client);
    h_stop (&h);
}

int
main (void)
{
    s_test_handshake ();
    s_test_tools_and_refusals ();
    s_test_modern ();
    s_test_conformance_provider ();
    printf ("%d passed, %d failed\n", s_passes, s_failures);
    return s_failures ? 1 : 0;
}
