/*  The relay end to end on this machine (issue 31): `cellgate relay` (CELLGATE_BIN) dials a
    hub of this test's own over real CURVE on loopback, with a key admitted for its sandbox;
    the test puts a connection file into the relay's ipc dir, has it start a real ipykernel
    (Debian's /usr/bin/python3) and attach it, binds the kernel's mirror (cg_remote_mirror)
    in a host ipc dir of its own and talks Jupyter to the mirror with the bridge's wire
    codec, as cg_kernel does: kernel_info, a cell whose stream output and reply come back
    signed by the kernel, then SIGNAL and the exit reported, a command's stdin (IN) and
    output (OUT, before its EXITED), 32 MiB of output kept whole while the hub does not
    read, HELLO again after the hub restarted, and BYE ending the relay. As
    root, the kernel runs as nobody (65534) in a network namespace of its own, and cannot
    read the relay's key file: the cell says so. Skips (77) without python3's ipykernel. */
#define _GNU_SOURCE
#include "remote/cg_remote_link.h"
#include "remote/cg_remote_mirror.h"
#include "remote/cg_remote_msg.h"
#include "bridge/cg_wire.h"
#include "containers/cg_seccomp.h"
#include "base/cg_fs.h"
#include "base/cg_util.h"
#include "cg_test.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define S_PYTHON "/usr/bin/python3"
#define S_NOBODY 65534

typedef struct {
    cg_remote_hub_t *hub;
    zframe_t *route; /* the relay's */
    cg_remote_mirror_t *mirror;
    zmsg_t *got;         /* the last message from the relay that was not FROM */
    cg_remote_msg_t msg; /* decoded, borrowing from GOT */
} s_pump_t;

//  Moves messages between the mirror and the relay for up to MS, returning early when the
//  relay sent something other than FROM (kept in SELF->got) or, when SOCK is set, when it
//  has a message to read.
static bool
s_pump (s_pump_t *self, int ms, zsock_t *sock)
{
    zmsg_destroy (&self->got);
    int64_t until = zclock_mono () + ms;
    while (zclock_mono () < until) {
        zmq_pollitem_t items[8];
        int n = 0;
        items[n++] =
            (zmq_pollitem_t){zsock_resolve (cg_remote_hub_sock (self->hub)), 0, ZMQ_POLLIN, 0};
        items[n++] =
            (zmq_pollitem_t){zsock_resolve (cg_remote_hub_zap_sock (self->hub)), 0, ZMQ_POLLIN, 0};
        for (int c = 0; self->mirror && c < CG_REMOTE_CHANNELS; c++)
            if (c != CG_REMOTE_IOPUB)
                items[n++] = (zmq_pollitem_t){
                    zsock_resolve (cg_remote_mirror_sock (self->mirror, c)), 0, ZMQ_POLLIN, 0};
        if (sock)
            items[n++] = (zmq_pollitem_t){zsock_resolve (sock), 0, ZMQ_POLLIN, 0};
        zmq_poll (items, n, 20);
        cg_remote_hub_admit (self->hub);
        for (int c = 0; self->mirror && c < CG_REMOTE_CHANNELS; c++) {
            zmsg_t *to;
            while (self->route && (to = cg_remote_mirror_take (self->mirror, c)))
                cg_remote_hub_send (self->hub, self->route, &to, NULL);
        }
        zframe_t *route = NULL;
        char *sandbox = NULL;
        zmsg_t *in;
        while ((in = cg_remote_hub_recv (self->hub, &route, &sandbox))) {
            cg_remote_bytes_t frames[CG_REMOTE_FRAMES_MAX];
            int count = cg_remote_frames_of (in, frames, CG_REMOTE_FRAMES_MAX);
            cg_remote_msg_t msg;
            bool ok = strcmp (sandbox, "sb-relay") == 0 && count > 0
                      && cg_remote_decode (frames, (size_t)count, CG_REMOTE_UP, &msg, NULL) == 0;
            zstr_free (&sandbox);
            if (ok && !self->route)
                self->route = zframe_dup (route);
            zframe_destroy (&route);
            if (ok && msg.verb == CG_REMOTE_FROM && self->mirror) {
                cg_remote_mirror_put (self->mirror, &msg);
                zmsg_destroy (&in);
                continue;
            }
            if (ok) {
                self->got = in;
                self->msg = msg;
                return true;
            }
            zmsg_destroy (&in);
        }
        if (sock && (zsock_events (sock) & ZMQ_POLLIN))
            return true;
    }
    return false;
}

