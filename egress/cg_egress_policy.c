/*  cg_egress_policy — the egress allow list: parsing, normalizing, deciding by name, and a
    session's narrowing of the server's list. */
#define _GNU_SOURCE
#include "egress/cg_egress_policy.h"

#include "base/cg_util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#define S_NAME_MAX 253       /* a DNS name's text, without a trailing dot */
#define S_LABEL_MAX 63       /* one label */
#define S_ENTRY_TEXT_MAX 270 /* "*." + name + ":65535", and an IPv6 literal in brackets */
#define S_SEPARATORS " \t\r\n\v\f,"

typedef struct {
    cg_egress_kind_t kind;
    char name[S_NAME_MAX + 1];       /* host, suffix without "*.", IPv4, IPv6 without [] */
    int port;                        /* 0: ports 80 and 443 */
    char text[S_ENTRY_TEXT_MAX + 1]; /* the normalized entry */
} s_entry_t;

struct cg_egress_policy_t {
    s_entry_t *entries;
    int count;
    int alloc; /* entries allocated */
    int max;   /* the cap: CG_EGRESS_POLICY_MAX, or CG_EGRESS_SESSION_MAX for a session */
};

cg_egress_policy_t *
cg_egress_policy_new (void)
{
    cg_egress_policy_t *self = cg_xcalloc (1, sizeof *self);
    self->max = CG_EGRESS_POLICY_MAX;
    return self;
}

void
cg_egress_policy_destroy (cg_egress_policy_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    free ((*self_p)->entries);
    free (*self_p);
    *self_p = NULL;
}

//  Writes LEN bytes of RAW (untrusted) to OUT as a message may quote them: printable ASCII
//  as is, anything else as '?', at most 80 characters then "...". Returns OUT.
static const char *
s_quote (const char *raw, size_t len, char out[96])
{
    size_t n = 0;
    for (size_t i = 0; i < len && n < 80; i++)
        out[n++] = raw[i] >= 0x20 && raw[i] < 0x7f && raw[i] != '"' ? raw[i] : '?';
    if (len > 80) {
        memcpy (out + n, "...", 3);
        n += 3;
    }
    out[n] = '\0';
    return out;
}

//  Returns NULL when NAME (lower-cased in place) is a host name this list accepts, else why not.
static const char *
s_check_name (char *name)
{
    size_t len = strlen (name);
    if (len == 0)
        return "no host name";
    if (len > S_NAME_MAX)
        return "a host name is at most 253 characters";
    if (name[len - 1] == '.')
        return "a host name does not end with '.'";
    for (char *c = name; *c; c++)
        if (*c >= 'A' && *c <= 'Z')
            *c = (char)(*c - 'A' + 'a');
    size_t label = 0;
    bool digits_only = true;
    for (size_t i = 0; i <= len; i++) {
        char c = name[i];
        if (c == '.' || c == '\0') {
            if (label == 0)
                return "a host name has no empty label";
            if (name[i - 1] == '-')
                return "a label does not end with '-'";
            if (c == '\0' && digits_only)
                return "a host name's last label is not all digits (an IPv4 address is a dotted "
                       "quad)";
            label = 0;
            digits_only = true;
            continue;
        }
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'))
            return c == '*' ? "'*' only as the whole first label: *.example.com"
                            : "a host name is letters, digits, '-' and '.'";
        if (c == '-' && label == 0)
            return "a label does not start with '-'";
        if (++label > S_LABEL_MAX)
            return "a label is at most 63 characters";
        if (c < '0' || c > '9')
            digits_only = false;
    }
    if (!strchr (name, '.'))
        return "a host name needs at least one dot";
    if (strcmp (name, "localhost") == 0
        || (len > 10 && strcmp (name + len - 10, ".localhost") == 0))
        return "localhost is never allowed";
    return NULL;
}

//  Parses PORT_TEXT (after the ':') into *PORT. Returns NULL, or why not.
static const char *
s_parse_port (const char *port_text, int *port)
{
    size_t len = strlen (port_text);
    if (len == 0 || len > 5 || strspn (port_text, "0123456789") != len)
        return "a port is a number from 1 to 65535";
    long value = strtol (port_text, NULL, 10);
    if (value < 1 || value > 65535)
        return "a port is a number from 1 to 65535";
    *port = (int)value;
    return NULL;
}

