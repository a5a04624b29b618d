/*  cg_conformance_mrtr — the conformance suite's 2026-07-28 fixtures (--tool-profile
    conformance only): the input_required round trips of SEP-2322 (elicitation, sampling,
    roots, requestState, several inputs, several rounds, tampered state, capabilities, a
    prompt), a capability the client must declare, a log only when asked, a stream. */
#include "mcp/conformance/cg_conformance.h"
#include "mcp/cg_jsonrpc.h"
#include "mcp/cg_modern.h"
#include "mcp/cg_tasks.h"
#include "base/cg_utf8.h"
#include "base/cg_util.h"

#include <sodium.h>
#include <string.h>

static const char *const s_tools[][2] = {
    {"test_missing_capability", "Conformance fixture: needs the client's sampling capability."},
    {"test_input_required_result_elicitation", "Conformance fixture: asks the user's name."},
    {"test_input_required_result_sampling", "Conformance fixture: asks the client's LLM."},
    {"test_input_required_result_list_roots", "Conformance fixture: asks the client's roots."},
    {"test_input_required_result_request_state", "Conformance fixture: a confirmation with state."},
    {"test_input_required_result_multiple_inputs", "Conformance fixture: three inputs at once."},
    {"test_input_required_result_multi_round", "Conformance fixture: two rounds of input."},
    {"test_input_required_result_tampered_state", "Conformance fixture: signed state."},
    {"test_input_required_result_capabilities", "Conformance fixture: asks what the client can."},
    {"test_streaming_elicitation", "Conformance fixture: progress, then a question."},
    {"test_logging_tool", "Conformance fixture: logs only when the request asks for logs."},
    {"json_schema_2020_12_tool", "Tool with JSON Schema 2020-12 features"},
    {"greet", "Conformance fixture (tasks): greets at once, never a task."},
    {"slow_compute", "Conformance fixture (tasks): a job of `seconds` s, a task when it may be."},
    {"failing_job", "Conformance fixture (tasks): a task whose tool reports an error."},
    {"protocol_error_job", "Conformance fixture (tasks): a task that fails."},
    {"confirm_delete", "Conformance fixture (tasks): a task that asks to confirm."},
    {"multi_input", "Conformance fixture (tasks): a task that asks two things at once."},
    {"test_tool_with_task", "Conformance fixture (tasks): asks a name, then runs as a task."},
};

//  The tasks fixtures' arguments and task support (the suite's reference contract).
static const char *const s_task_tools[][3] = {
    {"greet", "{\"name\": {\"type\": \"string\"}}", "forbidden"},
    {"slow_compute", "{\"seconds\": {\"type\": \"integer\"}, \"label\": {\"type\": \"string\"}}",
     "optional"},
    {"failing_job", "{}", "required"},
    {"protocol_error_job", "{}", "optional"},
    {"confirm_delete", "{\"filename\": {\"type\": \"string\"}}", "optional"},
    {"multi_input", "{}", "optional"},
    {"test_tool_with_task", "{}", "required"},
};

//  json_schema_2020_12_tool's input schema: what the suite checks a server keeps.
#define S_SCHEMA_2020_12                                                                          \
    "{\"$schema\": \"https://json-schema.org/draft/2020-12/schema\", \"type\": \"object\", "      \
    "\"$defs\": {\"address\": {\"$anchor\": \"addressDef\", \"type\": \"object\", "               \
    "\"properties\": "                                                                            \
    "{\"street\": {\"type\": \"string\"}, \"city\": {\"type\": \"string\"}}}}, \"properties\": "  \
    "{\"name\": {\"type\": \"string\"}, \"address\": {\"$ref\": \"#/$defs/address\"}, "           \
    "\"contactMethod\": {\"type\": \"string\", \"enum\": [\"phone\", \"email\"]}, \"phone\": "    \
    "{\"type\": \"string\"}, \"email\": {\"type\": \"string\"}}, \"allOf\": [{\"anyOf\": "        \
    "[{\"required\": [\"phone\"]}, {\"required\": [\"email\"]}]}], \"if\": {\"properties\": "     \
    "{\"contactMethod\": {\"const\": \"phone\"}}, \"required\": [\"contactMethod\"]}, \"then\": " \
    "{\"required\": [\"phone\"]}, \"else\": {\"required\": [\"email\"]}, "                        \
    "\"additionalProperties\": false}"