//  Pumps until the relay sends VERB (other messages are skipped). True when it did.
static bool
s_expect (s_pump_t *self, cg_remote_verb_t verb, int ms)
{
    int64_t until = zclock_mono () + ms;
    while (zclock_mono () < until)
        if (s_pump (self, (int)(until - zclock_mono ()), NULL) && self->msg.verb == verb)
            return true;
    return false;
}

static void
s_send (s_pump_t *self, const cg_remote_msg_t *msg)
{
    zmsg_t *zmsg = cg_remote_encode (msg);
    cg_remote_hub_send (self->hub, self->route, &zmsg, NULL);
}

#define B(text) ((cg_remote_bytes_t){(text), strlen (text)})

//  Sends MSG_TYPE on SOCK and pumps until a message of REPLY_TYPE comes on READ (the same
//  or another socket), which it returns (caller destroys), or NULL after MS.
static cg_msg_t *
s_request (s_pump_t *pump, cg_wire_t *wire, zsock_t *sock, const char *msg_type, json_t *content,
           zsock_t *read, const char *reply_type, int ms, json_t **outputs)
{
    if (sock)
        cg_wire_send (wire, sock, msg_type, content, NULL, NULL);
    int64_t until = zclock_mono () + ms;
    while (zclock_mono () < until) {
        if (!s_pump (pump, 100, read))
            continue;
        while (zsock_events (read) & ZMQ_POLLIN) {
            cg_msg_t *msg = cg_wire_recv (wire, read);
            if (msg && strcmp (msg->msg_type, reply_type) == 0)
                return msg;
            if (msg && outputs && strcmp (msg->msg_type, "stream") == 0)
                json_array_append (*outputs, json_object_get (msg->content, "text"));
            cg_msg_destroy (&msg);
        }
    }
    return NULL;
}

//  Where the relay runs and what the kernel should find there.
typedef struct {
    const char *relay_ipc; /* the relay's ipc dir, as it sees it */
    const char *keys_path; /* the relay's key file, as the kernel would see it */
    int kernel_uid;        /* the uid the kernel runs as */
    bool local;            /* RELAY_IPC is on this machine: ATTACH once the sockets are there
                              (the relay here runs with a short --attach-ms) */
} s_where_t;

