/*  cg_egress_squid — squid's configuration for the egress proxy, as text, its error pages,
    the per-session include file, and the reading of its access log lines.

    The configuration (squid 5.7, Debian's; checked with real squid by egress_squid):
    - one listener, 127.0.0.1:<port>, `require-proxy-header`, PROXY protocol from localhost
      only: the relay's PROXY v1 line names the session by its source address;
    - http_access in this order, each denial with its own one-line page (deny_info):
        1. a name no list names (dstdomain -n, suffixes as dstdom_regex -n: no DNS lookup,
           and an IP literal is compared as text, never reverse-mapped)  CG_HOST_NOT_ALLOWED
        2. a narrowed session (by src) asking for a name its own list lacks (the include
           file)                                                           CG_SESSION_NOT_ALLOWED
           or a port its own list lacks                                    CG_PORT_NOT_ALLOWED
        3. a destination address, after resolution, that is private, loopback, link-local,
           metadata, multicast or reserved (IPv4 and IPv6; squid keeps IPv4-mapped IPv6 as
           IPv4, so the IPv4 ranges cover them: ::ffff:0:0/96 must never be listed, to squid
           it is every IPv4 address), less the test-only networks           CG_ADDRESS_NOT_ALLOWED
        4. allow a host and port pair of the server's list
        5. deny all: a listed name on a port no entry gives it             CG_PORT_NOT_ALLOWED
    - no cache, no Via, X-Forwarded-For deleted, no version string, no X-Cache or
      X-Cache-Lookup in replies (the latter names squid's port), 64 KB header limits, the
      timeouts, no pinger, ICP, HTCP or netdb file.

    Files and users. squid reads the configuration, the include file and writes the pid file
    as the user that starts it. Started as root it then runs as cache_effective_user
    (`effective_user`, or squid's default: Debian's `proxy`), and as that user it opens the
    cache log and the access log (creating them: their directory must be writable by it, or
    the files, or a FIFO, must exist and be writable by it), reads the error directory's pages
    and the hosts file, and chdirs to the coredump directory; every directory on those paths
    must be searchable by it. `squid -k reconfigure` re-reads the configuration as root
    (checked: a 0600 root-owned configuration reloads). Started as a normal user, squid stays
    that user, which then owns all of these. */
#ifndef CG_EGRESS_SQUID_H
#define CG_EGRESS_SQUID_H

#include "base/cg_error.h"
#include "egress/cg_egress_policy.h"

#include <stddef.h>
#include <stdint.h>

/*  What the configuration is made from. Paths are absolute, printable ASCII without spaces,
    quotes, '#', '$', '%' or '\'. */
typedef struct {
    const cg_egress_policy_t *policy; /* the server's list (borrowed) */
    int port;                         /* squid's listener on 127.0.0.1 */
    const char *access_log;           /* squid writes its access log here (a file or a FIFO) */
    const char *cache_log;
    const char *pid_file;
    const char *error_dir;       /* cg_egress_squid_write_pages fills it */
    const char *coredump_dir;    /* squid's working directory */
    const char *sessions_file;   /* included; must exist (cg_egress_squid_sessions's text) */
    const char *hosts_file;      /* NULL: squid's default (/etc/hosts); tests: the lab's */
    const char *dns_nameservers; /* NULL: /etc/resolv.conf's; else IP addresses, space-separated */
    const char *const *test_networks; /* NULL-terminated CIDRs let through the address deny
                                         (tests: "198.18.0.0/15"); NULL: none */
    const char *effective_user;       /* NULL: squid's default when started as root */
    int connect_timeout_s;            /* towards servers; 0: 30 */
    int read_timeout_s;               /* idle time on either side; 0: 60 */
    int request_timeout_s;            /* for a client's request headers; 0: 30 */
    int client_lifetime_s;            /* any client connection at most; 0: 3600 */
} cg_egress_squid_t;

