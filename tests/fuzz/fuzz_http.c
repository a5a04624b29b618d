/*  fuzz_http — the HTTP listener (artifacts/cg_http.c) and its downloads
    (artifacts/cg_downloads.c) as a client on the network drives them: a real
    libmicrohttpd daemon on 127.0.0.1 in this process, the input's bytes sent raw on a
    fresh TCP connection (request line, path, query, headers, body; several pipelined
    requests when the input holds them), the daemon run from this thread until the server
    closes the connection. Routes: /files/ (downloads from a scratch workspace holding
    files, a symlink to a secret outside, a FIFO), /mcp exact (a handler that reads the
    method, headers and body and answers now, later, or as an SSE stream; bodies over
    2 KiB get 413), /api/ prefix with a 64-byte body limit and /api/kernels exact inside
    it (handlers that read the path and a query argument and answer at once); /admin/
    behind the admin token (artifacts/cg_http_guard.c: the Authorization header parsed
    and compared).

    Invariants: every exchange ends within 5 s (no hang on a FIFO, a short body or a
    suspended answer); nothing outside the workspace is ever served; /admin/ answers 200
    only to a request whose Authorization is "Bearer " and the admin token, exactly, and
    never shows the token; a handler sees only
    paths its route matches (equal, or starting with a prefix route's path, the exact
    /api/kernels never under /api/), and a body within its route's limit, NUL-terminated. */
#define _GNU_SOURCE
#include "cg_fuzz.h"

#include "artifacts/cg_downloads.h"
#include "artifacts/cg_http_guard.h"
#include "artifacts/cg_workspace.h"
#include "base/cg_util.h"
#include "base/cg_fs.h"
#include "mcp/cg_jsonrpc.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sodium.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#define SESSION_ID "sess_fuzz"
#define TOKEN "tok-0123456789abcdef"
#define SECRET "SECRET-OUTSIDE-THE-WORKSPACE"
#define ADMIN_TOKEN "0123456789abcdef0123456789abcdef"
#define ADMIN_OK "admin-route-passed"
#define BODY_MAX 2048
#define API_BODY_MAX 64
#define PENDING_MAX 8
#define EXCHANGE_TIMEOUT_US (5 * 1000000)

static cg_http_t *s_http;
static cg_downloads_t *s_downloads;
static cg_workspace_t *s_ws;
static cg_http_exchange_t *s_pending[PENDING_MAX]; /* answered at the next turn */

static cg_workspace_t *
s_lookup (void *arg, const char *session_id, const char *token, size_t token_len)
{
    (void)arg;
    CG_FUZZ_CHECK (token_len <= CG_DOWNLOADS_TOKEN_MAX && strlen (session_id) <= CG_SESSION_ID_MAX,
                   "lookups only within the limits");
    if (strcmp (session_id, SESSION_ID) != 0 || token_len != strlen (TOKEN)
        || sodium_memcmp (token, TOKEN, token_len) != 0)
        return NULL;
    return s_ws;
}

static void
s_mcp (void *arg, cg_http_exchange_t *ex)
{
    (void)arg;
    size_t len = 0;
    const char *body = cg_http_exchange_body (ex, &len);
    CG_FUZZ_CHECK (body && len <= BODY_MAX && body[len] == '\0',
                   "a body within the limit, NUL-terminated");
    CG_FUZZ_CHECK (strcmp (cg_http_exchange_path (ex), "/mcp") == 0, "the exact route's own path");
    const char *method = cg_http_exchange_method (ex);
    CG_FUZZ_CHECK (method != NULL, "a method");
    //  What the MCP transport reads before it answers.
    const char *names[] = {
        "Host", "Origin", "Authorization", "Mcp-Session-Id", "MCP-Protocol-Version", "Accept"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        const char *value = cg_http_exchange_header (ex, names[i]);
        if (value)
            CG_FUZZ_CHECK (strlen (value) < CG_HTTP_CONNECTION_MEMORY,
                           "a header within the connection's memory");
    }
    json_t *message = json_loadb (body, len, JSON_REJECT_DUPLICATES, NULL);
    const char *why = NULL;
    if (message)
        cg_jsonrpc_classify (message, &why);
    json_decref (message);
    static const char *headers[] = {"Mcp-Session-Id", "0123456789abcdef", NULL};
    if (len > 0 && body[0] == 'l') {
        for (size_t i = 0; i < PENDING_MAX; i++)
            if (!s_pending[i]) {
                s_pending[i] = cg_http_exchange_keep (ex);
                return;
            }
    }
    if (len > 0 && body[0] == 's') {
        cg_http_stream_open (ex, headers);
        cg_http_stream_write (ex, "event: message\ndata: {}\n\n", 25);
        cg_http_stream_close (ex);
        return;
    }
    cg_http_respond (ex, 200, "application/json", "{}", 2, headers);
}

