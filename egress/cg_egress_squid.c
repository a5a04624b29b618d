/*  cg_egress_squid — squid's configuration for the egress proxy, its error pages, the
    per-session include file, and the access log's reader. */
#define _GNU_SOURCE
#include "egress/cg_egress_squid.h"

#include "base/cg_fs.h"
#include "base/cg_util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

/*  Never reached, whatever a list says (checked after resolution, by squid's dst ACL):
    "this network", private, shared (CGN, also Alibaba's metadata 100.100.100.200), loopback,
    link-local (169.254.169.254, the clouds' metadata), IETF protocol assignments, the
    documentation and benchmarking blocks, 6to4 relays, multicast, reserved and broadcast. */
static const char *const s_private_v4[] = {
    "0.0.0.0/8",      "10.0.0.0/8",     "100.64.0.0/10", "127.0.0.0/8",
    "169.254.0.0/16", "172.16.0.0/12",  "192.0.0.0/24",  "192.0.2.0/24",
    "192.88.99.0/24", "192.168.0.0/16", "198.18.0.0/15", "198.51.100.0/24",
    "203.0.113.0/24", "224.0.0.0/4",    "240.0.0.0/4",   NULL};

/*  The same for IPv6: ::/96 (unspecified, loopback and IPv4-compatible), IPv4-translated,
    NAT64 (both prefixes embed an IPv4 address), discard, IETF assignments (Teredo,
    benchmarking), documentation, 6to4, unique local (fd00:ec2::254, AWS's metadata),
    link-local, site-local, multicast. No two overlap: of two overlapping networks squid keeps
    the narrower and ignores the wider. IPv4-mapped addresses are not listed: squid holds them
    as IPv4, which the list above covers, and to squid ::ffff:0:0/96 is every IPv4 address. */
static const char *const s_private_v6[] = {
    "::/96",    "::ffff:0:0:0/96", "64:ff9b::/96",  "64:ff9b:1::/48",
    "100::/64", "2001::/23",       "2001:db8::/32", "2002::/16",
    "fc00::/7", "fe80::/10",       "fec0::/10",     "ff00::/8",
    NULL};

/*  One line for each error page: the four denials, then squid's own errors. */
static const struct {
    const char *name;
    const char *text;
} s_pages[] = {
    {CG_EGRESS_PAGE_HOST, "host not allowed: %H"},
    {CG_EGRESS_PAGE_SESSION, "not allowed for this session: %H"},
    {CG_EGRESS_PAGE_ADDRESS, "address not allowed: %H"},
    {CG_EGRESS_PAGE_PORT, "port not allowed: %H:%p"},
    {"ERR_ACCESS_DENIED", "access denied"},
    {"ERR_CACHE_ACCESS_DENIED", "access denied"},
    {"ERR_CACHE_MGR_ACCESS_DENIED", "access denied"},
    {"ERR_FORWARDING_DENIED", "forwarding denied"},
    {"ERR_NO_RELAY", "no relay"},
    {"ERR_CANNOT_FORWARD", "cannot forward the request to %H: %E"},
    {"ERR_READ_TIMEOUT", "timed out reading from %H"},
    {"ERR_LIFETIME_EXP", "connection lifetime expired"},
    {"ERR_READ_ERROR", "read error from %H: %E"},
    {"ERR_WRITE_ERROR", "write error to %H: %E"},
    {"ERR_CONNECT_FAIL", "could not connect to %H: %E"},
    {"ERR_SECURE_CONNECT_FAIL", "TLS connection to %H failed"},
    {"ERR_SOCKET_FAILURE", "socket failure: %E"},
    {"ERR_DNS_FAIL", "could not resolve %H: %z"},
    {"ERR_URN_RESOLVE", "URN not resolved"},
    {"ERR_ONLY_IF_CACHED_MISS", "not cached (only-if-cached)"},
    {"ERR_TOO_BIG", "request or reply too big"},
    {"ERR_INVALID_RESP", "invalid response from %H"},
    {"ERR_UNSUP_HTTPVERSION", "unsupported HTTP version"},
    {"ERR_INVALID_REQ", "invalid request"},
    {"ERR_UNSUP_REQ", "unsupported request method or protocol"},
    {"ERR_INVALID_URL", "invalid URL"},
    {"ERR_ZERO_SIZE_OBJECT", "empty reply from %H"},
    {"ERR_PRECONDITION_FAILED", "precondition failed"},
    {"ERR_CONFLICT_HOST", "the Host header does not match the URL's host"},
    {"ERR_FTP_DISABLED", "FTP is not available through this proxy"},
    {"ERR_FTP_UNAVAILABLE", "FTP is not available through this proxy"},
    {"ERR_FTP_FAILURE", "FTP is not available through this proxy"},
    {"ERR_FTP_PUT_ERROR", "FTP is not available through this proxy"},
    {"ERR_FTP_NOT_FOUND", "FTP is not available through this proxy"},
    {"ERR_FTP_FORBIDDEN", "FTP is not available through this proxy"},
    {"ERR_FTP_PUT_CREATED", "FTP is not available through this proxy"},
    {"ERR_FTP_PUT_MODIFIED", "FTP is not available through this proxy"},
    {"ERR_ESI", "ESI failure"},
    {"ERR_ICAP_FAILURE", "ICAP failure"},
    {"ERR_GATEWAY_FAILURE", "gateway failure"},
    {"ERR_DIR_LISTING", "directory listing"},
    {"ERR_SHUTTING_DOWN", "the proxy is shutting down"},
    {"ERR_PROTOCOL_UNKNOWN", "unknown protocol"},
};

