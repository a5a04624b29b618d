/*  test_tools — the tool table: every row's schemas parse and fill in their limits, each
    profile lists the tools it should, and the one schema-driven check of arguments accepts
    every declared property and refuses anything else, naming the key and the known ones;
    tools/list stays within its size and names every field of every seed's contract. */
#include "base/cg_config.h"
#include "base/cg_util.h"
#include "mcp/cg_result.h"
#include "mcp/tools/cg_tools.h"
#include "base/cg_kernels.h"
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
    static const char *all[] = {
        "execute_code",      "run_python",      "start_session", "send_to_session",
        "close_session",     "upload_file",     "read_artifact", "list_artifacts",
        "export_notebook",   "list_sessions",   "save_script",   "get_script",
        "list_scripts",      "search_scripts",  "run_script",    "search_execution_logs",
        "get_execution_log", "install_package", "calculate",     NULL};
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
    json_t *code = json_object_get (
        json_object_get (json_object_get (s_entry (tools, "execute_code"), "inputSchema"),
                         "properties"),
        "code");
    EXPECT (strstr (json_string_value (json_object_get (code, "description")), "expression's"),
            "an apostrophe survives the schema text");
    json_decref (tools);

    config->tool_profile = CG_TOOL_PROFILE_SEED001;
    tools = cg_tools_list (config);
    EXPECT (s_entry (tools, CG_SEED001_TOOL) && !s_entry (tools, "execute_code")
                && json_array_size (tools) == count,
            "seed001 profile: seed 001's tool instead of execute_code");
    json_decref (tools);
    config->tool_profile = CG_TOOL_PROFILE_DEFAULT;
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

//  Every field of every seed's contract, per tool: "in" or "out" (the input or output
//  schema), then the names of nested fields down to the object that has them (through
//  arrays' items), then the fields. From seeds 000-004 (/work/shared/seeds) and the
//  design's tool table.
static const char *s_seed_fields[][2] = {
    //  seed 000, 001 (its names, as execute_code's aliases and fields), 002, 003
    {"execute_code in", "language code stdin timeout session_id stdin_data timeout_ms files"},
    {"execute_code out", "stdout stderr exit_code execution_time status error_message "
                         "duration_ms error_code success execution_id language truncated "
                         "artifacts timed_out returnValue executionTimeMs memoryUsedMB files"},
    //  seed 002
    {"start_session in", "language name working_dir"},
    {"start_session out", "success session_id language name pid started_at"},
    {"send_to_session in", "session_id code"},
    {"send_to_session out", "success execution_id session_id stdout stderr duration_ms "
                            "truncated artifacts"},
    {"close_session in", "session_id"},
    {"close_session out", "success session_id duration_total_ms executions_count status "
                          "error message"},
    {"list_sessions out sessions", "session_id language name started_at last_activity_at "
                                   "executions_count pid memory_mb packages_installed"},
    {"install_package in", "session_id package language"},
    {"calculate in", "expression"},
    {"calculate out", "expression result steps"},
    {"install_package out", "success package version install_output"},
    {"save_script in", "name description language code tags packages source_execution_id"},
    {"save_script out", "success script_id name path saved_at"},
    {"get_script in", "name"},
    {"get_script out", "success name description language code tags packages created_at "
                       "last_run_at run_count last_run_success"},
    {"list_scripts in", "language tag"},
    {"list_scripts out", "scripts total_count"},
    {"list_scripts out scripts", "name description language tags last_run_at"},
    {"search_scripts in", "query"},
    {"search_scripts out results", "name description relevance"},
    {"run_script in", "name args timeout_ms"},
    {"run_script out", "success execution_id language stdout stderr exit_code duration_ms "
                       "truncated artifacts"},
    {"search_execution_logs in", "language status query since limit"},
    {"search_execution_logs out", "results total_count"},
    {"search_execution_logs out results", "execution_id session_id language code_preview "
                                          "status exit_code error_preview duration_ms "
                                          "executed_at"},
    {"get_execution_log in", "execution_id"},
    {"get_execution_log out", "execution_id session_id language code stdout stderr exit_code "
                              "duration_ms packages_installed artifacts_created "
                              "artifacts_modified artifacts_deleted sandbox_mode "
                              "guardian_pre_scan guardian_post_scan agent_id trace_id "
                              "executed_at"},
    //  seed 004
    {"upload_file in", "session_id filename content_base64 overwrite"},
    {"upload_file out", "session_id path error message"},
    {"run_python in", "session_id code"},
    {"run_python out", "session_id run_id exit_code stdout stderr stdout_truncated "
                       "stderr_truncated artifacts duration_ms error message"},
    {"run_python out artifacts", "path filename size_bytes mime_type download_url"},
    {"read_artifact in", "session_id path"},
    {"read_artifact out", "path filename mime_type size_bytes content_base64 error message "
                          "download_url"},
    {"list_artifacts in", "session_id"},
    {"list_artifacts out", "artifacts"},
    {"list_artifacts out artifacts", "path filename size_bytes mime_type"},
    //  seed 001, under its profile
    {CG_SEED001_TOOL " in", "language code stdin_data timeout_ms"},
    {CG_SEED001_TOOL " out", "stdout stderr exit_code status duration_ms"},
    {NULL, NULL}};

