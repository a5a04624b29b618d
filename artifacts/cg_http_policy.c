/*  cg_http_policy — who may hold a connection to the listener: a limit per peer address,
    the owner's reserve, and a deadline for each request to arrive whole. */
#define _GNU_SOURCE
#include "artifacts/cg_http_policy.h"
#include "artifacts/cg_metrics.h"

#include "base/cg_util.h"

#include <arpa/inet.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <string.h>
#include <sys/socket.h>

/*  An address, as the limits compare it: the family and its 4 or 16 bytes. */
typedef struct {
    sa_family_t family;
    unsigned char bytes[16];
} s_address_t;

/*  One connection MHD holds, from its start to its close. */
typedef struct s_connection_t {
    int fd; /* MHD's socket: shut down (never closed) here */
    s_address_t address;
    bool owner;               /* from 127.0.0.1 or ::1 */
    bool waiting;             /* its request has not arrived whole yet */
    bool served;              /* a request of it has ended: a client that got through once */
    bool upgraded;            /* handed over after a 101: no more requests */
    bool closing;             /* shut down here; MHD has yet to free it; not counted */
    int64_t waiting_since_us; /* start of the wait for the request, cg_now_us */
    struct s_connection_t *next, *prev;
} s_connection_t;

struct cg_http_policy_t {
    cg_http_limits_t limits;
    unsigned connections_max; /* of the listener */
    s_connection_t *connections;
    unsigned counted;        /* connections not closing */
    unsigned counted_others; /* of them, from addresses that are not the owner's */
    bool warned;             /* the first refusal or closing was logged at warn */
};

//  Fills *OUT from ADDR. Returns false for an address that is neither IPv4 nor IPv6.
static bool
s_address (const struct sockaddr *addr, socklen_t addr_len, s_address_t *out)
{
    memset (out, 0, sizeof *out);
    if (addr && addr->sa_family == AF_INET && addr_len >= sizeof (struct sockaddr_in)) {
        out->family = AF_INET;
        memcpy (out->bytes, &((const struct sockaddr_in *)addr)->sin_addr, 4);
        return true;
    }
    if (addr && addr->sa_family == AF_INET6 && addr_len >= sizeof (struct sockaddr_in6)) {
        out->family = AF_INET6;
        memcpy (out->bytes, &((const struct sockaddr_in6 *)addr)->sin6_addr, 16);
        return true;
    }
    return false;
}

/*  The owner's addresses: where the server's own user connects from unless it picks
    another source address. On a shared host other users connect from them too; the
    reserve only keeps other addresses (the rest of 127.0.0.0/8, remote peers) from
    taking every connection. */
static bool
s_owner (const s_address_t *address)
{
    static const unsigned char v4[4] = {127, 0, 0, 1};
    if (address->family == AF_INET)
        return memcmp (address->bytes, v4, 4) == 0;
    return address->family == AF_INET6
           && memcmp (address->bytes, &in6addr_loopback, sizeof in6addr_loopback) == 0;
}

static bool
s_same (const s_address_t *a, const s_address_t *b)
{
    return a->family == b->family && memcmp (a->bytes, b->bytes, sizeof a->bytes) == 0;
}

static void
s_text (const s_address_t *address, char *text, size_t size)
{
    if (!inet_ntop (address->family, address->bytes, text, (socklen_t)size))
        snprintf (text, size, "?");
}

//  Logs "BEFORE<address>AFTER": the first time at warn, then at debug.
static void
s_log (cg_http_policy_t *self, const s_address_t *address, const char *before, const char *after)
{
    char text[INET6_ADDRSTRLEN];
    s_text (address, text, sizeof text);
    cg_log (self->warned ? 3 : 1, "http: %s%s%s%s", before, text, after,
            self->warned ? "" : " (further ones at debug; /metrics counts them)");
    self->warned = true;
}