//  Normalizes the IPv6 literal V6 (without brackets) into ENTRY: an IPv4-mapped address
//  becomes its IPv4 address (squid compares it so). Returns NULL, or why not.
static const char *
s_parse_ipv6 (const char *v6, s_entry_t *entry)
{
    struct in6_addr addr;
    if (strchr (v6, '%'))
        return "an IPv6 literal has no zone index";
    if (inet_pton (AF_INET6, v6, &addr) != 1)
        return "not an IPv6 address";
    if (IN6_IS_ADDR_V4MAPPED (&addr)) {
        entry->kind = CG_EGRESS_IPV4;
        inet_ntop (AF_INET, &addr.s6_addr[12], entry->name, sizeof entry->name);
    }
    else {
        entry->kind = CG_EGRESS_IPV6;
        inet_ntop (AF_INET6, &addr, entry->name, sizeof entry->name);
    }
    return NULL;
}

//  Parses the host part HOST (no port) into ENTRY. Returns NULL, or why not.
static const char *
s_parse_host (char *host, s_entry_t *entry)
{
    struct in_addr v4;
    if (strchr (host, ':'))
        return "an IPv6 literal goes in brackets: [2001:db8::1]:443";
    if (host[0] == '*' && host[1] == '.') {
        const char *why = s_check_name (host + 2);
        if (why)
            return why;
        entry->kind = CG_EGRESS_SUFFIX;
        memcpy (entry->name, host + 2, strlen (host + 2) + 1); /* at most 253: checked */
        return NULL;
    }
    if (inet_pton (AF_INET, host, &v4) == 1) {
        entry->kind = CG_EGRESS_IPV4;
        inet_ntop (AF_INET, &v4, entry->name, sizeof entry->name);
        return NULL;
    }
    const char *why = s_check_name (host);
    if (why)
        return why;
    entry->kind = CG_EGRESS_HOST;
    memcpy (entry->name, host, strlen (host) + 1); /* at most 253: checked */
    return NULL;
}

//  Parses one entry, the LEN bytes at RAW (untrusted), into *ENTRY. Returns 0, or -1 with
//  *ERR (EINVAL) naming the entry and why.
static int
s_parse_entry (const char *raw, size_t len, s_entry_t *entry, cg_error_t **err)
{
    char quoted[96], buf[S_ENTRY_TEXT_MAX + 1];
    const char *why = NULL;
    memset (entry, 0, sizeof *entry);
    if (len > S_ENTRY_TEXT_MAX)
        why = "longer than any host and port";
    else if (memchr (raw, '\0', len))
        why = "a NUL byte";
    if (why)
        return cg_error_set (err, EINVAL, "egress entry \"%s\": %s", s_quote (raw, len, quoted),
                             why);
    memcpy (buf, raw, len);
    buf[len] = '\0';
    if (strstr (buf, "://"))
        return cg_error_set (err, EINVAL, "egress entry \"%s\": a host, not a URL",
                             s_quote (raw, len, quoted));
    char *host = buf, *port = NULL;
    if (buf[0] == '[') {
        char *close = strchr (buf, ']');
        if (!close)
            why = "an IPv6 literal needs its closing ']'";
        else {
            *close = '\0';
            if (close[1] == ':')
                port = close + 2;
            else if (close[1] != '\0')
                why = "only \":port\" may follow ']'";
            if (!why)
                why = s_parse_ipv6 (buf + 1, entry);
        }
    }
    else {
        char *colon = strrchr (buf, ':');
        if (colon && colon == strchr (buf, ':'))
            *colon = '\0', port = colon + 1;
        why = s_parse_host (host, entry);
    }
    if (!why && port)
        why = s_parse_port (port, &entry->port);
    if (why)
        return cg_error_set (err, EINVAL, "egress entry \"%s\": %s", s_quote (raw, len, quoted),
                             why);
    const char *open = entry->kind == CG_EGRESS_IPV6     ? "["
                       : entry->kind == CG_EGRESS_SUFFIX ? "*."
                                                         : "";
    const char *close = entry->kind == CG_EGRESS_IPV6 ? "]" : "";
    int n = snprintf (entry->text, sizeof entry->text, "%s%s%s", open, entry->name, close);
    if (entry->port)
        snprintf (entry->text + n, sizeof entry->text - (size_t)n, ":%d", entry->port);
    return 0;
}

static bool
s_has (const s_entry_t *entries, int count, const s_entry_t *entry)
{
    for (int i = 0; i < count; i++)
        if (strcmp (entries[i].text, entry->text) == 0)
            return true;
    return false;
}

//  Appends ENTRY to SELF unless SELF has it. Returns 0, or -1 with *ERR (ENOSPC) at the cap.
static int
s_append (cg_egress_policy_t *self, const s_entry_t *entry, cg_error_t **err)
{
    if (s_has (self->entries, self->count, entry))
        return 0;
    if (self->count >= self->max)
        return cg_error_set (err, ENOSPC, "egress list: more than %d entries (the cap)", self->max);
    if (self->count == self->alloc) {
        self->alloc = self->alloc ? self->alloc * 2 : 8;
        self->entries = cg_xrealloc (self->entries, (size_t)self->alloc * sizeof *self->entries);
    }
    self->entries[self->count++] = *entry;
    return 0;
}