#define S_TOOL_COUNT (sizeof s_tools / sizeof s_tools[0])

bool
cg_conformance_mrtr_known (const char *name)
{
    for (size_t i = 0; name && i < S_TOOL_COUNT; i++)
        if (strcmp (name, s_tools[i][0]) == 0)
            return true;
    return false;
}

void
cg_conformance_mrtr_tools (json_t *tools)
{
    for (size_t i = 0; i < S_TOOL_COUNT; i++) {
        bool special = strcmp (s_tools[i][0], "json_schema_2020_12_tool") == 0;
        json_t *schema = special ? json_loads (S_SCHEMA_2020_12, 0, NULL)
                                 : json_pack ("{s:s, s:{}}", "type", "object", "properties");
        json_t *tool = json_pack ("{s:s, s:s, s:o}", "name", s_tools[i][0], "description",
                                  s_tools[i][1], "inputSchema", schema);
        for (size_t t = 0; t < sizeof s_task_tools / sizeof s_task_tools[0]; t++)
            if (strcmp (s_task_tools[t][0], s_tools[i][0]) == 0) {
                json_object_set_new (schema, "properties",
                                     json_loads (s_task_tools[t][1], 0, NULL));
                json_object_set_new (tool, "execution",
                                     json_pack ("{s:s}", "taskSupport", s_task_tools[t][2]));
            }
        json_array_append_new (tools, tool);
    }
}

//  --------------------------------------------------------------------------
//  requestState: "<payload>.<HMAC-SHA256 of it, hex>", with a key of this process

static unsigned char s_key[crypto_auth_hmacsha256_KEYBYTES];
static bool s_keyed;

static char *
s_state (const char *payload)
{
    if (!s_keyed) {
        crypto_auth_hmacsha256_keygen (s_key);
        s_keyed = true;
    }
    unsigned char mac[crypto_auth_hmacsha256_BYTES];
    crypto_auth_hmacsha256 (mac, (const unsigned char *)payload, strlen (payload), s_key);
    char hex[2 * sizeof mac + 1];
    sodium_bin2hex (hex, sizeof hex, mac, sizeof mac);
    return cg_strdupf ("%s.%s", payload, hex);
}

//  The payload of STATE when its signature holds, else NULL (caller frees).
static char *
s_verified (const char *state)
{
    const char *dot = state && s_keyed ? strrchr (state, '.') : NULL;
    if (!dot)
        return NULL;
    char *payload = cg_xstrndup (state, (size_t)(dot - state));
    cleanup_free char *again = s_state (payload);
    if (strlen (again) != strlen (state) || sodium_memcmp (again, state, strlen (state)) != 0)
        zstr_free (&payload);
    return payload;
}

//  --------------------------------------------------------------------------
//  Input requests

static json_t *
s_elicit (const char *message, const char *field, const char *type)
{
    return json_pack ("{s:s, s:{s:s, s:s, s:{s:s, s:{s:{s:s}}, s:[s]}}}", "method",
                      "elicitation/create", "params", "mode", "form", "message", message,
                      "requestedSchema", "type", "object", "properties", field, "type", type,
                      "required", field);
}

static json_t *
s_sample (const char *question)
{
    return json_pack ("{s:s, s:{s:[{s:s, s:{s:s, s:s}}], s:i}}", "method", "sampling/createMessage",
                      "params", "messages", "role", "user", "content", "type", "text", "text",
                      question, "maxTokens", 100);
}

static json_t *
s_roots (void)
{
    return json_pack ("{s:s, s:{}}", "method", "roots/list", "params");
}

//  Answers REQ input_required with REQUESTS (stolen) and, when STATE, a signed requestState.
static void
s_ask (const cg_request_t *req, json_t *requests, const char *state)
{
    json_t *result =
        json_pack ("{s:s, s:o}", "resultType", "input_required", "inputRequests", requests);
    if (state) {
        cleanup_free char *signed_state = s_state (state);
        json_object_set_new (result, "requestState", json_string (signed_state));
    }
    cg_request_result (req, result);
}

