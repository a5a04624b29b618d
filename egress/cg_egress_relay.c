/*  cg_egress_relay — the relay process: its loop (epoll, one thread), its control socket to the
    server (sessions added and removed, events back) and its command line. The connections
    themselves are cg_egress_conn.c. */
#define _GNU_SOURCE
#include "egress/cg_egress_relay.h"
#include "egress/cg_egress_conn.h"
#include "base/cg_util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

//  The largest control message the relay reads; a longer one is refused whole.
#define S_PACKET_MAX 4096
//  Droppable events queued for a server that is not reading: past this, they are counted
//  instead, and the next one sent says how many were dropped ("dropped").
#define S_QUEUE_MAX 1024
//  The largest byte limit a session may ask for (2^53: any JSON number reader holds it).
#define S_BYTES_MAX ((int64_t)1 << 53)
#define S_PER_MINUTE_MAX 1000000

typedef struct s_out_s {
    struct s_out_s *next;
    size_t len;
    char text[];
} s_out_t;

//  The server's side of the relay: its socket, and the events it has not taken yet.
typedef struct {
    cg_watch_t watch;
    s_out_t *head, *tail;
    int queued;
    int dropped; /* droppable events dropped since the last sent */
    bool closed; /* the server closed its end, or it failed: the relay ends */
} s_control_t;

int
cg_relay_watch (cg_relay_t *relay, cg_watch_t *watch, uint32_t events)
{
    if (watch->fd < 0 || events == watch->events)
        return 0;
    int op = watch->events == 0 ? EPOLL_CTL_ADD : events == 0 ? EPOLL_CTL_DEL : EPOLL_CTL_MOD;
    struct epoll_event event = {.events = events, .data.ptr = watch};
    if (epoll_ctl (relay->epoll_fd, op, watch->fd, &event) < 0) {
        cg_log (0, "egress relay: epoll_ctl: %s", strerror (errno));
        return -1;
    }
    watch->events = events;
    return 0;
}

//  Sends what is queued until the socket is full, then watches for room.
static void
s_flush (cg_relay_t *relay)
{
    s_control_t *control = relay->control;
    while (control->head && !control->closed) {
        s_out_t *out = control->head;
        if (send (control->watch.fd, out->text, out->len, MSG_DONTWAIT | MSG_NOSIGNAL) < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
                break;
            //  The server's end closed (ECONNRESET, EPIPE: it stopped): no error of ours.
            if (errno != ECONNRESET && errno != EPIPE)
                cg_log (0, "egress relay: control socket: %s", strerror (errno));
            control->closed = true;
            break;
        }
        control->head = out->next;
        if (!control->head)
            control->tail = NULL;
        control->queued--;
        free (out);
    }
    if (!control->closed
        && cg_relay_watch (relay, &control->watch, EPOLLIN | (control->head ? EPOLLOUT : 0)) < 0)
        control->closed = true;
}

void
cg_relay_emit (cg_relay_t *relay, json_t *event, bool droppable)
{
    s_control_t *control = relay->control;
    if (droppable && control->queued >= S_QUEUE_MAX) {
        control->dropped++;
        json_decref (event);
        return;
    }
    if (droppable && control->dropped) {
        json_object_set_new (event, "dropped", json_integer (control->dropped));
        control->dropped = 0;
    }
    cleanup_free char *text = json_dumps (event, JSON_COMPACT);
    json_decref (event);
    size_t len = strlen (text);
    s_out_t *out = cg_xmalloc (sizeof *out + len);
    out->next = NULL;
    out->len = len;
    memcpy (out->text, text, len);
    if (control->tail)
        control->tail->next = out;
    else
        control->head = out;
    control->tail = out;
    control->queued++;
    s_flush (relay);
}

static void
s_error (cg_relay_t *relay, const char *session, const char *message)
{
    cg_log (1, "egress relay: session %s: %s", session ? session : "?", message);
    cg_relay_emit (
        relay,
        json_pack ("{s:s, s:s*, s:s}", "event", "error", "session", session, "message", message),
        false);
}

static cg_relay_session_t **
s_find (cg_relay_t *relay, const char *id)
{
    for (int i = 0; i < CG_EGRESS_MAX_SESSIONS; i++)
        if (relay->table[i] && strcmp (relay->table[i]->id, id) == 0)
            return &relay->table[i];
    return NULL;
}

