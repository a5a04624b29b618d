/*  cg_egress_conn — the relay's connections: admitted or refused at accept, connected to the
    proxy behind a PROXY v1 line, then a byte pipe both ways (cg_egress_conn.h). */
#define _GNU_SOURCE
#include "egress/cg_egress_conn.h"
#include "base/cg_util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

//  Connections one listener event accepts at most: a busy session cannot starve the others.
#define S_ACCEPT_BATCH 16

typedef enum { S_CONNECTING, S_WAITING, S_RELAYING } s_state_t;

//  One direction: bytes read from one side, not yet written to the other.
typedef struct {
    char *data; /* CG_EGRESS_BUFFER bytes, allocated once connected */
    size_t start, end;
    bool eof;  /* its source said EOF */
    bool shut; /* its destination was shut down for writing after the last byte */
} s_flow_t;

struct cg_relay_conn_s {
    cg_relay_session_t *session;
    cg_relay_conn_t *prev, *next;           /* the session's list */
    cg_relay_conn_t *wait_prev, *wait_next; /* the relay's waiting list, when S_WAITING */
    cg_watch_t client, upstream;
    s_state_t state;
    int client_port;
    int64_t retry_us, give_up_us;
    s_flow_t up, down; /* up: sandbox -> proxy; down: proxy -> sandbox */
    bool dead;
};

static void
s_close_fd (cg_relay_t *relay, cg_watch_t *watch)
{
    if (watch->fd < 0)
        return;
    if (cg_relay_watch (relay, watch, 0) < 0)
        watch->events = 0; /* close takes it out of the set anyway */
    close (watch->fd);
    watch->fd = -1;
}

static void
s_unwait (cg_relay_t *relay, cg_relay_conn_t *conn)
{
    if (conn->state != S_WAITING)
        return;
    if (conn->wait_prev)
        conn->wait_prev->wait_next = conn->wait_next;
    else
        relay->waiting = conn->wait_next;
    if (conn->wait_next)
        conn->wait_next->wait_prev = conn->wait_prev;
    conn->wait_prev = conn->wait_next = NULL;
}

//  Tells the server that SESSION has a connection open now ("busy") or none ("idle"): a run
//  that ends waits for its session's connections to close, whose requests squid logs at
//  their end.
static void
s_activity (cg_relay_t *relay, cg_relay_session_t *session, const char *what)
{
    cg_relay_emit (relay, json_pack ("{s:s, s:s}", "event", what, "session", session->id), true);
}

//  Closes CONN's fds and takes it out of its session; it is freed by cg_relay_reap.
static void
s_close (cg_relay_t *relay, cg_relay_conn_t *conn)
{
    if (conn->dead)
        return;
    s_unwait (relay, conn);
    s_close_fd (relay, &conn->client);
    s_close_fd (relay, &conn->upstream);
    cg_relay_session_t *session = conn->session;
    if (conn->prev)
        conn->prev->next = conn->next;
    else
        session->head = conn->next;
    if (conn->next)
        conn->next->prev = conn->prev;
    session->conns--;
    relay->conns--;
    if (session->conns == 0)
        s_activity (relay, session, "idle");
    conn->dead = true;
    conn->next = relay->dead_conns;
    relay->dead_conns = conn;
}

void
cg_relay_close_all (cg_relay_t *relay, cg_relay_session_t *session)
{
    while (session->head)
        s_close (relay, session->head);
}

void
cg_relay_reap (cg_relay_t *relay)
{
    while (relay->dead_conns) {
        cg_relay_conn_t *conn = relay->dead_conns;
        relay->dead_conns = conn->next;
        free (conn->up.data);
        free (conn->down.data);
        free (conn);
    }
    while (relay->dead_sessions) {
        cg_relay_session_t *session = relay->dead_sessions;
        relay->dead_sessions = session->next_dead;
        free (session);
    }
}

static void
s_denied (cg_relay_t *relay, cg_relay_session_t *session, const char *reason)
{
    cg_relay_emit (
        relay,
        json_pack ("{s:s, s:s, s:s}", "event", "denied", "session", session->id, "reason", reason),
        true);
}