/*  A narrowed session: its PROXY source address and its own list. */
typedef struct {
    const char *src;                  /* an IPv4 address in 127.64.0.0/10 */
    const cg_egress_policy_t *policy; /* the session's list (cg_egress_policy_narrow) */
} cg_egress_session_rule_t;

/*  The error pages' names (squid's %err_code in the access log). */
#define CG_EGRESS_PAGE_HOST "CG_HOST_NOT_ALLOWED"
#define CG_EGRESS_PAGE_SESSION "CG_SESSION_NOT_ALLOWED"
#define CG_EGRESS_PAGE_ADDRESS "CG_ADDRESS_NOT_ALLOWED"
#define CG_EGRESS_PAGE_PORT "CG_PORT_NOT_ALLOWED"

/*  Returns squid's configuration for CONF (caller owns the text), or NULL with *ERR (EINVAL)
    naming the field that is missing or not acceptable (a path, the port, a network, a
    nameserver, the user, a timeout outside 1-86400 s). */
char *cg_egress_squid_config (const cg_egress_squid_t *conf, cg_error_t **err);

/*  Makes ERROR_DIR (mode 0755 where it is made) and writes the error pages into it (0644,
    replacing what is there): the four denials above, each one line ("cellgate egress: host
    not allowed: <host>", "... address not allowed: <host>", "... port not allowed: <host>:<port>",
    "... not allowed for this session: <host>"), and a one-line page for each of squid's own
    errors (connection failed, DNS failure, timeouts ...), so that sandboxed code reads
    one short line whatever went wrong. Returns 0, or -1 with *ERR. */
int cg_egress_squid_write_pages (const char *error_dir, cg_error_t **err);

/*  Returns the include file's text for the N narrowed sessions of RULES (N may be 0: an
    empty file's text), each allowed only its own entries. Caller owns the text. Returns NULL
    when a rule's src is not an IPv4 address in 127.64.0.0/10 or its policy is NULL. */
char *cg_egress_squid_sessions (const cg_egress_session_rule_t *rules, size_t n);

/*  The access log's format: one line per request, tab-separated, first field "cg1". */
#define CG_EGRESS_LOGFORMAT                                                   \
    "cg1\t%ts.%03tu\t%>a\t%rm\t%>rd\t%>rP\t%>Hs\t%>st\t%<st\t%tr\t%<a\t%Ss\t" \
    "%err_code"

typedef enum { CG_EGRESS_ALLOWED, CG_EGRESS_DENIED } cg_egress_decision_t;

/*  One access log line. Strings are NUL-terminated and bounded; a field squid logs as "-"
    is "" or 0. */
typedef struct {
    int64_t time_ms;               /* Unix time in milliseconds */
    char src[46];                  /* the PROXY source address: the session */
    char method[32];               /* as squid logs it (URL-escaped) */
    char host[256];                /* as squid logs it (URL-escaped), an IPv6 literal in brackets */
    int port;                      /* the request's port */
    int status;                    /* the HTTP status sent to the client */
    int64_t bytes_up;              /* bytes from the client, headers included */
    int64_t bytes_down;            /* bytes to the client, headers included */
    int64_t ms;                    /* duration in milliseconds */
    char server_addr[46];          /* the server's address connected to; "" when none */
    cg_egress_decision_t decision; /* denied: a deny rule, or nothing forwarded (squid could
                                      not read a request, or got none: no PROXY line) */
    char reason[64]; /* a denial's reason ("host not allowed", "address not allowed", "port not
                        allowed", "not allowed for this session", "invalid request", "no
                        request", or squid's error name); for an allowed request squid's
                        error name ("ERR_CONNECT_FAIL") or "" */
} cg_egress_record_t;

/*  Parses one access log line, the LEN bytes at LINE (untrusted in part: the host and method
    are the sandbox's text; a trailing "\n" is allowed), into *OUT. Returns 0, or -1 when the
    line is not a well-formed line of CG_EGRESS_LOGFORMAT (*OUT is then undefined). */
int cg_egress_log_parse (const char *line, size_t len, cg_egress_record_t *out);

#endif
