/*  cg_conformance — the fixture tools the official MCP conformance suite calls by name
    (test_simple_text, test_image_content, ...), served only under --tool-profile
    conformance, never by default. */
#include "mcp/conformance/cg_conformance.h"

#include "base/cg_utf8.h"
#include "base/cg_util.h"

#include <string.h>

//  One transparent pixel, and a tiny WAV: the suite's reference payloads.
#define S_PNG                                                                                      \
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJg" \
    "gg=="
#define S_WAV "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA="

static const struct {
    const char *name;
    const char *description;
    const char *argument; /* one optional string argument, or NULL */
} s_fixtures[] = {
    {"test_simple_text", "Conformance fixture: returns one text block.", NULL},
    {"test_image_content", "Conformance fixture: returns one PNG image block.", NULL},
    {"test_audio_content", "Conformance fixture: returns one WAV audio block.", NULL},
    {"test_embedded_resource", "Conformance fixture: returns an embedded text resource.", NULL},
    {"test_multiple_content_types", "Conformance fixture: returns text, an image and a resource.",
     NULL},
    {"test_tool_with_logging", "Conformance fixture: logs three messages while it runs.", NULL},
    {"test_tool_with_progress", "Conformance fixture: reports progress 0, 50, 100 of 100.", NULL},
    {"test_error_handling", "Conformance fixture: returns a tool error (isError).", NULL},
    {"test_sampling", "Conformance fixture: asks the client's LLM (sampling/createMessage).",
     "prompt"},
    {"test_elicitation", "Conformance fixture: asks the user for a username and an email.",
     "message"},
    {"test_elicitation_sep1034_defaults",
     "Conformance fixture: elicitation with default values (SEP-1034).", NULL},
    {"test_elicitation_sep1330_enums",
     "Conformance fixture: elicitation with the enum forms of SEP-1330.", NULL},
};
#define S_FIXTURES (sizeof s_fixtures / sizeof s_fixtures[0])

json_t *
cg_conformance_tools (void)
{
    json_t *tools = json_array ();
    for (size_t i = 0; i < S_FIXTURES; i++) {
        json_t *props = json_object ();
        if (s_fixtures[i].argument)
            json_object_set_new (props, s_fixtures[i].argument,
                                 json_pack ("{s:s}", "type", "string"));
        json_array_append_new (tools,
                               json_pack ("{s:s, s:s, s:{s:s, s:o}}", "name", s_fixtures[i].name,
                                          "description", s_fixtures[i].description, "inputSchema",
                                          "type", "object", "properties", props));
    }
    cg_conformance_mrtr_tools (tools);
    return tools;
}

bool
cg_conformance_known (const char *name)
{
    for (size_t i = 0; i < S_FIXTURES; i++)
        if (strcmp (name, s_fixtures[i].name) == 0)
            return true;
    return false;
}

static json_t *
s_text (const char *text)
{
    return json_pack ("{s:s, s:s}", "type", "text", "text", text);
}

static json_t *
s_result (json_t *content, bool is_error)
{
    return json_pack ("{s:o, s:b}", "content", content, "isError", is_error);
}

static json_t *
s_note (const char *method, json_t *params)
{
    return json_pack ("{s:s, s:o}", "method", method, "params", params);
}

//  The form requestedSchema of each elicitation fixture.
static json_t *
s_elicitation_schema (const char *name)
{
    if (strcmp (name, "test_elicitation_sep1034_defaults") == 0)
        return json_pack ("{s:s, s:{s:{s:s, s:s}, s:{s:s, s:i}, s:{s:s, s:f}, s:{s:s, s:[s,s,s], "
                          "s:s}, s:{s:s, s:b}}}",
                          "type", "object", "properties", "name", "type", "string", "default",
                          "John Doe", "age", "type", "integer", "default", 30, "score", "type",
                          "number", "default", 95.5, "status", "type", "string", "enum", "active",
                          "inactive", "pending", "default", "active", "verified", "type", "boolean",
                          "default", 1);
    if (strcmp (name, "test_elicitation_sep1330_enums") == 0)
        return json_pack ("{s:s, s:{"
                          "s:{s:s, s:[s,s,s]},"
                          "s:{s:s, s:[{s:s, s:s}, {s:s, s:s}]},"
                          "s:{s:s, s:[s,s], s:[s,s]},"
                          "s:{s:s, s:{s:s, s:[s,s,s]}},"
                          "s:{s:s, s:{s:[{s:s, s:s}, {s:s, s:s}]}}}}",
                          "type", "object", "properties", "untitledSingle", "type", "string",
                          "enum", "red", "green", "blue", "titledSingle", "type", "string", "oneOf",
                          "const", "sm", "title", "Small", "const", "lg", "title", "Large",
                          "legacyEnum", "type", "string", "enum", "a", "b", "enumNames", "Option A",
                          "Option B", "untitledMulti", "type", "array", "items", "type", "string",
                          "enum", "x", "y", "z", "titledMulti", "type", "array", "items", "anyOf",
                          "const", "p", "title", "Pen", "const", "q", "title", "Quill");
    return json_pack ("{s:s, s:{s:{s:s, s:s}, s:{s:s, s:s}}, s:[s,s]}", "type", "object",
                      "properties", "username", "type", "string", "description", "Your username",
                      "email", "type", "string", "description", "Your email address", "required",
                      "username", "email");
}