//  Answers FD the 403 that gives REASON, before reading anything, and closes it.
static void
s_refuse (int fd, const char *reason)
{
    char body[160], text[400];
    int body_len = snprintf (body, sizeof body, "cellgate egress: %s\n", reason);
    int len = snprintf (text, sizeof text,
                        "HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\n"
                        "Connection: close\r\nContent-Length: %d\r\n\r\n%s",
                        body_len, body);
    //  A fresh socket's send buffer holds this whole; a short write only cuts the answer.
    if (send (fd, text, (size_t)len, MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
        cg_log (3, "egress relay: 403 not sent: %s", strerror (errno));
    shutdown (fd, SHUT_WR);
    close (fd);
}

//  The reason SESSION refuses a connection now, in REASON, or false when it admits it (a
//  token taken from its rate bucket).
static bool
s_refusal (cg_relay_t *relay, cg_relay_session_t *session, char reason[128])
{
    const cg_egress_limits_t *limits = &session->limits;
    if (session->over) {
        snprintf (
            reason, 128, "byte limit reached (%lld %s)",
            (long long)(strcmp (session->over, "up") == 0 ? limits->max_up : limits->max_down),
            session->over);
        return true;
    }
    if (session->conns >= limits->max_conns) {
        snprintf (reason, 128, "connection limit reached (%d at once)", limits->max_conns);
        return true;
    }
    if (relay->conns >= CG_EGRESS_MAX_CONNS) {
        snprintf (reason, 128, "relay connection limit reached (%d at once, all sessions)",
                  CG_EGRESS_MAX_CONNS);
        return true;
    }
    int64_t now = cg_now_us ();
    session->tokens += (double)(now - session->refilled_us) * limits->per_minute / 60e6;
    if (session->tokens > limits->per_minute)
        session->tokens = limits->per_minute;
    session->refilled_us = now;
    if (session->tokens < 1) {
        snprintf (reason, 128, "rate limit reached (%d connections a minute)", limits->per_minute);
        return true;
    }
    session->tokens -= 1;
    return false;
}

static void s_connect (cg_relay_t *relay, cg_relay_conn_t *conn);

static void
s_admit (cg_relay_t *relay, cg_relay_session_t *session, int fd, int client_port)
{
    cg_relay_conn_t *conn = cg_xcalloc (1, sizeof *conn);
    conn->session = session;
    conn->client = (cg_watch_t){CG_WATCH_CLIENT, conn, fd, 0};
    conn->upstream = (cg_watch_t){CG_WATCH_UPSTREAM, conn, -1, 0};
    conn->client_port = client_port;
    conn->give_up_us = cg_now_us () + CG_EGRESS_GIVE_UP_US;
    conn->next = session->head;
    if (session->head)
        session->head->prev = conn;
    session->head = conn;
    session->conns++;
    relay->conns++;
    if (session->conns == 1)
        s_activity (relay, session, "busy");
    s_connect (relay, conn);
}

//  accept4 at EMFILE: gives up the spare fd to take the connection and refuse it, so that the
//  listener does not stay readable for nothing. Returns the fd, or -1.
static int
s_accept_spare (cg_relay_t *relay, cg_relay_session_t *session)
{
    if (relay->spare_fd < 0)
        return -1;
    close (relay->spare_fd);
    int fd = accept4 (session->listener.fd, NULL, NULL, SOCK_CLOEXEC);
    if (fd >= 0) {
        s_refuse (fd, "relay out of file descriptors");
        s_denied (relay, session, "relay out of file descriptors");
    }
    relay->spare_fd = open ("/dev/null", O_RDONLY | O_CLOEXEC);
    return fd;
}

void
cg_relay_accept (cg_relay_t *relay, cg_relay_session_t *session)
{
    for (int i = 0; i < S_ACCEPT_BATCH && !session->dead; i++) {
        struct sockaddr_storage peer;
        socklen_t peer_len = sizeof peer;
        int fd = accept4 (session->listener.fd, (struct sockaddr *)&peer, &peer_len,
                          SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if ((errno == EMFILE || errno == ENFILE) && s_accept_spare (relay, session) >= 0)
                continue;
            if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR && errno != ECONNABORTED)
                cg_log (1, "egress relay: session %s: accept: %s", session->id, strerror (errno));
            return;
        }
        int port = 0;
        if (peer.ss_family == AF_INET)
            port = ntohs (((struct sockaddr_in *)&peer)->sin_port);
        else if (peer.ss_family == AF_INET6)
            port = ntohs (((struct sockaddr_in6 *)&peer)->sin6_port);
        char reason[128];
        if (s_refusal (relay, session, reason)) {
            s_refuse (fd, reason);
            s_denied (relay, session, reason);
        }
        else
            s_admit (relay, session, fd, port);
    }
}

//  What epoll should watch on each side of a relaying CONN now: a side is read while its
//  buffer has room and it has not said EOF, written while the other's buffer holds bytes.
static void
s_rewatch (cg_relay_t *relay, cg_relay_conn_t *conn)
{
    uint32_t client = 0, upstream = 0;
    if (!conn->up.eof && conn->up.end < CG_EGRESS_BUFFER)
        client |= EPOLLIN;
    if (conn->down.start < conn->down.end)
        client |= EPOLLOUT;
    if (!conn->down.eof && conn->down.end < CG_EGRESS_BUFFER)
        upstream |= EPOLLIN;
    if (conn->up.start < conn->up.end)
        upstream |= EPOLLOUT;
    if (cg_relay_watch (relay, &conn->client, client) < 0
        || cg_relay_watch (relay, &conn->upstream, upstream) < 0)
        s_close (relay, conn);
}

//  Connected to the proxy: the PROXY v1 line goes first (not counted), then the copy starts.
static void
s_relaying (cg_relay_t *relay, cg_relay_conn_t *conn)
{
    conn->state = S_RELAYING;
    conn->up.data = cg_xmalloc (CG_EGRESS_BUFFER);
    conn->down.data = cg_xmalloc (CG_EGRESS_BUFFER);
    int len = snprintf (conn->up.data, CG_EGRESS_BUFFER, "PROXY TCP4 %s 127.0.0.1 %d %d\r\n",
                        conn->session->src, conn->client_port, relay->upstream_port);
    conn->up.end = (size_t)len;
    s_rewatch (relay, conn);
}

static void
s_wait (cg_relay_t *relay, cg_relay_conn_t *conn)
{
    s_close_fd (relay, &conn->upstream);
    int64_t now = cg_now_us ();
    if (now + CG_EGRESS_RETRY_US > conn->give_up_us) {
        cleanup_free char *message = cg_strdupf (
            "proxy not reachable on 127.0.0.1:%d for 5 s: connection closed", relay->upstream_port);
        cg_relay_emit (relay,
                       json_pack ("{s:s, s:s, s:s}", "event", "error", "session", conn->session->id,
                                  "message", message),
                       true);
        s_close (relay, conn);
        return;
    }
    conn->state = S_WAITING;
    conn->retry_us = now + CG_EGRESS_RETRY_US;
    conn->wait_prev = NULL;
    conn->wait_next = relay->waiting;
    if (relay->waiting)
        relay->waiting->wait_prev = conn;
    relay->waiting = conn;
}

//  A connect's failure: refused (the proxy not listening yet, or reconfiguring) or out of
//  ports is tried again; anything else closes the connection.
static void
s_connect_failed (cg_relay_t *relay, cg_relay_conn_t *conn, int error)
{
    if (error == ECONNREFUSED || error == EAGAIN || error == EADDRNOTAVAIL) {
        s_wait (relay, conn);
        return;
    }
    cg_log (1, "egress relay: session %s: connect to 127.0.0.1:%d: %s", conn->session->id,
            relay->upstream_port, strerror (error));
    s_close (relay, conn);
}

static void
s_connect (cg_relay_t *relay, cg_relay_conn_t *conn)
{
    int fd = socket (AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        s_connect_failed (relay, conn, errno);
        return;
    }
    conn->upstream.fd = fd;
    struct sockaddr_in addr = {.sin_family = AF_INET,
                               .sin_port = htons ((uint16_t)relay->upstream_port),
                               .sin_addr.s_addr = htonl (INADDR_LOOPBACK)};
    if (connect (fd, (struct sockaddr *)&addr, sizeof addr) == 0)
        s_relaying (relay, conn);
    else if (errno == EINPROGRESS) {
        conn->state = S_CONNECTING;
        if (cg_relay_watch (relay, &conn->upstream, EPOLLOUT) < 0)
            s_close (relay, conn);
    }
    else
        s_connect_failed (relay, conn, errno);
}

int
cg_relay_retry (cg_relay_t *relay, int64_t now)
{
    int64_t next = -1;
    cg_relay_conn_t *conn = relay->waiting;
    while (conn) {
        cg_relay_conn_t *following = conn->wait_next;
        if (conn->retry_us <= now) {
            s_unwait (relay, conn);
            s_connect (relay, conn);
        }
        else if (next < 0 || conn->retry_us < next)
            next = conn->retry_us;
        conn = following;
    }
    //  A connect just retried may be waiting again: it is at the head, due in 100 ms.
    if (relay->waiting && (next < 0 || relay->waiting->retry_us < next))
        next = relay->waiting->retry_us;
    return next < 0 ? -1 : (int)((next - now + 999) / 1000);
}

//  SESSION passed its byte limit in DIRECTION ("up" or "down"): every connection closes, and
//  every later one is refused.
static void
s_over (cg_relay_t *relay, cg_relay_session_t *session, const char *direction)
{
    session->over = direction;
    char reason[128];
    snprintf (reason, sizeof reason, "byte limit reached (%lld %s)",
              (long long)(strcmp (direction, "up") == 0 ? session->limits.max_up
                                                        : session->limits.max_down),
              direction);
    cg_log (2, "egress relay: session %s: %s: its connections closed", session->id, reason);
    s_denied (relay, session, reason);
    cg_relay_close_all (relay, session);
}

typedef enum { S_MOVED, S_STILL, S_FAILED, S_OVER } s_move_t;

//  One step of FLOW: reads FROM into its buffer if it has room (at most one byte past what
//  *COUNT may still reach under LIMIT, so that a session never passes it by more), writes
//  what it holds to TO, and shuts TO for writing after the last byte.
static s_move_t
s_move (s_flow_t *flow, int from, int to, int64_t *count, int64_t limit)
{
    s_move_t result = S_STILL;
    if (!flow->eof && flow->end < CG_EGRESS_BUFFER) {
        size_t room = CG_EGRESS_BUFFER - flow->end;
        if ((int64_t)room > limit - *count + 1)
            room = (size_t)(limit - *count + 1);
        ssize_t n = recv (from, flow->data + flow->end, room, MSG_DONTWAIT);
        if (n > 0) {
            flow->end += (size_t)n;
            *count += n;
            if (*count > limit)
                return S_OVER;
            result = S_MOVED;
        }
        else if (n == 0) {
            flow->eof = true;
            result = S_MOVED;
        }
        else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
            return S_FAILED;
    }
    if (flow->start < flow->end) {
        ssize_t n = send (to, flow->data + flow->start, flow->end - flow->start,
                          MSG_DONTWAIT | MSG_NOSIGNAL);
        if (n > 0) {
            flow->start += (size_t)n;
            result = S_MOVED;
        }
        else if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
            return S_FAILED;
    }
    if (flow->start == flow->end)
        flow->start = flow->end = 0;
    if (flow->eof && flow->end == 0 && !flow->shut) {
        shutdown (to, SHUT_WR);
        flow->shut = true;
    }
    return result;
}

//  Copies what each side of CONN has, a few steps each, then says what to watch; closes CONN
//  on an error or once both directions ended, and its whole session past a byte limit.
static void
s_pump (cg_relay_t *relay, cg_relay_conn_t *conn)
{
    cg_relay_session_t *session = conn->session;
    for (int round = 0; round < 4; round++) {
        s_move_t up = s_move (&conn->up, conn->client.fd, conn->upstream.fd, &session->up,
                              session->limits.max_up);
        s_move_t down = up == S_FAILED || up == S_OVER
                            ? S_STILL
                            : s_move (&conn->down, conn->upstream.fd, conn->client.fd,
                                      &session->down, session->limits.max_down);
        if (up == S_OVER || down == S_OVER) {
            s_over (relay, session, up == S_OVER ? "up" : "down");
            return;
        }
        if (up == S_FAILED || down == S_FAILED || (conn->up.shut && conn->down.shut)) {
            s_close (relay, conn);
            return;
        }
        if (up == S_STILL && down == S_STILL)
            break;
    }
    s_rewatch (relay, conn);
}

bool
cg_relay_conn_dead (const cg_relay_conn_t *conn)
{
    return conn->dead;
}

void
cg_relay_conn_ready (cg_relay_t *relay, cg_watch_t *watch, uint32_t events)
{
    cg_relay_conn_t *conn = watch->owner;
    if (conn->state == S_CONNECTING) {
        if (watch != &conn->upstream || !(events & (EPOLLOUT | EPOLLERR | EPOLLHUP)))
            return;
        int error = 0;
        socklen_t len = sizeof error;
        if (getsockopt (conn->upstream.fd, SOL_SOCKET, SO_ERROR, &error, &len) < 0)
            error = errno;
        if (error == 0) {
            s_relaying (relay, conn);
            if (!conn->dead)
                s_pump (relay, conn);
        }
        else
            s_connect_failed (relay, conn, error);
        return;
    }
    if (conn->state == S_RELAYING)
        s_pump (relay, conn);
}