static void
s_text (const cg_request_t *req, const char *text)
{
    cg_request_result (req,
                       json_pack ("{s:[{s:s, s:s}]}", "content", "type", "text", "text", text));
}

//  The string FIELD of the accepted elicitation answer ANSWER, or NULL.
static const char *
s_field (json_t *answer, const char *field)
{
    return json_string_value (json_object_get (json_object_get (answer, "content"), field));
}

//  --------------------------------------------------------------------------

//  The test_input_required_result_* round trips: RESPONSES (inputResponses, or NULL),
//  the request's client CAPS, and the payload of its VERIFIED requestState (or NULL).
static void
s_round_trip (const cg_request_t *req, const char *name, json_t *responses, json_t *caps,
              const char *verified)
{
    json_t *user = json_object_get (responses, "user_name");
    if (strcmp (name, "test_input_required_result_elicitation") == 0) {
        const char *who = s_field (user, "name");
        if (!who)
            return s_ask (
                req,
                json_pack ("{s:o}", "user_name", s_elicit ("What is your name?", "name", "string")),
                NULL);
        cleanup_free char *text = cg_strdupf ("Hello, %.*s!", cg_utf8_prefix (who, 256), who);
        s_text (req, text);
    }
    else if (strcmp (name, "test_input_required_result_sampling") == 0) {
        json_t *answer = json_object_get (responses, "sample_request");
        const char *text =
            json_string_value (json_object_get (json_object_get (answer, "content"), "text"));
        if (!answer)
            return s_ask (
                req,
                json_pack ("{s:o}", "sample_request", s_sample ("What is the capital of France?")),
                NULL);
        cleanup_free char *out = cg_strdupf (
            "Sampling result: %.*s", cg_utf8_prefix (text ? text : "", 256), text ? text : "");
        s_text (req, out);
    }
    else if (strcmp (name, "test_input_required_result_list_roots") == 0) {
        json_t *answer = json_object_get (responses, "roots_request");
        if (!answer)
            return s_ask (req, json_pack ("{s:o}", "roots_request", s_roots ()), NULL);
        cleanup_free char *out =
            cg_strdupf ("Found %zu root(s)", json_array_size (json_object_get (answer, "roots")));
        s_text (req, out);
    }
    else if (strcmp (name, "test_input_required_result_request_state") == 0
             || strcmp (name, "test_input_required_result_tampered_state") == 0) {
        bool tamper = strstr (name, "tampered") != NULL;
        if (!verified || !json_object_get (responses, "confirm"))
            return s_ask (req,
                          json_pack ("{s:o}", "confirm", s_elicit ("Confirm?", "ok", "boolean")),
                          tamper ? "tampered:1" : "state:1");
        s_text (req, tamper ? "integrity-ok" : "state-ok");
    }
    else if (strcmp (name, "test_input_required_result_multiple_inputs") == 0) {
        if (verified && json_object_get (responses, "user_name")
            && json_object_get (responses, "greeting")
            && json_object_get (responses, "client_roots"))
            return s_text (req, "All three inputs received");
        s_ask (req,
               json_pack ("{s:o, s:o, s:o}", "user_name",
                          s_elicit ("What is your name?", "name", "string"), "greeting",
                          s_sample ("Say hello."), "client_roots", s_roots ()),
               "multiple:1");
    }
    else if (strcmp (name, "test_input_required_result_multi_round") == 0) {
        if (!verified)
            return s_ask (req,
                          json_pack ("{s:o}", "step1",
                                     s_elicit ("Step 1: What is your name?", "name", "string")),
                          "round:1");
        if (strcmp (verified, "round:1") == 0 && json_object_get (responses, "step1"))
            return s_ask (
                req,
                json_pack ("{s:o}", "step2",
                           s_elicit ("Step 2: What is your favorite color?", "color", "string")),
                "round:2");
        if (strcmp (verified, "round:2") == 0 && json_object_get (responses, "step2"))
            return s_text (req, "Both rounds answered");
        s_ask (
            req,
            json_pack ("{s:o}", "step1", s_elicit ("Step 1: What is your name?", "name", "string")),
            "round:1");
    }
    else if (strcmp (name, "test_input_required_result_capabilities") == 0) {
        if (responses)
            return s_text (req, "Answered what could be asked");
        json_t *requests = json_object ();
        if (json_object_get (caps, "elicitation"))
            json_object_set_new (requests, "user_name",
                                 s_elicit ("What is your name?", "name", "string"));
        if (json_object_get (caps, "sampling"))
            json_object_set_new (requests, "greeting", s_sample ("Say hello."));
        if (json_object_get (caps, "roots"))
            json_object_set_new (requests, "client_roots", s_roots ());
        if (json_object_size (requests) == 0) {
            json_decref (requests);
            return s_text (req, "Nothing the client can be asked");
        }
        s_ask (req, requests, NULL);
    }
}