//  /api/ (ARG "prefix") and /api/kernels (ARG "exact"): checks what the route matched and
//  answers with the length of the decoded query argument "q" (400 when it is malformed;
//  never its bytes, which could spell the secret without the input holding it).
static void
s_api (void *arg, cg_http_exchange_t *ex)
{
    const char *path = cg_http_exchange_path (ex);
    bool exact = strcmp (arg, "exact") == 0;
    CG_FUZZ_CHECK (exact ? strcmp (path, "/api/kernels") == 0
                         : strncmp (path, "/api/", 5) == 0 && strcmp (path, "/api/kernels") != 0,
                   "a handler sees only paths its route matches");
    size_t len = 0;
    const char *body = cg_http_exchange_body (ex, &len);
    CG_FUZZ_CHECK (body && len <= API_BODY_MAX && body[len] == '\0',
                   "a body within the route's limit, NUL-terminated");
    const char *q = cg_http_exchange_query (ex, "q");
    size_t decoded_len = 0;
    cleanup_free char *decoded = q ? cg_http_percent_decode (q, strlen (q), &decoded_len) : NULL;
    if (q && !decoded) {
        cg_http_respond_error (ex, 400, "bad_request", "malformed percent-encoding");
        return;
    }
    char answer[32];
    int answer_len = snprintf (answer, sizeof answer, "%zu", decoded_len);
    cg_http_respond (ex, 200, "text/plain", answer, (size_t)answer_len, NULL);
}

//  /admin/: the operator routes' check, then a fixed answer. The guard passes only the
//  exact "Bearer <token>" (any case of the scheme).
static void
s_admin (void *arg, cg_http_exchange_t *ex)
{
    (void)arg;
    if (!cg_http_guard_admin (ex, ADMIN_TOKEN))
        return;
    const char *given = cg_http_exchange_header (ex, "Authorization");
    CG_FUZZ_CHECK (given && strncasecmp (given, "Bearer ", 7) == 0
                       && strcmp (given + 7, ADMIN_TOKEN) == 0,
                   "the admin route opens only to its token");
    cg_http_respond (ex, 200, "text/plain", ADMIN_OK, strlen (ADMIN_OK), NULL);
}

static void
s_answer_pending (void)
{
    for (size_t i = 0; i < PENDING_MAX; i++)
        if (s_pending[i]) {
            if (cg_http_exchange_alive (s_pending[i]))
                cg_http_respond (s_pending[i], 202, NULL, "", 0, NULL);
            cg_http_exchange_release (&s_pending[i]);
        }
}

static void
s_setup (void)
{
    if (s_http)
        return;
    const char *base = cg_fuzz_scratch_dir ("http");
    cleanup_free char *ws_dir = cg_strdupf ("%s/ws", base);
    cleanup_free char *secret = cg_strdupf ("%s/secret", base);
    cleanup_free char *link = cg_strdupf ("%s/ws/link.txt", base);
    cleanup_free char *fifo = cg_strdupf ("%s/ws/fifo.txt", base);
    cleanup_free char *sub = cg_strdupf ("%s/ws/sub dir", base);
    cleanup_free char *csv = cg_strdupf ("%s/ws/sub dir/data.csv", base);
    cleanup_free char *html = cg_strdupf ("%s/ws/page.html", base);
    cg_error_t *err = NULL;
    if (mkdir (ws_dir, 0755) < 0 || mkdir (sub, 0755) < 0
        || cg_write_file (secret, SECRET, strlen (SECRET), 0644, &err) < 0
        || cg_write_file (csv, "a,b\n1,2\n", 8, 0644, &err) < 0
        || cg_write_file (html, "<b>hi</b>", 9, 0644, &err) < 0 || symlink ("../secret", link) < 0
        || mkfifo (fifo, 0644) < 0)
        abort ();
    s_ws = cg_workspace_open (ws_dir, &err);
    s_http = s_ws ? cg_http_new ("127.0.0.1:0", &err) : NULL;
    if (!s_http) {
        fprintf (stderr, "fuzz_http: %s\n", cg_error_message (err));
        abort ();
    }
    s_downloads = cg_downloads_new (s_http, s_lookup, NULL);
    cg_http_route (s_http, "/mcp", 0, BODY_MAX, s_mcp, NULL);
    cg_http_route (s_http, "/api/", CG_HTTP_PREFIX, API_BODY_MAX, s_api, "prefix");
    cg_http_route (s_http, "/api/kernels", 0, API_BODY_MAX, s_api, "exact");
    cg_http_route (s_http, "/admin/", CG_HTTP_PREFIX, 0, s_admin, NULL);
}

