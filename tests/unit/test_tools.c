/*  test_tools — the tool table: every row's schemas parse and fill in their limits, each
    profile lists the tools it should, and the one schema-driven check of arguments accepts
    every declared property and refuses anything else, naming the key and the known ones. */
#include "../../bridge/cg_config.h"
#include "../../bridge/cg_util.h"
#include "../../mcp/cg_tools.h"
#include "cg_test.h"

#include <sodium.h>
#include <string.h>

//  Returns tools/list's entry NAME in TOOLS, or NULL.
static json_t *
s_entry (json_t *tools, const char *name)
{
    size_t i;
    json_t *tool;
    json_array_foreach (tools, i,
                        tool) if (strcmp (json_string_value (json_object_get (tool, "name")), name)
                                  == 0) return tool;
    return NULL;
}

static void
s_test_list (cg_config_t *config)
{
    static const char *all[] = {"execute_code",      "run_python",      "start_session",
                                "send_to_session",   "close_session",   "upload_file",
                                "read_artifact",     "list_artifacts",  "list_sessions",
                                "save_script",       "get_script",      "list_scripts",
                                "search_scripts",    "run_script",      "search_execution_logs",
                                "get_execution_log", "install_package", NULL};
    const size_t count = sizeof all / sizeof all[0] - 1;
    json_t *tools = cg_tools_list (config);
    EXPECT (json_array_size (tools) == count, "default profile lists %zu tools",
            json_array_size (tools));
    for (int i = 0; all[i]; i++) {
        json_t *tool = s_entry (tools, all[i]);
        EXPECT (tool && json_is_object (json_object_get (tool, "inputSchema"))
                    && json_is_object (json_object_get (tool, "outputSchema")),
                "%s listed with both schemas", all[i]);
    }
    EXPECT (!s_entry (tools, CG_SEED001_TOOL), "seed 001's tool only under its profile");
    //  The limits are filled in from their one definition.
    json_t *run = s_entry (tools, "run_python");
    json_t *props = json_object_get (json_object_get (run, "inputSchema"), "properties");
    json_t *session_id = json_object_get (props, "session_id");
    EXPECT (json_integer_value (json_object_get (session_id, "maxLength")) == CG_SESSION_ID_MAX,
            "session_id maxLength is CG_SESSION_ID_MAX");
    json_t *timeout = json_object_get (props, "timeout");
    EXPECT (json_integer_value (json_object_get (timeout, "minimum")) == CG_TIMEOUT_MIN_S
                && json_integer_value (json_object_get (timeout, "maximum")) == CG_TIMEOUT_MAX_S,
            "timeout bounds");
    //  Each tool states its own seed's default timeout: run_python seed 004's, execute_code
    //  seed 000's.
    cleanup_free char *default_doc = cg_strdupf ("(default %d)", config->run_python_timeout_s);
    EXPECT (strstr (json_string_value (json_object_get (timeout, "description")), default_doc),
            "the configured default timeout is in the description");
    EXPECT (json_integer_value (json_object_get (timeout, "default")) == CG_RUN_PYTHON_TIMEOUT_S,
            "run_python's timeout default is %d", CG_RUN_PYTHON_TIMEOUT_S);
    json_t *execute = json_object_get (
        json_object_get (json_object_get (s_entry (tools, "execute_code"), "inputSchema"),
                         "properties"),
        "timeout");
    EXPECT (json_integer_value (json_object_get (execute, "default")) == CG_DEFAULT_TIMEOUT_S,
            "execute_code's timeout default is %d", CG_DEFAULT_TIMEOUT_S);
    EXPECT (cg_tools_default_timeout (config, cg_tools_find ("run_python")) == 60
                && cg_tools_default_timeout (config, cg_tools_find ("execute_code")) == 30
                && cg_tools_default_timeout (config, cg_tools_find ("send_to_session")) == 30
                && cg_tools_default_timeout (config, cg_tools_find (CG_SEED001_TOOL)) == 5,
            "per-tool default timeouts: run_python 60, execute_code 30, seed 001's 5");
    json_t *files = json_object_get (props, "files");
    EXPECT (strstr (json_string_value (json_object_get (files, "description")), "result's files"),
            "an apostrophe survives the schema text");
    json_decref (tools);

    free (config->tool_profile);
    config->tool_profile = cg_xstrdup ("seed001");
    tools = cg_tools_list (config);
    EXPECT (s_entry (tools, CG_SEED001_TOOL) && !s_entry (tools, "execute_code")
                && json_array_size (tools) == count,
            "seed001 profile: seed 001's tool instead of execute_code");
    json_decref (tools);
    free (config->tool_profile);
    config->tool_profile = cg_xstrdup ("default");
}

//  Every declared property of every row passes the check; an unknown key does not.
static void
s_test_check (cg_config_t *config)
{
    json_t *tools = cg_tools_list (config);
    size_t i;
    json_t *tool;
    json_array_foreach (tools, i, tool)
    {
        const char *name = json_string_value (json_object_get (tool, "name"));
        const cg_tool_t *row = cg_tools_find (name);
        EXPECT (row && strcmp (row->name, name) == 0, "%s has a row", name);
        if (!row)
            continue;
        json_t *arguments = json_object ();
        const char *key;
        json_t *value;
        json_object_foreach (json_object_get (json_object_get (tool, "inputSchema"), "properties"),
                             key, value) json_object_set_new (arguments, key, json_null ());
        json_t *refusal = cg_tools_check_arguments (row, arguments);
        EXPECT (!refusal, "%s takes every property its schema declares", name);
        json_decref (refusal);
        json_object_set_new (arguments, "colour", json_true ());
        refusal = cg_tools_check_arguments (row, arguments);
        json_t *structured = json_object_get (refusal, "structuredContent");
        const char *message = json_string_value (json_object_get (structured, "message"));
        EXPECT (refusal && json_is_true (json_object_get (refusal, "isError")) && message
                    && strstr (message, "unknown argument 'colour'") && strstr (message, name),
                "%s refuses an unknown argument: %s", name, message ? message : "(none)");
        EXPECT (!(row->flags & CG_TOOL_RUNS)
                    || strcmp (json_string_value (json_object_get (structured, "error_code")),
                               "INVALID_PARAMS")
                           == 0,
                "%s: a running tool's refusal is a run result", name);
        json_decref (refusal);
        json_decref (arguments);
    }
    json_decref (tools);
    EXPECT (!cg_tools_find ("no_such_tool") && !cg_tools_known ("no_such_tool"), "unknown tool");
    EXPECT (cg_tools_is ("send_to_session", CG_TOOL_RUNS | CG_TOOL_SESSION_GIVEN)
                && !cg_tools_is ("run_python", CG_TOOL_LANGUAGE),
            "flags");
}

int
main (void)
{
    if (sodium_init () < 0)
        return 2;
    cg_config_t config;
    cg_error_t *err = NULL;
    if (cg_config_load (&config, 0, NULL, &err) < 0) {
        fprintf (stderr, "config: %s\n", cg_error_message (err));
        return 2;
    }
    s_test_list (&config);
    s_test_check (&config);
    cg_config_clear (&config);
    printf ("%d passed, %d failed\n", s_passes, s_failures);
    return s_failures ? 1 : 0;
}