//  Stops counting CONNECTION and shuts its socket down: MHD sees the end at its next run
//  and frees it. Counted in /metrics as REASON.
static void
s_close (cg_http_policy_t *self, s_connection_t *connection, cg_metrics_connection_t reason)
{
    connection->closing = true;
    connection->waiting = false;
    self->counted--;
    if (!connection->owner)
        self->counted_others--;
    shutdown (connection->fd, SHUT_RDWR);
    cg_metrics_connection_closed (reason);
}

//  Which waiting connections are closed first to make room: lower first.
static int
s_rank (const s_connection_t *c)
{
    return (c->owner ? 2 : 0) + (c->served ? 1 : 0);
}

/*  Closes a connection waiting for its request, from ADDRESS (when not NULL), or from the
    owner's addresses too when ANY_OWNER, else from other addresses only: the first by
    s_rank, the one that has waited longest among equals. Returns false when no such
    connection is waiting. */
static bool
s_evict (cg_http_policy_t *self, const s_address_t *address, bool any_owner)
{
    s_connection_t *oldest = NULL;
    for (s_connection_t *c = self->connections; c; c = c->next) {
        if (!c->waiting || c->closing)
            continue;
        if (address ? !s_same (&c->address, address) : (c->owner && !any_owner))
            continue;
        //  The others' connections go first, then the owner's; of those, the ones that never
        //  got a request through (what a slow sender holds) before a client's idle ones.
        if (!oldest || s_rank (c) < s_rank (oldest)
            || (s_rank (c) == s_rank (oldest) && c->waiting_since_us < oldest->waiting_since_us))
            oldest = c;
    }
    if (!oldest)
        return false;
    s_log (self, &oldest->address, "closed a connection from ",
           " that was still waiting for its request, to make room for a new one past the "
           "connection limits");
    s_close (self, oldest, CG_METRICS_CONNECTION_EVICTED);
    return true;
}

enum MHD_Result
cg_http_policy_accept_cb (void *cls, const struct sockaddr *addr, socklen_t addr_len)
{
    cg_http_policy_t *self = cls;
    //  Untrusted: the peer picks its source address (any of 127.0.0.0/8 on loopback).
    s_address_t address;
    if (!s_address (addr, addr_len, &address))
        return MHD_NO;
    bool owner = s_owner (&address);
    unsigned same = 0;
    for (s_connection_t *c = self->connections; c; c = c->next)
        same += !c->closing && s_same (&c->address, &address);
    if (same >= self->limits.per_address && !s_evict (self, &address, true)) {
        s_log (self, &address, "refused a connection from ",
               ": past --http-connections-per-address");
        cg_metrics_connection_closed (CG_METRICS_CONNECTION_PER_ADDRESS);
        return MHD_NO;
    }
    unsigned others_max = self->connections_max - self->limits.owner_reserve;
    if (self->counted >= self->connections_max || (!owner && self->counted_others >= others_max)) {
        if (!s_evict (self, NULL, owner)) {
            bool reserve = !owner && self->counted < self->connections_max;
            s_log (self, &address, "refused a connection from ",
                   reserve ? ": what is left is --http-owner-reserve"
                           : ": every connection is in use");
            cg_metrics_connection_closed (reserve ? CG_METRICS_CONNECTION_OWNER_RESERVE
                                                  : CG_METRICS_CONNECTION_LIMIT);
            return MHD_NO;
        }
    }
    return MHD_YES;
}

