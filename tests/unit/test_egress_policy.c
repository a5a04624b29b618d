/*  Unit tests: egress/ — the allow list's syntax, normalization, refusals and cap, the
    decision by name, a session's narrowing (text and JSON), squid's configuration and
    include file (and `squid -k parse` on them when squid is installed), the error pages, and
    access log lines as squid 5.7 wrote them. */
#define _GNU_SOURCE
#include "egress/cg_egress_policy.h"
#include "egress/cg_egress_squid.h"
#include "base/cg_fs.h"
#include "base/cg_util.h"
#include "cg_test.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

static char s_root[] = "/tmp/cg-test-egress-XXXXXX";

//  Returns a new list of TEXT's entries; aborts the program when TEXT does not parse.
static cg_egress_policy_t *
s_policy (const char *text)
{
    cg_egress_policy_t *policy = cg_egress_policy_new ();
    cg_error_t *err = NULL;
    if (cg_egress_policy_add (policy, text, &err) < 0) {
        fprintf (stderr, "s_policy: %s\n", cg_error_message (err));
        abort ();
    }
    return policy;
}

static void
s_test_syntax (void)
{
    const char *name = "syntax";
    cleanup_free char *text = NULL;
    cg_egress_policy_t *policy = s_policy ("api.Example.COM, *.example.org:8443\n"
                                           "# a comment, then entries\n"
                                           "192.0.2.7\t[2001:DB8:0::7]:443 # trailing comment\n"
                                           "[::ffff:192.0.2.9],api.example.com,,A.example.com:080");
    const char *expected[] = {"api.example.com",   "*.example.org:8443", "192.0.2.7",
                              "[2001:db8::7]:443", "192.0.2.9",          "a.example.com:80"};
    EXPECT (cg_egress_policy_count (policy) == 6, "six entries, the duplicate collapsed: %d",
            cg_egress_policy_count (policy));
    for (int i = 0; i < 6 && i < cg_egress_policy_count (policy); i++)
        EXPECT (strcmp (cg_egress_policy_entry (policy, i), expected[i]) == 0,
                "entry %d is %s, not %s", i, cg_egress_policy_entry (policy, i), expected[i]);
    EXPECT (cg_egress_policy_entry (policy, 6) == NULL
                && cg_egress_policy_entry (policy, -1) == NULL,
            "out of range: NULL");
    cg_egress_kind_t kind;
    const char *entry_name;
    int port;
    CHECK (cg_egress_policy_entry_parts (policy, 1, &kind, &entry_name, &port) == 0, "parts");
    EXPECT (kind == CG_EGRESS_SUFFIX && strcmp (entry_name, "example.org") == 0 && port == 8443,
            "a suffix's parts");
    cg_egress_policy_entry_parts (policy, 3, &kind, &entry_name, &port);
    EXPECT (kind == CG_EGRESS_IPV6 && strcmp (entry_name, "2001:db8::7") == 0 && port == 443,
            "an IPv6 literal's parts");
    json_t *json = cg_egress_policy_json (policy);
    text = json_dumps (json, JSON_COMPACT);
    EXPECT (strcmp (text, "[\"api.example.com\",\"*.example.org:8443\",\"192.0.2.7\","
                          "\"[2001:db8::7]:443\",\"192.0.2.9\",\"a.example.com:80\"]")
                == 0,
            "the JSON list: %s", text);
    json_decref (json);
    cg_error_t *err = NULL;
    EXPECT (cg_egress_policy_add (policy, "", &err) == 0
                && cg_egress_policy_add (policy, NULL, &err) == 0
                && cg_egress_policy_add (policy, " # only a comment\n,, \n", &err) == 0,
            "nothing to add is fine");
    EXPECT (cg_egress_policy_count (policy) == 6, "and adds nothing");
    cg_egress_policy_destroy (&policy);
    EXPECT (policy == NULL, "destroy sets NULL");
    cg_egress_policy_destroy (&policy);
}

