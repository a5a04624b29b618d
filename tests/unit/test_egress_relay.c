/*  Unit tests for the egress relay (egress/cg_egress_relay.h): the real relay process, started
    with cg_egress_relay_spawn (`$CELLGATE_BIN egress-relay`, or this program, which runs it
    when called so), between
    a client and a plain TCP upstream of the test's own, through listeners the test makes and
    passes: the PROXY line, bytes both ways byte-exact, half-close, backpressure with slow
    readers on either side (the relay's memory bounded, nothing lost), the connection, byte
    and rate caps (a 403 naming the limit and a "denied" event), retries while the upstream is
    not listening yet, remove (everything closed, totals), two sessions apart, refused adds,
    and the end of the relay when its control socket closes. */
#define _GNU_SOURCE
#include "egress/cg_egress_relay.h"
#include "base/cg_util.h"
#include "cg_test.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define S_MB (1024 * 1024)
//  Bounds on waiting for what must happen (never asserted: only so that a hang fails).
#define S_WAIT_MS 15000

typedef struct {
    pid_t pid;
    int control;  /* the server's end of the control socket */
    int upstream; /* the test's upstream listener (squid's place) */
    int port;
} s_relay_t;

static int
s_listener (int *port, bool listen_now)
{
    int fd = socket (AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_addr.s_addr = htonl (INADDR_LOOPBACK)};
    socklen_t len = sizeof addr;
    if (bind (fd, (struct sockaddr *)&addr, sizeof addr) < 0 || (listen_now && listen (fd, 64) < 0)
        || getsockname (fd, (struct sockaddr *)&addr, &len) < 0) {
        close (fd);
        return -1;
    }
    *port = ntohs (addr.sin_port);
    return fd;
}

