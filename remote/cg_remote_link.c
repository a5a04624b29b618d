/*  cg_remote_link — the relays' CURVE link: key pairs, the server's hub and its ZAP
    handler, a relay's dialing socket. */
#include "remote/cg_remote_link.h"
#include "remote/cg_remote_msg.h"
#include "base/cg_log.h"
#include "base/cg_util.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>

//  libzmq asks the handler bound here for every handshake of a socket with a ZAP domain.
#define S_ZAP_ENDPOINT "inproc://zeromq.zap.01"
#define S_ZAP_DOMAIN "cellgate-relay"

//  How long a handshake may take, a relay's messages waiting to be sent to it, and the
//  messages either end holds from the other before it stops reading (64 of a process's
//  64 KiB output chunks: a relay reads a process's output only while its link takes more,
//  so a slow server slows the process instead of losing its output).
#define S_HANDSHAKE_MS 10000
#define S_SEND_HWM 1000
#define S_LINK_HWM 64

struct cg_remote_hub_t {
    zsock_t *zap;    /* REP at S_ZAP_ENDPOINT */
    zsock_t *router; /* the relays' */
    char *endpoint;
    char public_key[41];
    zhashx_t *by_key;     /* relay public key (Z85) -> sandbox id */
    zhashx_t *by_sandbox; /* sandbox id -> relay public key */
    size_t refused;
};

int
cg_remote_keys_new (cg_remote_keys_t *keys, cg_error_t **err)
{
    if (!zsys_has_curve () || zmq_curve_keypair (keys->public_key, keys->secret_key) != 0)
        return cg_error_set (err, ENOTSUP, "CURVE keys: libzmq was built without CURVE");
    return 0;
}

static bool
s_key_ok (const char *key)
{
    uint8_t raw[32];
    return key && strlen (key) == 40 && zmq_z85_decode (raw, key) != NULL;
}

cg_remote_hub_t *
cg_remote_hub_new (const char *endpoint, const cg_remote_keys_t *keys, size_t max_frame_bytes,
                   cg_error_t **err)
{
    if (!zsys_has_curve ()) {
        cg_error_set (err, ENOTSUP, "relay hub: libzmq was built without CURVE");
        return NULL;
    }
    cg_remote_hub_t *self = cg_xcalloc (1, sizeof *self);
    self->by_key = zhashx_new ();
    self->by_sandbox = zhashx_new ();
    zhashx_set_destructor (self->by_key, (zhashx_destructor_fn *)zstr_free);
    zhashx_set_duplicator (self->by_key, (zhashx_duplicator_fn *)strdup);
    zhashx_set_destructor (self->by_sandbox, (zhashx_destructor_fn *)zstr_free);
    zhashx_set_duplicator (self->by_sandbox, (zhashx_duplicator_fn *)strdup);
    memcpy (self->public_key, keys->public_key, sizeof self->public_key);
    //  The handler first: a CURVE server with none bound admits every client.
    self->zap = zsock_new (ZMQ_REP);
    if (!self->zap || zsock_bind (self->zap, S_ZAP_ENDPOINT) != 0) {
        cg_error_set (err, EADDRINUSE, "relay hub: the ZAP handler could not be bound (%s)",
                      zmq_strerror (errno));
        cg_remote_hub_destroy (&self);
        return NULL;
    }
    self->router = zsock_new (ZMQ_ROUTER);
    zsock_set_curve_server (self->router, 1);
    zsock_set_curve_secretkey (self->router, keys->secret_key);
    zsock_set_curve_publickey (self->router, keys->public_key);
    zsock_set_zap_domain (self->router, S_ZAP_DOMAIN);
    zsock_set_router_mandatory (self->router, 1);
    zsock_set_handshake_ivl (self->router, S_HANDSHAKE_MS);
    zsock_set_sndhwm (self->router, S_SEND_HWM);
    zsock_set_rcvhwm (self->router, S_LINK_HWM);
    zsock_set_sndtimeo (self->router, 0);
    zsock_set_maxmsgsize (self->router,
                          (int)(max_frame_bytes > INT32_MAX ? INT32_MAX : max_frame_bytes));
    zsock_set_linger (self->router, 0);
    if (zsock_bind (self->router, "%s", endpoint) < 0) {
        cg_error_set (err, errno ? errno : EADDRNOTAVAIL, "relay hub: bind %s: %s", endpoint,
                      zmq_strerror (errno));
        cg_remote_hub_destroy (&self);
        return NULL;
    }
    self->endpoint = zsock_last_endpoint (self->router);
    return self;
}

