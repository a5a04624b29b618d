/*  cg_oplog — seed 004's operations log: one structured record per tools/call when it
    ends (answered now or later, with a result or a JSON-RPC error, cancelled or dropped):
    the tool, the MCP client, session and run ids, duration, exit code, status. */
#ifndef CG_OPLOG_H
#define CG_OPLOG_H

#include "mcp/cg_channel.h"

#include <jansson.h>
#include <stdint.h>

/*  What the core knows of a call, whatever its answer. Everything is borrowed. */
typedef struct {
    const cg_client_t *client;
    const char *tool;       /* the tool name as asked (may be NULL: none given) */
    const char *session_id; /* the call's session, or NULL */
    const char *run_id;     /* run_python's run id, or NULL */
    int64_t started_us;     /* when the request arrived (cg_now_us) */
    double timeout_s;       /* a run's timeout; 0: not a run */
} cg_oplog_call_t;

/*  Returns the record's fields for CALL ended at NOW_US with RESULT (a tools/call result,
    borrowed), or with the JSON-RPC error ERROR_CODE when RESULT is NULL; STATUS, when
    not NULL, overrides the result's (a call "cancelled", or "dropped" unanswered). Fields:
    tool, client_name, client_version, client_id, session_id, run_id, execution_id,
    duration_ms, exit_code, status (null when unknown), plus error_code when there is
    one and timeout_ms for a run. Caller owns the result. */
json_t *cg_oplog_fields (const cg_oplog_call_t *call, int64_t now_us, const json_t *result,
                         int error_code, const char *status);

/*  Logs the record (cg_oplog_fields, now) at info level as "tool call". */
void cg_oplog_record (const cg_oplog_call_t *call, const json_t *result, int error_code,
                      const char *status);

#endif