int
cg_egress_squid_write_pages (const char *error_dir, cg_error_t **err)
{
    if (cg_mkdir_p (error_dir, 0755, err) < 0)
        return cg_error_wrap (err, "egress error pages");
    for (size_t i = 0; i < sizeof s_pages / sizeof s_pages[0]; i++) {
        cleanup_free char *path = cg_strdupf ("%s/%s", error_dir, s_pages[i].name);
        cleanup_free char *text = cg_strdupf ("cellgate egress: %s\n", s_pages[i].text);
        if (cg_write_file (path, text, strlen (text), 0644, err) < 0)
            return cg_error_wrap (err, "egress error pages");
    }
    return 0;
}

//  Returns true when PATH can stand in squid's configuration: absolute, printable ASCII,
//  none of squid's separators, quotes, comments or macros.
static bool
s_path_ok (const char *path)
{
    if (!path || path[0] != '/')
        return false;
    for (const char *c = path; *c; c++)
        if (*c <= 0x20 || *c >= 0x7f || strchr ("\"'#$%\\", *c))
            return false;
    return strlen (path) < 1024;
}

//  Returns true when TEXT is an IPv4 or IPv6 address, with a prefix length when CIDR.
static bool
s_address_ok (const char *text, bool cidr)
{
    char buf[64];
    unsigned char addr[16];
    if (!text || strlen (text) >= sizeof buf)
        return false;
    snprintf (buf, sizeof buf, "%s", text);
    char *slash = strchr (buf, '/');
    int bits = -1;
    if (slash) {
        if (!cidr || strlen (slash + 1) == 0 || strlen (slash + 1) > 3
            || strspn (slash + 1, "0123456789") != strlen (slash + 1))
            return false;
        bits = atoi (slash + 1);
        *slash = '\0';
    }
    bool v4 = inet_pton (AF_INET, buf, addr) == 1;
    if (!v4 && inet_pton (AF_INET6, buf, addr) != 1)
        return false;
    //  An IPv4-mapped network would be every IPv4 address to squid (see s_private_v6).
    if (!v4 && IN6_IS_ADDR_V4MAPPED ((struct in6_addr *)addr))
        return false;
    return bits <= (v4 ? 32 : 128);
}

//  Returns true when TEXT is a list of nameserver addresses separated by single spaces.
static bool
s_nameservers_ok (const char *text)
{
    char buf[512];
    if (!text || !*text || strlen (text) >= sizeof buf)
        return false;
    snprintf (buf, sizeof buf, "%s", text);
    char *save = NULL;
    for (char *one = strtok_r (buf, " ", &save); one; one = strtok_r (NULL, " ", &save))
        if (!s_address_ok (one, false))
            return false;
    return true;
}

static bool
s_user_ok (const char *user)
{
    size_t len = strlen (user);
    return len > 0 && len <= 32 && strspn (user, "abcdefghijklmnopqrstuvwxyz0123456789_-") == len
           && user[0] != '-';
}