void
cg_remote_hub_destroy (cg_remote_hub_t **self_p)
{
    cg_remote_hub_t *self = *self_p;
    if (!self)
        return;
    *self_p = NULL;
    zsock_destroy (&self->router);
    zsock_destroy (&self->zap);
    zhashx_destroy (&self->by_key);
    zhashx_destroy (&self->by_sandbox);
    zstr_free (&self->endpoint);
    free (self);
}

const char *
cg_remote_hub_endpoint (cg_remote_hub_t *self)
{
    return self->endpoint;
}

const char *
cg_remote_hub_public_key (cg_remote_hub_t *self)
{
    return self->public_key;
}

int
cg_remote_hub_allow (cg_remote_hub_t *self, const char *sandbox, const char *relay_public_key,
                     cg_error_t **err)
{
    if (!sandbox || !cg_remote_id_ok (sandbox, strlen (sandbox)))
        return cg_error_set (err, EINVAL, "relay hub: not a sandbox id");
    if (!s_key_ok (relay_public_key))
        return cg_error_set (err, EINVAL, "relay hub: not a CURVE public key (40 Z85 characters)");
    const char *owner = zhashx_lookup (self->by_key, relay_public_key);
    if (owner && strcmp (owner, sandbox) != 0)
        return cg_error_set (err, EEXIST, "relay hub: that key is sandbox %s's", owner);
    bool known = zhashx_lookup (self->by_sandbox, sandbox) != NULL;
    if (!known && zhashx_size (self->by_sandbox) >= CG_REMOTE_RELAYS_MAX)
        return cg_error_set (err, EAGAIN, "relay hub: %d relays admitted already, the limit",
                             CG_REMOTE_RELAYS_MAX);
    cg_remote_hub_forget (self, sandbox);
    zhashx_insert (self->by_key, relay_public_key, (void *)(uintptr_t)sandbox); /* copied */
    zhashx_insert (self->by_sandbox, sandbox, (void *)(uintptr_t)relay_public_key);
    return 0;
}

void
cg_remote_hub_forget (cg_remote_hub_t *self, const char *sandbox)
{
    const char *key = zhashx_lookup (self->by_sandbox, sandbox);
    if (!key)
        return;
    zhashx_delete (self->by_key, key);
    zhashx_delete (self->by_sandbox, sandbox);
}

size_t
cg_remote_hub_refused (cg_remote_hub_t *self)
{
    return self->refused;
}

zsock_t *
cg_remote_hub_sock (cg_remote_hub_t *self)
{
    return self->router;
}

zsock_t *
cg_remote_hub_zap_sock (cg_remote_hub_t *self)
{
    return self->zap;
}

//  Answers one ZAP request (RFC 27): version, request id, domain, address, routing id,
//  mechanism, credentials (CURVE: the client's 32-byte public key).
static void
s_admit_one (cg_remote_hub_t *self, zmsg_t *request)
{
    zframe_t *frames[7] = {0};
    size_t count = 0;
    for (zframe_t *f = zmsg_first (request); f && count < 7; f = zmsg_next (request))
        frames[count++] = f;
    const char *status = "400", *text = "not admitted";
    const char *sandbox = "";
    char key[41] = "";
    if (count == 7 && zmsg_size (request) == 7 && zframe_streq (frames[0], "1.0")
        && zframe_streq (frames[2], S_ZAP_DOMAIN) && zframe_streq (frames[5], "CURVE")
        && zframe_size (frames[6]) == 32 && zmq_z85_encode (key, zframe_data (frames[6]), 32)) {
        const char *owner = zhashx_lookup (self->by_key, key);
        if (owner) {
            status = "200", text = "OK";
            sandbox = owner;
        }
    }
    if (strcmp (status, "200") != 0) {
        self->refused++;
        cleanup_free char *address = count > 3 ? zframe_strdup (frames[3]) : NULL;
        cg_log (2, "relay hub: a handshake from %s refused: %s", address ? address : "?",
                key[0] ? "an unknown key" : "not CURVE");
    }
    zmsg_t *reply = zmsg_new ();
    zmsg_addstr (reply, "1.0");
    if (count > 1)
        zmsg_append (reply, &(zframe_t *){zframe_dup (frames[1])});
    else
        zmsg_addstr (reply, "");
    zmsg_addstr (reply, status);
    zmsg_addstr (reply, text);
    zmsg_addstr (reply, sandbox);
    zmsg_addmem (reply, "", 0);
    zmsg_send (&reply, self->zap);
}

