/*  egress_tool — egress/'s C for the Python test against real squid (egress_squid):

      egress_tool config DIR PORT ALLOW [option...]
          writes DIR/squid.conf (0600), DIR/sessions.conf and the error pages in DIR/errors
          from the server's list ALLOW (cg_egress_policy_add's syntax), with squid's logs in
          DIR/log (access.log, cache.log; the coredump directory too) and its pid file in DIR.
          Options: --session SRC=LIST (a narrowed session: LIST is narrowed from ALLOW),
          --hosts-file PATH, --nameservers "IP ...", --test-network CIDR, --user NAME.
      egress_tool sessions N
          prints the include file's text for N narrowed sessions (127.64.0.1 ...), each
          allowed api.lab.test:80 and *.pkg.lab.test: for measuring squid's reconfigure.
      egress_tool parse FILE
          prints one JSON object per line of the access log FILE: cg_egress_log_parse's
          record, or {"malformed": true, "line": ...}.

    Exits 0, or 1 with the error on stderr. */
#define _GNU_SOURCE
#include "egress/cg_egress_policy.h"
#include "egress/cg_egress_squid.h"
#include "base/cg_fs.h"
#include "base/cg_util.h"

#include <stdio.h>
#include <string.h>

#define S_MAX_SESSIONS 16
#define S_MAX_NETWORKS 8

static int
s_fail (const char *what, cg_error_t **err)
{
    fprintf (stderr, "egress_tool: %s: %s\n", what, cg_error_message (*err));
    cg_error_destroy (err);
    return 1;
}

//  Writes TEXT to DIR/NAME with MODE.
static int
s_write (const char *dir, const char *name, const char *text, int mode, cg_error_t **err)
{
    cleanup_free char *path = cg_strdupf ("%s/%s", dir, name);
    return cg_write_file (path, text, strlen (text), mode, err);
}

static int
s_config (int argc, char **argv)
{
    cg_error_t *err = NULL;
    const char *dir = argv[2];
    cg_egress_policy_t *server = cg_egress_policy_new ();
    if (cg_egress_policy_add (server, argv[4], &err) < 0)
        return s_fail ("the server's list", &err);
    cg_egress_session_rule_t rules[S_MAX_SESSIONS];
    cg_egress_policy_t *lists[S_MAX_SESSIONS];
    const char *networks[S_MAX_NETWORKS + 1] = {NULL};
    size_t sessions = 0, nets = 0;
    cleanup_free char *access = cg_strdupf ("%s/log/access.log", dir);
    cleanup_free char *cache = cg_strdupf ("%s/log/cache.log", dir);
    cleanup_free char *log_dir = cg_strdupf ("%s/log", dir);
    cleanup_free char *pid = cg_strdupf ("%s/squid.pid", dir);
    cleanup_free char *errors = cg_strdupf ("%s/errors", dir);
    cleanup_free char *include = cg_strdupf ("%s/sessions.conf", dir);
    cg_egress_squid_t conf = {.policy = server,
                              .port = atoi (argv[3]),
                              .access_log = access,
                              .cache_log = cache,
                              .pid_file = pid,
                              .error_dir = errors,
                              .coredump_dir = log_dir,
                              .sessions_file = include,
                              .test_networks = networks};
    for (int i = 5; i + 1 < argc; i += 2) {
        const char *option = argv[i], *value = argv[i + 1];
        char *equals = strchr (value, '=');
        if (strcmp (option, "--session") == 0 && equals && sessions < S_MAX_SESSIONS) {
            *equals = '\0';
            if (cg_egress_policy_narrow (server, equals + 1, &lists[sessions], &err) < 0)
                return s_fail ("a session's list", &err);
            rules[sessions] = (cg_egress_session_rule_t){value, lists[sessions]};
            sessions++;
        }
        else if (strcmp (option, "--hosts-file") == 0)
            conf.hosts_file = value;
        else if (strcmp (option, "--nameservers") == 0)
            conf.dns_nameservers = value;
        else if (strcmp (option, "--test-network") == 0 && nets < S_MAX_NETWORKS)
            networks[nets++] = value;
        else if (strcmp (option, "--user") == 0)
            conf.effective_user = value;
        else {
            fprintf (stderr, "egress_tool: unknown option %s\n", option);
            return 1;
        }
    }
    cleanup_free char *text = cg_egress_squid_config (&conf, &err);
    cleanup_free char *session_text = cg_egress_squid_sessions (rules, sessions);
    if (!text)
        return s_fail ("squid's configuration", &err);
    if (!session_text) {
        fprintf (stderr, "egress_tool: a session's source address is refused\n");
        return 1;
    }
    if (s_write (dir, "squid.conf", text, 0600, &err) < 0
        || s_write (dir, "sessions.conf", session_text, 0600, &err) < 0
        || cg_egress_squid_write_pages (errors, &err) < 0)
        return s_fail ("writing", &err);
    for (size_t k = 0; k < sessions; k++)
        cg_egress_policy_destroy (&lists[k]);
    cg_egress_policy_destroy (&server);
    return 0;
}