//  Checks CONF's fields. Returns 0, or -1 with *ERR (EINVAL) naming the first bad one.
static int
s_check (const cg_egress_squid_t *conf, cg_error_t **err)
{
    const struct {
        const char *name, *value;
    } paths[] = {{"access_log", conf->access_log},     {"cache_log", conf->cache_log},
                 {"pid_file", conf->pid_file},         {"error_dir", conf->error_dir},
                 {"coredump_dir", conf->coredump_dir}, {"sessions_file", conf->sessions_file}};
    const int timeouts[] = {conf->connect_timeout_s, conf->read_timeout_s, conf->request_timeout_s,
                            conf->client_lifetime_s};
    if (!conf->policy)
        return cg_error_set (err, EINVAL, "egress proxy configuration: no policy");
    if (conf->port < 1 || conf->port > 65535)
        return cg_error_set (err, EINVAL, "egress proxy configuration: port %d", conf->port);
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++)
        if (!s_path_ok (paths[i].value))
            return cg_error_set (err, EINVAL,
                                 "egress proxy configuration: %s is not an absolute "
                                 "path of printable characters without spaces, quotes, '#', "
                                 "'$', '%%' or '\\'",
                                 paths[i].name);
    if (conf->hosts_file && !s_path_ok (conf->hosts_file))
        return cg_error_set (err, EINVAL,
                             "egress proxy configuration: hosts_file is not a plain "
                             "absolute path");
    if (conf->dns_nameservers && !s_nameservers_ok (conf->dns_nameservers))
        return cg_error_set (err, EINVAL,
                             "egress proxy configuration: dns_nameservers is not a "
                             "list of IP addresses");
    for (const char *const *net = conf->test_networks; net && *net; net++)
        if (!s_address_ok (*net, true))
            return cg_error_set (err, EINVAL,
                                 "egress proxy configuration: test network \"%.64s\" "
                                 "is not a CIDR (nor an IPv4-mapped one)",
                                 *net);
    if (conf->effective_user && !s_user_ok (conf->effective_user))
        return cg_error_set (err, EINVAL,
                             "egress proxy configuration: effective_user is not a "
                             "user name");
    for (size_t i = 0; i < 4; i++)
        if (timeouts[i] < 0 || timeouts[i] > 86400)
            return cg_error_set (err, EINVAL,
                                 "egress proxy configuration: a timeout of %d s "
                                 "(0, the default, or 1 to 86400)",
                                 timeouts[i]);
    return 0;
}

//  Returns true when an entry of POLICY before entry I has PORT.
static bool
s_port_before (const cg_egress_policy_t *policy, int i, int port)
{
    for (int j = 0; j < i; j++) {
        cg_egress_kind_t kind;
        const char *name;
        int other;
        cg_egress_policy_entry_parts (policy, j, &kind, &name, &other);
        if (other == port)
            return true;
    }
    return false;
}

//  Writes POLICY's ACLs under PREFIX to OUT: PREFIX_e<i> per entry (dstdomain -n, or
//  dstdom_regex -n -i for a suffix: never a DNS lookup), PREFIX_names (any entry's name)
//  and PREFIX_pairs (an entry's name on one of its ports). Every line holds one value:
//  squid ORs repeated acl lines, and its configuration lines have a length limit.
static void
s_policy_acls (FILE *out, const char *prefix, const cg_egress_policy_t *policy)
{
    bool web_ports = false;
    for (int i = 0; i < cg_egress_policy_count (policy); i++) {
        cg_egress_kind_t kind;
        const char *name;
        int port;
        cg_egress_policy_entry_parts (policy, i, &kind, &name, &port);
        if (kind == CG_EGRESS_SUFFIX) {
            fprintf (out, "acl %s_e%d dstdom_regex -n -i ^[-a-z0-9.]+\\.", prefix, i);
            for (const char *c = name; *c; c++)
                if (*c == '.')
                    fputs ("\\.", out);
                else
                    fputc (*c, out);
            fputs ("$\n", out);
        }
        else if (kind == CG_EGRESS_IPV6)
            fprintf (out, "acl %s_e%d dstdomain -n [%s]\n", prefix, i, name);
        else
            fprintf (out, "acl %s_e%d dstdomain -n %s\n", prefix, i, name);
        if (port && !s_port_before (policy, i, port))
            fprintf (out, "acl %s_port%d port %d\n", prefix, port, port);
        else if (!port && !web_ports)
            fprintf (out, "acl %s_web port 80 443\n", prefix);
        web_ports = web_ports || !port;
        fprintf (out, "acl %s_names any-of %s_e%d\n", prefix, prefix, i);
        if (port)
            fprintf (out, "acl %s_pairs all-of %s_e%d %s_port%d\n", prefix, prefix, i, prefix,
                     port);
        else
            fprintf (out, "acl %s_pairs all-of %s_e%d %s_web\n", prefix, prefix, i, prefix);
    }
}

