/*  cg_listen — 2026-07-28's subscriptions/listen: a request that stays open (an SSE stream
    over HTTP, the request's id on stdio) and carries the notifications it asked for, here
    notifications/resources/updated for the workspace files it names, each tagged with
    its subscriptionId. It ends when the client cancels it (notifications/cancelled on
    stdio, closing the stream over HTTP). Internal to mcp/. */
#ifndef CG_LISTEN_H
#define CG_LISTEN_H

#include "mcp/cg_server.h"
#include "bridge/cg_outcome.h"

/*  subscriptions/listen (REQ, a 2026-07-28 request, with PARAMS). */
void cg_listen (const cg_request_t *req, json_t *params);

/*  A run of CLIENT in SESSION_ID changed OUTCOME's files: their listeners hear of it. */
void cg_listen_ran (cg_server_t *server, const cg_client_t *client, const char *session_id,
                    const cg_outcome_t *outcome);

/*  notifications/cancelled of CLIENT's request REQUEST_ID: true when it was a listener
    (now gone). */
bool cg_listen_cancel (cg_server_t *server, const cg_client_t *client, json_t *request_id);

/*  Drops the listeners whose client closed their stream, and keeps the others' streams
    open; every 2 s. Returns the ms until it wants to look again, or WAIT_MS when sooner. */
int cg_listen_tick (cg_server_t *server, int wait_ms);

/*  Forgets CLIENT's listeners. */
void cg_listen_client_end (cg_server_t *server, const cg_client_t *client);

/*  The server's listeners' list (a new one; cg_listen frees its items). */
zlistx_t *cg_listen_new (void);

/*  Registers subscriptions/listen with SERVER, its list, and the hooks that end a
    listener by notifications/cancelled and a client's with it. */
void cg_listen_register (cg_server_t *server);

#endif