static s_connection_t *
s_record (struct MHD_Connection *connection)
{
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info (connection, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return info ? info->socket_context : NULL;
}

static void
s_started (cg_http_policy_t *self, struct MHD_Connection *connection, void **socket_context)
{
    const union MHD_ConnectionInfo *fd_info =
        MHD_get_connection_info (connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    const union MHD_ConnectionInfo *addr_info =
        MHD_get_connection_info (connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    s_connection_t *c = cg_xcalloc (1, sizeof *c);
    c->fd = fd_info ? fd_info->connect_fd : -1;
    if (addr_info && addr_info->client_addr)
        s_address (addr_info->client_addr,
                   addr_info->client_addr->sa_family == AF_INET6 ? sizeof (struct sockaddr_in6)
                                                                 : sizeof (struct sockaddr_in),
                   &c->address);
    c->owner = s_owner (&c->address);
    c->waiting = true;
    c->waiting_since_us = cg_now_us ();
    c->next = self->connections;
    if (c->next)
        c->next->prev = c;
    self->connections = c;
    self->counted++;
    if (!c->owner)
        self->counted_others++;
    *socket_context = c;
}

void
cg_http_policy_notify_cb (void *cls, struct MHD_Connection *connection, void **socket_context,
                          enum MHD_ConnectionNotificationCode code)
{
    cg_http_policy_t *self = cls;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        s_started (self, connection, socket_context);
        return;
    }
    s_connection_t *c = *socket_context;
    *socket_context = NULL;
    if (!c)
        return;
    if (!c->closing) {
        self->counted--;
        if (!c->owner)
            self->counted_others--;
    }
    if (c->prev)
        c->prev->next = c->next;
    else
        self->connections = c->next;
    if (c->next)
        c->next->prev = c->prev;
    free (c);
}

void
cg_http_policy_request_in (struct MHD_Connection *connection)
{
    s_connection_t *c = s_record (connection);
    if (c)
        c->waiting = false;
}

void
cg_http_policy_request_done (struct MHD_Connection *connection)
{
    s_connection_t *c = s_record (connection);
    if (c && !c->upgraded && !c->closing) {
        c->served = true;
        c->waiting = true;
        c->waiting_since_us = cg_now_us ();
    }
}

void
cg_http_policy_upgraded (struct MHD_Connection *connection)
{
    s_connection_t *c = s_record (connection);
    if (c) {
        c->upgraded = true;
        c->waiting = false;
    }
}

//  Returns the milliseconds until the next waiting connection's deadline (0: one is
//  past it), or -1 when none is waiting; with CLOSE, closes those past it first.
static int
s_scan (cg_http_policy_t *self, bool close)
{
    int64_t now = cg_now_us ();
    int64_t timeout_us = (int64_t)self->limits.request_timeout_s * 1000000;
    int64_t next_us = -1;
    for (s_connection_t *c = self->connections; c; c = c->next) {
        if (!c->waiting || c->closing)
            continue;
        int64_t left_us = c->waiting_since_us + timeout_us - now;
        if (left_us <= 0 && close) {
            s_log (self, &c->address, "closed a connection from ",
                   ": its request did not arrive whole within --http-request-timeout");
            s_close (self, c, CG_METRICS_CONNECTION_REQUEST_TIMEOUT);
            continue;
        }
        if (left_us < 0)
            left_us = 0;
        if (next_us < 0 || left_us < next_us)
            next_us = left_us;
    }
    if (next_us < 0)
        return -1;
    int64_t ms = (next_us + 999) / 1000;
    return ms > INT_MAX ? INT_MAX : (int)ms;
}

void
cg_http_policy_sweep (cg_http_policy_t *self)
{
    s_scan (self, true);
}

int
cg_http_policy_timeout_ms (cg_http_policy_t *self)
{
    return s_scan (self, false);
}

void
cg_http_policy_set_limits (cg_http_policy_t *self, const cg_http_limits_t *limits)
{
    self->limits = *limits;
    if (self->limits.per_address < 1)
        self->limits.per_address = 1;
    if (self->limits.owner_reserve >= self->connections_max)
        self->limits.owner_reserve = self->connections_max - 1;
    if (self->limits.request_timeout_s < 1)
        self->limits.request_timeout_s = 1;
}

cg_http_policy_t *
cg_http_policy_new (const cg_http_limits_t *limits, unsigned connections_max)
{
    cg_http_policy_t *self = cg_xcalloc (1, sizeof *self);
    self->connections_max = connections_max > 1 ? connections_max : 2;
    cg_http_policy_set_limits (self, limits);
    return self;
}

void
cg_http_policy_destroy (cg_http_policy_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    cg_http_policy_t *self = *self_p;
    while (self->connections) {
        s_connection_t *next = self->connections->next;
        free (self->connections);
        self->connections = next;
    }
    free (self);
    *self_p = NULL;
}