//  Writes the settings that do not depend on the policy.
static void
s_settings (FILE *out, const cg_egress_squid_t *conf)
{
    int connect = conf->connect_timeout_s ? conf->connect_timeout_s : 30;
    int read = conf->read_timeout_s ? conf->read_timeout_s : 60;
    int request = conf->request_timeout_s ? conf->request_timeout_s : 30;
    int lifetime = conf->client_lifetime_s ? conf->client_lifetime_s : 3600;
    fprintf (out,
             "# cellgate's egress proxy: generated (egress/cg_egress_squid.c), rewritten at "
             "each start.\n"
             "http_port 127.0.0.1:%d require-proxy-header\n"
             "proxy_protocol_access allow localhost\n"
             "proxy_protocol_access deny all\n"
             "visible_hostname cellgate-egress\n",
             conf->port);
    if (conf->effective_user)
        fprintf (out, "cache_effective_user %s\n", conf->effective_user);
    if (conf->hosts_file)
        fprintf (out, "hosts_file %s\n", conf->hosts_file);
    if (conf->dns_nameservers)
        fprintf (out, "dns_nameservers %s\n", conf->dns_nameservers);
    fprintf (out,
             "pid_filename %s\ncache_log %s\ncoredump_dir %s\nerror_directory %s\n"
             "logformat cellgate %s\n"
             "access_log stdio:%s cellgate\n"
             "buffered_logs off\nlogfile_rotate 0\n"
             "cache deny all\nvia off\nforwarded_for delete\nhttpd_suppress_version_string on\n"
             "reply_header_access X-Cache deny all\nreply_header_access X-Cache-Lookup deny all\n"
             "request_header_max_size 64 KB\nreply_header_max_size 64 KB\n"
             "connect_timeout %d seconds\nread_timeout %d seconds\nrequest_timeout %d seconds\n"
             "client_lifetime %d seconds\nhalf_closed_clients off\nshutdown_lifetime 1 second\n"
             "pinger_enable off\nicp_port 0\nhtcp_port 0\nnetdb_filename none\n",
             conf->pid_file, conf->cache_log, conf->coredump_dir, conf->error_dir,
             CG_EGRESS_LOGFORMAT, conf->access_log, connect, read, request, lifetime);
    //  The denials' reasons: an ACL that always matches, last on each deny line, picks its
    //  page (squid's deny_info names the last ACL of the line that denied).
    fprintf (out,
             "acl cg_why_host src all\nacl cg_why_session src all\n"
             "acl cg_why_address src all\nacl cg_why_port src all\n"
             "deny_info %s cg_why_host\ndeny_info %s cg_why_session\n"
             "deny_info %s cg_why_address\ndeny_info %s cg_why_port\n",
             CG_EGRESS_PAGE_HOST, CG_EGRESS_PAGE_SESSION, CG_EGRESS_PAGE_ADDRESS,
             CG_EGRESS_PAGE_PORT);
}

char *
cg_egress_squid_config (const cg_egress_squid_t *conf, cg_error_t **err)
{
    if (s_check (conf, err) < 0)
        return NULL;
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream (&text, &len);
    if (!out)
        abort ();
    s_settings (out, conf);
    s_policy_acls (out, "cg_all", conf->policy);
    for (int v6 = 0; v6 < 2; v6++)
        for (const char *const *net = v6 ? s_private_v6 : s_private_v4; *net; net++)
            fprintf (out, "acl cg_private dst %s\n", *net);
    for (const char *const *net = conf->test_networks; net && *net; net++)
        fprintf (out, "acl cg_test_networks dst %s\n", *net);
    //  1. A name on no list: refused by name, before anything that would resolve it.
    if (cg_egress_policy_count (conf->policy) > 0)
        fputs ("http_access deny !cg_all_names cg_why_host\n", out);
    else
        fputs ("http_access deny cg_why_host\n", out);
    //  2. The narrowed sessions' own lists.
    fprintf (out, "include %s\n", conf->sessions_file);
    //  3. Addresses, after resolution.
    fprintf (out, "http_access deny cg_private %scg_why_address\n",
             conf->test_networks && conf->test_networks[0] ? "!cg_test_networks " : "");
    //  4. A listed name on one of its ports; 5. anything else.
    if (cg_egress_policy_count (conf->policy) > 0)
        fputs ("http_access allow cg_all_pairs\n", out);
    fputs ("http_access deny all cg_why_port\n", out);
    if (fclose (out) != 0)
        abort ();
    return text;
}

