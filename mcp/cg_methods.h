/*  cg_methods — the MCP methods besides tools: initialize (version negotiation) and
    logging/setLevel. */
#ifndef CG_METHODS_H
#define CG_METHODS_H

#include "mcp/cg_server.h"

/*  initialize: agrees on a protocol revision with REQ's client and marks it initialized. */
void cg_methods_initialize (const cg_request_t *req, json_t *params);

/*  logging/setLevel: the most verbose server log level REQ's client receives. */
void cg_methods_set_log_level (const cg_request_t *req, json_t *params);

/*  Answers REQ for METHOD when it is one of the methods besides initialize, ping and tools
    (logging/setLevel, the resources methods of cg_resources). Returns false for a method it does not
    know (nothing is answered then). */
bool cg_methods_dispatch (const cg_request_t *req, const char *method, json_t *params);

/*  What initialize and server/discover say of the server to the LLM. */
#define CG_METHODS_INSTRUCTIONS                                                             \
    "cellgate runs code in isolated sandboxes: execute_code takes Python, JavaScript "      \
    "(Node.js) or bash; run_python, Python. " CG_TOOLS_SANDBOX_NOTE " Pass a session_id "   \
    "to keep variables and the files in " CG_WORKSPACE_MOUNT " between calls. upload_file " \
    "puts data in; list_artifacts and read_artifact get results out (a chart a run shows "  \
    "comes back as an image; read_artifact with format 'image' shows a saved one; "         \
    "download_url links work in a browser). calculate does exact math with SymPy. "         \
    "save_script and run_script keep reusable scripts; search_execution_logs finds past "   \
    "runs."

/*  The server's capabilities for REQ's client (a new object): 2025's (MODERN false) or
    2026-07-28's. */
json_t *cg_methods_capabilities (const cg_request_t *req, bool modern);

#endif