static int
s_connect (int port)
{
    int fd = socket (AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in addr = {.sin_family = AF_INET,
                               .sin_port = htons ((uint16_t)port),
                               .sin_addr.s_addr = htonl (INADDR_LOOPBACK)};
    if (connect (fd, (struct sockaddr *)&addr, sizeof addr) < 0) {
        close (fd);
        return -1;
    }
    return fd;
}

static int
s_local_port (int fd)
{
    struct sockaddr_in addr;
    socklen_t len = sizeof addr;
    getsockname (fd, (struct sockaddr *)&addr, &len);
    return ntohs (addr.sin_port);
}

static bool
s_ready (int fd, short events, int timeout_ms)
{
    struct pollfd item = {fd, events, 0};
    return poll (&item, 1, timeout_ms) > 0;
}

static int
s_accept (int listener)
{
    if (!s_ready (listener, POLLIN, S_WAIT_MS))
        return -1;
    return accept4 (listener, NULL, NULL, SOCK_CLOEXEC);
}

//  Reads up to CAP bytes from FD until EOF (or an error, or a wait past the bound).
static size_t
s_read_all (int fd, char *buf, size_t cap)
{
    size_t got = 0;
    while (got < cap && s_ready (fd, POLLIN, S_WAIT_MS)) {
        ssize_t n = recv (fd, buf + got, cap - got, 0);
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    return got;
}

//  Reads one line ending in \r\n into BUF (NUL-terminated, with the \r\n).
static bool
s_read_line (int fd, char *buf, size_t cap)
{
    size_t got = 0;
    while (got + 1 < cap && s_ready (fd, POLLIN, S_WAIT_MS) && recv (fd, buf + got, 1, 0) == 1) {
        got++;
        if (got >= 2 && buf[got - 2] == '\r' && buf[got - 1] == '\n') {
            buf[got] = '\0';
            return true;
        }
    }
    buf[got] = '\0';
    return false;
}

static void
s_pattern (char *buf, size_t len, unsigned seed)
{
    for (size_t i = 0; i < len; i++)
        buf[i] = (char)((i * 7919 + seed * 104729 + (i >> 12)) & 0xff);
}

//  The busy and idle events seen last (a session's first connection opened, its last one
//  closed): "<event> <session>", or "".
static char s_activity[64];

//  The next event, busy and idle ones aside (noted in s_activity), or NULL.
static json_t *
s_event (int control)
{
    for (int i = 0; i < S_WAIT_MS / 10; i++) {
        json_t *event = cg_egress_relay_read (control);
        const char *name = json_string_value (json_object_get (event, "event"));
        if (name && (strcmp (name, "busy") == 0 || strcmp (name, "idle") == 0)) {
            snprintf (s_activity, sizeof s_activity, "%s %s", name,
                      json_string_value (json_object_get (event, "session")));
            json_decref (event);
            i--;
            continue;
        }
        if (event)
            return event;
        s_ready (control, POLLIN, 10);
    }
    return NULL;
}

//  Waits for the busy or idle event WANT ("busy <session>"); other events are dropped.
static bool
s_activity_is (int control, const char *want)
{
    for (int i = 0; i < S_WAIT_MS / 10 && strcmp (s_activity, want) != 0; i++) {
        json_t *event = cg_egress_relay_read (control);
        const char *name = json_string_value (json_object_get (event, "event"));
        if (name && (strcmp (name, "busy") == 0 || strcmp (name, "idle") == 0))
            snprintf (s_activity, sizeof s_activity, "%s %s", name,
                      json_string_value (json_object_get (event, "session")));
        if (!event)
            s_ready (control, POLLIN, 10);
        json_decref (event);
    }
    return strcmp (s_activity, want) == 0;
}

//  The next event is EVENT for SESSION, with FIELD equal to VALUE when FIELD is not NULL.
static bool
s_expect_event (int control, const char *event, const char *session, const char *field,
                const char *value)
{
    json_t *got = s_event (control);
    cleanup_free char *text = got ? json_dumps (got, JSON_COMPACT) : cg_xstrdup ("none");
    const char *name = json_string_value (json_object_get (got, "event"));
    const char *id = json_string_value (json_object_get (got, "session"));
    const char *member = field ? json_string_value (json_object_get (got, field)) : NULL;
    bool ok = name && strcmp (name, event) == 0 && (!session || (id && strcmp (id, session) == 0))
              && (!field || (member && strcmp (member, value) == 0));
    EXPECT (ok, "event %s %s %s=%s expected, got %s", event, session ? session : "",
            field ? field : "", value ? value : "", text);
    json_decref (got);
    return ok;
}

static bool
s_relay_start (s_relay_t *relay, bool upstream_listening)
{
    relay->upstream = s_listener (&relay->port, upstream_listening);
    cg_error_t *err = NULL;
    const char *exe = getenv ("CELLGATE_BIN");
    relay->pid =
        cg_egress_relay_spawn (exe ? exe : "/proc/self/exe", relay->port, &relay->control, &err);
    EXPECT (relay->pid > 0, "spawn: %s", cg_error_message (err));
    cg_error_destroy (&err);
    return relay->pid > 0;
}

//  Closes the control socket and returns the relay's exit status (-1: it did not exit).
static int
s_relay_stop (s_relay_t *relay)
{
    close (relay->control);
    close (relay->upstream);
    int status = -1;
    for (int i = 0; i < S_WAIT_MS / 10; i++) {
        if (waitpid (relay->pid, &status, WNOHANG) == relay->pid)
            return status;
        usleep (10 * 1000);
    }
    kill (relay->pid, SIGKILL);
    waitpid (relay->pid, &status, 0);
    return -1;
}

static const cg_egress_limits_t s_wide = {8, 1LL << 40, 1LL << 40, 600};

//  Adds session ID with SRC and LIMITS on a new listener; returns the listener's port (the
//  test's copy is closed, as the server does), or -1.
static int
s_session (s_relay_t *relay, const char *id, const char *src, cg_egress_limits_t limits)
{
    int port;
    int listener = s_listener (&port, true);
    cg_error_t *err = NULL;
    int rc = cg_egress_relay_add (relay->control, id, src, &limits, listener, &err);
    EXPECT (rc == 0, "add %s: %s", id, cg_error_message (err));
    cg_error_destroy (&err);
    close (listener);
    return rc == 0 ? port : -1;
}

//  A client of the session on PORT, relayed: returns the client's fd and sets *UPSTREAM to
//  the upstream's side, after checking the PROXY line (naming SRC when not NULL).
static int
s_open (s_relay_t *relay, int port, const char *src, int *upstream)
{
    *upstream = -1;
    int client = s_connect (port);
    int accepted = client >= 0 ? s_accept (relay->upstream) : -1;
    char line[128], want[128];
    bool ok = accepted >= 0 && s_read_line (accepted, line, sizeof line);
    snprintf (want, sizeof want, "PROXY TCP4 %s 127.0.0.1 %d %d\r\n", src ? src : "",
              client >= 0 ? s_local_port (client) : 0, relay->port);
    EXPECT (ok && (!src || strcmp (line, want) == 0), "PROXY line %s expected, got %s", want,
            ok ? line : "none");
    if (!ok) {
        if (client >= 0)
            close (client);
        if (accepted >= 0)
            close (accepted);
        return -1;
    }
    *upstream = accepted;
    return client;
}

//  Sends UP bytes client -> upstream and DOWN bytes upstream -> client at once, both ways
//  non-blocking, and checks that each side received exactly what the other sent.
static bool
s_exchange (int client, int upstream, size_t up, size_t down, unsigned seed)
{
    char *out[2] = {cg_xmalloc (up), cg_xmalloc (down)};
    char *in[2] = {cg_xmalloc (up), cg_xmalloc (down)};
    s_pattern (out[0], up, seed);
    s_pattern (out[1], down, seed + 1);
    size_t sent[2] = {0, 0}, got[2] = {0, 0}, want[2] = {up, down};
    int from[2] = {client, upstream}, to[2] = {upstream, client};
    for (int i = 0; i < 100000 && (got[0] < up || got[1] < down); i++) {
        struct pollfd items[2] = {{client, POLLIN, 0}, {upstream, POLLIN, 0}};
        for (int d = 0; d < 2; d++)
            if (sent[d] < want[d])
                items[d].events |= POLLOUT;
        if (poll (items, 2, S_WAIT_MS) <= 0)
            break;
        for (int d = 0; d < 2; d++) {
            if (sent[d] < want[d]) {
                ssize_t n = send (from[d], out[d] + sent[d], want[d] - sent[d],
                                  MSG_DONTWAIT | MSG_NOSIGNAL);
                sent[d] += n > 0 ? (size_t)n : 0;
            }
            if (got[d] < want[d]) {
                ssize_t n = recv (to[d], in[d] + got[d], want[d] - got[d], MSG_DONTWAIT);
                got[d] += n > 0 ? (size_t)n : 0;
            }
        }
    }
    bool ok = got[0] == up && got[1] == down && memcmp (in[0], out[0], up) == 0
              && memcmp (in[1], out[1], down) == 0;
    EXPECT (ok, "%zu bytes up and %zu down byte-exact, got %zu and %zu", up, down, got[0], got[1]);
    for (int d = 0; d < 2; d++) {
        free (out[d]);
        free (in[d]);
    }
    return ok;
}

//  The exact 403 the relay answers a refused connection with.
static char *
s_forbidden (const char *reason)
{
    cleanup_free char *body = cg_strdupf ("cellgate egress: %s\n", reason);
    return cg_strdupf ("HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\nConnection: "
                       "close\r\nContent-Length: %zu\r\n\r\n%s",
                       strlen (body), body);
}

//  A new client of the session on PORT is refused: the 403 with REASON, then EOF, and a
//  "denied" event. With SEND_FIRST, the client sends a request before it reads.
static void
s_expect_refused (s_relay_t *relay, int port, const char *session, const char *reason,
                  bool send_first)
{
    int client = s_connect (port);
    if (send_first && client >= 0)
        send (client, "CONNECT a.test:443 HTTP/1.1\r\n\r\n", 31, MSG_NOSIGNAL);
    char buf[1024];
    size_t got = client >= 0 ? s_read_all (client, buf, sizeof buf - 1) : 0;
    buf[got] = '\0';
    cleanup_free char *want = s_forbidden (reason);
    EXPECT (strcmp (buf, want) == 0, "the 403 \"%s\" expected, got \"%s\"", reason, buf);
    if (client >= 0)
        close (client);
    s_expect_event (relay->control, "denied", session, "reason", reason);
}

//  The PROXY line, 1 MB each way at once, byte-exact; half-close: the client's EOF reaches
//  the upstream, which still answers, then closes; remove reports the totals (the PROXY line
//  not counted).
static void
s_test_bytes (void)
{
    const char *name = "bytes both ways, half-close, totals";
    s_relay_t relay;
    CHECK (s_relay_start (&relay, true), "relay");
    int port = s_session (&relay, "0123456789ab", "127.64.0.1", s_wide);
    int upstream, client = s_open (&relay, port, "127.64.0.1", &upstream);
    CHECK (client >= 0, "relayed");
    //  The session's first connection makes it busy (the server waits for its end).
    EXPECT (s_activity_is (relay.control, "busy 0123456789ab"),
            "busy when its first connection opened: '%s'", s_activity);
    s_exchange (client, upstream, S_MB, S_MB, 1);
    shutdown (client, SHUT_WR);
    char buf[64];
    EXPECT (s_read_all (upstream, buf, sizeof buf) == 0, "the client's EOF reaches upstream");
    EXPECT (send (upstream, "after", 5, MSG_NOSIGNAL) == 5, "upstream answers after EOF");
    close (upstream);
    size_t got = s_read_all (client, buf, sizeof buf);
    EXPECT (got == 5 && memcmp (buf, "after", 5) == 0, "the answer after the half-close");
    close (client);
    EXPECT (s_activity_is (relay.control, "idle 0123456789ab"),
            "idle when its last one closed: '%s'", s_activity);
    cg_error_t *err = NULL;
    EXPECT (cg_egress_relay_remove (relay.control, "0123456789ab", &err) == 0, "remove");
    json_t *event = s_event (relay.control);
    EXPECT (json_integer_value (json_object_get (event, "up")) == S_MB
                && json_integer_value (json_object_get (event, "down")) == S_MB + 5,
            "totals up %d, down %d", S_MB, S_MB + 5);
    json_decref (event);
    EXPECT (s_relay_stop (&relay) == 0, "the relay exits 0 when its control socket closes");
}

static long
s_rss_kb (pid_t pid)
{
    cleanup_free char *path = cg_strdupf ("/proc/%d/status", (int)pid);
    FILE *f = fopen (path, "r");
    char line[256];
    long kb = -1;
    while (f && fgets (line, sizeof line, f))
        if (sscanf (line, "VmRSS: %ld kB", &kb) == 1)
            break;
    if (f)
        fclose (f);
    return kb;
}

//  Writes the pattern into WRITER until it stalls (the reader on the far side reads nothing).
//  Returns how many bytes it took.
static size_t
s_fill (int writer, const char *data, size_t total)
{
    size_t sent = 0;
    while (sent < total) {
        ssize_t n = send (writer, data + sent, total - sent, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (n > 0) {
            sent += (size_t)n;
            continue;
        }
        if (n < 0 && errno != EAGAIN)
            break;
        if (!s_ready (writer, POLLOUT, 500))
            break;
    }
    return sent;
}

//  A slow reader on one side: the writer on the other stalls (the relay stops reading a side
//  whose buffer is full), the relay's memory stays bounded; then the reader reads slowly in
//  small pieces while the writer goes on, and every byte arrives, in order.
static void
s_backpressure (s_relay_t *relay, int writer, int reader, unsigned seed)
{
    size_t total = 48 * S_MB;
    char *data = cg_xmalloc (total), *got = cg_xmalloc (total);
    s_pattern (data, total, seed);
    long rss_before = s_rss_kb (relay->pid);
    size_t stalled = s_fill (writer, data, total);
    long rss_stalled = s_rss_kb (relay->pid);
    fprintf (stderr, "backpressure: the writer stalled after %zu bytes; relay RSS %ld -> %ld kB\n",
             stalled, rss_before, rss_stalled);
    EXPECT (stalled < total, "the writer stalls while nobody reads (%zu bytes taken)", stalled);
    EXPECT (rss_stalled - rss_before < 8 * 1024, "the relay's memory stays bounded: %ld kB more",
            rss_stalled - rss_before);
    size_t sent = stalled, received = 0;
    for (int i = 0; i < 10000000 && received < total; i++) {
        struct pollfd items[2] = {{reader, POLLIN, 0}, {writer, sent < total ? POLLOUT : 0, 0}};
        if (poll (items, 2, S_WAIT_MS) <= 0)
            break;
        ssize_t n = recv (reader, got + received, 4096, MSG_DONTWAIT);
        received += n > 0 ? (size_t)n : 0;
        if (sent < total) {
            n = send (writer, data + sent, total - sent, MSG_DONTWAIT | MSG_NOSIGNAL);
            sent += n > 0 ? (size_t)n : 0;
        }
    }
    EXPECT (received == total && memcmp (got, data, total) == 0,
            "all %zu bytes arrive in order, got %zu", total, received);
    free (data);
    free (got);
}

static void
s_small_buffers (int fd)
{
    int size = 64 * 1024;
    setsockopt (fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof size);
    setsockopt (fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof size);
}

static void
s_test_backpressure (void)
{
    const char *name = "backpressure both ways";
    s_relay_t relay;
    CHECK (s_relay_start (&relay, true), "relay");
    int port = s_session (&relay, "00000000000b", "127.64.0.2", s_wide);
    int upstream, client = s_open (&relay, port, "127.64.0.2", &upstream);
    CHECK (client >= 0, "relayed");
    s_small_buffers (client);
    s_small_buffers (upstream);
    s_backpressure (&relay, upstream, client, 2); /* a slow reader downstream */
    s_backpressure (&relay, client, upstream, 3); /* a slow reader upstream */
    close (client);
    close (upstream);
    EXPECT (s_relay_stop (&relay) == 0, "exit 0");
}

//  Eight at once are relayed, the ninth is refused (also one that sent its request first),
//  and once one of the eight has closed, a new one is relayed again.
static void
s_test_connection_cap (void)
{
    const char *name = "connection cap";
    s_relay_t relay;
    CHECK (s_relay_start (&relay, true), "relay");
    int port = s_session (&relay, "00000000000c", "127.64.0.3", s_wide);
    int clients[8], upstreams[8];
    for (int i = 0; i < 8; i++) {
        clients[i] = s_open (&relay, port, "127.64.0.3", &upstreams[i]);
        CHECK (clients[i] >= 0, "connection %d relayed", i + 1);
    }
    s_expect_refused (&relay, port, "00000000000c", "connection limit reached (8 at once)", false);
    s_expect_refused (&relay, port, "00000000000c", "connection limit reached (8 at once)", true);
    //  One ends: the client's EOF, then the upstream's; the client sees its EOF once the relay
    //  has closed both sides.
    shutdown (clients[0], SHUT_WR);
    char buf[16];
    EXPECT (s_read_all (upstreams[0], buf, sizeof buf) == 0, "EOF upstream");
    close (upstreams[0]);
    EXPECT (s_read_all (clients[0], buf, sizeof buf) == 0, "EOF client");
    int upstream, client = s_open (&relay, port, "127.64.0.3", &upstream);
    EXPECT (client >= 0, "a new connection relayed once one closed");
    s_exchange (client, upstream, 1000, 1000, 4);
    close (client);
    close (upstream);
    for (int i = 0; i < 8; i++) {
        close (clients[i]);
        if (i > 0)
            close (upstreams[i]);
    }
    EXPECT (s_relay_stop (&relay) == 0, "exit 0");
}

//  A session past its byte limit down (or up) has its connections closed, having passed at
//  most that many bytes, and every later connection refused; the totals say so.
static void
s_test_byte_cap (void)
{
    const char *name = "byte cap";
    s_relay_t relay;
    CHECK (s_relay_start (&relay, true), "relay");
    cg_egress_limits_t limits = s_wide;
    limits.max_down = 100000;
    int port = s_session (&relay, "00000000000d", "127.64.0.4", limits);
    int upstream, client = s_open (&relay, port, "127.64.0.4", &upstream);
    CHECK (client >= 0, "relayed");
    char *data = cg_xmalloc (S_MB), *got = cg_xmalloc (S_MB);
    s_pattern (data, S_MB, 5);
    s_fill (upstream, data, S_MB);
    size_t received = s_read_all (client, got, S_MB);
    EXPECT (received <= 100000 && memcmp (got, data, received) == 0,
            "at most 100000 bytes down, got %zu", received);
    s_expect_event (relay.control, "denied", "00000000000d", "reason",
                    "byte limit reached (100000 down)");
    close (client);
    close (upstream);
    s_expect_refused (&relay, port, "00000000000d", "byte limit reached (100000 down)", false);

    limits = s_wide;
    limits.max_up = 5000;
    port = s_session (&relay, "00000000000e", "127.64.0.5", limits);
    client = s_open (&relay, port, "127.64.0.5", &upstream);
    CHECK (client >= 0, "relayed");
    s_fill (client, data, 10000);
    received = s_read_all (upstream, got, S_MB);
    EXPECT (received <= 5000 && memcmp (got, data, received) == 0, "at most 5000 bytes up, got %zu",
            received);
    s_expect_event (relay.control, "denied", "00000000000e", "reason",
                    "byte limit reached (5000 up)");
    close (client);
    close (upstream);
    s_expect_refused (&relay, port, "00000000000e", "byte limit reached (5000 up)", true);
    cg_error_t *err = NULL;
    cg_egress_relay_remove (relay.control, "00000000000e", &err);
    json_t *event = s_event (relay.control);
    EXPECT (json_integer_value (json_object_get (event, "up")) == 5001,
            "the total up stops one byte past the limit: %lld",
            (long long)json_integer_value (json_object_get (event, "up")));
    json_decref (event);
    free (data);
    free (got);
    EXPECT (s_relay_stop (&relay) == 0, "exit 0");
}

//  One connection a minute: the first is relayed, the second refused.
static void
s_test_rate_cap (void)
{
    const char *name = "rate cap";
    s_relay_t relay;
    CHECK (s_relay_start (&relay, true), "relay");
    cg_egress_limits_t limits = s_wide;
    limits.per_minute = 1;
    int port = s_session (&relay, "00000000000f", "127.64.0.6", limits);
    int upstream, client = s_open (&relay, port, "127.64.0.6", &upstream);
    CHECK (client >= 0, "the first relayed");
    close (client);
    close (upstream);
    s_expect_refused (&relay, port, "00000000000f", "rate limit reached (1 connections a minute)",
                      false);
    EXPECT (s_relay_stop (&relay) == 0, "exit 0");
}

//  The upstream is not listening yet (its port bound, so connects are refused): the relay
//  retries until it listens, and the client's first bytes arrive after the PROXY line. With
//  an upstream that never listens, it gives up after 5 s: the client sees EOF, the server an
//  error event.
static void
s_test_retry (void)
{
    const char *name = "retry";
    s_relay_t relay;
    CHECK (s_relay_start (&relay, false), "relay");
    int port = s_session (&relay, "000000000010", "127.64.0.7", s_wide);
    int client = s_connect (port);
    CHECK (client >= 0, "connect");
    send (client, "hello", 5, MSG_NOSIGNAL);
    usleep (350 * 1000); /* a few refused connects */
    CHECK (listen (relay.upstream, 64) == 0, "listen");
    int upstream = s_accept (relay.upstream);
    char line[128], want[128], buf[8];
    snprintf (want, sizeof want, "PROXY TCP4 127.64.0.7 127.0.0.1 %d %d\r\n", s_local_port (client),
              relay.port);
    EXPECT (upstream >= 0 && s_read_line (upstream, line, sizeof line) && strcmp (line, want) == 0,
            "the PROXY line after the retries");
    EXPECT (upstream >= 0 && recv (upstream, buf, 5, MSG_WAITALL) == 5
                && memcmp (buf, "hello", 5) == 0,
            "the client's first bytes");
    close (client);
    if (upstream >= 0)
        close (upstream);
    EXPECT (s_relay_stop (&relay) == 0, "exit 0");

    CHECK (s_relay_start (&relay, false), "relay");
    port = s_session (&relay, "000000000011", "127.64.0.8", s_wide);
    client = s_connect (port);
    CHECK (client >= 0, "connect");
    EXPECT (s_read_all (client, buf, sizeof buf) == 0, "EOF once the relay gives up");
    cleanup_free char *message =
        cg_strdupf ("proxy not reachable on 127.0.0.1:%d for 5 s: connection closed", relay.port);
    s_expect_event (relay.control, "error", "000000000011", "message", message);
    close (client);
    EXPECT (s_relay_stop (&relay) == 0, "exit 0");
}

//  Remove closes the listener and every connection of the session (each side sees EOF or a
//  reset), and answers the totals.
static void
s_test_remove (void)
{
    const char *name = "remove";
    s_relay_t relay;
    CHECK (s_relay_start (&relay, true), "relay");
    int port = s_session (&relay, "000000000012", "127.64.0.9", s_wide);
    int clients[2], upstreams[2];
    for (int i = 0; i < 2; i++) {
        clients[i] = s_open (&relay, port, "127.64.0.9", &upstreams[i]);
        CHECK (clients[i] >= 0, "relayed");
        s_exchange (clients[i], upstreams[i], 1000 * (i + 1), 3000 * (i + 1), 6);
    }
    cg_error_t *err = NULL;
    EXPECT (cg_egress_relay_remove (relay.control, "000000000012", &err) == 0, "remove");
    json_t *event = s_event (relay.control);
    EXPECT (json_integer_value (json_object_get (event, "up")) == 3000
                && json_integer_value (json_object_get (event, "down")) == 9000,
            "totals 3000 up, 9000 down");
    json_decref (event);
    char buf[16];
    for (int i = 0; i < 2; i++) {
        EXPECT (s_read_all (clients[i], buf, sizeof buf) == 0, "client %d closed", i);
        EXPECT (s_read_all (upstreams[i], buf, sizeof buf) == 0, "upstream %d closed", i);
        close (clients[i]);
        close (upstreams[i]);
    }
    EXPECT (s_connect (port) < 0, "the listener is closed");
    cg_egress_relay_remove (relay.control, "000000000012", &err);
    s_expect_event (relay.control, "error", "000000000012", "message", "no such session");
    EXPECT (s_relay_stop (&relay) == 0, "exit 0");
}

//  Session A at its connection cap, past its byte cap and with a stalled reader does not
//  touch session B, which relays 1 MB each way meanwhile.
static void
s_test_two_sessions (void)
{
    const char *name = "two sessions";
    s_relay_t relay;
    CHECK (s_relay_start (&relay, true), "relay");
    cg_egress_limits_t limits = s_wide;
    limits.max_conns = 1;
    int port_a = s_session (&relay, "00000000001a", "127.64.0.10", limits);
    int port_b = s_session (&relay, "00000000001b", "127.64.0.11", s_wide);
    int upstream_a, client_a = s_open (&relay, port_a, "127.64.0.10", &upstream_a);
    CHECK (client_a >= 0, "A relayed");
    s_small_buffers (client_a);
    char *data = cg_xmalloc (32 * S_MB);
    s_pattern (data, 32 * S_MB, 7);
    EXPECT (s_fill (upstream_a, data, 32 * S_MB) < 32 * S_MB, "A's reader stalls");
    s_expect_refused (&relay, port_a, "00000000001a", "connection limit reached (1 at once)",
                      false);
    int upstream_b, client_b = s_open (&relay, port_b, "127.64.0.11", &upstream_b);
    CHECK (client_b >= 0, "B relayed");
    s_exchange (client_b, upstream_b, S_MB, S_MB, 8);
    close (client_b);
    close (upstream_b);
    close (client_a);
    close (upstream_a);
    free (data);
    EXPECT (s_relay_stop (&relay) == 0, "exit 0");
}

//  Adds the relay refuses answer an error event and change nothing.
static void
s_test_refused_adds (void)
{
    const char *name = "refused adds";
    s_relay_t relay;
    CHECK (s_relay_start (&relay, true), "relay");
    cg_error_t *err = NULL;
    int port, listener = s_listener (&port, true);
    cg_egress_relay_add (relay.control, "XYZ", "127.64.0.1", &s_wide, listener, &err);
    s_expect_event (relay.control, "error", NULL, "message",
                    "session: 12 lowercase hex characters expected");
    cg_egress_relay_add (relay.control, "000000000020", "10.0.0.1", &s_wide, listener, &err);
    s_expect_event (relay.control, "error", "000000000020", "message",
                    "src: an IPv4 address in 127.64.0.0/10 expected");
    cg_egress_limits_t zero = s_wide;
    zero.max_conns = 0;
    cg_egress_relay_add (relay.control, "000000000020", "127.64.0.1", &zero, listener, &err);
    s_expect_event (relay.control, "error", "000000000020", NULL, NULL);
    int unbound = socket (AF_INET, SOCK_STREAM, 0);
    cg_egress_relay_add (relay.control, "000000000020", "127.64.0.1", &s_wide, unbound, &err);
    s_expect_event (relay.control, "error", "000000000020", "message",
                    "the fd is not a listening TCP socket");
    close (unbound);
    cg_egress_relay_add (relay.control, "000000000020", "127.64.0.1", &s_wide, listener, &err);
    cg_egress_relay_add (relay.control, "000000000020", "127.64.0.1", &s_wide, listener, &err);
    s_expect_event (relay.control, "error", "000000000020", "message", "session already added");
    close (listener);
    int upstream, client = s_open (&relay, port, "127.64.0.1", &upstream);
    EXPECT (client >= 0, "the first add stands");
    //  Closing the control socket ends the relay and with it the open connection.
    EXPECT (s_relay_stop (&relay) == 0, "exit 0 when the control socket closes");
    char buf[8];
    EXPECT (client >= 0 && s_read_all (client, buf, sizeof buf) == 0, "the client sees EOF");
    if (client >= 0) {
        close (client);
        close (upstream);
    }
}

//  4096 sessions are held, the next add is refused; removing one makes room again.
static void
s_test_session_cap (void)
{
    const char *name = "session cap";
    s_relay_t relay;
    CHECK (s_relay_start (&relay, true), "relay");
    for (int i = 0; i <= CG_EGRESS_MAX_SESSIONS; i++) {
        char id[16];
        snprintf (id, sizeof id, "%012x", i);
        int port, listener = s_listener (&port, true);
        cg_error_t *err = NULL;
        while (cg_egress_relay_add (relay.control, id, "127.64.1.1", &s_wide, listener, &err) < 0
               && err->code == EAGAIN) {
            cg_error_destroy (&err);
            s_ready (relay.control, POLLOUT, S_WAIT_MS);
        }
        EXPECT (err == NULL, "add %d: %s", i, cg_error_message (err));
        cg_error_destroy (&err);
        close (listener);
    }
    //  The first event: no add before the last was refused.
    s_expect_event (relay.control, "error", "000000001000", "message",
                    "session limit reached (4096)");
    cg_error_t *err = NULL;
    cg_egress_relay_remove (relay.control, "000000000000", &err);
    s_expect_event (relay.control, "removed", "000000000000", NULL, NULL);
    EXPECT (s_session (&relay, "000000001000", "127.64.1.1", s_wide) > 0, "add once one left");
    cg_egress_relay_remove (relay.control, "000000001000", &err);
    s_expect_event (relay.control, "removed", "000000001000", NULL, NULL);
    EXPECT (s_relay_stop (&relay) == 0, "exit 0");
}

//  A relay that died: the server's read says so ("closed"), and again on the next call.
static void
s_test_relay_gone (void)
{
    const char *name = "relay gone";
    s_relay_t relay;
    CHECK (s_relay_start (&relay, true), "relay");
    EXPECT (cg_egress_relay_read (relay.control) == NULL, "no event yet");
    kill (relay.pid, SIGKILL);
    waitpid (relay.pid, NULL, 0);
    for (int i = 0; i < 2; i++)
        s_expect_event (relay.control, "closed", NULL, NULL, NULL);
    cg_error_t *err = NULL;
    EXPECT (cg_egress_relay_remove (relay.control, "000000000001", &err) < 0 && err->code == EPIPE,
            "a message to a relay that is gone fails: %s", cg_error_message (err));
    cg_error_destroy (&err);
    close (relay.control);
    close (relay.upstream);
}

int
main (int argc, char **argv)
{
    if (argc > 1 && strcmp (argv[1], "egress-relay") == 0)
        return cg_egress_relay_main (argc, argv);
    signal (SIGPIPE, SIG_IGN);
    s_test_bytes ();
    s_test_backpressure ();
    s_test_connection_cap ();
    s_test_byte_cap ();
    s_test_rate_cap ();
    s_test_retry ();
    s_test_remove ();
    s_test_two_sessions ();
    s_test_refused_adds ();
    s_test_session_cap ();
    s_test_relay_gone ();
    printf ("%d passed, %d failed\n", s_passes, s_failures);
    return s_failures ? 1 : 0;
}
