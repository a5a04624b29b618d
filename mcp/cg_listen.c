/*  cg_listen — 2026-07-28's subscriptions/listen for workspace files. */
#include "mcp/cg_listen.h"
#include "mcp/cg_jsonrpc.h"
#include "mcp/cg_resources.h"
#include "mcp/cg_server_int.h"
#include "base/cg_util.h"

#include <string.h>

#define S_URIS_MAX 1000
#define S_PING_MS 2000
#define S_SUBSCRIPTION "io.modelcontextprotocol/subscriptionId"

typedef struct {
    const cg_client_t *client;
    cg_channel_t *channel;
    json_t *id;   /* the listen request's: its subscriptionId */
    json_t *uris; /* uri -> true */
} s_listener_t;

static void
s_listener_free (void **item)
{
    s_listener_t *listener = *item;
    if (listener) {
        cg_channel_release (&listener->channel);
        json_decref (listener->id);
        json_decref (listener->uris);
        free (listener);
    }
    *item = NULL;
}

zlistx_t *
cg_listen_new (void)
{
    zlistx_t *listeners = zlistx_new ();
    zlistx_set_destructor (listeners, s_listener_free);
    return listeners;
}

//  A notification METHOD with PARAMS (stolen) tagged for LISTENER.
static void
s_notify (s_listener_t *listener, const char *method, json_t *params)
{
    json_object_set_new (params, "_meta", json_pack ("{s:O}", S_SUBSCRIPTION, listener->id));
    cg_channel_send (listener->channel, json_pack ("{s:s, s:s, s:o}", "jsonrpc", "2.0", "method",
                                                   method, "params", params));
}

//  Whether REQ's client may open one more listener (--max-listens, and its owner's share
//  --max-listens-per-client). Returns true when it may; else REQ is answered with -32600
//  naming the limit.
static bool
s_room (const cg_request_t *req)
{
    const cg_config_t *config = cg_server_config (req->server);
    zlistx_t *listeners = req->server->listeners;
    int owned = 0;
    for (s_listener_t *l = zlistx_first (listeners); l; l = zlistx_next (listeners))
        owned += cg_client_same_owner (l->client, req->client);
    bool mine = owned >= config->max_listens_per_client;
    if (!mine && zlistx_size (listeners) < (size_t)config->max_listens)
        return true;
    cleanup_free char *message = cg_strdupf (
        "subscriptions/listen: %s %d listeners open, the most (%s); close one first",
        mine ? "this client holds" : "the server has", mine ? owned : config->max_listens,
        mine ? "--max-listens-per-client" : "--max-listens");
    cg_request_error_data (req, CG_JSONRPC_INVALID_REQUEST, message,
                           json_pack ("{s:s, s:i}", "limit",
                                      mine ? "--max-listens-per-client" : "--max-listens", "max",
                                      mine ? config->max_listens_per_client : config->max_listens));
    return false;
}

void
cg_listen (const cg_request_t *req, json_t *params)
{
    if (!req->modern) {
        cg_request_error (req, CG_JSONRPC_METHOD_NOT_FOUND,
                          "Method not found: subscriptions/listen is 2026-07-28's (before it: "
                          "resources/subscribe)");
        return;
    }
    json_t *filter = json_object_get (params, "notifications");
    json_t *wanted = json_object_get (filter, "resourceSubscriptions");
    zlistx_t *listeners = req->server->listeners;
    if (!json_is_object (filter) || (wanted && !json_is_array (wanted))
        || json_array_size (wanted) > S_URIS_MAX) {
        cg_request_error (req, CG_JSONRPC_INVALID_PARAMS,
                          "subscriptions/listen: 'notifications' must be an object, its "
                          "resourceSubscriptions an array of at most 1000 URIs");
        return;
    }
    if (!s_room (req))
        return;
    s_listener_t *listener = cg_xcalloc (1, sizeof *listener);
    listener->client = req->client;
    listener->channel = cg_channel_keep (req->channel);
    listener->id = json_incref (req->id);
    listener->uris = json_object ();
    size_t i;
    json_t *uri;
    json_array_foreach (wanted, i,
                        uri) if (json_is_string (uri) && json_string_length (uri) <= 4096)
        json_object_set_new (listener->uris, json_string_value (uri), json_true ());
    zlistx_add_end (listeners, listener);
    //  Honoured: the workspace files' subscriptions; the tools, prompts and resources lists
    //  never change here, and task status goes by tasks/get.
    json_t *honoured = json_array ();
    const char *key;
    json_t *value;
    json_object_foreach (listener->uris, key, value)
        json_array_append_new (honoured, json_string (key));
    s_notify (listener, "notifications/subscriptions/acknowledged",
              json_pack ("{s:{s:o}}", "notifications", "resourceSubscriptions", honoured));
}

