/*  test_http — the HTTP listener and its /files/ downloads against real curl requests:
    route matching (exact, prefix, per-route body limits, GET-only), tokens, hostile paths
    and symlinks, headers, methods, limits, and the caller-driven poll loop. */
#define _GNU_SOURCE
#include "artifacts/cg_downloads.h"
#include "artifacts/cg_metrics.h"
#include "artifacts/cg_workspace.h"
#include "base/cg_util.h"
#include "base/cg_fs.h"
#include "cg_test.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

#define PASS() s_passes++

#define SESSION "sess_aaaaaaaaaaaa"
#define TOKEN "c0ffee0123456789abcdef0123456789"
#define OURS(rel) "/files/" SESSION "/" rel "?token=" TOKEN /* a good URL for REL */

static char s_dir[256]; /* the test's temp dir: workspace/ and curl's files */
static cg_workspace_t *s_workspace;
static char *s_base; /* "http://127.0.0.1:PORT" */

static cg_workspace_t *
s_lookup (void *arg, const char *session_id, const char *token, size_t token_len)
{
    (void)arg;
    if (strcmp (session_id, SESSION) != 0 || token_len != strlen (TOKEN)
        || memcmp (token, TOKEN, token_len) != 0)
        return NULL;
    return s_workspace;
}

typedef struct {
    int status;    /* curl's %{http_code}; 0 when it could not connect */
    int curl_exit; /* curl's exit code: 18 for a short body, 28 for its timeout */
    char *body;
    size_t body_len;
    char *headers;
} s_reply_t;

static void
s_reply_free (s_reply_t *reply)
{
    free (reply->body);
    free (reply->headers);
    memset (reply, 0, sizeof *reply);
}

/*  Returns the value of header NAME in REPLY (a new string), or NULL. */
static char *
s_header (const s_reply_t *reply, const char *name)
{
    size_t name_len = strlen (name);
    for (const char *line = reply->headers; line && *line;) {
        const char *end = strchrnul (line, '\n');
        if ((size_t)(end - line) > name_len && strncasecmp (line, name, name_len) == 0
            && line[name_len] == ':') {
            const char *value = line + name_len + 1;
            while (*value == ' ')
                value++;
            size_t len = (size_t)(end - value);
            while (len > 0 && (value[len - 1] == '\r' || value[len - 1] == ' '))
                len--;
            return cg_xstrndup (value, len);
        }
        line = *end ? end + 1 : end;
    }
    return NULL;
}

static bool
s_header_is (const s_reply_t *reply, const char *name, const char *want)
{
    cleanup_free char *value = s_header (reply, name);
    return value && strcmp (value, want) == 0;
}

/*  Runs curl with EXTRA arguments (NULL-terminated) on URL while driving HTTP's loop the
    way the server's main thread does: poll cg_http_fd with cg_http_timeout_ms. Calls TICK
    (when not NULL) with the body file's path after each turn of the loop. */
static s_reply_t
s_fetch_tick (cg_http_t *http, const char *url, const char *const *extra,
              void (*tick) (const char *body_path))
{
    s_reply_t reply = {0};
    cleanup_free char *body_path = cg_strdupf ("%s/body", s_dir);
    cleanup_free char *header_path = cg_strdupf ("%s/headers", s_dir);
    unlink (body_path);
    unlink (header_path);
    const char *argv[32] = {"curl", "-s",      "-g", "--path-as-is", "--max-time", "20",
                            "-o",   body_path, "-D", header_path,    "-w",         "%{http_code}"};
    size_t argc = 12;
    for (size_t i = 0; extra && extra[i]; i++)
        argv[argc++] = extra[i];
    argv[argc++] = url;
    argv[argc] = NULL;

    int out[2];
    if (pipe2 (out, O_CLOEXEC) < 0)
        abort ();
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init (&actions);
    posix_spawn_file_actions_adddup2 (&actions, out[1], STDOUT_FILENO);
    pid_t pid;
    if (posix_spawnp (&pid, "curl", &actions, NULL, CG_UNCONST (argv), environ) != 0) {
        fprintf (stderr, "cannot run curl\n");
        exit (1);
    }
    posix_spawn_file_actions_destroy (&actions);
    close (out[1]);

    char code[16] = "";
    size_t code_len = 0;
    int64_t deadline = cg_now_us () + 30 * 1000000LL;
    for (bool eof = false; !eof && cg_now_us () < deadline;) {
        struct pollfd items[2] = {{cg_http_fd (http), POLLIN, 0}, {out[0], POLLIN, 0}};
        int timeout = cg_http_timeout_ms (http);
        if (timeout < 0 || timeout > 1000)
            timeout = 1000;
        if (poll (items, 2, timeout) < 0 && errno != EINTR)
            abort ();
        cg_http_process (http);
        if (items[1].revents) {
            ssize_t n = read (out[0], code + code_len, sizeof code - 1 - code_len);
            if (n <= 0)
                eof = true;
            else
                code_len += (size_t)n;
        }
        if (tick)
            tick (body_path);
    }
    close (out[0]);
    int status;
    waitpid (pid, &status, 0);
    code[code_len] = '\0';
    reply.status = atoi (code);
    reply.curl_exit = WIFEXITED (status) ? WEXITSTATUS (status) : -1;
    reply.body = cg_read_file (body_path, 64 << 20, &reply.body_len, NULL);
    reply.headers = cg_read_file (header_path, 1 << 20, NULL, NULL);
    return reply;
}