//  Drives a relay that dialed PUMP's hub as sandbox "sb-relay": a real ipykernel started,
//  attached and run through the mirror in HOST_IPC, then killed, a failing exec, a command
//  with its stdio.
//  Returns false when the relay never said HELLO.
static bool
s_drive (s_pump_t *pump, const s_where_t *where, const char *host_ipc, int hello_ms)
{
    const char *name = "drive";
    cg_error_t *err = NULL;
    bool hello = s_expect (pump, CG_REMOTE_HELLO, hello_ms) && pump->msg.id.size == 8
                 && memcmp (pump->msg.id.data, "sb-relay", 8) == 0;
    EXPECT (hello, "the relay's HELLO arrives under its sandbox");
    if (!hello)
        return false;
    s_send (pump, &(cg_remote_msg_t){.verb = CG_REMOTE_WELCOME, .version = CG_REMOTE_VERSION});

    //  The connection file: the host's copy for the mirror, the relay's by PUT.
    char key[33];
    cg_random_hex (key, 16);
    cleanup_free char *inside_ip = cg_strdupf ("%s/kern", where->relay_ipc);
    json_t *conn =
        json_pack ("{s:s, s:s, s:i, s:i, s:i, s:i, s:i, s:s, s:s}", "transport", "ipc", "ip",
                   inside_ip, "shell_port", 1, "iopub_port", 2, "stdin_port", 3, "control_port", 4,
                   "hb_port", 5, "key", key, "signature_scheme", "hmac-sha256");
    cleanup_free char *conn_text = json_dumps (conn, JSON_COMPACT);
    json_decref (conn);
    EXPECT (cg_write_json (host_ipc, "kernel-k1.json", json_loads (conn_text, 0, NULL), 0600, &err)
                == 0,
            "the host's connection file");
    s_send (pump, &(cg_remote_msg_t){
                      .verb = CG_REMOTE_PUT, .id = B ("kernel-k1.json"), .text = B (conn_text)});
    cleanup_free char *conn_path = cg_strdupf ("%s/kernel-k1.json", where->relay_ipc);
    cleanup_free char *home = cg_strdupf ("HOME=%s", where->relay_ipc);
    //  The sandbox's seccomp profile, as runc gets it for the local backends.
    json_t *profile = cg_seccomp_profile ();
    cleanup_free char *spec = cg_remote_spec_text (
        (const char *[]){S_PYTHON, "-m", "ipykernel_launcher", "-f", conn_path, NULL},
        (const char *[]){"PATH=/usr/bin:/bin", home, "JUPYTER_RUNTIME_DIR=/tmp", NULL}, "/tmp",
        false, false, profile);
    json_decref (profile);
    s_send (pump, &(cg_remote_msg_t){.verb = CG_REMOTE_EXEC, .id = B ("k1"), .text = B (spec)});
    EXPECT (s_expect (pump, CG_REMOTE_STARTED, 10000) && pump->msg.number[0] > 0,
            "STARTED with a pid");
    for (int i = 0; where->local && i < 60 * 50; i++) {
        int bound = 0;
        for (int port = 1; port <= 5; port++) {
            cleanup_free char *socket = cg_strdupf ("%s/kern-%d", where->relay_ipc, port);
            bound += access (socket, F_OK) == 0;
        }
        if (bound == 5)
            break;
        s_pump (pump, 20, NULL);
    }
    s_send (pump, &(cg_remote_msg_t){
                      .verb = CG_REMOTE_ATTACH, .id = B ("k1"), .text = B ("kernel-k1.json")});
    pump->mirror = cg_remote_mirror_new (host_ipc, "kernel-k1.json", "k1", 8 << 20, &err);
    EXPECT (pump->mirror, "mirror: %s", err ? cg_error_message (err) : "");
    cg_error_destroy (&err);
    if (!pump->mirror)
        return true;

    //  A client of the mirror, as cg_kernel is of a local kernel.
    cg_wire_t *wire = cg_wire_new (key, strlen (key), 8 << 20);
    zsock_t *shell = zsock_new (ZMQ_DEALER), *iopub = zsock_new (ZMQ_SUB);
    zsock_set_identity (shell, "client-one");
    zsock_set_subscribe (iopub, "");
    zsock_connect (shell, "ipc://%s/kern-1", host_ipc);
    zsock_connect (iopub, "ipc://%s/kern:2", host_ipc);
    cg_msg_t *info = NULL;
    for (int i = 0; i < 60 && !info; i++)
        info = s_request (pump, wire, shell, "kernel_info_request", NULL, shell,
                          "kernel_info_reply", 1000, NULL);
    EXPECT (info && json_object_get (info->content, "implementation"),
            "kernel_info_reply through the relay, signed");
    cg_msg_destroy (&info);
    //  The kernel's uid, its network interfaces (only lo in a namespace of its own), whether
    //  it can read the relay's key, and whether the profile's filter holds it
    //  (personality(ADDR_NO_RANDOMIZE) is EPERM under it, allowed without).
    cleanup_free char *code = cg_strdupf (
        "import ctypes, os, socket\ntry:\n    open('%s').read(); k = 'read'\nexcept OSError as e:\n"
        "    k = type(e).__name__\nlibc = ctypes.CDLL(None, use_errno=True)\n"
        "p = libc.personality(0x0040000) == -1 and ctypes.get_errno() == 1\n"
        "print(6 * 7, os.getuid(), [n for _, n in socket.if_nameindex()], k, 'filtered' if p else "
        "'unfiltered')",
        where->keys_path);
    json_t *outputs = json_array ();
    cg_msg_t *reply = NULL;
    for (int i = 0; i < 5 && json_array_size (outputs) == 0; i++) {
        cg_msg_destroy (&reply);
        reply = s_request (pump, wire, shell, "execute_request",
                           json_pack ("{s:s, s:b}", "code", code, "silent", 0), shell,
                           "execute_reply", 20000, NULL);
        //  The output comes on iopub, before or after the reply: read it a while.
        cg_msg_t *none =
            s_request (pump, wire, NULL, NULL, NULL, iopub, "execute_result", 1500, &outputs);
        cg_msg_destroy (&none);
    }
    const char *status =
        reply ? json_string_value (json_object_get (reply->content, "status")) : NULL;
    EXPECT (status && strcmp (status, "ok") == 0, "execute_reply ok: %s", status ? status : "none");
    cg_msg_destroy (&reply);
    const char *text = json_string_value (json_array_get (outputs, json_array_size (outputs) - 1));
    bool isolated = where->kernel_uid != (int)geteuid () || geteuid () != 0;
    cleanup_free char *want =
        cg_strdupf ("42 %d ['lo'] %s filtered\n", where->kernel_uid,
                    isolated && where->kernel_uid != 0 ? "PermissionError" : "read");
    EXPECT (text && strcmp (text, want) == 0, "the cell's stream came through iopub: %s (want %s)",
            text ? text : "nothing", want);
    json_decref (outputs);

    s_send (pump,
            &(cg_remote_msg_t){.verb = CG_REMOTE_SIGNAL, .id = B ("k1"), .number = {SIGKILL}});
    EXPECT (s_expect (pump, CG_REMOTE_EXITED, 10000) && pump->msg.number[0] == 128 + SIGKILL,
            "EXITED with 128 + SIGKILL");
    s_send (pump, &(cg_remote_msg_t){
                      .verb = CG_REMOTE_EXEC,
                      .id = B ("k2"),
                      .text = B ("{\"argv\":[\"/nonexistent\"],\"env\":[],\"cwd\":\"/\"}")});
    EXPECT (s_expect (pump, CG_REMOTE_FAILED, 10000) && pump->msg.text.size > 0,
            "a program that is not there: FAILED");
    //  A command with its stdin and output: what it reads comes from IN, what it writes
    //  comes back as OUT, all of it before its EXITED.
    cleanup_free char *command = cg_remote_spec_text (
        (const char *[]){"/bin/sh", "-c", "read x; echo \"got $x\"; echo err >&2; exit 3", NULL},
        (const char *[]){"PATH=/usr/bin:/bin", NULL}, "/", true, true, NULL);
    s_send (pump, &(cg_remote_msg_t){.verb = CG_REMOTE_EXEC, .id = B ("k3"), .text = B (command)});
    EXPECT (s_expect (pump, CG_REMOTE_STARTED, 10000), "the command STARTED");
    s_send (pump, &(cg_remote_msg_t){.verb = CG_REMOTE_IN, .id = B ("k3"), .text = B ("hello\n")});
    s_send (pump, &(cg_remote_msg_t){.verb = CG_REMOTE_IN, .id = B ("k3")});
    char out[2][256] = {"", ""};
    int64_t exit_code = -1;
    for (int64_t until = zclock_mono () + 10000; zclock_mono () < until && exit_code < 0;) {
        if (!s_pump (pump, 200, NULL))
            continue;
        if (pump->msg.verb == CG_REMOTE_OUT) {
            char *to = out[pump->msg.number[0] - 1];
            size_t have = strlen (to);
            snprintf (to + have, 256 - have, "%.*s", (int)pump->msg.text.size,
                      (const char *)pump->msg.text.data);
        }
        else if (pump->msg.verb == CG_REMOTE_EXITED)
            exit_code = pump->msg.number[0];
    }
    EXPECT (exit_code == 3 && strcmp (out[0], "got hello\n") == 0 && strcmp (out[1], "err\n") == 0,
            "stdin from IN, stdout and stderr as OUT before EXITED 3: %lld, [%s], [%s]",
            (long long)exit_code, out[0], out[1]);
    zsock_destroy (&shell);
    zsock_destroy (&iopub);
    cg_wire_destroy (&wire);
    (void)name;
    return true;
}