//  Returns true when SRC is an IPv4 address in 127.64.0.0/10.
static bool
s_session_src_ok (const char *src)
{
    struct in_addr addr;
    if (!src || inet_pton (AF_INET, src, &addr) != 1)
        return false;
    uint32_t host = ntohl (addr.s_addr);
    return (host & 0xffc00000u) == 0x7f400000u;
}

char *
cg_egress_squid_sessions (const cg_egress_session_rule_t *rules, size_t n)
{
    for (size_t k = 0; k < n; k++)
        if (!s_session_src_ok (rules[k].src) || !rules[k].policy)
            return NULL;
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream (&text, &len);
    if (!out)
        abort ();
    fputs ("# cellgate's narrowed egress sessions: generated (egress/cg_egress_squid.c)\n", out);
    for (size_t k = 0; k < n; k++) {
        char prefix[32];
        snprintf (prefix, sizeof prefix, "cg_s%zu", k);
        fprintf (out, "acl %s src %s\n", prefix, rules[k].src);
        if (cg_egress_policy_count (rules[k].policy) == 0) {
            fprintf (out, "http_access deny %s cg_why_session\n", prefix);
            continue;
        }
        s_policy_acls (out, prefix, rules[k].policy);
        fprintf (out, "http_access deny %s !%s_names cg_why_session\n", prefix, prefix);
        fprintf (out, "http_access deny %s !%s_pairs cg_why_port\n", prefix, prefix);
    }
    if (fclose (out) != 0)
        abort ();
    return text;
}

#define S_LOG_LINE_MAX 8192 /* squid's own line is far shorter: a host is at most 255 bytes */
#define S_LOG_FIELDS 13

typedef struct {
    const char *at;
    size_t len;
} s_field_t;

static bool
s_is (const s_field_t *field, const char *text)
{
    return field->len == strlen (text) && memcmp (field->at, text, field->len) == 0;
}

//  Copies FIELD into OUT (SIZE bytes) when it is 1 to SIZE - 1 bytes of CHARSET (NULL: any
//  printable ASCII but space). Returns false otherwise.
static bool
s_token (const s_field_t *field, char *out, size_t size, const char *charset)
{
    if (field->len == 0 || field->len >= size)
        return false;
    for (size_t i = 0; i < field->len; i++) {
        char c = field->at[i];
        if (charset ? !c || !strchr (charset, c) : c <= 0x20 || c >= 0x7f)
            return false;
    }
    memcpy (out, field->at, field->len);
    out[field->len] = '\0';
    return true;
}

//  Sets *VALUE to FIELD's decimal number (at most 18 digits, at most MAX); "-" is 0 when
//  DASH_OK. Returns false otherwise.
static bool
s_number (const s_field_t *field, int64_t max, bool dash_ok, int64_t *value)
{
    if (dash_ok && s_is (field, "-")) {
        *value = 0;
        return true;
    }
    if (field->len == 0 || field->len > 18)
        return false;
    int64_t n = 0;
    for (size_t i = 0; i < field->len; i++) {
        if (field->at[i] < '0' || field->at[i] > '9')
            return false;
        n = n * 10 + (field->at[i] - '0');
    }
    *value = n;
    return n <= max;
}

//  Copies FIELD, an IPv4 or IPv6 address, normalized into OUT; "-" is "" when DASH_OK.
static bool
s_address (const s_field_t *field, char out[46], bool dash_ok)
{
    char text[64];
    unsigned char addr[16];
    if (dash_ok && s_is (field, "-")) {
        out[0] = '\0';
        return true;
    }
    if (!s_token (field, text, sizeof text, "0123456789abcdefABCDEF.:"))
        return false;
    if (inet_pton (AF_INET, text, addr) == 1)
        return inet_ntop (AF_INET, addr, out, 46) != NULL;
    return inet_pton (AF_INET6, text, addr) == 1 && inet_ntop (AF_INET6, addr, out, 46) != NULL;
}

//  Parses "<seconds>.<milliseconds>" into *MS.
static bool
s_time (const s_field_t *field, int64_t *ms)
{
    const char *dot = memchr (field->at, '.', field->len);
    if (!dot)
        return false;
    s_field_t seconds = {field->at, (size_t)(dot - field->at)};
    s_field_t millis = {dot + 1, field->len - seconds.len - 1};
    int64_t s, m;
    if (millis.len != 3 || !s_number (&seconds, 999999999999, false, &s)
        || !s_number (&millis, 999, false, &m))
        return false;
    *ms = s * 1000 + m;
    return true;
}

