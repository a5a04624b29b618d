/*  cg_methods — the MCP methods besides tools: initialize (version negotiation) and
    logging/setLevel. */
#ifndef CG_METHODS_H
#define CG_METHODS_H

#include "cg_server.h"

/*  initialize: agrees on a protocol revision with REQ's client and marks it initialized. */
void cg_methods_initialize (const cg_request_t *req, json_t *params);

/*  logging/setLevel: the most verbose server log level REQ's client receives. */
void cg_methods_set_log_level (const cg_request_t *req, json_t *params);

/*  Answers REQ for METHOD when it is one of the methods besides initialize, ping and tools
    (logging/setLevel, the resources methods of cg_resources). Returns false for a method it does not
    know (nothing is answered then). */
bool cg_methods_dispatch (const cg_request_t *req, const char *method, json_t *params);

#endif