static s_reply_t
s_fetch (cg_http_t *http, const char *url, const char *const *extra)
{
    return s_fetch_tick (http, url, extra, NULL);
}

static s_reply_t
s_get (cg_http_t *http, const char *path_and_query)
{
    cleanup_free char *url = cg_strdupf ("%s%s", s_base, path_and_query);
    return s_fetch (http, url, NULL);
}

/*  --------------------------------------------------------------------------------------
    Workspace */

static char *s_pdf, *s_png;
static size_t s_pdf_len, s_png_len;
static const char s_csv[] = "region,amount\nnorth,12\nsouth,7\n";
static const char s_html[] = "<html><script>alert(document.cookie)</script></html>\n";
static const char s_odd[] = "odd name contents\n";

static void
s_write (const char *rel, const void *data, size_t len)
{
    cleanup_free char *path = cg_strdupf ("%s/workspace/%s", s_dir, rel);
    cg_error_t *err = NULL;
    if (cg_write_file (path, data, len, 0644, &err) < 0) {
        fprintf (stderr, "setup: %s\n", cg_error_message (err));
        exit (1);
    }
}

static void
s_make_workspace (void)
{
    const char *tmp = getenv ("TMPDIR") ? getenv ("TMPDIR") : "/tmp";
    snprintf (s_dir, sizeof s_dir, "%s/cg-test-http-XXXXXX", tmp);
    if (!mkdtemp (s_dir))
        abort ();
    cleanup_free char *ws = cg_strdupf ("%s/workspace", s_dir);
    cleanup_free char *sub = cg_strdupf ("%s/workspace/sub", s_dir);
    cleanup_free char *folder = cg_strdupf ("%s/workspace/folder", s_dir);
    cleanup_free char *leak = cg_strdupf ("%s/workspace/leak", s_dir);
    cleanup_free char *etc = cg_strdupf ("%s/workspace/etc", s_dir);
    if (mkdir (ws, 0755) < 0 || mkdir (sub, 0755) < 0 || mkdir (folder, 0755) < 0
        || symlink ("/etc/passwd", leak) < 0 || symlink ("/etc", etc) < 0)
        abort ();

    /*  A 300 KiB PDF with every byte value, so the body crosses several send chunks. */
    s_pdf_len = 300 * 1024;
    s_pdf = cg_xmalloc (s_pdf_len);
    memcpy (s_pdf, "%PDF-1.4\n", 9);
    for (size_t i = 9; i < s_pdf_len; i++)
        s_pdf[i] = (char)(i * 7 + (i >> 8));
    s_png_len = 4096;
    s_png = cg_xmalloc (s_png_len);
    memcpy (s_png, "\x89PNG\r\n\x1a\n", 8);
    for (size_t i = 8; i < s_png_len; i++)
        s_png[i] = (char)(i ^ 0x5a);
    s_write ("report.pdf", s_pdf, s_pdf_len);
    s_write ("chart.png", s_png, s_png_len);
    s_write ("page.html", s_html, strlen (s_html));
    s_write ("sub/data.csv", s_csv, strlen (s_csv));
    s_write ("sub/odd name #1?.txt", s_odd, strlen (s_odd));
    s_write ("folder/inside.txt", "x", 1);

    cg_error_t *err = NULL;
    s_workspace = cg_workspace_open (ws, &err);
    if (!s_workspace) {
        fprintf (stderr, "setup: %s\n", cg_error_message (err));
        exit (1);
    }
}

static int
s_count_fds (void)
{
    int count = 0;
    DIR *dir = opendir ("/proc/self/fd");
    for (struct dirent *entry; dir && (entry = readdir (dir));)
        count += entry->d_name[0] != '.';
    if (dir)
        closedir (dir);
    return count;
}

/*  --------------------------------------------------------------------------------------
    Cases */