static json_t *
s_content (const char *text, bool is_error)
{
    return json_pack ("{s:[{s:s, s:s}], s:b}", "content", "type", "text", "text", text, "isError",
                      is_error);
}

//  The tasks extension's fixtures (tasks-* scenarios): true when NAME is one (answered).
static bool
s_task_fixture (const cg_request_t *req, const char *name, json_t *params)
{
    json_t *arguments = json_object_get (params, "arguments");
    bool tasks = req->modern_tasks;
    bool required = strcmp (name, "failing_job") == 0 || strcmp (name, "test_tool_with_task") == 0;
    if (strcmp (name, "greet") == 0) {
        const char *who = json_string_value (json_object_get (arguments, "name"));
        cleanup_free char *text =
            cg_strdupf ("Hello, %.*s!", cg_utf8_prefix (who ? who : "", 256), who ? who : "");
        cg_request_result (req, s_content (text, false));
        return true;
    }
    if (strcmp (name, "slow_compute") && strcmp (name, "failing_job")
        && strcmp (name, "protocol_error_job") && strcmp (name, "confirm_delete")
        && strcmp (name, "multi_input") && strcmp (name, "test_tool_with_task"))
        return false;
    if (required && !tasks) {
        cg_modern_missing (req,
                           "this tool runs as a task only: declare the "
                           "io.modelcontextprotocol/tasks extension",
                           json_pack ("{s:{s:{}}}", "extensions", CG_MODERN_TASKS));
        return true;
    }
    json_int_t seconds = json_integer_value (json_object_get (arguments, "seconds"));
    const char *label = json_string_value (json_object_get (arguments, "label"));
    cleanup_free char *done =
        cg_strdupf ("Computed %s after %d s", label ? label : "", (int)seconds);
    if (!tasks || (strcmp (name, "slow_compute") == 0 && seconds <= 0)) {
        cg_request_result (req, s_content (done, strcmp (name, "failing_job") == 0));
        return true;
    }
    if (strcmp (name, "slow_compute") == 0)
        cg_tasks_fixture (req, name, seconds * 1000, s_content (done, false), NULL);
    else if (strcmp (name, "failing_job") == 0)
        cg_tasks_fixture (req, name, 1000, s_content ("the job failed", true), NULL);
    else if (strcmp (name, "protocol_error_job") == 0)
        cg_tasks_fixture (req, name, 300, NULL, NULL);
    else if (strcmp (name, "confirm_delete") == 0) {
        const char *file = json_string_value (json_object_get (arguments, "filename"));
        cleanup_free char *question =
            cg_strdupf ("Delete %.*s?", cg_utf8_prefix (file ? file : "", 256), file ? file : "");
        cg_tasks_fixture (
            req, name, 0, s_content ("Delete answered", false),
            json_pack ("{s:o}", "confirm", s_elicit (question, "confirm", "boolean")));
    }
    else if (strcmp (name, "multi_input") == 0)
        cg_tasks_fixture (req, name, 0, s_content ("Both answered", false),
                          json_pack ("{s:o, s:o}", "name",
                                     s_elicit ("Your name?", "name", "string"), "color",
                                     s_elicit ("Your color?", "color", "string")));
    else {
        //  test_tool_with_task: the name first (input_required), then a task.
        json_t *user = json_object_get (json_object_get (params, "inputResponses"), "user_name");
        const char *who = s_field (user, "name");
        if (!who) {
            s_ask (
                req,
                json_pack ("{s:o}", "user_name", s_elicit ("What is your name?", "name", "string")),
                NULL);
            return true;
        }
        cleanup_free char *text =
            cg_strdupf ("Hello from the task, %.*s!", cg_utf8_prefix (who, 256), who);
        cg_tasks_fixture (req, name, 300, s_content (text, false), NULL);
    }
    return true;
}