json_t *
cg_conformance_call (const char *name, json_t *arguments, json_t *progress_token, json_t **notes,
                     json_t **client_request)
{
    *notes = json_array ();
    *client_request = NULL;
    if (strcmp (name, "test_simple_text") == 0)
        return s_result (json_pack ("[o]", s_text ("This is a simple text response for testing.")),
                         false);
    if (strcmp (name, "test_image_content") == 0)
        return s_result (json_pack ("[{s:s, s:s, s:s}]", "type", "image", "data", S_PNG, "mimeType",
                                    "image/png"),
                         false);
    if (strcmp (name, "test_audio_content") == 0)
        return s_result (json_pack ("[{s:s, s:s, s:s}]", "type", "audio", "data", S_WAV, "mimeType",
                                    "audio/wav"),
                         false);
    if (strcmp (name, "test_embedded_resource") == 0)
        return s_result (json_pack ("[{s:s, s:{s:s, s:s, s:s}}]", "type", "resource", "resource",
                                    "uri", "test://embedded-resource", "mimeType", "text/plain",
                                    "text", "This is an embedded resource content."),
                         false);
    if (strcmp (name, "test_multiple_content_types") == 0)
        return s_result (json_pack ("[o, {s:s, s:s, s:s}, {s:s, s:{s:s, s:s, s:s}}]",
                                    s_text ("Multiple content types test:"), "type", "image",
                                    "data", S_PNG, "mimeType", "image/png", "type", "resource",
                                    "resource", "uri", "test://mixed-content-resource", "mimeType",
                                    "application/json", "text",
                                    "{\"test\":\"data\",\"value\":123}"),
                         false);
    if (strcmp (name, "test_tool_with_logging") == 0) {
        const char *lines[] = {"Tool execution started", "Tool processing data",
                               "Tool execution completed"};
        for (int i = 0; i < 3; i++)
            json_array_append_new (*notes,
                                   s_note ("notifications/message",
                                           json_pack ("{s:s, s:s, s:s}", "level", "info", "logger",
                                                      "cellgate", "data", lines[i])));
        return s_result (json_pack ("[o]", s_text ("Tool with logging executed successfully")),
                         false);
    }
    if (strcmp (name, "test_tool_with_progress") == 0) {
        for (int i = 0; progress_token && i < 3; i++)
            json_array_append_new (
                *notes, s_note ("notifications/progress",
                                json_pack ("{s:O, s:i, s:i}", "progressToken", progress_token,
                                           "progress", i * 50, "total", 100)));
        return s_result (json_pack ("[o]", s_text ("Tool with progress executed successfully")),
                         false);
    }
    if (strcmp (name, "test_error_handling") == 0)
        return s_result (
            json_pack ("[o]", s_text ("This tool intentionally returns an error for testing")),
            true);
    if (strcmp (name, "test_sampling") == 0) {
        const char *prompt = json_string_value (json_object_get (arguments, "prompt"));
        *client_request = json_pack (
            "{s:s, s:{s:[{s:s, s:{s:s, s:s}}], s:i}}", "method", "sampling/createMessage", "params",
            "messages", "role", "user", "content", "type", "text", "text",
            prompt ? prompt : "Test prompt for sampling", "maxTokens", 100);
        return NULL;
    }
    const char *message = json_string_value (json_object_get (arguments, "message"));
    *client_request =
        json_pack ("{s:s, s:{s:s, s:o}}", "method", "elicitation/create", "params", "message",
                   message ? message : "Please provide the requested information",
                   "requestedSchema", s_elicitation_schema (name));
    return NULL;
}

