/*  cg_http_policy — who may hold a connection to the listener, and for how long before it
    has said what it wants: a limit per peer address, a reserve of connections for the
    server's owner (127.0.0.1, ::1), and a deadline for each request to arrive whole.
    Private to cg_http (it speaks libmicrohttpd). */
#ifndef CG_HTTP_POLICY_H
#define CG_HTTP_POLICY_H

#include "artifacts/cg_http.h"

#include <microhttpd.h>
#include <stdint.h>
#include <sys/socket.h>

typedef struct cg_http_policy_t cg_http_policy_t;

/*  Returns a new policy with LIMITS (copied; see cg_http_limits_t) for a listener of at
    most CONNECTIONS_MAX connections. Caller owns it (cg_http_policy_destroy). */
cg_http_policy_t *cg_http_policy_new (const cg_http_limits_t *limits, unsigned connections_max);

/*  Frees *self_p (its records of connections MHD has not closed too) and sets it to NULL.
    Safe on NULL. */
void cg_http_policy_destroy (cg_http_policy_t **self_p);

/*  Replaces the limits by LIMITS (copied). Connections already open stay. */
void cg_http_policy_set_limits (cg_http_policy_t *self, const cg_http_limits_t *limits);

/*  MHD's accept policy (its cls is the policy): admits a connection from ADDR, closing an
    older connection that is still waiting for its request to make room when a limit is
    reached, or refuses it (MHD_NO) when none is waiting. */
enum MHD_Result cg_http_policy_accept_cb (void *cls, const struct sockaddr *addr,
                                          socklen_t addr_len);

/*  MHD_OPTION_NOTIFY_CONNECTION's callback (cls: the policy): keeps a record of each
    connection from its start to its close in *SOCKET_CONTEXT. */
void cg_http_policy_notify_cb (void *cls, struct MHD_Connection *connection, void **socket_context,
                               enum MHD_ConnectionNotificationCode code);

/*  The request on CONNECTION has arrived whole (its handler is called) or was answered:
    its deadline stops. */
void cg_http_policy_request_in (struct MHD_Connection *connection);

/*  The request on CONNECTION is over: the connection waits for the next one, its
    deadline starting now (unless it was upgraded). */
void cg_http_policy_request_done (struct MHD_Connection *connection);

/*  CONNECTION was handed over after a 101 answer: no deadline applies to it any more. */
void cg_http_policy_upgraded (struct MHD_Connection *connection);

/*  Closes every connection whose request has not arrived whole within the request
    timeout (the socket is shut down; MHD frees the connection at its next run). */
void cg_http_policy_sweep (cg_http_policy_t *self);

/*  Returns the milliseconds until the next connection's request is due (0: one is
    overdue), or -1 when no connection is waiting for one. */
int cg_http_policy_timeout_ms (cg_http_policy_t *self);

#endif