static bool
s_session_id (const char *id)
{
    if (!id || strlen (id) != 12)
        return false;
    for (const char *c = id; *c; c++)
        if (!((*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'f')))
            return false;
    return true;
}

//  An integer member NAME of MSG between LOW and HIGH into *VALUE, or false.
static bool
s_integer (const json_t *msg, const char *name, int64_t low, int64_t high, int64_t *value)
{
    json_t *member = json_object_get (msg, name);
    if (!json_is_integer (member))
        return false;
    *value = json_integer_value (member);
    return *value >= low && *value <= high;
}

//  The checks of an "add" (untrusted in no way, but a server's mistake must not crash the
//  relay): fills SESSION and returns NULL, or returns what is wrong.
static const char *
s_add_checks (cg_relay_t *relay, const json_t *msg, int fd, cg_relay_session_t *session)
{
    const char *id = json_string_value (json_object_get (msg, "session"));
    if (!s_session_id (id))
        return "session: 12 lowercase hex characters expected";
    snprintf (session->id, sizeof session->id, "%s", id);
    const char *src = json_string_value (json_object_get (msg, "src"));
    struct in_addr addr;
    if (!src || inet_pton (AF_INET, src, &addr) != 1
        || (ntohl (addr.s_addr) & 0xffc00000) != 0x7f400000)
        return "src: an IPv4 address in 127.64.0.0/10 expected";
    inet_ntop (AF_INET, &addr, session->src, sizeof session->src);
    int64_t max_conns, per_minute;
    cg_egress_limits_t *limits = &session->limits;
    if (!s_integer (msg, "max_conns", 1, CG_EGRESS_MAX_CONNS, &max_conns)
        || !s_integer (msg, "max_up", 0, S_BYTES_MAX, &limits->max_up)
        || !s_integer (msg, "max_down", 0, S_BYTES_MAX, &limits->max_down)
        || !s_integer (msg, "per_minute", 1, S_PER_MINUTE_MAX, &per_minute))
        return "limits: max_conns (1 to 16384), max_up and max_down (0 to 2^53), per_minute "
               "(1 to 1000000) expected";
    limits->max_conns = (int)max_conns;
    limits->per_minute = (int)per_minute;
    int accepting = 0, type = 0, protocol = 0;
    socklen_t len = sizeof accepting;
    if (fd < 0)
        return "one listening socket expected with the message";
    if (getsockopt (fd, SOL_SOCKET, SO_ACCEPTCONN, &accepting, &len) < 0 || !accepting
        || getsockopt (fd, SOL_SOCKET, SO_TYPE, &type, &len) < 0 || type != SOCK_STREAM
        || getsockopt (fd, SOL_SOCKET, SO_PROTOCOL, &protocol, &len) < 0 || protocol != IPPROTO_TCP)
        return "the fd is not a listening TCP socket";
    if (s_find (relay, id))
        return "session already added";
    if (relay->sessions >= CG_EGRESS_MAX_SESSIONS)
        return "session limit reached (4096)";
    return NULL;
}

//  {"op":"add", ...} with *FD: the relay takes the listener (and sets *FD to -1), or answers
//  an error event.
static void
s_add (cg_relay_t *relay, const json_t *msg, int *fd)
{
    cg_relay_session_t *session = cg_xcalloc (1, sizeof *session);
    const char *wrong = s_add_checks (relay, msg, *fd, session);
    int flags = wrong ? 0 : fcntl (*fd, F_GETFL);
    if (!wrong && (flags < 0 || fcntl (*fd, F_SETFL, flags | O_NONBLOCK) < 0))
        wrong = "the listener cannot be made non-blocking";
    session->listener = (cg_watch_t){CG_WATCH_LISTENER, session, *fd, 0};
    if (!wrong && cg_relay_watch (relay, &session->listener, EPOLLIN) < 0)
        wrong = "the listener cannot be watched";
    if (wrong) {
        s_error (relay, json_string_value (json_object_get (msg, "session")), wrong);
        free (session);
        return;
    }
    *fd = -1;
    session->tokens = session->limits.per_minute;
    session->refilled_us = cg_now_us ();
    int slot = 0;
    while (relay->table[slot])
        slot++;
    relay->table[slot] = session;
    relay->sessions++;
    cg_log (3, "egress relay: session %s added (%s)", session->id, session->src);
}