static void
s_expect_file (cg_http_t *http, const char *name, const char *rel, const char *data, size_t len,
               const char *mime, bool attachment)
{
    cleanup_free char *path = cg_strdupf ("/files/" SESSION "/%s?token=" TOKEN, rel);
    s_reply_t reply = s_get (http, path);
    cleanup_free char *length = cg_strdupf ("%zu", len);
    cleanup_free char *disposition = s_header (&reply, "Content-Disposition");
    bool ok_status = reply.status == 200;
    bool ok_body = reply.body && reply.body_len == len && memcmp (reply.body, data, len) == 0;
    bool ok_type = s_header_is (&reply, "Content-Type", mime);
    bool ok_length = s_header_is (&reply, "Content-Length", length);
    bool ok_safe = s_header_is (&reply, "X-Content-Type-Options", "nosniff")
                   && s_header_is (&reply, "Content-Security-Policy", "sandbox")
                   && s_header_is (&reply, "Cache-Control", "no-store");
    bool ok_disposition =
        attachment ? disposition && strcmp (disposition, "attachment") == 0 : disposition == NULL;
    int status = reply.status;
    size_t body_len = reply.body_len;
    s_reply_free (&reply);
    CHECK (ok_status, "status %d", status);
    CHECK (ok_body, "body differs (%zu bytes, want %zu)", body_len, len);
    CHECK (ok_type, "Content-Type is not %s", mime);
    CHECK (ok_length, "Content-Length is not %s", length);
    CHECK (ok_safe, "missing nosniff, CSP sandbox or no-store");
    CHECK (ok_disposition, "Content-Disposition %s", disposition ? disposition : "(none)");
    PASS ();
}

/*  Expects STATUS with a small JSON error body naming CODE and no /etc/passwd content. */
static void
s_expect_error (cg_http_t *http, const char *name, const char *path, const char *const *extra,
                int status, const char *code)
{
    cleanup_free char *url = cg_strdupf ("%s%s", s_base, path);
    s_reply_t reply = s_fetch (http, url, extra);
    cleanup_free char *want = cg_strdupf ("\"error\":\"%s\"", code);
    int got = reply.status;
    bool is_json = s_header_is (&reply, "Content-Type", "application/json");
    bool has_code = reply.body && strstr (reply.body, want);
    bool leaked = reply.body && strstr (reply.body, "root:");
    cleanup_free char *allow = s_header (&reply, "Allow");
    s_reply_free (&reply);
    CHECK (got == status, "status %d, want %d", got, status);
    CHECK (!leaked, "the body holds /etc/passwd");
    CHECK (is_json && has_code, "not a JSON %s error body", code);
    if (status == 405)
        CHECK (allow && strcmp (allow, "GET, HEAD") == 0, "Allow is %s", allow ? allow : "(none)");
    PASS ();
}

static void
s_test_head (cg_http_t *http)
{
    const char *name = "head";
    cleanup_free char *url = cg_strdupf ("%s/files/" SESSION "/report.pdf?token=" TOKEN, s_base);
    const char *const extra[] = {"-I", NULL};
    s_reply_t reply = s_fetch (http, url, extra);
    cleanup_free char *length = cg_strdupf ("%zu", s_pdf_len);
    bool ok = reply.status == 200 && s_header_is (&reply, "Content-Length", length)
              && s_header_is (&reply, "Content-Type", "application/pdf")
              && !(reply.body && memmem (reply.body, reply.body_len, "%PDF", 4));
    int status = reply.status;
    s_reply_free (&reply);
    CHECK (ok, "status %d, or wrong headers, or a body", status);
    PASS ();
}

static void
s_test_download_url (cg_http_t *http, const char *rel, char *expected_url, const char *data)
{
    const char *name = "download_url";
    cleanup_free char *expected = expected_url;
    cleanup_free char *url = cg_downloads_url (http, SESSION, TOKEN, rel);
    CHECK (url, "no URL for %s", rel);
    CHECK (strcmp (url, expected) == 0, "got %s, want %s", url, expected);
    s_reply_t reply = s_fetch (http, url, NULL);
    bool ok = reply.status == 200 && reply.body_len == strlen (data)
              && memcmp (reply.body, data, reply.body_len) == 0;
    int status = reply.status;
    s_reply_free (&reply);
    CHECK (ok, "%s: status %d or wrong body", url, status);
    PASS ();
}

/*  Hostile: the sandbox truncates a file while it is being downloaded. The response must
    end short at once (curl: 18, partial file), not stall until a timeout. The listener
    sends at most one buffer per cg_http_process, so truncating as soon as curl has written
    the first body bytes lands well before the end of the file. */
#define BIG_SIZE (4 << 20)

static void
s_truncate_tick (const char *body_path)
{
    struct stat st;
    if (stat (body_path, &st) == 0 && st.st_size > 0) {
        cleanup_free char *big = cg_strdupf ("%s/workspace/big.bin", s_dir);
        if (truncate (big, 0) < 0)
            abort ();
    }
}