static void
s_test_refusals (void)
{
    const struct {
        const char *entry, *why;
    } cases[] = {
        {"localhost", "at least one dot"},
        {"db.localhost", "localhost"},
        {"intranet", "at least one dot"},
        {"-a.example.com", "start with '-'"},
        {"a-.example.com", "end with '-'"},
        {"a_b.example.com", "letters, digits"},
        {"caf\xc3\xa9.example.com", "letters, digits"},
        {"a..example.com", "empty label"},
        {"example.com.", "end with '.'"},
        {"example.123", "all digits"},
        {"1.2.3", "all digits"},
        {"01.2.3.4", "all digits"},
        {"*", "'*'"},
        {"*.com", "at least one dot"},
        {"a.*.example.com", "'*'"},
        {"*example.com", "'*'"},
        {"**.example.com", "'*'"},
        {"fd00::1", "brackets"},
        {"[fd00::1", "closing ']'"},
        {"[fd00::1]x", "\":port\""},
        {"[fe80::1%eth0]", "zone"},
        {"[zz::1]", "not an IPv6"},
        {"[192.0.2.7]", "not an IPv6"},
        {"a.example.com:0", "1 to 65535"},
        {"a.example.com:65536", "1 to 65535"},
        {"a.example.com:http", "1 to 65535"},
        {"a.example.com:", "1 to 65535"},
        {"a.example.com:-1", "1 to 65535"},
        {":80", "no host"},
        {"http://a.example.com/", "not a URL"},
    };
    cg_egress_policy_t *policy = s_policy ("keep.example.com");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cg_error_t *err = NULL;
        cleanup_free char *text = cg_strdupf ("ok.example.com, %s", cases[i].entry);
        int rc = cg_egress_policy_add (policy, text, &err);
        cleanup_free char *quoted = cg_strdupf ("\"%s\"", cases[i].entry);
        bool named = err && (strstr (err->message, quoted) || !(cases[i].entry[0] & 0x80));
        EXPECT (rc == -1 && err && err->code == EINVAL && strstr (err->message, cases[i].why)
                    && named,
                "%s: refused naming it and why (%s): %s", cases[i].entry, cases[i].why,
                cg_error_message (err));
        cg_error_destroy (&err);
    }
    EXPECT (cg_egress_policy_count (policy) == 1,
            "a refused text adds nothing, not even its "
            "good entries: %d",
            cg_egress_policy_count (policy));
    //  A label of 63 is fine, 64 is not; a name of 253 is fine, 254 is not.
    char label[80], long_name[300];
    memset (label, 'a', 64);
    label[64] = '\0';
    cleanup_free char *label64 = cg_strdupf ("%s.example.com", label);
    label[63] = '\0';
    cleanup_free char *label63 = cg_strdupf ("%s.example.com", label);
    cg_error_t *err = NULL;
    EXPECT (cg_egress_policy_add (policy, label63, &err) == 0, "a 63-byte label");
    EXPECT (cg_egress_policy_add (policy, label64, &err) == -1 && strstr (err->message, "63"),
            "a 64-byte label: %s", cg_error_message (err));
    cg_error_destroy (&err);
    memset (long_name, 'b', sizeof long_name);
    for (int i = 50; i < 253; i += 51)
        long_name[i] = '.';
    long_name[253] = '\0';
    EXPECT (cg_egress_policy_add (policy, long_name, &err) == 0, "a 253-byte name: %s",
            cg_error_message (err));
    cg_error_destroy (&err);
    long_name[253] = 'c';
    long_name[254] = '\0';
    EXPECT (cg_egress_policy_add (policy, long_name, &err) == -1 && strstr (err->message, "253"),
            "a 254-byte name: %s", cg_error_message (err));
    cg_error_destroy (&err);
    cg_egress_policy_destroy (&policy);
}

static void
s_test_cap (void)
{
    cg_egress_policy_t *policy = cg_egress_policy_new ();
    cg_error_t *err = NULL;
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream (&text, &len);
    for (int i = 0; i < CG_EGRESS_POLICY_MAX + 1; i++)
        fprintf (out, "h%d.example.com\n", i);
    fclose (out);
    EXPECT (cg_egress_policy_add (policy, text, &err) == -1 && err->code == ENOSPC
                && strstr (err->message, "256") && cg_egress_policy_count (policy) == 0,
            "257 entries at once: refused, the cap named, none added: %s", cg_error_message (err));
    cg_error_destroy (&err);
    *strrchr (text, 'h') = '\0'; /* the first 256 */
    EXPECT (cg_egress_policy_add (policy, text, &err) == 0
                && cg_egress_policy_count (policy) == 256,
            "256 entries fit");
    EXPECT (cg_egress_policy_add (policy, "h0.example.com h255.example.com", &err) == 0,
            "a duplicate at the cap is no new entry");
    EXPECT (cg_egress_policy_add (policy, "h256.example.com", &err) == -1 && err->code == ENOSPC,
            "the 257th: ENOSPC");
    cg_error_destroy (&err);
    free (text);
    cg_egress_policy_destroy (&policy);
}

