/*  fuzz_egress_policy — the egress allow list's syntax (cg_egress_policy_add), as an operator's
    flag or file and a session's egress_allow bring it, any bytes.

    Input: the list's text (up to a NUL); then, after the NUL, a host to decide on with the
    port of its first two bytes.

    Invariants: a refused text leaves the list as it was and says why (EINVAL or ENOSPC); an
    accepted one holds at most the cap, no entry twice, each entry's normalized text is
    printable ASCII and parses back to itself alone; each host entry allows its own name on its
    ports and a suffix entry never its bare suffix; the list narrowed to itself (text and JSON)
    is itself, when it fits a session's cap; deciding on any host never crashes. */
#define _GNU_SOURCE
#include "cg_fuzz.h"

#include "egress/cg_egress_policy.h"
#include "base/cg_util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

//  Checks that ENTRY, entry I of POLICY, parses back to itself alone and decides as it says.
static void
s_check_entry (const cg_egress_policy_t *policy, int i)
{
    const char *text = cg_egress_policy_entry (policy, i);
    for (const char *c = text; *c; c++)
        CG_FUZZ_CHECK (*c > 0x20 && *c < 0x7f && *c != ',' && *c != '#', "printable, one token");
    for (int j = 0; j < i; j++)
        CG_FUZZ_CHECK (strcmp (text, cg_egress_policy_entry (policy, j)) != 0, "no entry twice");
    cg_egress_policy_t *again = cg_egress_policy_new ();
    cg_error_t *err = NULL;
    CG_FUZZ_CHECK (cg_egress_policy_add (again, text, &err) == 0, "an entry parses back");
    CG_FUZZ_CHECK (cg_egress_policy_count (again) == 1
                       && strcmp (cg_egress_policy_entry (again, 0), text) == 0,
                   "to itself alone");
    cg_egress_kind_t kind;
    const char *name;
    int port;
    CG_FUZZ_CHECK (cg_egress_policy_entry_parts (policy, i, &kind, &name, &port) == 0, "parts");
    int probe = port ? port : 443;
    if (kind == CG_EGRESS_SUFFIX) {
        CG_FUZZ_CHECK (!cg_egress_policy_allows (again, name, probe), "never the bare suffix");
        char *below = cg_strdupf ("a.%s", name);
        CG_FUZZ_CHECK (strlen (below) > 253 || cg_egress_policy_allows (again, below, probe),
                       "a name below it");
        free (below);
    }
    else
        CG_FUZZ_CHECK (cg_egress_policy_allows (again, name, probe), "an entry allows itself");
    CG_FUZZ_CHECK (!cg_egress_policy_allows (again, name, port ? (port % 65535) + 1 : 8080),
                   "and not on another port");
    cg_egress_policy_destroy (&again);
}

//  Checks that POLICY narrowed to its own entries (text and JSON) is accepted and equal.
static void
s_check_narrow (const cg_egress_policy_t *policy)
{
    json_t *list = cg_egress_policy_json (policy);
    char *text = NULL;
    size_t len = 0;
    for (int i = 0; i < cg_egress_policy_count (policy); i++) {
        const char *entry = cg_egress_policy_entry (policy, i);
        text = cg_xrealloc (text, len + strlen (entry) + 2);
        memcpy (text + len, entry, strlen (entry));
        len += strlen (entry);
        text[len++] = '\n';
    }
    text = cg_xrealloc (text, len + 1);
    text[len] = '\0';
    bool fits = cg_egress_policy_count (policy) <= CG_EGRESS_SESSION_MAX;
    cg_egress_policy_t *session = NULL;
    cg_error_t *err = NULL;
    int rc = cg_egress_policy_narrow (policy, text, &session, &err);
    CG_FUZZ_CHECK (fits ? rc == 0
                              && cg_egress_policy_count (session) == cg_egress_policy_count (policy)
                        : rc == -1 && err->code == ENOSPC,
                   "a list narrows to itself when it fits a session");
    cg_egress_policy_destroy (&session);
    cg_error_destroy (&err);
    rc = cg_egress_policy_narrow_json (policy, list, &session, &err);
    CG_FUZZ_CHECK (fits ? rc == 0 : rc == -1 && err->code == ENOSPC, "and as JSON");
    cg_egress_policy_destroy (&session);
    cg_error_destroy (&err);
    json_decref (list);
    free (text);
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
    char *text = cg_xmalloc (size + 1);
    memcpy (text, data, size);
    text[size] = '\0';
    size_t text_len = strlen (text);
    const char *host = text_len < size ? text + text_len + 1 : "";
    const uint8_t *rest = (const uint8_t *)host;
    int port = text_len + 3 <= size ? rest[0] << 8 | rest[1] : 443;

    cg_egress_policy_t *policy = cg_egress_policy_new ();
    cg_error_t *err = NULL;
    CG_FUZZ_CHECK (cg_egress_policy_add (policy, "seed.example.com", &err) == 0, "a seed entry");
    if (cg_egress_policy_add (policy, text, &err) < 0) {
        CG_FUZZ_CHECK (err && (err->code == EINVAL || err->code == ENOSPC) && err->message[0],
                       "a refusal says why");
        CG_FUZZ_CHECK (cg_egress_policy_count (policy) == 1, "a refused text adds nothing");
        cg_error_destroy (&err);
    }
    int count = cg_egress_policy_count (policy);
    CG_FUZZ_CHECK (count >= 1 && count <= CG_EGRESS_POLICY_MAX, "within the cap");
    for (int i = 0; i < count; i++)
        s_check_entry (policy, i);
    s_check_narrow (policy);
    (void)cg_egress_policy_allows (policy, host, port);
    (void)cg_egress_policy_allows (policy, text, port);
    cg_egress_policy_destroy (&policy);
    free (text);
    return 0;
}