int
cg_egress_policy_add (cg_egress_policy_t *self, const char *text, cg_error_t **err)
{
    //  Untrusted: an operator's flag or file, or a session's request. Parsed into a copy,
    //  so that a bad entry leaves SELF as it was.
    cg_egress_policy_t scratch = *self;
    scratch.entries = NULL;
    scratch.alloc = 0;
    scratch.count = 0;
    for (int i = 0; i < self->count; i++)
        s_append (&scratch, &self->entries[i], NULL);
    const char *at = text ? text : "";
    while (*at) {
        if (*at == '#') {
            at += strcspn (at, "\n");
            continue;
        }
        size_t skip = strspn (at, S_SEPARATORS);
        if (skip) {
            at += skip;
            continue;
        }
        size_t len = strcspn (at, S_SEPARATORS "#");
        s_entry_t entry;
        if (s_parse_entry (at, len, &entry, err) < 0 || s_append (&scratch, &entry, err) < 0) {
            free (scratch.entries);
            return -1;
        }
        at += len;
    }
    free (self->entries);
    *self = scratch;
    return 0;
}

int
cg_egress_policy_count (const cg_egress_policy_t *self)
{
    return self->count;
}

const char *
cg_egress_policy_entry (const cg_egress_policy_t *self, int i)
{
    return i >= 0 && i < self->count ? self->entries[i].text : NULL;
}

int
cg_egress_policy_entry_parts (const cg_egress_policy_t *self, int i, cg_egress_kind_t *kind,
                              const char **name, int *port)
{
    if (i < 0 || i >= self->count)
        return -1;
    *kind = self->entries[i].kind;
    *name = self->entries[i].name;
    *port = self->entries[i].port;
    return 0;
}

static bool
s_port_matches (const s_entry_t *entry, int port)
{
    return entry->port ? port == entry->port : port == 80 || port == 443;
}

//  Returns true when NAME is a name strictly below SUFFIX: it ends with "." SUFFIX and what
//  comes before is letters, digits, '-' and '.' only (squid's dstdom_regex for it says so).
static bool
s_below (const char *name, const char *suffix)
{
    size_t len = strlen (name), slen = strlen (suffix);
    if (len < slen + 2 || name[len - slen - 1] != '.' || strcmp (name + len - slen, suffix) != 0)
        return false;
    return strspn (name, "abcdefghijklmnopqrstuvwxyz0123456789-.") >= len - slen - 1;
}

//  Normalizes HOST (untrusted) into BUF as an entry's name would be, and sets *KIND.
//  Returns false when HOST cannot be a name any entry holds.
static bool
s_normalize_host (const char *host, char buf[S_NAME_MAX + 1], cg_egress_kind_t *kind)
{
    size_t len = host ? strnlen (host, S_NAME_MAX + 3) : 0;
    if (len == 0 || len > S_NAME_MAX + 2)
        return false;
    char copy[S_NAME_MAX + 3];
    memcpy (copy, host, len);
    copy[len] = '\0';
    char *inner = copy;
    if (copy[0] == '[') {
        if (copy[len - 1] != ']')
            return false;
        copy[len - 1] = '\0';
        inner = copy + 1;
    }
    if (inner != copy || strchr (inner, ':')) {
        s_entry_t entry;
        if (s_parse_ipv6 (inner, &entry))
            return false;
        *kind = entry.kind;
        memcpy (buf, entry.name, sizeof entry.name);
        return true;
    }
    struct in_addr v4;
    if (inet_pton (AF_INET, inner, &v4) == 1) {
        *kind = CG_EGRESS_IPV4;
        inet_ntop (AF_INET, &v4, buf, S_NAME_MAX + 1);
        return true;
    }
    if (len > 1 && inner[len - 1] == '.')
        inner[--len] = '\0';
    if (len > S_NAME_MAX)
        return false;
    for (size_t i = 0; i <= len; i++)
        buf[i] = inner[i] >= 'A' && inner[i] <= 'Z' ? (char)(inner[i] - 'A' + 'a') : inner[i];
    *kind = CG_EGRESS_HOST;
    return true;
}

bool
cg_egress_policy_allows (const cg_egress_policy_t *self, const char *host, int port)
{
    char name[S_NAME_MAX + 1];
    cg_egress_kind_t kind;
    if (port < 1 || port > 65535 || !s_normalize_host (host, name, &kind))
        return false;
    for (int i = 0; i < self->count; i++) {
        const s_entry_t *entry = &self->entries[i];
        if (!s_port_matches (entry, port))
            continue;
        if (entry->kind == kind && strcmp (entry->name, name) == 0)
            return true;
        if (entry->kind == CG_EGRESS_SUFFIX && kind == CG_EGRESS_HOST
            && s_below (name, entry->name))
            return true;
    }
    return false;
}