json_t *
cg_conformance_finish (const char *name, json_t *response)
{
    json_t *result = json_object_get (response, "result");
    if (!result) {
        const char *why =
            json_string_value (json_object_get (json_object_get (response, "error"), "message"));
        cleanup_free char *text =
            cg_strdupf ("The client refused the request: %s", why ? why : "no reason given");
        return s_result (json_pack ("[o]", s_text (text)), true);
    }
    cleanup_free char *shown = json_dumps (result, JSON_COMPACT | JSON_SORT_KEYS);
    const char *reply =
        json_string_value (json_object_get (json_object_get (result, "content"), "text"));
    cleanup_free char *text = strcmp (name, "test_sampling") == 0 && reply
                                  ? cg_strdupf ("LLM response: %s", reply)
                                  : cg_strdupf ("User response: %s", shown ? shown : "{}");
    return s_result (json_pack ("[o]", s_text (text)), false);
}

void
cg_conformance_handle (const cg_request_t *req, const char *name, json_t *arguments)
{
    json_t *notes = NULL, *request = NULL;
    json_t *result = cg_conformance_call (name, arguments, req->progress_token, &notes, &request);
    size_t i;
    json_t *note;
    json_array_foreach (notes, i, note)
    {
        const char *method = json_string_value (json_object_get (note, "method"));
        json_t *params = json_object_get (note, "params");
        if (strcmp (method, "notifications/message") == 0
            && req->client->log_level
                   < cg_server_log_level_of (json_string_value (json_object_get (params, "level"))))
            continue;
        cg_request_notify (req, method, json_incref (params));
    }
    json_decref (notes);
    if (result) {
        cg_request_result (req, result);
        return;
    }
    cg_call_t *call = cg_server_call_new (req, name, NULL);
    call->ops = &cg_conformance_call_ops;
    call->client_request = cg_strdupf ("cg-%s", call->key);
    cg_channel_send (req->channel,
                     json_pack ("{s:s, s:s, s:O, s:O}", "jsonrpc", "2.0", "id",
                                call->client_request, "method", json_object_get (request, "method"),
                                "params", json_object_get (request, "params")));
    json_decref (request);
}

//  --------------------------------------------------------------------------
//  Fixture resources

json_t *
cg_conformance_resources (void)
{
    return json_pack ("[{s:s, s:s, s:s, s:s}, {s:s, s:s, s:s, s:s}, {s:s, s:s, s:s, s:s}]", "uri",
                      "test://static-text", "name", "static-text", "description",
                      "Conformance fixture: a text resource.", "mimeType", "text/plain", "uri",
                      "test://static-binary", "name", "static-binary", "description",
                      "Conformance fixture: a binary resource (a PNG).", "mimeType", "image/png",
                      "uri", "test://watched-resource", "name", "watched-resource", "description",
                      "Conformance fixture: a resource to subscribe to.", "mimeType", "text/plain");
}

json_t *
cg_conformance_resource_templates (void)
{
    return json_pack ("[{s:s, s:s, s:s, s:s}]", "uriTemplate", "test://template/{id}/data", "name",
                      "template-data", "description",
                      "Conformance fixture: a resource template with an id.", "mimeType",
                      "application/json");
}

json_t *
cg_conformance_read (const char *uri)
{
    if (strcmp (uri, "test://static-text") == 0 || strcmp (uri, "test://watched-resource") == 0)
        return json_pack ("[{s:s, s:s, s:s}]", "uri", uri, "mimeType", "text/plain", "text",
                          "This is the content of the static text resource.");
    if (strcmp (uri, "test://static-binary") == 0)
        return json_pack ("[{s:s, s:s, s:s}]", "uri", uri, "mimeType", "image/png", "blob", S_PNG);
    const char *prefix = "test://template/", *suffix = "/data";
    size_t len = strlen (uri), plen = strlen (prefix), slen = strlen (suffix);
    if (len > plen + slen && strncmp (uri, prefix, plen) == 0
        && strcmp (uri + len - slen, suffix) == 0 && len - plen - slen <= 64) {
        cleanup_free char *id = cg_strdupf ("%.*s", (int)(len - plen - slen), uri + plen);
        json_t *data = json_pack ("{s:s, s:b, s:s}", "id", id, "templateTest", 1, "data", "");
        cleanup_free char *said = cg_strdupf ("Data for ID: %s", id);
        json_object_set_new (data, "data", json_string (said));
        cleanup_free char *text = json_dumps (data, JSON_COMPACT);
        json_decref (data);
        return json_pack ("[{s:s, s:s, s:s}]", "uri", uri, "mimeType", "application/json", "text",
                          text);
    }
    return NULL;
}