void
cg_conformance_mrtr (const cg_request_t *req, const char *name, json_t *params)
{
    json_t *responses = json_object_get (params, "inputResponses");
    json_t *caps = json_object_get (json_object_get (params, "_meta"),
                                    "io.modelcontextprotocol/clientCapabilities");
    const char *state = json_string_value (json_object_get (params, "requestState"));
    cleanup_free char *verified = state ? s_verified (state) : NULL;
    if (json_object_get (params, "inputResponses") && !json_is_object (responses)) {
        cg_request_error (req, CG_JSONRPC_INVALID_PARAMS, "inputResponses must be an object");
        return;
    }
    if (state && !verified) {
        cg_request_error (req, CG_JSONRPC_INVALID_PARAMS,
                          "requestState failed its integrity check");
        return;
    }
    json_t *user = json_object_get (responses, "user_name");
    if (user && !json_is_object (user)) {
        cg_request_error (req, CG_JSONRPC_INVALID_PARAMS,
                          "user_name must be an elicitation result");
        return;
    }
    if (s_task_fixture (req, name, params))
        return;
    if (strcmp (name, "json_schema_2020_12_tool") == 0)
        s_text (req, "ok");
    else if (strcmp (name, "test_missing_capability") == 0) {
        if (json_object_get (caps, "sampling"))
            return s_text (req, "Success");
        cg_modern_missing (req, "this tool needs the client's sampling capability",
                           json_pack ("{s:{}}", "sampling"));
    }
    else if (strcmp (name, "test_logging_tool") == 0) {
        //  Only a request that set _meta logLevel hears of it (cg_modern checked the level).
        if (json_object_get (json_object_get (params, "_meta"), "io.modelcontextprotocol/logLevel"))
            cg_request_notify (req, "notifications/message",
                               json_pack ("{s:s, s:s, s:s}", "level", "info", "logger",
                                          "conformance", "data", "a log line, as asked"));
        s_text (req, "Logged (if asked)");
    }
    else if (strcmp (name, "test_streaming_elicitation") == 0) {
        if (req->progress_token)
            cg_request_notify (req, "notifications/progress",
                               json_pack ("{s:O, s:i, s:i}", "progressToken", req->progress_token,
                                          "progress", 1, "total", 2));
        if (user)
            return s_text (req, "Streamed, then answered");
        s_ask (req,
               json_pack ("{s:o}", "user_name", s_elicit ("What is your name?", "name", "string")),
               NULL);
    }
    else
        s_round_trip (req, name, responses, caps, verified);
}

bool
cg_conformance_mrtr_prompt (const cg_request_t *req, const char *name, json_t *params)
{
    if (!name || strcmp (name, "test_input_required_result_prompt") != 0)
        return false;
    json_t *answer = json_object_get (json_object_get (params, "inputResponses"), "user_context");
    const char *context = s_field (answer, "context");
    if (!context)
        s_ask (req,
               json_pack ("{s:o}", "user_context",
                          s_elicit ("What context should the prompt use?", "context", "string")),
               NULL);
    else {
        cleanup_free char *text =
            cg_strdupf ("Prompt with context: %.*s", cg_utf8_prefix (context, 256), context);
        cg_request_result (req, json_pack ("{s:[{s:s, s:{s:s, s:s}}]}", "messages", "role", "user",
                                           "content", "type", "text", "text", text));
    }
    return true;
}