void
cg_listen_ran (cg_server_t *server, const cg_client_t *client, const char *session_id,
               const cg_outcome_t *outcome)
{
    if (!session_id || !outcome || !server->listeners)
        return;
    json_t *lists[] = {outcome->created, outcome->modified, outcome->deleted};
    for (s_listener_t *l = zlistx_first (server->listeners); l;
         l = zlistx_next (server->listeners)) {
        if (l->client != client || !json_object_size (l->uris))
            continue;
        for (size_t k = 0; k < 3; k++) {
            size_t i;
            json_t *name;
            json_array_foreach (lists[k], i, name)
            {
                cleanup_free char *uri = cg_resources_uri (session_id, json_string_value (name));
                if (json_object_get (l->uris, uri))
                    s_notify (l, "notifications/resources/updated",
                              json_pack ("{s:s}", "uri", uri));
            }
        }
    }
}

bool
cg_listen_cancel (cg_server_t *server, const cg_client_t *client, json_t *request_id)
{
    for (s_listener_t *l = zlistx_first (server->listeners); request_id && l;
         l = zlistx_next (server->listeners))
        if (l->client == client && json_equal (l->id, request_id)) {
            zlistx_delete (server->listeners, zlistx_cursor (server->listeners));
            return true;
        }
    return false;
}

int
cg_listen_tick (cg_server_t *server, int wait_ms)
{
    if (!zlistx_size (server->listeners))
        return wait_ms;
    int64_t now = cg_now_us ();
    if (now >= server->next_listen_us) {
        server->next_listen_us = now + S_PING_MS * 1000LL;
        //  Deleted at the cursor, which moves back one: the walk goes on from there.
        for (s_listener_t *l = zlistx_first (server->listeners); l;
             l = zlistx_next (server->listeners))
            if (l->channel->ops->ping && !l->channel->ops->ping (l->channel))
                zlistx_delete (server->listeners, zlistx_cursor (server->listeners));
    }
    int ms = (int)((server->next_listen_us - now) / 1000) + 1;
    return wait_ms < 0 || ms < wait_ms ? ms : wait_ms;
}

void
cg_listen_client_end (cg_server_t *server, const cg_client_t *client)
{
    for (s_listener_t *l = zlistx_first (server->listeners); l; l = zlistx_next (server->listeners))
        if (l->client == client)
            zlistx_delete (server->listeners, zlistx_cursor (server->listeners));
}

//  The loop's hook (when the server has a loop): cg_listen_tick before every wait.
static int
s_tick_cb (cg_loop_t *loop, void *arg)
{
    (void)loop;
    return cg_listen_tick (arg, -1);
}

static bool
s_cancelled (cg_server_t *server, cg_client_t *client, json_t *request_id)
{
    return cg_listen_cancel (server, client, request_id);
}

static void
s_client_end (cg_server_t *server, cg_client_t *client)
{
    cg_listen_client_end (server, client);
}

void
cg_listen_register (cg_server_t *server)
{
    static const cg_hooks_t hooks = {.cancelled = s_cancelled, .client_end = s_client_end};
    server->listeners = cg_listen_new ();
    cg_server_add_hooks (server, &hooks);
    cg_server_add_method (server, "subscriptions/listen", cg_listen, 0);
    if (cg_server_loop (server))
        cg_loop_before_wait (cg_server_loop (server), s_tick_cb, server);
}