//  Connects to the listener from the next of 65,024 loopback addresses (127.1.0.1 on), so
//  that a minute of fuzzing (hundreds of thousands of connections) never runs out of
//  ports while closed ones wait out TIME_WAIT.
static int
s_connect (void)
{
    static uint32_t next;
    uint32_t n = next++ % (254 * 256);
    struct sockaddr_in from = {.sin_family = AF_INET,
                               .sin_addr = {htonl (0x7f010000u | (n / 254) << 8 | (n % 254 + 1))}};
    struct sockaddr_in addr = {.sin_family = AF_INET,
                               .sin_port = htons ((uint16_t)cg_http_port (s_http)),
                               .sin_addr = {htonl (INADDR_LOOPBACK)}};
    int fd = socket (AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0 || bind (fd, (struct sockaddr *)&from, sizeof from) < 0) {
        perror ("fuzz_http: socket");
        abort ();
    }
    //  Loopback connects complete at once into the listen backlog; should the backlog be
    //  full (the daemon no longer accepting), this waits at most 5 s and is a failure.
    int rc = connect (fd, (struct sockaddr *)&addr, sizeof addr);
    if (rc < 0 && errno == EINPROGRESS) {
        struct pollfd item = {fd, POLLOUT, 0};
        int64_t deadline = cg_now_us () + EXCHANGE_TIMEOUT_US;
        while (poll (&item, 1, 10) == 0 && cg_now_us () < deadline)
            cg_http_process (s_http);
        int error = 0;
        socklen_t error_len = sizeof error;
        getsockopt (fd, SOL_SOCKET, SO_ERROR, &error, &error_len);
        rc = item.revents & POLLOUT && error == 0 ? 0 : -1;
        errno = error ? error : ETIMEDOUT;
    }
    if (rc < 0) {
        perror ("fuzz_http: connect to the listener");
        abort ();
    }
    return fd;
}

//  Sends the input and runs the daemon until the server closes the connection, or has
//  sent everything it will: all was sent, nothing is pending in the daemon and nothing
//  arrives in two rounds. The connection is then reset, as a client that goes away does
//  (a half-close first would leave every connection in TIME_WAIT on this machine).
//  Returns everything the server sent (caller frees) and its length in *LEN.
static char *
s_exchange (const uint8_t *data, size_t size, size_t *len)
{
    int fd = s_connect ();
    size_t sent = 0, got = 0, cap = 4096;
    char *reply = cg_xmalloc (cap + 1);
    int quiet = 0;
    int64_t deadline = cg_now_us () + EXCHANGE_TIMEOUT_US;
    for (;;) {
        if (sent < size) {
            ssize_t n = send (fd, data + sent, size - sent, MSG_NOSIGNAL);
            if (n > 0)
                sent += (size_t)n;
            else if (n < 0 && errno != EAGAIN && errno != EINTR)
                sent = size; /* the server closed its side: stop sending */
        }
        cg_http_process (s_http);
        s_answer_pending ();
        if (got == cap)
            reply = cg_xrealloc (reply, (cap *= 2) + 1);
        ssize_t n = recv (fd, reply + got, cap - got, 0);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
            break;
        if (n > 0) {
            got += (size_t)n;
            quiet = 0;
            continue;
        }
        CG_FUZZ_CHECK (cg_now_us () < deadline, "the server answers or closes within 5 s");
        struct pollfd items[2] = {{cg_http_fd (s_http), POLLIN, 0},
                                  {fd, POLLIN | (sent < size ? POLLOUT : 0), 0}};
        int timeout = cg_http_timeout_ms (s_http);
        int ready = poll (items, 2, timeout == 0 ? 0 : 1);
        if (ready == 0 && timeout != 0 && sent == size && ++quiet >= 2)
            break;
        if (ready != 0)
            quiet = 0;
    }
    struct linger reset = {1, 0};
    setsockopt (fd, SOL_SOCKET, SO_LINGER, &reset, sizeof reset);
    close (fd);
    for (int i = 0; i < 2; i++)
        cg_http_process (s_http); /* the daemon notices the reset */
    reply[got] = '\0';
    *len = got;
    return reply;
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
    cg_fuzz_init ();
    s_setup ();
    size_t len = 0;
    cleanup_free char *reply = s_exchange (data, size, &len);
    CG_FUZZ_CHECK (memmem (data, size, SECRET, strlen (SECRET))
                       || !memmem (reply, len, SECRET, strlen (SECRET)),
                   "nothing outside the workspace is served");
    CG_FUZZ_CHECK (memmem (data, size, ADMIN_TOKEN, strlen (ADMIN_TOKEN))
                       || !memmem (reply, len, ADMIN_OK, strlen (ADMIN_OK)),
                   "the admin route answers no request without its token");
    CG_FUZZ_CHECK (!memmem (reply, len, ADMIN_TOKEN, strlen (ADMIN_TOKEN))
                       || memmem (data, size, ADMIN_TOKEN, strlen (ADMIN_TOKEN)),
                   "the admin token is never shown");
    return 0;
}