//  Closes SESSION's listener and connections, and frees it after the loop's batch.
static void
s_drop (cg_relay_t *relay, cg_relay_session_t **slot)
{
    cg_relay_session_t *session = *slot;
    cg_relay_close_all (relay, session);
    cg_relay_watch (relay, &session->listener, 0);
    close (session->listener.fd);
    session->listener.fd = -1;
    session->dead = true;
    session->next_dead = relay->dead_sessions;
    relay->dead_sessions = session;
    *slot = NULL;
    relay->sessions--;
}

static void
s_remove (cg_relay_t *relay, const char *id)
{
    cg_relay_session_t **slot = id ? s_find (relay, id) : NULL;
    if (!slot) {
        s_error (relay, id, "no such session");
        return;
    }
    cg_relay_session_t *session = *slot;
    s_drop (relay, slot);
    cg_relay_emit (relay,
                   json_pack ("{s:s, s:s, s:I, s:I}", "event", "removed", "session", session->id,
                              "up", (json_int_t)session->up, "down", (json_int_t)session->down),
                   false);
    cg_log (3, "egress relay: session %s removed", session->id);
}

//  One control message: TEXT (LEN bytes; TRUNCATED when longer than the relay reads) with
//  *FD, the one fd it carried or -1 (the caller closes it unless this takes it).
static void
s_message (cg_relay_t *relay, const char *text, size_t len, bool truncated, int *fd)
{
    json_t *msg = truncated ? NULL : json_loadb (text, len, JSON_REJECT_DUPLICATES, NULL);
    const char *op = json_string_value (json_object_get (msg, "op"));
    const char *session = json_string_value (json_object_get (msg, "session"));
    if (truncated)
        s_error (relay, NULL, "control message too long");
    else if (!op)
        s_error (relay, session, "control message: a JSON object with \"op\" expected");
    else if (strcmp (op, "add") == 0)
        s_add (relay, msg, fd);
    else if (strcmp (op, "remove") == 0 && *fd < 0)
        s_remove (relay, session);
    else
        s_error (relay, session, "control message: unknown op or an fd it does not take");
    json_decref (msg);
}