static void
s_test_truncated (cg_http_t *http)
{
    const char *name = "truncated_mid_download";
    char *data = cg_xcalloc (1, BIG_SIZE);
    s_write ("big.bin", data, BIG_SIZE);
    free (data);
    cleanup_free char *url = cg_strdupf ("%s/files/" SESSION "/big.bin?token=" TOKEN, s_base);
    s_reply_t reply = s_fetch_tick (http, url, NULL, s_truncate_tick);
    int status = reply.status, curl_exit = reply.curl_exit;
    size_t body_len = reply.body_len;
    s_reply_free (&reply);
    CHECK (status == 200 && curl_exit == 18 && body_len < BIG_SIZE,
           "status %d, curl exit %d, %zu bytes", status, curl_exit, body_len);
    PASS ();
}

static void
s_test_listen_errors (void)
{
    const char *name = "listen_errors";
    const char *bad[] = {"127.0.0.1",    "::1:80",      "[::1]80",      "[::1]:", "127.0.0.1:70000",
                         "localhost:80", ":80",         "127.0.0.1:8x", "",       "[fe80::1%lo]:0",
                         "1.2.3:80",     "127.0.0.1:-1"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cg_error_t *err = NULL;
        cg_http_t *http = cg_http_new (bad[i], &err);
        bool ok = !http && err && err->code == EINVAL;
        cg_http_destroy (&http);
        cg_error_destroy (&err);
        CHECK (ok, "\"%s\" accepted or not EINVAL", bad[i]);
    }
    PASS ();
}

static void
s_test_ipv6 (void)
{
    const char *name = "ipv6";
    int probe = socket (AF_INET6, SOCK_STREAM, 0);
    if (probe < 0) {
        printf ("skip ipv6: this machine has no IPv6\n");
        return;
    }
    close (probe);
    cg_error_t *err = NULL;
    cg_http_t *http = cg_http_new ("[::1]:0", &err);
    if (!http && err && err->code == EADDRNOTAVAIL) {
        printf ("skip ipv6: no ::1 here\n");
        cg_error_destroy (&err);
        return;
    }
    CHECK (http, "[::1]:0: %s", cg_error_message (err));
    cg_downloads_t *downloads = cg_downloads_new (http, s_lookup, NULL);
    cleanup_free char *expected = cg_strdupf (
        "http://[::1]:%d/files/" SESSION "/sub/data.csv?token=" TOKEN, cg_http_port (http));
    cleanup_free char *url = cg_downloads_url (http, SESSION, TOKEN, "/mnt/data/sub/data.csv");
    s_reply_t reply = url ? s_fetch (http, url, NULL) : (s_reply_t){0};
    bool ok = url && strcmp (url, expected) == 0 && reply.status == 200
              && reply.body_len == strlen (s_csv);
    s_reply_free (&reply);
    cg_http_destroy (&http);
    cg_downloads_destroy (&downloads);
    CHECK (ok, "fetch over [::1] failed (%s)", url ? url : "no url");
    PASS ();
}

static void
s_test_wildcard_url (void)
{
    const char *name = "wildcard_url";
    cg_error_t *err = NULL;
    cg_http_t *http = cg_http_new ("0.0.0.0:0", &err);
    CHECK (http, "0.0.0.0:0: %s", cg_error_message (err));
    cleanup_free char *url = cg_downloads_url (http, "s p", "t/k", "a b/c%d");
    cleanup_free char *expected = cg_strdupf (
        "http://127.0.0.1:%d/files/s%%20p/a%%20b/c%%25d?token=t%%2Fk", cg_http_port (http));
    cleanup_free char *bad = cg_downloads_url (http, SESSION, TOKEN, "../etc/passwd");
    cg_http_destroy (&http);
    CHECK (url && strcmp (url, expected) == 0, "got %s, want %s", url ? url : "NULL", expected);
    CHECK (!bad, "a URL for ../etc/passwd");
    PASS ();
}

static void
s_test_in_use (cg_http_t *http)
{
    const char *name = "address_in_use";
    cleanup_free char *listen = cg_strdupf ("127.0.0.1:%d", cg_http_port (http));
    cg_error_t *err = NULL;
    cg_http_t *second = cg_http_new (listen, &err);
    bool ok = !second && err && err->code == EADDRINUSE;
    cg_http_destroy (&second);
    cg_error_destroy (&err);
    CHECK (ok, "a second listener on %s", listen);
    PASS ();
}

/*  --------------------------------------------------------------------------------------
    Routes: each handler answers "<letter> <method> <path> q=<query q> <body>". */