static void
s_pump_end (s_pump_t *pump)
{
    cg_remote_mirror_destroy (&pump->mirror);
    zframe_destroy (&pump->route);
    zmsg_destroy (&pump->got);
    cg_remote_hub_destroy (&pump->hub);
}

//  The relay forked here, as nobody when this is root.
static void
test_local (const char *exe)
{
    const char *name = "local";
    bool root = geteuid () == 0;
    cg_error_t *err = NULL;
    char host_ipc[] = "/tmp/cg-relay-host-XXXXXX", relay_ipc[] = "/tmp/cg-relay-sandbox-XXXXXX",
         secrets[] = "/tmp/cg-relay-secrets-XXXXXX";
    CHECK (mkdtemp (host_ipc) && mkdtemp (relay_ipc) && mkdtemp (secrets), "temp dirs");
    cg_remote_keys_t server, relay;
    CHECK (cg_remote_keys_new (&server, &err) == 0 && cg_remote_keys_new (&relay, &err) == 0,
           "keys");
    s_pump_t pump = {0};
    pump.hub = cg_remote_hub_new ("tcp://127.0.0.1:*", &server, 8 << 20, &err);
    CHECK (pump.hub, "hub: %s", err ? cg_error_message (err) : "");
    CHECK (cg_remote_hub_allow (pump.hub, "sb-relay", relay.public_key, &err) == 0, "admit");
    cleanup_free char *keys_file = cg_strdupf ("%s/relay.keys", secrets);
    cleanup_free char *keys_text = cg_strdupf ("%s\n%s\n", relay.public_key, relay.secret_key);
    CHECK (cg_write_file (keys_file, keys_text, strlen (keys_text), 0600, &err) == 0, "keys file");

    pid_t pid = fork ();
    if (pid == 0) {
        //  The relay ends with this test, whatever way the test ends.
        prctl (PR_SET_PDEATHSIG, SIGKILL);
        char *argv[] = {cg_xstrdup (exe),
                        "relay",
                        "--server",
                        cg_xstrdup (cg_remote_hub_endpoint (pump.hub)),
                        "--server-key",
                        server.public_key,
                        "--keys",
                        keys_file,
                        "--sandbox",
                        "sb-relay",
                        "--ipc-dir",
                        relay_ipc,
                        "--attach-ms",
                        "1000",
                        root ? "--isolate-net" : NULL,
                        "--uid",
                        "65534",
                        "--gid",
                        "65534",
                        NULL};
        execv (exe, argv);
        _exit (127);
    }
    CHECK (pid > 0, "fork");
    s_where_t where = {relay_ipc, keys_file, root ? S_NOBODY : (int)geteuid (), true};
    s_drive (&pump, &where, host_ipc, 10000);
    //  An ATTACH whose kernel binds nothing fails after --attach-ms (1 s here), and a second
    //  one fails the same way (the first's name and queue freed: the sanitized build's
    //  relay, which ends at BYE with a leak check, fails this test otherwise).
    cleanup_free char *idle =
        cg_remote_spec_text ((const char *[]){"/bin/sleep", "30", NULL},
                             (const char *[]){"PATH=/usr/bin:/bin", NULL}, "/", false, false, NULL);
    const char *nowhere = "{\"transport\":\"ipc\",\"ip\":\"/x/nokernel\",\"shell_port\":1,"
                          "\"iopub_port\":2,\"stdin_port\":3,\"control_port\":4,\"hb_port\":5}";
    s_send (&pump, &(cg_remote_msg_t){
                       .verb = CG_REMOTE_PUT, .id = B ("kernel-k5.json"), .text = B (nowhere)});
    s_send (&pump, &(cg_remote_msg_t){.verb = CG_REMOTE_EXEC, .id = B ("k5"), .text = B (idle)});
    EXPECT (s_expect (&pump, CG_REMOTE_STARTED, 10000), "a process that binds nothing STARTED");
    for (int i = 0; i < 2; i++) {
        s_send (&pump, &(cg_remote_msg_t){
                           .verb = CG_REMOTE_ATTACH, .id = B ("k5"), .text = B ("kernel-k5.json")});
        s_send (&pump, &(cg_remote_msg_t){.verb = CG_REMOTE_TO,
                                          .id = B ("k5"),
                                          .channel = 0,
                                          .peer = B ("p"),
                                          .parts = &B ("x"),
                                          .part_count = 1});
        EXPECT (s_expect (&pump, CG_REMOTE_FAILED, 10000)
                    && memmem (pump.msg.text.data, pump.msg.text.size, "no sockets", 10),
                "ATTACH %d without sockets: FAILED after --attach-ms", i + 1);
    }
    s_send (&pump,
            &(cg_remote_msg_t){.verb = CG_REMOTE_SIGNAL, .id = B ("k5"), .number = {SIGKILL}});
    EXPECT (s_expect (&pump, CG_REMOTE_EXITED, 10000), "and it is killed");
    //  A server that does not read for a while: a process's 32 MiB of output all arrive
    //  (the relay stops reading the process's pipe while its link is full), then EXITED.
    cleanup_free char *flood =
        cg_remote_spec_text ((const char *[]){"/bin/sh", "-c", "head -c 33554432 /dev/zero", NULL},
                             (const char *[]){"PATH=/usr/bin:/bin", NULL}, "/", false, true, NULL);
    s_send (&pump, &(cg_remote_msg_t){.verb = CG_REMOTE_EXEC, .id = B ("k4"), .text = B (flood)});
    EXPECT (s_expect (&pump, CG_REMOTE_STARTED, 10000), "the flood STARTED");
    sleep (3);
    size_t got = 0;
    int64_t flood_exit = -1;
    for (int64_t until = zclock_mono () + 60000; zclock_mono () < until && flood_exit < 0;) {
        if (!s_pump (&pump, 200, NULL))
            continue;
        if (pump.msg.verb == CG_REMOTE_OUT)
            got += pump.msg.text.size;
        else if (pump.msg.verb == CG_REMOTE_EXITED)
            flood_exit = pump.msg.number[0];
    }
    EXPECT (got == 33554432 && flood_exit == 0,
            "every byte of a 32 MiB output arrived after 3 s unread, then EXITED 0: %zu, %lld", got,
            (long long)flood_exit);
    //  The hub restarted on the same port with the same keys (a server restarted): the
    //  relay, idle, says HELLO again once its link is back.
    cleanup_free char *endpoint = cg_xstrdup (cg_remote_hub_endpoint (pump.hub));
    s_pump_end (&pump);
    //  libzmq closes a listener on its I/O thread: the port may take a moment to be free.
    for (int i = 0; i < 100 && !pump.hub; i++) {
        cg_error_destroy (&err);
        if (!(pump.hub = cg_remote_hub_new (endpoint, &server, 8 << 20, &err)))
            usleep (50 * 1000);
    }
    EXPECT (pump.hub && cg_remote_hub_allow (pump.hub, "sb-relay", relay.public_key, &err) == 0,
            "the hub again on %s: %s", endpoint, err ? cg_error_message (err) : "");
    cg_error_destroy (&err);
    if (pump.hub) {
        EXPECT (s_expect (&pump, CG_REMOTE_HELLO, 10000), "after the hub's restart, HELLO again");
        s_send (&pump, &(cg_remote_msg_t){.verb = CG_REMOTE_BYE, .text = B ("done")});
    }
    int wstatus = -1;
    for (int i = 0; i < 100 && waitpid (pid, &wstatus, WNOHANG) == 0; i++)
        if (pump.hub)
            s_pump (&pump, 50, NULL);
        else
            usleep (50 * 1000);
    EXPECT (WIFEXITED (wstatus) && WEXITSTATUS (wstatus) == 0, "the relay ends at BYE: %d",
            wstatus);
    if (!WIFEXITED (wstatus))
        kill (pid, SIGKILL), waitpid (pid, NULL, 0);
    s_pump_end (&pump);
    cg_rm_rf (host_ipc, NULL);
    cg_rm_rf (relay_ipc, NULL);
    cg_rm_rf (secrets, NULL);
}