//  --------------------------------------------------------------------------
//  Fixture prompts and completion

json_t *
cg_conformance_prompts (void)
{
    return json_pack (
        "[{s:s, s:s}, {s:s, s:s, s:[{s:s, s:s, s:b}, {s:s, s:s, s:b}]}, {s:s, s:s, s:[{s:s, s:s, "
        "s:b}]}, {s:s, s:s}]",
        "name", "test_simple_prompt", "description", "Conformance fixture: a simple prompt.",
        "name", "test_prompt_with_arguments", "description",
        "Conformance fixture: a prompt with two arguments.", "arguments", "name", "arg1",
        "description", "First test argument", "required", 1, "name", "arg2", "description",
        "Second test argument", "required", 1, "name", "test_prompt_with_embedded_resource",
        "description", "Conformance fixture: a prompt embedding a resource.", "arguments", "name",
        "resourceUri", "description", "URI of the resource to embed", "required", 1, "name",
        "test_prompt_with_image", "description", "Conformance fixture: a prompt with an image.");
}

static json_t *
s_user_text (const char *text)
{
    return json_pack ("{s:s, s:{s:s, s:s}}", "role", "user", "content", "type", "text", "text",
                      text);
}

json_t *
cg_conformance_prompt (const char *name, json_t *arguments)
{
    json_t *messages = NULL;
    if (strcmp (name, "test_simple_prompt") == 0)
        messages = json_pack ("[o]", s_user_text ("This is a simple prompt for testing."));
    else if (strcmp (name, "test_prompt_with_arguments") == 0) {
        const char *a1 = json_string_value (json_object_get (arguments, "arg1"));
        const char *a2 = json_string_value (json_object_get (arguments, "arg2"));
        cleanup_free char *text = cg_strdupf ("Prompt with arguments: arg1='%.*s', arg2='%.*s'",
                                              cg_utf8_prefix (a1 ? a1 : "", 256), a1 ? a1 : "",
                                              cg_utf8_prefix (a2 ? a2 : "", 256), a2 ? a2 : "");
        messages = json_pack ("[o]", s_user_text (text));
    }
    else if (strcmp (name, "test_prompt_with_embedded_resource") == 0) {
        const char *uri = json_string_value (json_object_get (arguments, "resourceUri"));
        messages =
            json_pack ("[{s:s, s:{s:s, s:{s:s, s:s, s:s}}}, o]", "role", "user", "content", "type",
                       "resource", "resource", "uri", uri ? uri : "test://example-resource",
                       "mimeType", "text/plain", "text", "Embedded resource content for testing.",
                       s_user_text ("Please process the embedded resource above."));
    }
    else if (strcmp (name, "test_prompt_with_image") == 0)
        messages = json_pack ("[{s:s, s:{s:s, s:s, s:s}}, o]", "role", "user", "content", "type",
                              "image", "data", S_PNG, "mimeType", "image/png",
                              s_user_text ("Please analyze the image above."));
    return messages ? json_pack ("{s:o}", "messages", messages) : NULL;
}

json_t *
cg_conformance_complete (json_t *params)
{
    //  Completes test_prompt_with_arguments' arguments from a fixed list, by prefix.
    static const char *const words[] = {"paris", "park", "party", "test", "testValue1", NULL};
    const char *value =
        json_string_value (json_object_get (json_object_get (params, "argument"), "value"));
    json_t *values = json_array ();
    for (int i = 0; words[i]; i++)
        if (!value || strncmp (words[i], value, strlen (value)) == 0)
            json_array_append_new (values, json_string (words[i]));
    return json_pack ("{s:{s:o, s:I, s:b}}", "completion", "values", values, "total",
                      (json_int_t)json_array_size (values), "hasMore", 0);
}