//  Returns true when SERVER's entry S covers ENTRY's names (ports aside).
static bool
s_covers_name (const s_entry_t *s, const s_entry_t *entry)
{
    switch (entry->kind) {
        case CG_EGRESS_HOST:
            return (s->kind == CG_EGRESS_HOST && strcmp (s->name, entry->name) == 0)
                   || (s->kind == CG_EGRESS_SUFFIX && s_below (entry->name, s->name));
        case CG_EGRESS_SUFFIX:
            return s->kind == CG_EGRESS_SUFFIX
                   && (strcmp (s->name, entry->name) == 0 || s_below (entry->name, s->name));
        default:
            return s->kind == entry->kind && strcmp (s->name, entry->name) == 0;
    }
}

//  Returns true when SERVER covers ENTRY: each of its ports by an entry covering its names.
static bool
s_covered (const cg_egress_policy_t *server, const s_entry_t *entry)
{
    int ports[2] = {entry->port ? entry->port : 80, entry->port ? entry->port : 443};
    for (int p = 0; p < 2; p++) {
        bool found = false;
        for (int i = 0; i < server->count && !found; i++)
            found = s_port_matches (&server->entries[i], ports[p])
                    && s_covers_name (&server->entries[i], entry);
        if (!found)
            return false;
    }
    return true;
}

//  Hands *SESSION to *OUT when SERVER covers each of its entries. Returns 0, or -1 with
//  *ERR (EPERM) naming the first entry it does not cover; *SESSION is freed either way.
static int
s_narrow_check (const cg_egress_policy_t *server, cg_egress_policy_t **session,
                cg_egress_policy_t **out, cg_error_t **err)
{
    for (int i = 0; i < (*session)->count; i++)
        if (!s_covered (server, &(*session)->entries[i])) {
            cg_error_set (err, EPERM,
                          "egress entry \"%s\" is not covered by the server's egress list",
                          (*session)->entries[i].text);
            cg_egress_policy_destroy (session);
            return -1;
        }
    *out = *session;
    *session = NULL;
    return 0;
}

int
cg_egress_policy_narrow (const cg_egress_policy_t *server, const char *text,
                         cg_egress_policy_t **out, cg_error_t **err)
{
    *out = NULL;
    cg_egress_policy_t *session = cg_egress_policy_new ();
    session->max = CG_EGRESS_SESSION_MAX;
    if (cg_egress_policy_add (session, text, err) < 0) {
        cg_egress_policy_destroy (&session);
        return -1;
    }
    return s_narrow_check (server, &session, out, err);
}

//  Returns true when the LEN bytes at TEXT hold a separator or a comment: more than one entry.
static bool
s_several (const char *text, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (text[i] && strchr (S_SEPARATORS "#", text[i]))
            return true;
    return false;
}

int
cg_egress_policy_narrow_json (const cg_egress_policy_t *server, const json_t *list,
                              cg_egress_policy_t **out, cg_error_t **err)
{
    //  Untrusted: a tool's argument.
    *out = NULL;
    if (!json_is_array (list))
        return cg_error_set (err, EINVAL, "egress list: not an array of strings");
    if (json_array_size (list) > CG_EGRESS_SESSION_MAX)
        return cg_error_set (err, ENOSPC, "egress list: more than %d entries (the cap)",
                             CG_EGRESS_SESSION_MAX);
    cg_egress_policy_t *session = cg_egress_policy_new ();
    session->max = CG_EGRESS_SESSION_MAX;
    for (size_t i = 0; i < json_array_size (list); i++) {
        //  jansson's getters take a non-const json_t; nothing here changes it.
        json_t *item = json_array_get (CG_UNCONST (list), i);
        const char *text = json_string_value (item);
        size_t len = json_string_length (item);
        s_entry_t entry;
        int rc = -1;
        if (!text)
            cg_error_set (err, EINVAL, "egress list: element %zu is not a string", i);
        else if (s_several (text, len))
            cg_error_set (err, EINVAL, "egress list: element %zu holds more than one entry", i);
        else if (s_parse_entry (text, len, &entry, err) == 0)
            rc = s_append (session, &entry, err);
        if (rc < 0) {
            cg_egress_policy_destroy (&session);
            return -1;
        }
    }
    return s_narrow_check (server, &session, out, err);
}

json_t *
cg_egress_policy_json (const cg_egress_policy_t *self)
{
    json_t *array = json_array ();
    for (int i = 0; i < self->count; i++)
        json_array_append_new (array, json_string (self->entries[i].text));
    return array;
}
