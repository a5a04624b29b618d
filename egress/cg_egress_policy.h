/*  cg_egress_policy — the egress allow list: which hosts, suffixes and IP literals sandboxed
    code may reach through the proxy, on which ports, and a session's narrowing of it. */
#ifndef CG_EGRESS_POLICY_H
#define CG_EGRESS_POLICY_H

#include "base/cg_error.h"

#include <jansson.h>
#include <stdbool.h>

/*  The most entries a server's list holds, and a session's own list. */
#define CG_EGRESS_POLICY_MAX 256
#define CG_EGRESS_SESSION_MAX 64

/*  What an entry names. */
typedef enum {
    CG_EGRESS_HOST,   /* one DNS name, "api.example.com" */
    CG_EGRESS_SUFFIX, /* "*.example.com": any name below example.com, not example.com itself */
    CG_EGRESS_IPV4,   /* an IPv4 literal, "192.0.2.7" */
    CG_EGRESS_IPV6    /* an IPv6 literal, "[2001:db8::7]" */
} cg_egress_kind_t;

typedef struct cg_egress_policy_t cg_egress_policy_t;

/*  Returns a new, empty list (it allows nothing). Caller owns it. */
cg_egress_policy_t *cg_egress_policy_new (void);

/*  Frees *SELF_P and sets it to NULL. Safe on NULL. */
void cg_egress_policy_destroy (cg_egress_policy_t **self_p);

/*  Adds the entries of TEXT (untrusted: an operator's flag or file, or a session's request).
    Entries are separated by commas, spaces, tabs or newlines; '#' starts a comment that runs
    to the end of its line. An entry is
      host            a DNS name: lower-cased; labels of a-z, 0-9 and '-', 1 to 63 long, not
                      starting or ending with '-'; at most 253 in all; at least one dot; no
                      all-digit last label; "localhost" and names under it are refused
      *.suffix        every name below SUFFIX (a host as above), at any depth, not SUFFIX itself
      a.b.c.d         an IPv4 literal (dotted quad, no leading zeros)
      [v6]            an IPv6 literal in brackets (an IPv4-mapped one is its IPv4 address)
    each optionally followed by ":port" (1-65535); without a port it allows ports 80 and 443.
    An entry already in the list is not added again. All or nothing: on failure SELF is
    unchanged. Returns 0, or -1 with *ERR: EINVAL naming the first bad entry and why, ENOSPC
    when the list would pass its cap (CG_EGRESS_POLICY_MAX). */
int cg_egress_policy_add (cg_egress_policy_t *self, const char *text, cg_error_t **err);

/*  Returns how many entries SELF holds. */
int cg_egress_policy_count (const cg_egress_policy_t *self);

/*  Returns entry I (0 <= I < count) in its normalized text ("api.example.com",
    "*.example.com:8443", "192.0.2.7", "[2001:db8::7]:443"), borrowed from SELF; NULL when I
    is out of range. */
const char *cg_egress_policy_entry (const cg_egress_policy_t *self, int i);

/*  Entry I's parts: its kind, its name (the host, the suffix without "*.", the IPv4 text, or
    the IPv6 text without brackets; borrowed) and its port (0: ports 80 and 443). Returns 0,
    or -1 when I is out of range. */
int cg_egress_policy_entry_parts (const cg_egress_policy_t *self, int i, cg_egress_kind_t *kind,
                                  const char **name, int *port);

/*  Returns true when SELF allows HOST on PORT, by name only (no DNS): HOST matches an entry
    case-insensitively (one trailing dot ignored, as squid does), a suffix entry matches names
    of letters, digits, '-' and '.' below it, and an IP literal (IPv6 with or without
    brackets; IPv4-mapped IPv6 as its IPv4 address) matches after both are normalized. A host
    that no entry names, a port outside 1-65535 or not the entry's, NULL or empty: false. */
bool cg_egress_policy_allows (const cg_egress_policy_t *self, const char *host, int port);

/*  A session's own list, asked for as TEXT (cg_egress_policy_add's syntax; at most
    CG_EGRESS_SESSION_MAX entries): every entry must be covered by SERVER's list, a host by
    the same host or a suffix entry above it, a suffix by the same or a shorter suffix, an IP
    literal by the same literal, and each of its ports by such an entry with that port.
    Returns 0 and sets *OUT to the session's list (caller owns it), or -1 with *ERR: EINVAL
    (syntax), ENOSPC (cap) or EPERM naming the first entry the server's list does not cover;
    *OUT is then NULL. */
int cg_egress_policy_narrow (const cg_egress_policy_t *server, const char *text,
                             cg_egress_policy_t **out, cg_error_t **err);

/*  The same for LIST, a JSON array of strings, one entry each (untrusted: a tool's
    argument). EINVAL when LIST is not an array, an element is not a string or holds more
    than one entry; ENOSPC past CG_EGRESS_SESSION_MAX elements (checked before parsing). */
int cg_egress_policy_narrow_json (const cg_egress_policy_t *server, const json_t *list,
                                  cg_egress_policy_t **out, cg_error_t **err);

/*  Returns a new JSON array of SELF's normalized entries. Caller owns the reference. */
json_t *cg_egress_policy_json (const cg_egress_policy_t *self);

#endif