static void
s_route_echo (void *arg, cg_http_exchange_t *ex)
{
    size_t len = 0;
    const char *body = cg_http_exchange_body (ex, &len);
    const char *q = cg_http_exchange_query (ex, "q");
    cleanup_free char *text =
        cg_strdupf ("%s %s %s q=%s %.*s", (const char *)arg, cg_http_exchange_method (ex),
                    cg_http_exchange_path (ex), q ? q : "(none)", (int)len, body);
    cg_http_respond (ex, 200, "text/plain", text, strlen (text), NULL);
}

/*  Fetches PATH (with EXTRA curl arguments) from HTTP and expects STATUS with WANT as the
    body, or, when WANT starts with '"', a JSON error body holding it. */
static void
s_expect_route (cg_http_t *http, const char *name, const char *path, const char *const *extra,
                int status, const char *want)
{
    cleanup_free char *url = cg_strdupf ("http://127.0.0.1:%d%s", cg_http_port (http), path);
    s_reply_t reply = s_fetch (http, url, extra);
    int got = reply.status;
    bool ok = want[0] == '"' ? reply.body && strstr (reply.body, want)
                                   && s_header_is (&reply, "Content-Type", "application/json")
                             : reply.body && reply.body_len == strlen (want)
                                   && memcmp (reply.body, want, reply.body_len) == 0;
    cleanup_free char *body = reply.body ? cg_xstrdup (reply.body) : NULL;
    s_reply_free (&reply);
    CHECK (got == status, "%s: status %d, want %d", path, got, status);
    CHECK (ok, "%s: body \"%s\", want \"%s\"", path, body ? body : "(none)", want);
    PASS ();
}