//  The host as squid logs it, URL-escaped; an IPv6 literal's escaped brackets restored.
static bool
s_host (const s_field_t *field, char out[256])
{
    if (s_is (field, "-")) {
        out[0] = '\0';
        return true;
    }
    if (!s_token (field, out, 256, NULL))
        return false;
    size_t len = field->len;
    if (len > 6 && strncasecmp (out, "%5B", 3) == 0 && strncasecmp (out + len - 3, "%5D", 3) == 0) {
        memmove (out + 1, out + 3, len - 6);
        out[0] = '[';
        out[len - 5] = ']';
        out[len - 4] = '\0';
    }
    return true;
}

//  Sets RECORD's decision and reason from squid's request status SQUID_STATUS and error
//  name ERR_CODE ("" for none).
static void
s_decide (cg_egress_record_t *record, const char *squid_status, const char *err_code)
{
    static const struct {
        const char *page, *reason;
    } reasons[] = {{CG_EGRESS_PAGE_HOST, "host not allowed"},
                   {CG_EGRESS_PAGE_ADDRESS, "address not allowed"},
                   {CG_EGRESS_PAGE_PORT, "port not allowed"},
                   {CG_EGRESS_PAGE_SESSION, "not allowed for this session"}};
    for (size_t i = 0; i < sizeof reasons / sizeof reasons[0]; i++)
        if (strcmp (err_code, reasons[i].page) == 0) {
            record->decision = CG_EGRESS_DENIED;
            snprintf (record->reason, sizeof record->reason, "%s", reasons[i].reason);
            return;
        }
    bool denied = strstr (squid_status, "DENIED") != NULL;
    //  NONE: squid forwarded nothing: it could not read a request (a 4xx answer), or closed
    //  the connection without one (no PROXY line: status 000).
    bool unread = strncmp (squid_status, "NONE", 4) == 0;
    record->decision = denied || unread ? CG_EGRESS_DENIED : CG_EGRESS_ALLOWED;
    snprintf (record->reason, sizeof record->reason, "%s",
              *err_code                       ? err_code
              : denied                        ? "denied"
              : unread && record->status == 0 ? "no request"
              : unread                        ? "invalid request"
                                              : "");
}

int
cg_egress_log_parse (const char *line, size_t len, cg_egress_record_t *out)
{
    //  Untrusted in part: squid writes the line, but the host and the method are what the
    //  sandbox sent (squid URL-escapes them). Every field is checked and bounded.
    s_field_t fields[S_LOG_FIELDS];
    if (len > 0 && line[len - 1] == '\n')
        len--;
    if (len == 0 || len > S_LOG_LINE_MAX)
        return -1;
    size_t count = 0;
    const char *at = line, *end = line + len;
    while (count < S_LOG_FIELDS) {
        const char *tab = memchr (at, '\t', (size_t)(end - at));
        const char *stop = tab ? tab : end;
        fields[count++] = (s_field_t){at, (size_t)(stop - at)};
        if (!tab)
            break;
        at = tab + 1;
    }
    if (count != S_LOG_FIELDS || fields[S_LOG_FIELDS - 1].at + fields[S_LOG_FIELDS - 1].len != end)
        return -1;
    memset (out, 0, sizeof *out);
    char squid_status[32], err_code[48] = "";
    int64_t port, status;
    if (!s_is (&fields[0], "cg1") || !s_time (&fields[1], &out->time_ms)
        || !s_address (&fields[2], out->src, false)
        || !s_token (&fields[3], out->method, sizeof out->method, NULL)
        || !s_host (&fields[4], out->host) || !s_number (&fields[5], 65535, true, &port)
        || !s_number (&fields[6], 999, true, &status)
        || !s_number (&fields[7], INT64_MAX, true, &out->bytes_up)
        || !s_number (&fields[8], INT64_MAX, true, &out->bytes_down)
        || !s_number (&fields[9], INT64_MAX, true, &out->ms)
        || !s_address (&fields[10], out->server_addr, true)
        || !s_token (&fields[11], squid_status, sizeof squid_status, "ABCDEFGHIJKLMNOPQRSTUVWXYZ_")
        || !(s_is (&fields[12], "-")
             || s_token (&fields[12], err_code, sizeof err_code,
                         "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")))
        return -1;
    out->port = (int)port;
    out->status = (int)status;
    s_decide (out, squid_status, err_code);
    return 0;
}