//  Reads the control messages waiting (a few at a time); a closed socket ends the relay.
static void
s_control_read (cg_relay_t *relay)
{
    s_control_t *control = relay->control;
    for (int i = 0; i < 16 && !control->closed; i++) {
        char text[S_PACKET_MAX];
        union {
            struct cmsghdr align;
            char space[CMSG_SPACE (4 * sizeof (int))];
        } cmsg;
        struct iovec iov = {text, sizeof text};
        struct msghdr msg = {.msg_iov = &iov,
                             .msg_iovlen = 1,
                             .msg_control = cmsg.space,
                             .msg_controllen = sizeof cmsg.space};
        ssize_t n = recvmsg (control->watch.fd, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
            return;
        if (n <= 0) {
            //  A SOCK_SEQPACKET read of 0 is the server's end closed (it sends no empty one).
            if (n < 0 && errno != ECONNRESET)
                cg_log (0, "egress relay: control socket: %s", strerror (errno));
            control->closed = true;
            return;
        }
        int fds[4], count = 0;
        for (struct cmsghdr *c = CMSG_FIRSTHDR (&msg); c; c = CMSG_NXTHDR (&msg, c))
            if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
                for (size_t k = 0; k < (c->cmsg_len - CMSG_LEN (0)) / sizeof (int); k++)
                    if (count < 4)
                        memcpy (&fds[count++], CMSG_DATA (c) + k * sizeof (int), sizeof (int));
        int fd = count == 1 ? fds[0] : -1;
        if (count > 1 || (msg.msg_flags & MSG_CTRUNC))
            s_error (relay, NULL, "control message: more than one fd");
        else
            s_message (relay, text, (size_t)n, msg.msg_flags & MSG_TRUNC, &fd);
        for (int k = 0; k < count; k++)
            if (count > 1 || fd >= 0)
                close (fds[k]);
    }
}

static void
s_dispatch (cg_relay_t *relay, cg_watch_t *watch, uint32_t events)
{
    switch (watch->kind) {
        case CG_WATCH_CONTROL:
            if (events & EPOLLOUT)
                s_flush (relay);
            if (events & (EPOLLIN | EPOLLHUP | EPOLLERR))
                s_control_read (relay);
            break;
        case CG_WATCH_LISTENER:
            if (!((cg_relay_session_t *)watch->owner)->dead)
                cg_relay_accept (relay, watch->owner);
            break;
        case CG_WATCH_CLIENT:
        case CG_WATCH_UPSTREAM:
            if (!cg_relay_conn_dead (watch->owner))
                cg_relay_conn_ready (relay, watch, events);
            break;
    }
}

//  The loop: until the server closes the control socket.
static int
s_run (cg_relay_t *relay)
{
    s_control_t *control = relay->control;
    struct epoll_event events[128];
    while (!control->closed) {
        int timeout = cg_relay_retry (relay, cg_now_us ());
        int n = epoll_wait (relay->epoll_fd, events, 128, timeout);
        if (n < 0 && errno != EINTR) {
            cg_log (0, "egress relay: epoll_wait: %s", strerror (errno));
            return -1;
        }
        for (int i = 0; i < n && !control->closed; i++)
            s_dispatch (relay, events[i].data.ptr, events[i].events);
        cg_relay_reap (relay);
    }
    return 0;
}

//  Each connection holds two fds and each session one: raise the soft limit to the hard one.
static void
s_raise_nofile (void)
{
    struct rlimit nofile;
    if (getrlimit (RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur < nofile.rlim_max) {
        nofile.rlim_cur = nofile.rlim_max;
        setrlimit (RLIMIT_NOFILE, &nofile);
    }
}

//  --control-fd N --upstream-port P into *CONTROL_FD and *PORT; false when wrong.
static bool
s_args (int argc, char **argv, int *control_fd, int *port)
{
    *control_fd = *port = -1;
    for (int i = 2; i + 1 < argc; i += 2) {
        char *end;
        long value = strtol (argv[i + 1], &end, 10);
        if (*argv[i + 1] == '\0' || *end != '\0')
            return false;
        if (strcmp (argv[i], "--control-fd") == 0 && value >= 0 && value < 65536)
            *control_fd = (int)value;
        else if (strcmp (argv[i], "--upstream-port") == 0 && value > 0 && value < 65536)
            *port = (int)value;
        else
            return false;
    }
    return argc == 6 && *control_fd >= 0 && *port > 0;
}

int
cg_egress_relay_main (int argc, char **argv)
{
    int control_fd, port;
    if (!s_args (argc, argv, &control_fd, &port)) {
        fprintf (stderr, "usage: cellgate egress-relay --control-fd N --upstream-port P\n");
        return 2;
    }
    prctl (PR_SET_PDEATHSIG, SIGKILL);
    signal (SIGPIPE, SIG_IGN);
    signal (SIGINT, SIG_IGN);
    int type = 0;
    socklen_t len = sizeof type;
    if (getsockopt (control_fd, SOL_SOCKET, SO_TYPE, &type, &len) < 0 || type != SOCK_SEQPACKET) {
        fprintf (stderr, "cellgate egress-relay: fd %d is not a SOCK_SEQPACKET socket\n",
                 control_fd);
        return 1;
    }
    fcntl (control_fd, F_SETFD, FD_CLOEXEC);
    s_raise_nofile ();
    cg_relay_t *relay = cg_xcalloc (1, sizeof *relay);
    s_control_t control = {.watch = {CG_WATCH_CONTROL, NULL, control_fd, 0}};
    relay->control = &control;
    relay->upstream_port = port;
    relay->epoll_fd = epoll_create1 (EPOLL_CLOEXEC);
    relay->spare_fd = open ("/dev/null", O_RDONLY | O_CLOEXEC);
    int rc = 1;
    if (relay->epoll_fd >= 0 && cg_relay_watch (relay, &control.watch, EPOLLIN) == 0) {
        cg_log (3, "egress relay: started, proxy on 127.0.0.1:%d", port);
        rc = s_run (relay) == 0 ? 0 : 1;
    }
    for (int i = 0; i < CG_EGRESS_MAX_SESSIONS; i++)
        if (relay->table[i])
            s_drop (relay, &relay->table[i]);
    cg_relay_reap (relay);
    while (control.head) {
        s_out_t *out = control.head;
        control.head = out->next;
        free (out);
    }
    if (relay->spare_fd >= 0)
        close (relay->spare_fd);
    if (relay->epoll_fd >= 0)
        close (relay->epoll_fd);
    close (control_fd);
    free (relay);
    return rc;
}