static void
s_test_routes (void)
{
    const char *name = "routes";
    cg_error_t *err = NULL;
    cg_http_t *http = cg_http_new ("127.0.0.1:0", &err);
    CHECK (http, "127.0.0.1:0: %s", cg_error_message (err));
    cg_http_route (http, "/api/", CG_HTTP_PREFIX, 16, s_route_echo, "A");
    cg_http_route (http, "/api/exact", 0, 1024, s_route_echo, "B");
    cg_http_route (http, "/mcp", 0, 1024, s_route_echo, "X");
    cg_http_route (http, "/mcp", 0, 1024, s_route_echo, "C"); /* replaces X */
    cg_http_route (http, "/ro/", CG_HTTP_PREFIX | CG_HTTP_GET_ONLY, 1024, s_route_echo, "D");
    const char *const post16[] = {"-X", "POST", "--data-binary", "0123456789abcdef", NULL};
    const char *const post17[] = {"-X", "POST", "--data-binary", "0123456789abcdefg", NULL};
    const char *const put[] = {"-X", "PUT", "--data-binary", "x", NULL};
    const char *const head[] = {"-I", NULL};
    struct {
        const char *name, *path;
        const char *const *extra;
        int status;
        const char *want;
    } cases[] = {
        {"prefix", "/api/x/y%20z?q=a%20b", NULL, 200, "A GET /api/x/y%20z q=a%20b "},
        {"prefix_bare", "/api/", NULL, 200, "A GET /api/ q=(none) "},
        {"prefix_needs_slash", "/api", NULL, 404, "\"not_found\""},
        {"exact_wins", "/api/exact?q=", NULL, 200, "B GET /api/exact q= "},
        {"exact_is_exact", "/api/exact/more", NULL, 200, "A GET /api/exact/more q=(none) "},
        {"second_route", "/mcp", post16, 200, "C POST /mcp q=(none) 0123456789abcdef"},
        {"exact_no_sub", "/mcp/", NULL, 404, "\"no such resource\""},
        {"exact_no_longer", "/mcpx", NULL, 404, "\"not_found\""},
        {"unregistered", "/files/s/x?token=t", NULL, 404, "\"not_found\""},
        {"root", "/", NULL, 404, "\"not_found\""},
        {"body_at_limit", "/api/b", post16, 200, "A POST /api/b q=(none) 0123456789abcdef"},
        {"body_over_limit", "/api/b", post17, 413, "\"payload_too_large\""},
        {"body_limit_per_route", "/api/exact", post17, 200,
         "B POST /api/exact q=(none) 0123456789abcdefg"},
        {"get_only", "/ro/x", NULL, 200, "D GET /ro/x q=(none) "},
        {"get_only_post", "/ro/x", post16, 405, "\"method_not_allowed\""},
        {"get_only_put", "/ro/x", put, 405, "\"method_not_allowed\""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        s_expect_route (http, cases[i].name, cases[i].path, cases[i].extra, cases[i].status,
                        cases[i].want);
    /*  HEAD on a GET-only route: the handler's headers (its body's length), no body. */
    cleanup_free char *url = cg_strdupf ("http://127.0.0.1:%d/ro/x", cg_http_port (http));
    s_reply_t reply = s_fetch (http, url, head);
    cleanup_free char *length = cg_strdupf ("%zu", strlen ("D HEAD /ro/x q=(none) "));
    bool ok = reply.status == 200 && s_header_is (&reply, "Content-Length", length)
              && !(reply.body && memmem (reply.body, reply.body_len, "D HEAD", 6));
    s_reply_free (&reply);
    cg_http_destroy (&http);
    name = "head";
    CHECK (ok, "HEAD /ro/x: wrong status or length, or a body");
    PASS ();
}

//  Every refusal of the /files/ route and the listener: status and error code.
static void
s_test_errors (cg_http_t *http)
{
    const char *const post[] = {"-X", "POST", "-d", "x=1", NULL};
    const char *const put[] = {"-X", "PUT", "-d", "x=1", NULL};
    const char *const delete[] = {"-X", "DELETE", NULL};
    const char *const get_body[] = {"-X", "GET", "-d", "x=1", NULL};
    struct {
        const char *name, *path;
        const char *const *extra;
        int status;
        const char *code;
    } errors[] = {
        {"wrong_token", "/files/" SESSION "/report.pdf?token=c0ffee0123456789abcdef012345678a",
         NULL, 404, "not_found"},
        {"short_token", "/files/" SESSION "/report.pdf?token=c0ffee", NULL, 404, "not_found"},
        {"long_token", OURS ("report.pdf") "00", NULL, 404, "not_found"},
        {"empty_token", "/files/" SESSION "/report.pdf?token=", NULL, 404, "not_found"},
        {"no_token", "/files/" SESSION "/report.pdf", NULL, 404, "not_found"},
        {"other_session", "/files/sess_bbbbbbbbbbbb/report.pdf?token=" TOKEN, NULL, 404,
         "not_found"},
        {"no_path", "/files/" SESSION "?token=" TOKEN, NULL, 404, "not_found"},
        {"empty_path", OURS (""), NULL, 404, "not_found"},
        {"missing", OURS ("nope.pdf"), NULL, 404, "not_found"},
        {"symlink_leak", OURS ("leak"), NULL, 404, "not_found"},
        {"symlink_dir", OURS ("etc/passwd"), NULL, 404, "not_found"},
        {"directory", OURS ("folder"), NULL, 404, "not_found"},
        {"directory_slash", OURS ("folder/"), NULL, 404, "not_found"},
        {"dotdot_encoded_slash", OURS ("..%2F..%2Fetc%2Fpasswd"), NULL, 404, "not_found"},
        {"dotdot_encoded_dots", OURS ("%2e%2e/x"), NULL, 404, "not_found"},
        {"dotdot_plain", OURS ("sub/../../../../etc/passwd"), NULL, 404, "not_found"},
        {"dotdot_session", "/files/..%2F" SESSION "/report.pdf?token=" TOKEN, NULL, 404,
         "not_found"},
        {"absolute", OURS ("%2Fetc%2Fpasswd"), NULL, 404, "not_found"},
        {"nul_in_path", OURS ("report.pdf%00.html"), NULL, 404, "not_found"},
        {"nul_in_session", "/files/" SESSION "%00x/report.pdf?token=" TOKEN, NULL, 404,
         "not_found"},
        {"nul_in_token", OURS ("report.pdf") "%00", NULL, 404, "not_found"},
        {"bad_escape", OURS ("report%zz.pdf"), NULL, 400, "bad_request"},
        {"short_escape", OURS ("report.pdf%4"), NULL, 400, "bad_request"},
        {"post", OURS ("report.pdf"), post, 405, "method_not_allowed"},
        {"put", OURS ("report.pdf"), put, 405, "method_not_allowed"},
        {"delete", OURS ("report.pdf"), delete, 405, "method_not_allowed"},
        {"get_with_body", OURS ("report.pdf"), get_body, 413, "payload_too_large"},
        {"root", "/", NULL, 404, "not_found"},
        {"files_bare", "/files", NULL, 404, "not_found"},
        {"files_slash", "/files/", NULL, 404, "not_found"},
        {"other_path", "/mcp", NULL, 404, "not_found"},
        {"other_path_post", "/other", post, 404, "not_found"},
    };
    for (size_t i = 0; i < sizeof errors / sizeof errors[0]; i++)
        s_expect_error (http, errors[i].name, errors[i].path, errors[i].extra, errors[i].status,
                        errors[i].code);
}

//  4096 bytes of request target are fine; 4097 get 414; far beyond MHD's own buffer the
//  client gets an error and the listener keeps serving.
static void
s_test_url_limit (cg_http_t *http)
{
    const char *name = "url_limit";
    const char *head = "/files/" SESSION "/report.pdf?token=" TOKEN "&pad=";
    size_t head_len = strlen (head);
    char *target = cg_xmalloc (40000);
    strcpy (target, head);
    memset (target + head_len, 'a', 4096 - head_len);
    target[4096] = '\0';
    s_reply_t reply = s_get (http, target);
    int at_limit = reply.status;
    s_reply_free (&reply);
    target[4096] = 'a';
    target[4097] = '\0';
    reply = s_get (http, target);
    int over_limit = reply.status;
    bool json = reply.body && strstr (reply.body, "\"uri_too_long\"");
    s_reply_free (&reply);
    memset (target + head_len, 'a', 30000);
    target[head_len + 30000] = '\0';
    reply = s_get (http, target);
    int far_over = reply.status;
    s_reply_free (&reply);
    free (target);
    if (at_limit != 200)
        fprintf (stderr, "FAIL %s: 4096 bytes got %d\n", name, at_limit), s_failures++;
    else if (over_limit != 414 || !json)
        fprintf (stderr, "FAIL %s: 4097 bytes got %d\n", name, over_limit), s_failures++;
    else if (far_over < 400 || far_over > 499)
        fprintf (stderr, "FAIL %s: 30000 bytes got %d\n", name, far_over), s_failures++;
    else
        PASS ();
}

/*  --------------------------------------------------------------------------------------
    The connection policy */

//  Connects to HTTP from the loopback address FROM and sends TEXT (a request never
//  finished). Returns the socket.
static int
s_slow_open (cg_http_t *http, const char *from, const char *text)
{
    struct sockaddr_in local = {.sin_family = AF_INET};
    struct sockaddr_in remote = {.sin_family = AF_INET,
                                 .sin_port = htons ((uint16_t)cg_http_port (http))};
    inet_pton (AF_INET, from, &local.sin_addr);
    inet_pton (AF_INET, "127.0.0.1", &remote.sin_addr);
    int fd = socket (AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || bind (fd, (struct sockaddr *)&local, sizeof local) < 0
        || connect (fd, (struct sockaddr *)&remote, sizeof remote) < 0
        || send (fd, text, strlen (text), MSG_NOSIGNAL) < 0)
        abort ();
    return fd;
}

//  Drives HTTP's loop for ROUNDS turns (each waits at most 50 ms).
static void
s_pump (cg_http_t *http, int rounds)
{
    for (int i = 0; i < rounds; i++) {
        struct pollfd item = {cg_http_fd (http), POLLIN, 0};
        int timeout = cg_http_timeout_ms (http);
        poll (&item, 1, timeout < 0 || timeout > 50 ? 50 : timeout);
        cg_http_process (http);
    }
}

//  True when the server has closed FD (EOF or an error on read; a trickle after it fails).
static bool
s_gone (int fd)
{
    char byte;
    ssize_t n = recv (fd, &byte, 1, MSG_DONTWAIT);
    return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
}

/*  Two connections from one address at most; others than 127.0.0.1 six at most (256 minus
    a reserve of 250); a second to send a request. A seventh connection closes the oldest
    waiting one, 127.0.0.1 is still served, and trickling keeps nothing past the deadline. */
static void
s_test_policy (void)
{
    const char *name = "policy";
    cg_error_t *err = NULL;
    cg_http_t *http = cg_http_new ("127.0.0.1:0", &err);
    CHECK (http, "127.0.0.1:0: %s", cg_error_message (err));
    cg_http_route (http, "/api/", CG_HTTP_PREFIX, 16, s_route_echo, "A");
    cg_http_route (http, "/big", 0, 4096, s_route_echo, "B");
    cg_http_set_limits (http, &(cg_http_limits_t){2, 250, 1});
    const char *slow = "GET /api/x HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ";
    int a = s_slow_open (http, "127.0.0.2", slow), b = s_slow_open (http, "127.0.0.2", slow);
    s_pump (http, 4);
    CHECK (!s_gone (a) && !s_gone (b), "two connections from 127.0.0.2 stay");
    int c = s_slow_open (http, "127.0.0.2", slow);
    s_pump (http, 4);
    CHECK (s_gone (a) && !s_gone (b) && !s_gone (c),
           "a third from 127.0.0.2 takes the place of the oldest");
    int others[4];
    for (int i = 0; i < 4; i++) {
        char from[16];
        snprintf (from, sizeof from, "127.0.0.%d", i + 3);
        others[i] = s_slow_open (http, from, slow);
        s_pump (http, 2);
    }
    CHECK (!s_gone (b), "six from other addresses stay");
    int d = s_slow_open (http, "127.0.0.7", slow);
    s_pump (http, 4);
    CHECK (s_gone (b) && !s_gone (d), "a seventh from another address takes the oldest's place");
    cleanup_free char *url = cg_strdupf ("http://127.0.0.1:%d/api/owner", cg_http_port (http));
    s_reply_t reply = s_fetch (http, url, NULL);
    CHECK (reply.status == 200, "127.0.0.1 is served from the reserve (status %d)", reply.status);
    s_reply_free (&reply);
    //  Trickling (headers, or a body after whole headers) does not keep a connection past
    //  the deadline: every one is closed.
    int body = s_slow_open (
        http, "127.0.0.1", "POST /big HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 4000\r\n\r\n");
    int held[] = {c, d, others[0], others[1], others[2], others[3], body};
    size_t open = 7;
    for (int round = 0; round < 300 && open > 0; round++) {
        poll (NULL, 0, 20); /* paces the trickle: one byte per connection per turn */
        open = 0;
        for (size_t i = 0; i < 7; i++)
            if (!s_gone (held[i])) {
                send (held[i], "a", 1, MSG_NOSIGNAL);
                open++;
            }
        s_pump (http, 1);
    }
    CHECK (open == 0, "%zu trickling connections are still open past the request deadline", open);
    cleanup_free char *metrics = cg_metrics_render (&(cg_metrics_gauges_t){0});
    CHECK (strstr (metrics, "cellgate_http_connections_closed_total{reason=\"evicted\"} 2\n")
               && strstr (metrics,
                          "cellgate_http_connections_closed_total{reason=\"request_timeout\"} 7\n"),
           "counted: %s", strstr (metrics, "cellgate_http_connections_closed_total{"));
    close (a), close (b), close (c), close (d), close (body);
    for (int i = 0; i < 4; i++)
        close (others[i]);
    cg_http_destroy (&http);
    PASS ();
}

int
main (void)
{
    signal (SIGPIPE, SIG_IGN);
    if (getenv ("CG_TEST_VERBOSE"))
        cg_log_set_level (3);
    s_make_workspace ();
    int fds_before = s_count_fds ();

    cg_error_t *err = NULL;
    cg_http_t *http = cg_http_new ("127.0.0.1:0", &err);
    if (!http) {
        fprintf (stderr, "cg_http_new: %s\n", cg_error_message (err));
        return 1;
    }
    cg_downloads_t *downloads = cg_downloads_new (http, s_lookup, NULL);
    s_base = cg_strdupf ("http://127.0.0.1:%d", cg_http_port (http));

    s_expect_file (http, "pdf", "report.pdf", s_pdf, s_pdf_len, "application/pdf", false);
    s_expect_file (http, "png", "chart.png", s_png, s_png_len, "image/png", false);
    s_expect_file (http, "nested_csv", "sub/data.csv", s_csv, strlen (s_csv),
                   cg_mime_type ("data.csv"), false);
    s_expect_file (http, "html_attachment", "page.html", s_html, strlen (s_html),
                   cg_mime_type ("page.html"), true);
    s_expect_file (http, "encoded_name", "sub/odd%20name%20%231%3F.txt", s_odd, strlen (s_odd),
                   cg_mime_type ("x.txt"), false);
    s_test_head (http);

    s_test_errors (http);
    s_test_url_limit (http);

    s_test_download_url (http, "sub/data.csv",
                         cg_strdupf ("%s/files/" SESSION "/sub/data.csv?token=" TOKEN, s_base),
                         s_csv);
    s_test_download_url (
        http, "/mnt/data/sub/odd name #1?.txt",
        cg_strdupf ("%s/files/" SESSION "/sub/odd%%20name%%20%%231%%3F.txt?token=" TOKEN, s_base),
        s_odd);
    s_test_truncated (http);
    s_expect_file (http, "still_serving", "report.pdf", s_pdf, s_pdf_len, "application/pdf", false);
    s_test_in_use (http);

    cg_http_destroy (&http);
    cg_http_destroy (&http);
    cg_downloads_destroy (&downloads);
    cg_downloads_destroy (&downloads);
    {
        const char *name = "no_fd_leak";
        int fds_after = s_count_fds ();
        if (fds_after != fds_before)
            fprintf (stderr, "FAIL %s: %d fds before, %d after\n", name, fds_before, fds_after),
                s_failures++;
        else
            PASS ();
    }
    s_test_routes ();
    s_test_listen_errors ();
    s_test_ipv6 ();
    s_test_wildcard_url ();
    s_test_policy ();

    cg_workspace_destroy (&s_workspace);
    cg_rm_rf (s_dir, NULL);
    free (s_base);
    free (s_pdf);
    free (s_png);
    printf ("%d passed, %d failed\n", s_passes, s_failures);
    return s_failures ? 1 : 0;
}