//  Returns the properties object that PATH ("<tool> in|out [field ...]") names in TOOLS,
//  or NULL.
static json_t *
s_properties_at (json_t *tools, const char *path)
{
    cleanup_free char *words = cg_xstrdup (path);
    char *save = NULL;
    json_t *schema = s_entry (tools, strtok_r (words, " ", &save));
    const char *which = strtok_r (NULL, " ", &save);
    schema = json_object_get (schema, strcmp (which, "in") == 0 ? "inputSchema" : "outputSchema");
    for (const char *field = strtok_r (NULL, " ", &save); field && schema;
         field = strtok_r (NULL, " ", &save)) {
        schema = json_object_get (json_object_get (schema, "properties"), field);
        if (json_object_get (schema, "items"))
            schema = json_object_get (schema, "items");
    }
    return json_object_get (schema, "properties");
}

//  tools/list's result, as served, fits in 12 KB for the default profile (another tool's
//  row fits beside it) and 160 bytes more per further language, and no seed field was
//  dropped to get there; `language` is an enum.
static void
s_test_seed_fields (cg_config_t *config)
{
    const char *profiles[] = {"default", "seed001"};
    for (int p = 0; p < 2; p++) {
        config->tool_profile = p == 0 ? CG_TOOL_PROFILE_DEFAULT : CG_TOOL_PROFILE_SEED001;
        json_t *result = json_pack ("{s:o}", "tools", cg_tools_list (config));
        json_t *tools = json_object_get (result, "tools");
        size_t size = cg_result_size (result);
        printf ("tools/list, %s profile: %zu bytes\n", profiles[p], size);
        //  Each language past python, javascript and bash adds its name to the enums and the
        //  descriptions, and what it has preinstalled: 160 bytes each.
        size_t budget = 12288 + 160 * (cg_kernels_count (cg_kernels ()) - 3);
        EXPECT (size <= budget, "%s profile: tools/list is %zu bytes, over %zu", profiles[p], size,
                budget);
        for (int i = 0; s_seed_fields[i][0]; i++) {
            bool seed001 =
                strncmp (s_seed_fields[i][0], CG_SEED001_TOOL " ", strlen (CG_SEED001_TOOL) + 1)
                == 0;
            bool execute_code = strncmp (s_seed_fields[i][0], "execute_code ", 13) == 0;
            if ((seed001 && p == 0) || (execute_code && p == 1))
                continue;
            json_t *properties = s_properties_at (tools, s_seed_fields[i][0]);
            cleanup_free char *names = cg_xstrdup (s_seed_fields[i][1]);
            char *save = NULL;
            for (const char *field = strtok_r (names, " ", &save); field;
                 field = strtok_r (NULL, " ", &save))
                EXPECT (json_object_get (properties, field), "%s profile: %s has %s", profiles[p],
                        s_seed_fields[i][0], field);
        }
        json_decref (result);
    }
    config->tool_profile = CG_TOOL_PROFILE_DEFAULT;
    json_t *tools = cg_tools_list (config);
    const char *with_language[] = {"execute_code", "start_session", "save_script", NULL};
    for (int i = 0; with_language[i]; i++) {
        cleanup_free char *path = cg_strdupf ("%s in", with_language[i]);
        json_t *properties = s_properties_at (tools, path);
        json_t *options = json_object_get (json_object_get (properties, "language"), "enum");
        cleanup_free char *text = json_dumps (options, JSON_COMPACT);
        //  The catalogue's languages (here cellgate's own kernels/ and bash), in its order.
        json_t *offered = cg_kernels_enum (cg_kernels (), false);
        cleanup_free char *want = json_dumps (offered, JSON_COMPACT);
        json_decref (offered);
        EXPECT (text && strcmp (text, want) == 0
                    && strcmp (text, "[\"python\",\"javascript\",\"r\",\"bash\"]") == 0,
                "%s: language is an enum of the languages offered: %s", with_language[i],
                text ? text : "(none)");
    }
    json_decref (tools);
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
    s_test_seed_fields (&config);
    cg_config_clear (&config);
    printf ("%d passed, %d failed\n", s_passes, s_failures);
    return s_failures ? 1 : 0;
}