static void
s_test_allows (void)
{
    cg_egress_policy_t *policy = s_policy ("api.example.com *.example.org:8443 192.0.2.7 "
                                           "[2001:db8::7]:443 *.b.example.net");
    const struct {
        const char *host;
        int port;
        bool allowed;
    } cases[] = {
        {"api.example.com", 80, true},
        {"api.example.com", 443, true},
        {"API.Example.Com", 443, true},
        {"api.example.com.", 80, true},
        {"api.example.com", 8080, false},
        {"api.example.com", 0, false},
        {"api.example.com", 65616, false},
        {"x.api.example.com", 80, false},
        {"example.com", 80, false},
        {"x.example.org", 8443, true},
        {"a.b.c.example.org", 8443, true},
        {"x.example.org", 443, false},
        {"example.org", 8443, false},
        {".example.org", 8443, false},
        {"a_b.example.org", 8443, false},
        {"badexample.org", 8443, false},
        {"192.0.2.7", 80, true},
        {"192.0.2.7", 443, true},
        {"192.0.2.8", 80, false},
        {"[::ffff:192.0.2.7]", 80, true},
        {"::ffff:c000:207", 443, true},
        {"[2001:db8:0:0::7]", 443, true},
        {"2001:DB8::7", 443, true},
        {"[2001:db8::7]", 80, false},
        {"[2001:db8::7", 443, false},
        {"x.b.example.net", 443, true},
        {"b.example.net", 443, false},
        {"", 80, false},
        {NULL, 80, false},
        {"0300.0.2.7", 80, false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        EXPECT (cg_egress_policy_allows (policy, cases[i].host, cases[i].port) == cases[i].allowed,
                "%s:%d is %s", cases[i].host ? cases[i].host : "NULL", cases[i].port,
                cases[i].allowed ? "allowed" : "refused");
    char huge[2000];
    memset (huge, 'a', sizeof huge - 1);
    huge[sizeof huge - 1] = '\0';
    memcpy (huge + sizeof huge - 13, ".example.org", 12);
    EXPECT (!cg_egress_policy_allows (policy, huge, 8443), "a name past 253 bytes is refused");
    cg_egress_policy_destroy (&policy);
}

static void
s_test_narrow (void)
{
    const char *name = "narrow";
    cg_egress_policy_t *server = s_policy ("api.example.com *.example.org 192.0.2.7 "
                                           "other.example.net:8080 [2001:db8::7] "
                                           "split.example.com:80 split.example.com:443");
    const struct {
        const char *text;
        int code; /* 0: accepted */
    } cases[] = {
        {"api.example.com", 0},
        {"api.example.com:443", 0},
        {"x.example.org, *.a.example.org, *.example.org:80", 0},
        {"other.example.net:8080 192.0.2.7:443 [2001:db8::7]:80", 0},
        {"split.example.com", 0},
        {"", 0},
        {"example.org", EPERM},
        {"api.example.com:22", EPERM},
        {"other.example.net", EPERM},
        {"192.0.2.8", EPERM},
        {"*.api.example.com", EPERM},
        {"*.example.org:8443", EPERM},
        {"[2001:db8::8]", EPERM},
        {"x.example.org x_y.example.org", EINVAL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cg_egress_policy_t *session = NULL;
        cg_error_t *err = NULL;
        int rc = cg_egress_policy_narrow (server, cases[i].text, &session, &err);
        EXPECT (cases[i].code ? rc == -1 && err && err->code == cases[i].code && !session
                              : rc == 0 && session && !err,
                "narrow to \"%s\": %s", cases[i].text, cg_error_message (err));
        cg_error_destroy (&err);
        cg_egress_policy_destroy (&session);
    }
    cg_egress_policy_t *session = NULL;
    cg_error_t *err = NULL;
    CHECK (cg_egress_policy_narrow (server, "x.example.org api.example.com:22 a.example.org",
                                    &session, &err)
               == -1,
           "a wider entry");
    EXPECT (strstr (err->message, "\"api.example.com:22\"") && strstr (err->message, "not covered"),
            "the error names the first entry not covered: %s", err->message);
    cg_error_destroy (&err);
    CHECK (cg_egress_policy_narrow (server, "X.example.org:443", &session, &err) == 0, "narrowed");
    EXPECT (cg_egress_policy_count (session) == 1
                && cg_egress_policy_allows (session, "x.example.org", 443)
                && !cg_egress_policy_allows (session, "x.example.org", 80)
                && !cg_egress_policy_allows (session, "api.example.com", 443),
            "the session's list is its own");
    cg_egress_policy_destroy (&session);
    //  The session's cap.
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream (&text, &len);
    for (int i = 0; i < CG_EGRESS_SESSION_MAX + 1; i++)
        fprintf (out, "h%d.example.org,", i);
    fclose (out);
    EXPECT (cg_egress_policy_narrow (server, text, &session, &err) == -1 && err->code == ENOSPC
                && strstr (err->message, "64"),
            "65 entries for a session: %s", cg_error_message (err));
    cg_error_destroy (&err);
    free (text);
    cg_egress_policy_destroy (&server);
}

static void
s_test_narrow_json (void)
{
    cg_egress_policy_t *server = s_policy ("api.example.com *.example.org");
    const struct {
        const char *json;
        int code;
        const char *says;
    } cases[] = {
        {"[\"api.example.com\", \"x.example.org:443\"]", 0, NULL},
        {"[]", 0, NULL},
        {"{\"a\": 1}", EINVAL, "array"},
        {"[\"api.example.com\", 7]", EINVAL, "element 1 is not a string"},
        {"[\"api.example.com x.example.org\"]", EINVAL, "more than one entry"},
        {"[\"a.example.org,b.example.org\"]", EINVAL, "more than one entry"},
        {"[\"a.example.org#\"]", EINVAL, "more than one entry"},
        {"[\"a.example.org\\u0000b\"]", EINVAL, "NUL"},
        {"[\"example.org\"]", EPERM, "\"example.org\""},
        {"[\"bad_name.example.org\"]", EINVAL, "\"bad_name.example.org\""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        json_t *list = json_loads (cases[i].json, JSON_ALLOW_NUL, NULL);
        cg_egress_policy_t *session = NULL;
        cg_error_t *err = NULL;
        int rc = cg_egress_policy_narrow_json (server, list, &session, &err);
        EXPECT (cases[i].code ? rc == -1 && err->code == cases[i].code
                                    && strstr (err->message, cases[i].says) && !session
                              : rc == 0 && session,
                "%s: %s", cases[i].json, cg_error_message (err));
        cg_error_destroy (&err);
        cg_egress_policy_destroy (&session);
        json_decref (list);
    }
    json_t *many = json_array ();
    for (int i = 0; i < CG_EGRESS_SESSION_MAX + 1; i++)
        json_array_append_new (many, json_string ("api.example.com"));
    cg_egress_policy_t *session = NULL;
    cg_error_t *err = NULL;
    EXPECT (cg_egress_policy_narrow_json (server, many, &session, &err) == -1
                && err->code == ENOSPC,
            "65 elements: ENOSPC before parsing");
    cg_error_destroy (&err);
    json_decref (many);
    cg_egress_policy_destroy (&server);
}

//  Returns the offset of NEEDLE in HAYSTACK, or -1.
static long
s_at (const char *haystack, const char *needle)
{
    const char *found = strstr (haystack, needle);
    return found ? found - haystack : -1;
}

//  Returns how many times NEEDLE occurs in HAYSTACK.
static int
s_count (const char *haystack, const char *needle)
{
    int count = 0;
    for (const char *at = strstr (haystack, needle); at; at = strstr (at + 1, needle))
        count++;
    return count;
}

//  Fills CONF with paths under DIR (their strings are static to this file).
static void
s_conf (cg_egress_squid_t *conf, const char *dir, const cg_egress_policy_t *policy)
{
    static char access[256], cache[256], pid[256], errors[256], sessions[256];
    static const char *const nets[] = {"198.18.0.0/15", NULL};
    snprintf (access, sizeof access, "%s/access.log", dir);
    snprintf (cache, sizeof cache, "%s/cache.log", dir);
    snprintf (pid, sizeof pid, "%s/squid.pid", dir);
    snprintf (errors, sizeof errors, "%s/errors", dir);
    snprintf (sessions, sizeof sessions, "%s/sessions.conf", dir);
    *conf = (cg_egress_squid_t){.policy = policy,
                                .port = 3128,
                                .access_log = access,
                                .cache_log = cache,
                                .pid_file = pid,
                                .error_dir = errors,
                                .coredump_dir = dir,
                                .sessions_file = sessions,
                                .hosts_file = "/etc/hosts",
                                .dns_nameservers = "127.0.0.1 ::1",
                                .test_networks = nets};
}

static void
s_test_config (void)
{
    const char *name = "config";
    cg_egress_policy_t *policy = s_policy ("api.example.com *.example.org 192.0.2.7:8080 "
                                           "[2001:db8::7]:443 other.example.com:8080");
    cg_egress_squid_t conf;
    s_conf (&conf, s_root, policy);
    cg_error_t *err = NULL;
    cleanup_free char *text = cg_egress_squid_config (&conf, &err);
    CHECK (text, "the configuration: %s", cg_error_message (err));
    const char *lines[] = {
        "http_port 127.0.0.1:3128 require-proxy-header\n",
        "proxy_protocol_access allow localhost\n",
        "acl cg_all_e0 dstdomain -n api.example.com\n",
        "acl cg_all_e1 dstdom_regex -n -i ^[-a-z0-9.]+\\.example\\.org$\n",
        "acl cg_all_e2 dstdomain -n 192.0.2.7\n",
        "acl cg_all_e3 dstdomain -n [2001:db8::7]\n",
        "acl cg_all_pairs all-of cg_all_e2 cg_all_port8080\n",
        "acl cg_all_pairs all-of cg_all_e0 cg_all_web\n",
        "acl cg_all_web port 80 443\n",
        "acl cg_private dst 169.254.0.0/16\n",
        "acl cg_private dst fc00::/7\n",
        "acl cg_test_networks dst 198.18.0.0/15\n",
        "deny_info CG_HOST_NOT_ALLOWED cg_why_host\n",
        "logformat cellgate " CG_EGRESS_LOGFORMAT "\n",
        "hosts_file /etc/hosts\n",
        "dns_nameservers 127.0.0.1 ::1\n",
        "cache deny all\n",
        "via off\n",
        "forwarded_for delete\n",
        "httpd_suppress_version_string on\n",
        "reply_header_access X-Cache-Lookup deny all\n",
        "request_header_max_size 64 KB\n",
        "reply_header_max_size 64 KB\n",
        "connect_timeout 30 seconds\n",
        "half_closed_clients off\n",
        "buffered_logs off\n",
        "shutdown_lifetime 1 second\n",
    };
    for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++)
        EXPECT (strstr (text, lines[i]), "the configuration has %s", lines[i]);
    EXPECT (!strstr (text, "::ffff:0:0/96\n"),
            "no IPv4-mapped network (every IPv4 address to squid)");
    EXPECT (s_count (text, "port 8080\n") == 1, "a port's ACL is defined once");
    EXPECT (!strstr (text, "cache_effective_user"), "squid's own user unless one is set");
    long host = s_at (text, "http_access deny !cg_all_names cg_why_host\n");
    long include = s_at (text, "include ");
    long address = s_at (text, "http_access deny cg_private !cg_test_networks cg_why_address\n");
    long allow = s_at (text, "http_access allow cg_all_pairs\n");
    long last = s_at (text, "http_access deny all cg_why_port\n");
    EXPECT (host >= 0 && host < include && include < address && address < allow && allow < last,
            "the rules in order: names, sessions, addresses, pairs, the rest (%ld %ld %ld %ld %ld)",
            host, include, address, allow, last);
    EXPECT (!strstr (text + last + 1, "http_access"), "nothing after the last rule");

    cg_egress_policy_t *empty = cg_egress_policy_new ();
    conf.policy = empty;
    conf.test_networks = NULL;
    cleanup_free char *none = cg_egress_squid_config (&conf, &err);
    EXPECT (none && strstr (none, "http_access deny cg_why_host\n")
                && strstr (none, "http_access deny cg_private cg_why_address\n")
                && !strstr (none, "cg_all_names"),
            "an empty list denies every host");
    cg_egress_policy_destroy (&empty);
    cg_egress_policy_destroy (&policy);
}

static void
s_test_config_refusals (void)
{
    cg_egress_policy_t *policy = s_policy ("api.example.com");
    static const char *const wide[] = {"::ffff:0:0/96", NULL};
    static const char *const bad_bits[] = {"198.18.0.0/33", NULL};
    static const char *const bad_net[] = {"198.18.0.0 /15", NULL};
    for (int i = 0; i < 13; i++) {
        cg_egress_squid_t conf;
        s_conf (&conf, s_root, policy);
        const char *field = "";
        switch (i) {
            case 0:
                conf.port = 0, field = "port";
                break;
            case 1:
                conf.port = 65536, field = "port";
                break;
            case 2:
                conf.access_log = "access.log", field = "access_log";
                break;
            case 3:
                conf.cache_log = "/tmp/a b", field = "cache_log";
                break;
            case 4:
                conf.pid_file = "/tmp/a\nhttp_access allow all", field = "pid_file";
                break;
            case 5:
                conf.error_dir = "/tmp/${service_name}", field = "error_dir";
                break;
            case 6:
                conf.sessions_file = NULL, field = "sessions_file";
                break;
            case 7:
                conf.test_networks = wide, field = "test network";
                break;
            case 8:
                conf.test_networks = bad_bits, field = "test network";
                break;
            case 9:
                conf.test_networks = bad_net, field = "test network";
                break;
            case 10:
                conf.dns_nameservers = "8.8.8.8 dns.example", field = "dns_nameservers";
                break;
            case 11:
                conf.effective_user = "root all", field = "effective_user";
                break;
            default:
                conf.read_timeout_s = 86401, field = "timeout";
                break;
        }
        cg_error_t *err = NULL;
        char *text = cg_egress_squid_config (&conf, &err);
        EXPECT (!text && err && err->code == EINVAL && strstr (err->message, field),
                "case %d refused naming %s: %s", i, field, cg_error_message (err));
        free (text);
        cg_error_destroy (&err);
    }
    cg_egress_policy_destroy (&policy);
}

static void
s_test_sessions (void)
{
    const char *name = "sessions";
    cg_egress_policy_t *session = s_policy ("other.example.com:443 *.example.org");
    cg_egress_policy_t *empty = cg_egress_policy_new ();
    cg_egress_session_rule_t rules[] = {{"127.64.0.6", session}, {"127.127.255.254", empty}};
    cleanup_free char *text = cg_egress_squid_sessions (rules, 2);
    CHECK (text, "the include file");
    const char *lines[] = {
        "acl cg_s0 src 127.64.0.6\n",
        "acl cg_s0_e0 dstdomain -n other.example.com\n",
        "acl cg_s0_e1 dstdom_regex -n -i ^[-a-z0-9.]+\\.example\\.org$\n",
        "acl cg_s0_pairs all-of cg_s0_e0 cg_s0_port443\n",
        "http_access deny cg_s0 !cg_s0_names cg_why_session\n",
        "http_access deny cg_s0 !cg_s0_pairs cg_why_port\n",
        "acl cg_s1 src 127.127.255.254\n",
        "http_access deny cg_s1 cg_why_session\n",
    };
    for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++)
        EXPECT (strstr (text, lines[i]), "the include file has %s", lines[i]);
    cleanup_free char *none = cg_egress_squid_sessions (NULL, 0);
    EXPECT (none && !strstr (none, "http_access"), "no session: no rule");
    const char *bad[] = {"127.0.0.1", "127.128.0.1", "10.64.0.1", "::1", "127.64.0.1 ", NULL};
    for (int i = 0; i < 6; i++) {
        cg_egress_session_rule_t rule = {bad[i], session};
        char *refused = cg_egress_squid_sessions (&rule, 1);
        EXPECT (!refused, "src %s is refused", bad[i] ? bad[i] : "NULL");
        free (refused);
    }
    cg_egress_session_rule_t no_policy = {"127.64.0.9", NULL};
    EXPECT (!cg_egress_squid_sessions (&no_policy, 1), "a rule without a policy is refused");
    cg_egress_policy_destroy (&session);
    cg_egress_policy_destroy (&empty);
}

static void
s_test_pages (void)
{
    const char *name = "pages";
    cleanup_free char *dir = cg_strdupf ("%s/pages/errors", s_root);
    cg_error_t *err = NULL;
    CHECK (cg_egress_squid_write_pages (dir, &err) == 0, "pages: %s", cg_error_message (err));
    const struct {
        const char *page, *text;
    } pages[] = {
        {CG_EGRESS_PAGE_HOST, "cellgate egress: host not allowed: %H\n"},
        {CG_EGRESS_PAGE_ADDRESS, "cellgate egress: address not allowed: %H\n"},
        {CG_EGRESS_PAGE_PORT, "cellgate egress: port not allowed: %H:%p\n"},
        {CG_EGRESS_PAGE_SESSION, "cellgate egress: not allowed for this session: %H\n"},
        {"ERR_CONNECT_FAIL", "cellgate egress: could not connect to %H: %E\n"},
    };
    for (size_t i = 0; i < sizeof pages / sizeof pages[0]; i++) {
        cleanup_free char *path = cg_strdupf ("%s/%s", dir, pages[i].page);
        cleanup_free char *text = cg_read_file (path, 4096, NULL, &err);
        EXPECT (text && strcmp (text, pages[i].text) == 0, "%s: %s", pages[i].page,
                text ? text : cg_error_message (err));
        cg_error_destroy (&err);
    }
    CHECK (cg_egress_squid_write_pages (dir, &err) == 0, "again, over the same files");
}

//  Runs `squid -k parse` on CONF's text and returns its exit status; its output (warnings
//  but the Via one) goes to stderr. Returns 77 when squid is not installed.
static int
s_squid_parse (const cg_egress_squid_t *conf, const char *sessions_text, const char *dir)
{
    if (access ("/usr/sbin/squid", X_OK) != 0)
        return 77;
    cg_error_t *err = NULL;
    cleanup_free char *text = cg_egress_squid_config (conf, &err);
    cleanup_free char *path = cg_strdupf ("%s/squid.conf", dir);
    if (!text || cg_write_file (path, text, strlen (text), 0600, &err) < 0
        || cg_write_file (conf->sessions_file, sessions_text, strlen (sessions_text), 0600, &err)
               < 0
        || cg_egress_squid_write_pages (conf->error_dir, &err) < 0) {
        fprintf (stderr, "squid -k parse: %s\n", cg_error_message (err));
        cg_error_destroy (&err);
        return -1;
    }
    cleanup_free char *command = cg_strdupf ("/usr/sbin/squid -k parse -f %s 2>&1", path);
    FILE *out = popen (command, "r");
    char line[1024];
    int complaints = 0;
    while (out && fgets (line, sizeof line, out))
        if ((strstr (line, "WARNING") || strstr (line, "ERROR") || strstr (line, "FATAL"))
            && !strstr (line, "HTTP requires the use of Via")) {
            fprintf (stderr, "squid -k parse: %s", line);
            complaints++;
        }
    int status = out ? pclose (out) : -1;
    return complaints ? -1 : status;
}

static void
s_test_squid_parse (void)
{
    const char *name = "squid -k parse";
    cleanup_free char *dir = cg_strdupf ("%s/squid", s_root);
    cg_error_t *err = NULL;
    CHECK (cg_mkdir_p (dir, 0755, &err) == 0, "mkdir");
    //  The cap's worth of entries, of every kind, on 100 ports: many ACL lines.
    cg_egress_policy_t *server = s_policy ("api.example.com *.example.org 192.0.2.7 "
                                           "[2001:db8::7]:443 metadata.example.net");
    for (int i = 0; cg_egress_policy_count (server) < CG_EGRESS_POLICY_MAX; i++) {
        cleanup_free char *more = i % 2 ? cg_strdupf ("h%d.example.com:%d", i, 1024 + i % 100)
                                        : cg_strdupf ("*.s%d.example.net", i);
        CHECK (cg_egress_policy_add (server, more, &err) == 0, "%s", cg_error_message (err));
    }
    cg_egress_policy_t *session = NULL;
    CHECK (cg_egress_policy_narrow (server, "api.example.com:443 x.example.org", &session, &err)
               == 0,
           "narrow: %s", cg_error_message (err));
    cg_egress_policy_t *empty = cg_egress_policy_new ();
    cg_egress_session_rule_t rules[] = {{"127.64.0.6", session}, {"127.64.0.7", empty}};
    cleanup_free char *sessions = cg_egress_squid_sessions (rules, 2);
    cg_egress_squid_t conf;
    s_conf (&conf, dir, server);
    int status = s_squid_parse (&conf, sessions, dir);
    if (status == 77)
        printf ("squid is not installed: squid -k parse skipped\n");
    else {
        EXPECT (status == 0, "squid -k parse: the full configuration (status %d)", status);
        conf.policy = empty;
        conf.test_networks = NULL;
        conf.hosts_file = NULL;
        conf.dns_nameservers = NULL;
        conf.effective_user = "proxy";
        EXPECT (s_squid_parse (&conf, "", dir) == 0, "squid -k parse: an empty list, no session");
    }
    cg_egress_policy_destroy (&server);
    cg_egress_policy_destroy (&session);
    cg_egress_policy_destroy (&empty);
}

static void
s_test_log (void)
{
    //  Lines squid 5.7 wrote with CG_EGRESS_LOGFORMAT (tests/netlab, 2026-11-27; the one from
    //  127.0.0.1 is a connection without a PROXY line).
    const struct {
        const char *line;
        const char *host, *server, *reason;
        int port, status;
        int64_t up, down, ms;
        cg_egress_decision_t decision;
    } good[] = {
        {"cg1\t1795763400.953\t127.64.0.5\tGET\tapi.lab.test\t80\t200\t76\t270\t2\t198.18.11.2\t"
         "TCP_MISS\t-\n",
         "api.lab.test", "198.18.11.2", "", 80, 200, 76, 270, 2, CG_EGRESS_ALLOWED},
        {"cg1\t1795763401.000\t127.64.0.5\tGET\tpypi.org\t80\t403\t68\t329\t0\t-\tTCP_DENIED\t"
         "CG_HOST_NOT_ALLOWED",
         "pypi.org", "", "host not allowed", 80, 403, 68, 329, 0, CG_EGRESS_DENIED},
        {"cg1\t1795763401.005\t127.64.0.6\tGET\tapi.lab.test\t80\t403\t76\t334\t0\t-\tTCP_DENIED\t"
         "CG_SESSION_NOT_ALLOWED\n",
         "api.lab.test", "", "not allowed for this session", 80, 403, 76, 334, 0, CG_EGRESS_DENIED},
        {"cg1\t1795763401.010\t127.64.0.5\tGET\t%5Bfd63:676c:6162:b::2%5D\t80\t403\t94\t325\t0\t-\t"
         "TCP_DENIED\tCG_ADDRESS_NOT_ALLOWED\n",
         "[fd63:676c:6162:b::2]", "", "address not allowed", 80, 403, 94, 325, 0, CG_EGRESS_DENIED},
        {"cg1\t1795763401.063\t127.64.0.5\tCONNECT\tapi.lab.test\t22\t403\t59\t324\t0\t-\tTCP_"
         "DENIED\t"
         "CG_PORT_NOT_ALLOWED\n",
         "api.lab.test", "", "port not allowed", 22, 403, 59, 324, 0, CG_EGRESS_DENIED},
        {"cg1\t1795763421.083\t127.64.0.5\tCONNECT\tapi.lab.test\t443\t200\t61\t39\t10011\t"
         "198.18.11.2\tTCP_TUNNEL\t-\n",
         "api.lab.test", "198.18.11.2", "", 443, 200, 61, 39, 10011, CG_EGRESS_ALLOWED},
        {"cg1\t1795763463.379\t127.64.0.5\tGET\t-\t-\t400\t46\t4036\t0\t-\tNONE_NONE\t-\n", "", "",
         "invalid request", 0, 400, 46, 4036, 0, CG_EGRESS_DENIED},
        {"cg1\t1795764893.149\t127.0.0.1\t-\t-\t-\t0\t76\t0\t0\t-\tNONE_NONE\t-\n", "", "",
         "no request", 0, 0, 76, 0, 0, CG_EGRESS_DENIED},
        {"cg1\t1795763473.391\t127.64.0.5\tGET\t%C3%A9.lab.test\t80\t403\t45\t347\t0\t-\tTCP_"
         "DENIED\t"
         "CG_HOST_NOT_ALLOWED\n",
         "%C3%A9.lab.test", "", "host not allowed", 80, 403, 45, 347, 0, CG_EGRESS_DENIED},
        {"cg1\t1795763473.391\t127.64.0.5\tGET\tapi.lab.test\t80\t503\t45\t347\t30001\t-\tTCP_"
         "MISS\t"
         "ERR_CONNECT_FAIL\n",
         "api.lab.test", "", "ERR_CONNECT_FAIL", 80, 503, 45, 347, 30001, CG_EGRESS_ALLOWED},
        {"cg1\t1795763473.391\t::1\tGET\tapi.lab.test\t80\t403\t45\t347\t1\tfd63::2\tTCP_DENIED\t"
         "ERR_ACCESS_DENIED\n",
         "api.lab.test", "fd63::2", "ERR_ACCESS_DENIED", 80, 403, 45, 347, 1, CG_EGRESS_DENIED},
    };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        cg_egress_record_t record;
        int rc = cg_egress_log_parse (good[i].line, strlen (good[i].line), &record);
        EXPECT (rc == 0 && strcmp (record.host, good[i].host) == 0
                    && strcmp (record.server_addr, good[i].server) == 0
                    && strcmp (record.reason, good[i].reason) == 0 && record.port == good[i].port
                    && record.status == good[i].status && record.bytes_up == good[i].up
                    && record.bytes_down == good[i].down && record.ms == good[i].ms
                    && record.decision == good[i].decision,
                "line %zu: rc %d host %s server %s reason %s port %d status %d", i, rc, record.host,
                record.server_addr, record.reason, record.port, record.status);
    }
    cg_egress_record_t record;
    const char *first = good[0].line;
    EXPECT (cg_egress_log_parse (first, strlen (first), &record) == 0
                && record.time_ms == 1795763400953 && strcmp (record.src, "127.64.0.5") == 0
                && strcmp (record.method, "GET") == 0,
            "time, source and method");
    const char *bad[] = {
        "",
        "\n",
        "cg2\t1795763400.953\t127.64.0.5\tGET\tapi.lab.test\t80\t200\t76\t270\t2\t-\tTCP_MISS\t-",
        "cg1\t1795763400.953\t127.64.0.5\tGET\tapi.lab.test\t80\t200\t76\t270\t2\t-\tTCP_MISS",
        "cg1\t1795763400.953\t127.64.0.5\tGET\tapi.lab.test\t80\t200\t76\t270\t2\t-\tTCP_MISS\t-\t",
        "cg1\t1795763400.953\t127.64.0.5\tGET\tapi.lab.test\t80\t200\t76\t270\t2\t-\tTCP_MISS\t-"
        "\tx",
        "cg1\t1795763400.95\t127.64.0.5\tGET\tapi.lab.test\t80\t200\t76\t270\t2\t-\tTCP_MISS\t-",
        "cg1\t1795763400.953\t127.64.0.500\tGET\tapi.lab.test\t80\t200\t76\t270\t2\t-\tTCP_MISS\t-",
        "cg1\t1795763400.953\t-\tGET\tapi.lab.test\t80\t200\t76\t270\t2\t-\tTCP_MISS\t-",
        "cg1\t1795763400.953\t127.64.0.5\tGET\tapi lab.test\t80\t200\t76\t270\t2\t-\tTCP_MISS\t-",
        "cg1\t1795763400.953\t127.64.0.5\tGET\tapi.lab.test\t65536\t200\t76\t270\t2\t-\tTCP_"
        "MISS\t-",
        "cg1\t1795763400.953\t127.64.0.5\tGET\tapi.lab.test\t80\t1000\t76\t270\t2\t-\tTCP_MISS\t-",
        "cg1\t1795763400.953\t127.64.0.5\tGET\tapi.lab.test\t80\t200\t-7\t270\t2\t-\tTCP_MISS\t-",
        "cg1\t1795763400.953\t127.64.0.5\tGET\tapi.lab.test\t80\t200\t76\t1234567890123456789\t2\t-"
        "\t"
        "TCP_MISS\t-",
        "cg1\t1795763400.953\t127.64.0.5\tGET\tapi.lab.test\t80\t200\t76\t270\t2\tnowhere\tTCP_"
        "MISS\t-",
        "cg1\t1795763400.953\t127.64.0.5\tGET\tapi.lab.test\t80\t200\t76\t270\t2\t-\ttcp_miss\t-",
        "cg1\t1795763400.953\t127.64.0.5\tGET\tapi.lab.test\t80\t200\t76\t270\t2\t-\tTCP_MISS\tE R",
        "cg1\t1795763400.953\t127.64.0.5\t\tapi.lab.test\t80\t200\t76\t270\t2\t-\tTCP_MISS\t-",
        "cg1\t1795763400.953\t127.64.0.5\tGET\tapi.lab.test\t80\t200\t76\t270\t2\t-\tTCP_MISS\t-"
        "\r\n",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        EXPECT (cg_egress_log_parse (bad[i], strlen (bad[i]), &record) == -1, "bad line %zu", i);
    //  A NUL, a control byte, a host past 255 bytes, a method past 31, a line past 8 KiB.
    char line[10000];
    int n = snprintf (line, sizeof line,
                      "cg1\t1.000\t127.64.0.5\tGET\ta%cb\t80\t200\t1\t1\t1\t-\t"
                      "TCP_MISS\t-",
                      0);
    EXPECT (cg_egress_log_parse (line, (size_t)n, &record) == -1, "a NUL in the host");
    line[26] = '\x01';
    EXPECT (cg_egress_log_parse (line, (size_t)n, &record) == -1, "a control byte in the host");
    char host[300];
    memset (host, 'h', sizeof host - 1);
    host[sizeof host - 1] = '\0';
    n = snprintf (line, sizeof line,
                  "cg1\t1.000\t127.64.0.5\tGET\t%.255s\t80\t200\t1\t1\t1\t-\t"
                  "TCP_MISS\t-",
                  host);
    EXPECT (cg_egress_log_parse (line, (size_t)n, &record) == 0 && strlen (record.host) == 255,
            "a host of 255 bytes");
    n = snprintf (line, sizeof line,
                  "cg1\t1.000\t127.64.0.5\tGET\t%.256s\t80\t200\t1\t1\t1\t-\t"
                  "TCP_MISS\t-",
                  host);
    EXPECT (cg_egress_log_parse (line, (size_t)n, &record) == -1, "a host of 256 bytes");
    n = snprintf (line, sizeof line,
                  "cg1\t1.000\t127.64.0.5\t%.32s\th\t80\t200\t1\t1\t1\t-\t"
                  "TCP_MISS\t-",
                  host);
    EXPECT (cg_egress_log_parse (line, (size_t)n, &record) == -1, "a method of 32 bytes");
    memset (line, 'x', sizeof line);
    EXPECT (cg_egress_log_parse (line, sizeof line, &record) == -1, "10,000 bytes, no tab");
}

int
main (void)
{
    if (!mkdtemp (s_root)) {
        perror ("mkdtemp");
        return 1;
    }
    s_test_syntax ();
    s_test_refusals ();
    s_test_cap ();
    s_test_allows ();
    s_test_narrow ();
    s_test_narrow_json ();
    s_test_config ();
    s_test_config_refusals ();
    s_test_sessions ();
    s_test_pages ();
    s_test_squid_parse ();
    s_test_log ();
    cg_error_t *err = NULL;
    cg_rm_rf (s_root, &err);
    cg_error_destroy (&err);
    printf ("%d passed, %d failed\n", s_passes, s_failures);
    return s_failures ? 1 : 0;
}