void
cg_remote_hub_admit (cg_remote_hub_t *self)
{
    while (zsock_events (self->zap) & ZMQ_POLLIN) {
        zmsg_t *request = zmsg_recv (self->zap);
        if (!request)
            break;
        s_admit_one (self, request);
        zmsg_destroy (&request);
    }
}

zmsg_t *
cg_remote_hub_recv (cg_remote_hub_t *self, zframe_t **route, char **sandbox)
{
    *route = NULL;
    *sandbox = NULL;
    while (zsock_events (self->router) & ZMQ_POLLIN) {
        zmsg_t *msg = zmsg_recv (self->router);
        if (!msg)
            return NULL;
        zframe_t *id = zmsg_pop (msg);
        //  The sandbox its key was admitted for: the ZAP reply's user id, which libzmq
        //  attaches to every message of the connection. A message without one is dropped.
        const char *user = NULL;
        for (zframe_t *f = zmsg_first (msg); f && !user; f = zmsg_next (msg))
            user = zframe_meta (f, "User-Id");
        if (id && user && user[0] && zmsg_size (msg) > 0) {
            *route = id;
            *sandbox = cg_xstrdup (user);
            return msg;
        }
        zframe_destroy (&id);
        zmsg_destroy (&msg);
    }
    return NULL;
}

int
cg_remote_hub_send (cg_remote_hub_t *self, zframe_t *route, zmsg_t **msg, cg_error_t **err)
{
    zmsg_pushmem (*msg, zframe_data (route), zframe_size (route));
    if (zmsg_send (msg, self->router) == 0)
        return 0;
    int code = errno;
    zmsg_destroy (msg);
    return cg_error_set (err, code == EHOSTUNREACH ? ENOTCONN : code, "relay hub: %s",
                         code == EHOSTUNREACH ? "the relay is not connected" : zmq_strerror (code));
}

zsock_t *
cg_remote_dial (const char *endpoint, const char *server_public_key, const cg_remote_keys_t *keys,
                size_t max_frame_bytes, cg_error_t **err)
{
    if (!zsys_has_curve ()) {
        cg_error_set (err, ENOTSUP, "relay: libzmq was built without CURVE");
        return NULL;
    }
    if (!s_key_ok (server_public_key)) {
        cg_error_set (err, EINVAL, "relay: the server's key is not a CURVE public key");
        return NULL;
    }
    zsock_t *sock = zsock_new (ZMQ_DEALER);
    zsock_set_curve_serverkey (sock, server_public_key);
    zsock_set_curve_publickey (sock, keys->public_key);
    zsock_set_curve_secretkey (sock, keys->secret_key);
    zsock_set_handshake_ivl (sock, S_HANDSHAKE_MS);
    zsock_set_sndhwm (sock, S_LINK_HWM);
    zsock_set_maxmsgsize (sock, (int)(max_frame_bytes > INT32_MAX ? INT32_MAX : max_frame_bytes));
    zsock_set_linger (sock, 0);
    if (zsock_connect (sock, "%s", endpoint) < 0) {
        cg_error_set (err, EINVAL, "relay: connect %s: %s", endpoint, zmq_strerror (errno));
        zsock_destroy (&sock);
        return NULL;
    }
    return sock;
}
