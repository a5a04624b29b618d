/*  test_jsonrpc — JSON-RPC classification and execute_code argument validation. */
#include "base/cg_config.h"
#include "base/cg_util.h"
#include "mcp/cg_jsonrpc.h"
#include "mcp/tools/cg_tools.h"

#include <sodium.h>
#include <stdio.h>
#include <string.h>

static int s_failures = 0, s_passes = 0;

static void
s_check (bool ok, const char *what)
{
    if (ok)
        s_passes++;
    else {
        fprintf (stderr, "FAIL %s\n", what);
        s_failures++;
    }
}

static void
s_classify (const char *text, cg_jsonrpc_kind_t want, const char *what)
{
    json_t *message = json_loads (text, 0, NULL);
    const char *why;
    s_check (message && cg_jsonrpc_classify (message, &why) == want, what);
    json_decref (message);
}

//  Returns the error_code of a rejected argument set, or "OK" when it was accepted.
static const char *
s_validate (const cg_config_t *config, const char *arguments, double *timeout)
{
    static char code[64];
    json_t *args = json_loads (arguments, 0, NULL);
    json_t *error_result = NULL;
    json_t *request = cg_tools_execute_request (config, "execute_code", args, &error_result);
    if (request) {
        *timeout = json_number_value (json_object_get (request, "timeout"));
        strcpy (code, "OK");
    }
    else {
        json_t *structured = json_object_get (error_result, "structuredContent");
        snprintf (code, sizeof code, "%s",
                  json_string_value (json_object_get (structured, "error_code")));
        if (!json_is_true (json_object_get (error_result, "isError")))
            strcpy (code, "NOT_AN_ERROR");
    }
    json_decref (request);
    json_decref (error_result);
    json_decref (args);
    return code;
}

int
main (void)
{
    if (sodium_init () < 0)
        return 2;
    s_classify ("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}", CG_JSONRPC_REQUEST,
                "request");
    s_classify ("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}",
                CG_JSONRPC_NOTIFICATION, "notification");
    s_classify ("{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"result\":{}}", CG_JSONRPC_RESPONSE,
                "response");
    s_classify ("{\"jsonrpc\":\"1.0\",\"id\":1,\"method\":\"ping\"}", CG_JSONRPC_INVALID,
                "wrong version");
    s_classify ("{\"jsonrpc\":\"2.0\",\"id\":1.5,\"method\":\"ping\"}", CG_JSONRPC_INVALID,
                "fractional id");
    s_classify ("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":7}", CG_JSONRPC_INVALID,
                "method not a string");
    s_classify ("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\",\"params\":[1]}",
                CG_JSONRPC_INVALID, "params array");
    s_classify ("[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]", CG_JSONRPC_INVALID,
                "batch");
    s_classify ("{\"jsonrpc\":\"2.0\",\"id\":1}", CG_JSONRPC_INVALID, "neither method nor result");

    cg_config_t config;
    cg_config_load (&config, 0, NULL, NULL);
    double timeout = 0;
    s_check (
        strcmp (s_validate (&config, "{\"language\":\"python\",\"code\":\"1\"}", &timeout), "OK")
                == 0
            && timeout == 30,
        "default timeout 30");
    s_check (
        strcmp (s_validate (&config, "{\"language\":\"PY\",\"code\":\"1\",\"timeout_ms\":2500}",
                            &timeout),
                "OK")
                == 0
            && timeout == 2.5,
        "timeout_ms alias");
    s_check (strcmp (s_validate (&config, "{\"language\":\"cobol\",\"code\":\"1\"}", &timeout),
                     "UNSUPPORTED_LANGUAGE")
                 == 0,
             "unsupported language");
    s_check (strcmp (s_validate (&config, "{\"language\":\"python\"}", &timeout), "INVALID_PARAMS")
                 == 0,
             "missing code");
    s_check (strcmp (s_validate (&config, "{\"language\":\"python\",\"code\":\"1\",\"timeout\":0}",
                                 &timeout),
                     "INVALID_PARAMS")
                 == 0,
             "timeout 0");
    s_check (
        strcmp (s_validate (&config, "{\"language\":\"python\",\"code\":\"1\",\"timeout\":301}",
                            &timeout),
                "INVALID_PARAMS")
            == 0,
        "timeout 301");
    s_check (
        strcmp (s_validate (
                    &config,
                    "{\"language\":\"python\",\"code\":\"1\",\"timeout\":5,\"timeout_ms\":5000}",
                    &timeout),
                "INVALID_PARAMS")
            == 0,
        "both timeouts");
    s_check (
        strcmp (s_validate (&config,
                            "{\"language\":\"python\",\"code\":\"1\",\"session_id\":\"../etc\"}",
                            &timeout),
                "INVALID_PARAMS")
            == 0,
        "session id traversal");
    s_check (
        strcmp (s_validate (
                    &config,
                    "{\"language\":\"python\",\"code\":\"1\",\"stdin\":\"a\",\"stdin_data\":\"b\"}",
                    &timeout),
                "INVALID_PARAMS")
            == 0,
        "conflicting stdin");
    s_check (strcmp (s_validate (&config, "{\"language\":\"python\",\"code\":\"1\",\"colour\":1}",
                                 &timeout),
                     "INVALID_PARAMS")
                 == 0,
             "unknown argument");
    s_check (strcmp (s_validate (&config, "[1]", &timeout), "INVALID_PARAMS") == 0,
             "arguments not an object");
    char *big = cg_xmalloc (config.max_code_bytes + 64);
    strcpy (big, "{\"language\":\"python\",\"code\":\"");
    size_t at = strlen (big);
    memset (big + at, 'x', config.max_code_bytes + 1);
    strcpy (big + at + config.max_code_bytes + 1, "\"}");
    s_check (strcmp (s_validate (&config, big, &timeout), "INVALID_PARAMS") == 0, "oversized code");
    free (big);
    cg_config_clear (&config);
    printf ("%d passed, %d failed\n", s_passes, s_failures);
    return s_failures ? 1 : 0;
}
