/*  cg_revision — what MCP revision 2026-07-28 puts on the wire: its version and _meta
    keys, how a request of it is told from a handshake revision's, and its HTTP header
    values. Shared by the Streamable HTTP transport (its header checks and stateless
    clients) and the revision's feature (cg_modern), so neither calls the other. */
#ifndef CG_REVISION_H
#define CG_REVISION_H

#include <jansson.h>
#include <stdbool.h>

#define CG_MODERN_VERSION "2026-07-28"
#define CG_MODERN_META_VERSION "io.modelcontextprotocol/protocolVersion"
#define CG_MODERN_TASKS "io.modelcontextprotocol/tasks"

/*  True when MESSAGE (a request) carries 2026-07-28's per-request _meta. */
bool cg_modern_request (json_t *message);

/*  The value of a 2026-07-28 HTTP header as sent: plain, or "=?base64?...?=" decoded.
    Returns a new string, or NULL when the encoding is broken. */
char *cg_modern_header_value (const char *value);

#endif