//  `test_remote_relay --remote --listen ADDRESS --relay-ipc DIR --keys-path PATH --uid N`:
//  a hub on ADDRESS (any port) for a relay started elsewhere (a Swarm service,
//  tests/swarm): prints {"endpoint", "server_key", "relay_public", "relay_secret"} as one
//  line, waits up to 120 s for the relay to dial in, drives it, and exits 0 when every
//  check passed.
static int
s_remote (int argc, char **argv)
{
    const char *listen = NULL, *relay_ipc = NULL, *keys_path = NULL;
    int uid = -1;
    for (int i = 2; i + 1 < argc; i += 2) {
        if (strcmp (argv[i], "--listen") == 0)
            listen = argv[i + 1];
        else if (strcmp (argv[i], "--relay-ipc") == 0)
            relay_ipc = argv[i + 1];
        else if (strcmp (argv[i], "--keys-path") == 0)
            keys_path = argv[i + 1];
        else if (strcmp (argv[i], "--uid") == 0)
            uid = atoi (argv[i + 1]);
    }
    if (!listen || !relay_ipc || !keys_path || uid < 0) {
        fprintf (stderr, "usage: test_remote_relay --remote --listen ADDRESS --relay-ipc DIR "
                         "--keys-path PATH --uid N\n");
        return 2;
    }
    cg_error_t *err = NULL;
    cg_remote_keys_t server, relay;
    cg_remote_keys_new (&server, NULL);
    cg_remote_keys_new (&relay, NULL);
    s_pump_t pump = {0};
    cleanup_free char *endpoint = cg_strdupf ("tcp://%s:*", listen);
    pump.hub = cg_remote_hub_new (endpoint, &server, 8 << 20, &err);
    if (!pump.hub || cg_remote_hub_allow (pump.hub, "sb-relay", relay.public_key, &err) < 0) {
        fprintf (stderr, "hub: %s\n", cg_error_message (err));
        return 1;
    }
    printf ("{\"endpoint\": \"%s\", \"server_key\": \"%s\", \"relay_public\": \"%s\", "
            "\"relay_secret\": \"%s\"}\n",
            cg_remote_hub_endpoint (pump.hub), server.public_key, relay.public_key,
            relay.secret_key);
    fflush (stdout);
    char host_ipc[] = "/tmp/cg-relay-host-XXXXXX";
    if (!mkdtemp (host_ipc))
        return 1;
    s_where_t where = {relay_ipc, keys_path, uid, false};
    s_drive (&pump, &where, host_ipc, 120000);
    s_send (&pump, &(cg_remote_msg_t){.verb = CG_REMOTE_BYE, .text = B ("done")});
    s_pump (&pump, 500, NULL); /* the relay's BYE */
    s_pump_end (&pump);
    cg_rm_rf (host_ipc, NULL);
    printf ("%d passed, %d failed\n", s_passes, s_failures);
    return s_failures ? 1 : 0;
}