static int
s_parse (const char *path)
{
    cg_error_t *err = NULL;
    size_t len = 0;
    cleanup_free char *text = cg_read_file (path, 64 << 20, &len, &err);
    if (!text)
        return s_fail (path, &err);
    for (char *line = text, *next; line < text + len; line = next) {
        char *newline = memchr (line, '\n', (size_t)(text + len - line));
        next = newline ? newline + 1 : text + len;
        cg_egress_record_t record;
        json_t *out;
        if (cg_egress_log_parse (line, (size_t)(next - line), &record) < 0)
            out = json_pack ("{s:b, s:s%}", "malformed", 1, "line", line, (size_t)(next - line));
        else
            out = json_pack ("{s:I, s:s, s:s, s:s, s:i, s:i, s:I, s:I, s:I, s:s, s:s, s:s}",
                             "time_ms", (json_int_t)record.time_ms, "src", record.src, "method",
                             record.method, "host", record.host, "port", record.port, "status",
                             record.status, "bytes_up", (json_int_t)record.bytes_up, "bytes_down",
                             (json_int_t)record.bytes_down, "ms", (json_int_t)record.ms,
                             "server_addr", record.server_addr, "decision",
                             record.decision == CG_EGRESS_DENIED ? "denied" : "allowed", "reason",
                             record.reason);
        if (!out) /* a malformed line that is not UTF-8 */
            out = json_pack ("{s:b}", "malformed", 1);
        cleanup_free char *dump = json_dumps (out, JSON_COMPACT | JSON_ENSURE_ASCII);
        printf ("%s\n", dump);
        json_decref (out);
    }
    return 0;
}

static int
s_sessions (int n)
{
    cg_error_t *err = NULL;
    cg_egress_policy_t *server = cg_egress_policy_new ();
    cg_egress_policy_t *session = NULL;
    if (n < 0 || n > 60000 || cg_egress_policy_add (server, "api.lab.test *.pkg.lab.test", &err) < 0
        || cg_egress_policy_narrow (server, "api.lab.test:80, *.pkg.lab.test", &session, &err) < 0)
        return 1;
    cg_egress_session_rule_t *rules = cg_xcalloc ((size_t)n + 1, sizeof *rules);
    char (*src)[32] = cg_xcalloc ((size_t)n + 1, sizeof *src);
    for (int k = 0; k < n; k++) {
        snprintf (src[k], sizeof src[k], "127.64.%d.%d", k / 250, k % 250 + 1);
        rules[k] = (cg_egress_session_rule_t){src[k], session};
    }
    cleanup_free char *text = cg_egress_squid_sessions (rules, (size_t)n);
    fputs (text, stdout);
    free (rules);
    free (src);
    cg_egress_policy_destroy (&session);
    cg_egress_policy_destroy (&server);
    return 0;
}

int
main (int argc, char **argv)
{
    if (argc == 3 && strcmp (argv[1], "sessions") == 0)
        return s_sessions (atoi (argv[2]));
    if (argc >= 5 && strcmp (argv[1], "config") == 0)
        return s_config (argc, argv);
    if (argc == 3 && strcmp (argv[1], "parse") == 0)
        return s_parse (argv[2]);
    fprintf (stderr,
             "usage: egress_tool config DIR PORT ALLOW [option...] | sessions N | parse FILE\n");
    return 2;
}
