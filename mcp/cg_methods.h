/*  cg_methods — the MCP methods besides tools: initialize (version negotiation) and
    logging/setLevel. */
#ifndef CG_METHODS_H
#define CG_METHODS_H

#include "cg_server.h"

/*  initialize: agrees on a protocol revision with REQ's client and marks it initialized. */
void cg_methods_initialize (const cg_request_t *req, json_t *params);

/*  logging/setLevel: the most verbose server log level REQ's client receives. */
void cg_methods_set_log_level (const cg_request_t *req, json_t *params);

#endif
