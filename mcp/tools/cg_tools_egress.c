/*  cg_tools_egress — what the tools say and take of --egress: the network note in the
    instructions and descriptions, a session's own allow list, list_sessions' policy. */
#include "mcp/tools/cg_tools.h"
#include "egress/cg_egress.h"
#include "base/cg_util.h"

#include <string.h>

//  How many of the server's entries the note names; past it, list_sessions has them all.
#define S_NOTE_HOSTS 24

char *
cg_tools_network_note (cg_registry_t *registry)
{
    cg_egress_t *egress = registry ? cg_registry_egress (registry) : NULL;
    if (!egress)
        return cg_xstrdup ("There is no network, so pip and npm cannot download: use "
                           "install_package for more.");
    json_t *allow = cg_egress_policy_json (cg_egress_policy (egress));
    size_t count = json_array_size (allow);
    size_t cap = 256, len = 0;
    char *hosts = cg_xcalloc (1, cap);
    for (size_t i = 0; i < count && i < S_NOTE_HOSTS; i++) {
        const char *entry = json_string_value (json_array_get (allow, i));
        size_t need = strlen (entry) + 3;
        if (len + need + 1 > cap)
            hosts = cg_xrealloc (hosts, cap = (len + need) * 2);
        len += (size_t)snprintf (hosts + len, cap - len, "%s%s", i ? ", " : "", entry);
    }
    char *note = cg_strdupf (
        "The network is limited to these hosts, over HTTP and HTTPS through a proxy "
        "(HTTP_PROXY and HTTPS_PROXY are set; pip, npm, curl, Python and Node.js use it): "
        "%s%s. Any other host, address or port gets HTTP 403 with the reason; plain TCP and "
        "UDP do not leave the sandbox. start_session's egress_allow narrows the list for one "
        "session.",
        hosts, count > S_NOTE_HOSTS ? " and more (list_sessions shows them)" : "");
    free (hosts);
    json_decref (allow);
    return note;
}

int
cg_tools_egress_allow (cg_registry_t *registry, json_t *egress_allow, json_t **allow, char **error)
{
    *allow = NULL;
    if (!egress_allow)
        return 0;
    cg_egress_t *egress = cg_registry_egress (registry);
    if (!egress) {
        *error = cg_xstrdup ("egress_allow: this server runs with --egress off (sandboxes reach "
                             "no network), so there is no list to narrow");
        return -1;
    }
    cg_error_t *err = NULL;
    cg_egress_policy_t *narrow = cg_egress_narrow (egress, egress_allow, &err);
    if (!narrow) {
        *error = cg_xstrdup (cg_error_message (err));
        cg_error_destroy (&err);
        return -1;
    }
    *allow = cg_egress_policy_json (narrow);
    cg_egress_policy_destroy (&narrow);
    return 0;
}

json_t *
cg_tools_egress_describe (cg_registry_t *registry, const cg_registry_session_t *session)
{
    cg_egress_t *egress = cg_registry_egress (registry);
    if (!egress)
        return json_string ("off");
    json_t *allow = session->egress_allow ? json_deep_copy (session->egress_allow)
                                          : cg_egress_policy_json (cg_egress_policy (egress));
    return json_pack ("{s:s, s:o, s:b}", "mode", "proxy", "allow", allow, "own_list",
                      session->egress_allow != NULL);
}