//  A number option that is not one (atoi took "abc" for 0: --uid 0 is root) ends the relay
//  at once with its usage (exit 2), before it dials anything.
static void
test_bad_args (const char *exe)
{
    const char *name = "bad_args";
    //  Everything else right (a key file, an ipc dir), so that the number alone stops it.
    char dir[] = "/tmp/cg-relay-args-XXXXXX";
    CHECK (mkdtemp (dir), "temp dir");
    cg_remote_keys_t keys;
    CHECK (cg_remote_keys_new (&keys, NULL) == 0, "keys");
    cleanup_free char *keys_file = cg_strdupf ("%s/keys", dir);
    cleanup_free char *keys_text = cg_strdupf ("%s\n%s\n", keys.public_key, keys.secret_key);
    CHECK (cg_write_file (keys_file, keys_text, strlen (keys_text), 0600, NULL) == 0, "keys file");
    const char *bad[][2] = {{"--uid", "abc"},
                            {"--gid", "-1"},
                            {"--attach-ms", "5x"},
                            {"--max-message-mb", "0"},
                            {"--uid", "99999999999"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        pid_t pid = fork ();
        if (pid == 0) {
            prctl (PR_SET_PDEATHSIG, SIGKILL);
            int null_fd = open ("/dev/null", O_WRONLY);
            dup2 (null_fd, STDERR_FILENO);
            char *argv[] = {cg_xstrdup (exe),
                            "relay",
                            "--server",
                            "tcp://127.0.0.1:9",
                            "--server-key",
                            keys.public_key,
                            "--keys",
                            keys_file,
                            "--sandbox",
                            "sb",
                            "--ipc-dir",
                            dir,
                            cg_xstrdup (bad[i][0]),
                            cg_xstrdup (bad[i][1]),
                            NULL};
            execv (exe, argv);
            _exit (127);
        }
        int status = -1;
        for (int t = 0; t < 100 && waitpid (pid, &status, WNOHANG) == 0; t++)
            usleep (50 * 1000);
        if (status == -1)
            kill (pid, SIGKILL), waitpid (pid, NULL, 0);
        EXPECT (WIFEXITED (status) && WEXITSTATUS (status) == 2, "%s %s: usage, exit 2 (%d)",
                bad[i][0], bad[i][1], status);
    }
    cg_rm_rf (dir, NULL);
}

int
main (int argc, char **argv)
{
    if (argc > 1 && strcmp (argv[1], "--remote") == 0) {
        zsys_init ();
        zsys_set_logstream (NULL);
        return s_remote (argc, argv);
    }
    const char *exe = getenv ("CELLGATE_BIN");
    if (!exe || access (exe, X_OK) != 0) {
        fprintf (stderr, "skipped: CELLGATE_BIN is not the cellgate binary\n");
        return 77;
    }
    if (system (S_PYTHON " -c 'import ipykernel' 2>/dev/null") != 0) {
        fprintf (stderr, "skipped: " S_PYTHON " has no ipykernel (scripts/setup.sh installs it)\n");
        return 77;
    }
    zsys_init ();
    zsys_set_logstream (NULL);
    test_bad_args (exe);
    test_local (exe);
    printf ("%d passed, %d failed\n", s_passes, s_failures);
    return s_failures ? 1 : 0;
}
