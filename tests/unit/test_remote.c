/*  Unit tests for remote/: the relay's messages (every verb encoded and decoded back; each
    kind of bad frame refused, naming it; a verb sent the wrong way refused; an EXEC's spec
    parsed strictly) and the CURVE link (a relay with an admitted key gets through, under
    the sandbox id its key was admitted for, whatever it claims; one with an unknown key, a
    plain client without CURVE and a relay that trusts another server's key get nothing
    through, and the hub counts the refusals; a forgotten sandbox's key is refused; the
    table is capped); the kernel connection file both ends read (no FIFO opened, no link
    followed, an ipc kernel's only); the sandbox's seccomp profile compiled for the relay's
    processes, its denial in force in a child, a broken profile refused. */
#include "remote/cg_remote_link.h"
#include "remote/cg_remote_msg.h"
#include "remote/cg_remote_seccomp.h"
#include "containers/cg_seccomp.h"
#include "base/cg_fs.h"
#include "base/cg_util.h"
#include "cg_test.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <string.h>

#define B(text) ((cg_remote_bytes_t){(text), sizeof (text) - 1})

//  Decodes the NULL-terminated FRAMES (texts) sent DIR; returns 0 or -1, *why the error.
static int
s_decode (const char *const *texts, cg_remote_dir_t dir, cg_remote_msg_t *msg, char *why,
          size_t why_size)
{
    cg_remote_bytes_t frames[CG_REMOTE_FRAMES_MAX + 4];
    size_t count = 0;
    while (texts[count])
        frames[count] = (cg_remote_bytes_t){texts[count], strlen (texts[count])}, count++;
    cg_error_t *err = NULL;
    int rc = cg_remote_decode (frames, count, dir, msg, &err);
    snprintf (why, why_size, "%s", err ? cg_error_message (err) : "");
    cg_error_destroy (&err);
    return rc;
}

//  The same bytes (either may be NULL when empty).
static bool
s_same (cg_remote_bytes_t a, cg_remote_bytes_t b)
{
    return a.size == b.size && (a.size == 0 || memcmp (a.data, b.data, a.size) == 0);
}

//  Encodes MSG, decodes it back (sent DIR) and checks it is the same message.
static bool
s_round_trip (const cg_remote_msg_t *msg, cg_remote_dir_t dir)
{
    zmsg_t *zmsg = cg_remote_encode (msg);
    cg_remote_bytes_t frames[CG_REMOTE_FRAMES_MAX];
    int count = cg_remote_frames_of (zmsg, frames, CG_REMOTE_FRAMES_MAX);
    cg_remote_msg_t back;
    cg_error_t *err = NULL;
    bool same = count > 0 && cg_remote_decode (frames, (size_t)count, dir, &back, &err) == 0;
    if (err)
        fprintf (stderr, "round trip of %s: %s\n", cg_remote_verb_name (msg->verb),
                 cg_error_message (err));
    cg_error_destroy (&err);
    if (same) {
        same = back.verb == msg->verb && back.version == msg->version && s_same (back.id, msg->id)
               && s_same (back.text, msg->text)
               && memcmp (back.number, msg->number, sizeof back.number) == 0
               && back.channel == msg->channel && s_same (back.peer, msg->peer)
               && back.part_count == msg->part_count;
        for (size_t i = 0; same && i < back.part_count; i++)
            same = s_same (back.parts[i], msg->parts[i]);
    }
    zmsg_destroy (&zmsg);
    return same;
}

static void
test_messages (void)
{
    const cg_remote_bytes_t parts[] = {B ("<IDS|MSG>"), B ("abc123"), B ("{}"), {"\0\xff", 2}};
    const struct {
        cg_remote_msg_t msg;
        cg_remote_dir_t dir;
    } good[] = {
        {{.verb = CG_REMOTE_HELLO, .version = 1, .id = B ("cg-0a1b-2c3d")}, CG_REMOTE_UP},
        {{.verb = CG_REMOTE_STARTED, .id = B ("k1"), .number = {4242}}, CG_REMOTE_UP},
        {{.verb = CG_REMOTE_EXITED, .id = B ("k1"), .number = {137}}, CG_REMOTE_UP},
        {{.verb = CG_REMOTE_FAILED, .id = B ("k1"), .text = B ("no such file: \xc3\xa9")},
         CG_REMOTE_UP},
        {{.verb = CG_REMOTE_STATS, .number = {1 << 20, 2 << 20, -1}}, CG_REMOTE_UP},
        {{.verb = CG_REMOTE_OUT,
          .id = B ("k1"),
          .number = {2},
          .text = {"\0\xff"
                   "bytes",
                   7}},
         CG_REMOTE_UP},
        {{.verb = CG_REMOTE_IN, .id = B ("k1"), .text = B ("line\n")}, CG_REMOTE_DOWN},
        {{.verb = CG_REMOTE_IN, .id = B ("k1")}, CG_REMOTE_DOWN},
        {{.verb = CG_REMOTE_FROM,
          .id = B ("k1"),
          .channel = 0,
          .peer = B ("\x01peer"),
          .parts = parts,
          .part_count = 4},
         CG_REMOTE_UP},
        {{.verb = CG_REMOTE_FROM,
          .id = B ("k1"),
          .channel = CG_REMOTE_IOPUB,
          .parts = parts,
          .part_count = 1},
         CG_REMOTE_UP},
        {{.verb = CG_REMOTE_WELCOME, .version = 1}, CG_REMOTE_DOWN},
        {{.verb = CG_REMOTE_EXEC,
          .id = B ("k2"),
          .text = B ("{\"argv\":[\"x\"],\"env\":[],\"cwd\":\"/\"}")},
         CG_REMOTE_DOWN},
        {{.verb = CG_REMOTE_SIGNAL, .id = B ("*"), .number = {9}}, CG_REMOTE_DOWN},
        {{.verb = CG_REMOTE_STATS_ASK}, CG_REMOTE_DOWN},
        {{.verb = CG_REMOTE_PUT, .id = B ("kernel-k2.json"), .text = {"\0bin", 4}}, CG_REMOTE_DOWN},
        {{.verb = CG_REMOTE_ATTACH, .id = B ("k2"), .text = B ("kernel-k2.json")}, CG_REMOTE_DOWN},
        {{.verb = CG_REMOTE_TO,
          .id = B ("k2"),
          .channel = 4,
          .peer = B ("p"),
          .parts = parts,
          .part_count = 3},
         CG_REMOTE_DOWN},
        {{.verb = CG_REMOTE_BYE, .text = B ("going")}, CG_REMOTE_DOWN},
        {{.verb = CG_REMOTE_BYE, .text = B ("")}, CG_REMOTE_UP},
    };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
        EXPECT (s_round_trip (&good[i].msg, good[i].dir), "%s (#%zu) survives encode and decode",
                cg_remote_verb_name (good[i].msg.verb), i);

    const struct {
        const char *frames[8];
        cg_remote_dir_t dir;
        const char *why; /* part of the error */
    } bad[] = {
        {{NULL}, CG_REMOTE_UP, "no frames"},
        {{"HELO", "1", "x", NULL}, CG_REMOTE_UP, "unknown verb"},
        {{"hello", "1", "x", NULL}, CG_REMOTE_UP, "unknown verb"},
        {{"EXEC", "k1", "{}", NULL}, CG_REMOTE_UP, "not sent this way"},
        {{"FROM", "k", "0", "p", "x", NULL}, CG_REMOTE_DOWN, "not sent this way"},
        {{"HELLO", "0", "x", NULL}, CG_REMOTE_UP, "not a version"},
        {{"HELLO", "01", "x", NULL}, CG_REMOTE_UP, "not a version"},
        {{"HELLO", "1", "X", NULL}, CG_REMOTE_UP, "not an id"},
        {{"HELLO", "1", "a/b", NULL}, CG_REMOTE_UP, "not an id"},
        {{"HELLO", "1", "", NULL}, CG_REMOTE_UP, "not an id"},
        {{"HELLO", "1", NULL}, CG_REMOTE_UP, "too few"},
        {{"HELLO", "1", "x", "y", NULL}, CG_REMOTE_UP, "too many"},
        {{"STARTED", "k", "-1", NULL}, CG_REMOTE_UP, "not a number"},
        {{"STARTED", "k", "99999999999999999999", NULL}, CG_REMOTE_UP, "not a number"},
        {{"STARTED", "k", "1 ", NULL}, CG_REMOTE_UP, "not a number"},
        {{"EXITED", "k", "384", NULL}, CG_REMOTE_UP, "exit status"},
        {{"SIGNAL", "k", "0", NULL}, CG_REMOTE_DOWN, "not a signal"},
        {{"SIGNAL", "k", "65", NULL}, CG_REMOTE_DOWN, "not a signal"},
        {{"SIGNAL", "**", "9", NULL}, CG_REMOTE_DOWN, "neither an exec id nor *"},
        {{"STATS", "1", "2", "-2", NULL}, CG_REMOTE_UP, "not a number"},
        {{"FAILED", "k", "\xff", NULL}, CG_REMOTE_UP, "UTF-8"},
        {{"FROM", "k", "5", "p", "x", NULL}, CG_REMOTE_UP, "not a channel"},
        {{"FROM", "k", "1", "p", "x", NULL}, CG_REMOTE_UP, "a peer on iopub"},
        {{"FROM", "k", "0", "", "x", NULL}, CG_REMOTE_UP, "none on another channel"},
        {{"FROM", "k", "0", "p", NULL}, CG_REMOTE_UP, "0 parts"},
        {{"FROM", "K", "0", "p", "x", NULL}, CG_REMOTE_UP, "not an id"},
        {{"ATTACH", "k", "../k.json", NULL}, CG_REMOTE_DOWN, "not a file name"},
        {{"PUT", "../x", "y", NULL}, CG_REMOTE_DOWN, "not a file name"},
        {{"PUT", ".hidden", "y", NULL}, CG_REMOTE_DOWN, "not a file name"},
        {{"PUT", "a/b", "y", NULL}, CG_REMOTE_DOWN, "not a file name"},
        {{"STATS?", "x", NULL}, CG_REMOTE_DOWN, "too many"},
        {{"OUT", "k", "0", "x", NULL}, CG_REMOTE_UP, "not a stream"},
        {{"OUT", "k", "3", "x", NULL}, CG_REMOTE_UP, "not a stream"},
        {{"IN", "k", "x", NULL}, CG_REMOTE_UP, "not sent this way"},
        {{"OUT", "k", "1", "x", NULL}, CG_REMOTE_DOWN, "not sent this way"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cg_remote_msg_t msg;
        char why[256];
        int rc = s_decode (bad[i].frames, bad[i].dir, &msg, why, sizeof why);
        EXPECT (rc < 0 && strstr (why, bad[i].why), "bad #%zu (%s) refused with \"%s\": %s", i,
                bad[i].frames[0] ? bad[i].frames[0] : "-", bad[i].why, why);
    }
    //  The parts' cap, and a peer's.
    const char *many[CG_REMOTE_PARTS_MAX + 6] = {"TO", "k", "0", "p"};
    for (int i = 0; i <= CG_REMOTE_PARTS_MAX; i++)
        many[4 + i] = "x";
    cg_remote_msg_t msg;
    char why[256];
    EXPECT (s_decode (many, CG_REMOTE_DOWN, &msg, why, sizeof why) < 0 && strstr (why, "65 parts"),
            "65 parts refused: %s", why);
    many[4 + CG_REMOTE_PARTS_MAX] = NULL;
    EXPECT (s_decode (many, CG_REMOTE_DOWN, &msg, why, sizeof why) == 0 && msg.part_count == 64,
            "64 parts taken: %s", why);
    char peer[CG_REMOTE_PEER_MAX + 2];
    memset (peer, 'p', sizeof peer - 1);
    peer[sizeof peer - 1] = '\0';
    EXPECT (s_decode ((const char *[]){"TO", "k", "0", peer, "x", NULL}, CG_REMOTE_DOWN, &msg, why,
                      sizeof why)
                    < 0
                && strstr (why, "peer over 255"),
            "a 256-byte peer refused: %s", why);
    //  A file over 64 KiB is refused before anything is made of it.
    size_t big_size = CG_REMOTE_PUT_MAX + 1;
    char *big = cg_xcalloc (1, big_size + 1);
    memset (big, 'a', big_size);
    EXPECT (
        s_decode ((const char *[]){"PUT", "f", big, NULL}, CG_REMOTE_DOWN, &msg, why, sizeof why)
                < 0
            && strstr (why, "over 64 KiB"),
        "a PUT over 64 KiB refused: %s", why);
    free (big);
}

static void
test_spec (void)
{
    cg_remote_spec_t spec;
    cg_error_t *err = NULL;
    char *text =
        cg_remote_spec_text ((const char *[]){"python3", "-m", "x", NULL},
                             (const char *[]){"A=1", "B=", NULL}, "/mnt/data", true, false, NULL);
    EXPECT (cg_remote_spec_parse (text, strlen (text), &spec, &err) == 0 && spec.argv
                && strcmp (spec.argv[2], "x") == 0 && !spec.argv[3]
                && strcmp (spec.env[1], "B=") == 0 && strcmp (spec.cwd, "/mnt/data") == 0
                && spec.stdin && !spec.output,
            "a spec made by cg_remote_spec_text parses back: %s", text);
    cg_remote_spec_free (&spec);
    free (text);
    const char *bad[] = {
        "[]",
        "{\"argv\":[],\"env\":[],\"cwd\":\"/\"}",
        "{\"argv\":[\"x\"],\"env\":[\"NOEQUALS\"],\"cwd\":\"/\"}",
        "{\"argv\":[\"x\"],\"env\":[\"=x\"],\"cwd\":\"/\"}",
        "{\"argv\":[\"x\"],\"env\":[],\"cwd\":\"relative\"}",
        "{\"argv\":[\"x\"],\"env\":[]}",
        "{\"argv\":[\"x\\u0000y\"],\"env\":[],\"cwd\":\"/\"}",
        "{\"argv\":[1],\"env\":[],\"cwd\":\"/\"}",
        "{\"argv\":[\"x\"],\"env\":[],\"cwd\":\"/\",\"uid\":0}",
        "{\"argv\":[\"x\"],\"argv\":[\"y\"],\"env\":[],\"cwd\":\"/\"}",
        "{\"argv\":[\"x\"],\"env\":[],\"cwd\":\"/\",\"stdin\":\"yes\"}",
        "{\"argv\":[\"x\"],\"env\":[],\"cwd\":\"/\",\"output\":1}",
        "{\"argv\":[\"x\"],\"env\":[],\"cwd\":\"/\",\"seccomp\":[]}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        EXPECT (cg_remote_spec_parse (bad[i], strlen (bad[i]), &spec, &err) < 0 && err
                    && err->code == EPROTO && !spec.argv && !spec.env && !spec.cwd,
                "bad spec refused, nothing kept: %s (%s)", bad[i],
                err ? cg_error_message (err) : "");
        cg_error_destroy (&err);
    }
}

//  The sandbox's profile (containers/cg_seccomp) compiles; loaded into a child, it denies
//  what it denies (personality with a persona outside Docker's list) and allows the rest;
//  a broken profile is refused naming what is wrong.
static void
test_seccomp (void)
{
    const char *name = "seccomp";
    cg_error_t *err = NULL;
    json_t *profile = cg_seccomp_profile ();
    scmp_filter_ctx filter = cg_remote_seccomp_compile (profile, &err);
    CHECK (filter, "the sandbox's profile compiles: %s", err ? cg_error_message (err) : "");
    pid_t pid = fork ();
    if (pid == 0) {
        prctl (PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
        if (seccomp_load (filter) < 0)
            _exit (10);
        errno = 0;
        int denied = personality (0x0040000) == -1 && errno == EPERM; /* ADDR_NO_RANDOMIZE */
        int allowed = getpid () > 0 && personality (0xffffffff) != -1;
        _exit (denied && allowed ? 0 : 11);
    }
    int status = -1;
    waitpid (pid, &status, 0);
    EXPECT (WIFEXITED (status) && WEXITSTATUS (status) == 0,
            "under the filter, personality(ADDR_NO_RANDOMIZE) is EPERM, a query allowed: %d",
            status);
    seccomp_release (filter);
    json_decref (profile);
    const char *bad[] = {
        "{\"syscalls\":[]}",
        "{\"defaultAction\":\"SCMP_ACT_TRAPX\",\"syscalls\":[]}",
        "{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"syscalls\":[{\"names\":[\"read\"],\"action\":"
        "\"NOPE\"}]}",
        "{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"syscalls\":[{\"names\":[\"read\"],\"action\":"
        "\"SCMP_ACT_ALLOW\",\"args\":[{\"index\":7,\"op\":\"SCMP_CMP_EQ\"}]}]}",
        "{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"syscalls\":[{\"names\":[7],\"action\":\"SCMP_ACT_"
        "ALLOW\"}]}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        json_t *json = json_loads (bad[i], 0, NULL);
        scmp_filter_ctx none = cg_remote_seccomp_compile (json, &err);
        EXPECT (!none && err && err->code == EINVAL, "a broken profile refused: %s (%s)", bad[i],
                err ? cg_error_message (err) : "compiled");
        cg_error_destroy (&err);
        if (none)
            seccomp_release (none);
        json_decref (json);
    }
    //  An unknown syscall name is left to the default action, not refused.
    json_t *unknown = json_loads ("{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"syscalls\":[{\"names\":"
                                  "[\"no_such_call\",\"read\"],\"action\":\"SCMP_ACT_ALLOW\"}]}",
                                  0, NULL);
    scmp_filter_ctx some = cg_remote_seccomp_compile (unknown, &err);
    EXPECT (some, "a name libseccomp does not know is skipped: %s",
            err ? cg_error_message (err) : "");
    cg_error_destroy (&err);
    if (some)
        seccomp_release (some);
    json_decref (unknown);
}

//  The connection file both ends read, in a dir the sandbox's code may write: a FIFO or a
//  link planted at its name is neither opened nor followed (a FIFO would block the reader),
//  and only an ipc kernel's file with five ports is taken, by its base name.
static void
test_connection (void)
{
    const char *name = "connection";
    char dir[] = "/tmp/cg-remote-conn-XXXXXX";
    CHECK (mkdtemp (dir), "temp dir");
    int dir_fd = open (dir, O_RDONLY | O_DIRECTORY);
    const char *good =
        "{\"transport\":\"ipc\",\"ip\":\"/run/cellgate/ipc/python\",\"shell_port\":1,"
        "\"iopub_port\":2,\"stdin_port\":3,\"control_port\":4,\"hb_port\":5,\"key\":\"k\"}";
    cg_write_file_at (dir_fd, "good.json", good, strlen (good), 0600, (uid_t)-1, (gid_t)-1, NULL);
    const char *tcp =
        "{\"transport\":\"tcp\",\"ip\":\"127.0.0.1\",\"shell_port\":1,\"iopub_port\":2,"
        "\"stdin_port\":3,\"control_port\":4,\"hb_port\":5}";
    cg_write_file_at (dir_fd, "tcp.json", tcp, strlen (tcp), 0600, (uid_t)-1, (gid_t)-1, NULL);
    const char *dots = "{\"transport\":\"ipc\",\"ip\":\"/x/..\",\"shell_port\":1,\"iopub_port\":2,"
                       "\"stdin_port\":3,\"control_port\":4,\"hb_port\":5}";
    cg_write_file_at (dir_fd, "dots.json", dots, strlen (dots), 0600, (uid_t)-1, (gid_t)-1, NULL);
    CHECK (mkfifoat (dir_fd, "fifo.json", 0600) == 0
               && symlinkat ("good.json", dir_fd, "link.json") == 0,
           "a FIFO and a link planted");
    int ports[CG_REMOTE_CHANNELS] = {0};
    char *base = cg_remote_connection_read (dir_fd, "good.json", ports);
    EXPECT (base && strcmp (base, "python") == 0 && ports[0] == 1 && ports[4] == 5,
            "an ipc kernel's file: its base name and ports");
    free (base);
    EXPECT (!cg_remote_connection_read (dir_fd, "fifo.json", ports),
            "a FIFO is not opened (nor waited on)");
    EXPECT (!cg_remote_connection_read (dir_fd, "link.json", ports), "a link is not followed");
    EXPECT (!cg_remote_connection_read (dir_fd, "tcp.json", ports), "a tcp kernel's is refused");
    EXPECT (!cg_remote_connection_read (dir_fd, "dots.json", ports),
            "an ip ending in .. is refused");
    EXPECT (!cg_remote_connection_read (dir_fd, "missing.json", ports), "a missing file: NULL");
    close (dir_fd);
    cg_rm_rf (dir, NULL);
}

//  Waits up to MS for a message at HUB (answering handshakes meanwhile).
static zmsg_t *
s_hub_wait (cg_remote_hub_t *hub, int ms, zframe_t **route, char **sandbox)
{
    int64_t until = zclock_mono () + ms;
    while (zclock_mono () < until) {
        zmq_pollitem_t items[] = {{zsock_resolve (cg_remote_hub_sock (hub)), 0, ZMQ_POLLIN, 0},
                                  {zsock_resolve (cg_remote_hub_zap_sock (hub)), 0, ZMQ_POLLIN, 0}};
        zmq_poll (items, 2, 20);
        cg_remote_hub_admit (hub);
        zmsg_t *msg = cg_remote_hub_recv (hub, route, sandbox);
        if (msg)
            return msg;
    }
    return NULL;
}

static void
test_link (void)
{
    const char *name = "link";
    cg_error_t *err = NULL;
    cg_remote_keys_t server, relay, stranger, other_server;
    CHECK (cg_remote_keys_new (&server, &err) == 0 && cg_remote_keys_new (&relay, &err) == 0
               && cg_remote_keys_new (&stranger, &err) == 0
               && cg_remote_keys_new (&other_server, &err) == 0,
           "keys: %s", err ? cg_error_message (err) : "");
    cg_remote_hub_t *hub = cg_remote_hub_new ("tcp://127.0.0.1:*", &server, 1 << 20, &err);
    CHECK (hub, "hub: %s", err ? cg_error_message (err) : "");
    const char *endpoint = cg_remote_hub_endpoint (hub);
    EXPECT (strncmp (endpoint, "tcp://127.0.0.1:", 16) == 0 && strcmp (endpoint + 16, "0") != 0,
            "listening on a port of its own: %s", endpoint);
    cg_remote_hub_t *second = cg_remote_hub_new ("tcp://127.0.0.1:*", &server, 1 << 20, &err);
    EXPECT (!second && err && err->code == EADDRINUSE, "a second hub in the process is refused: %s",
            err ? cg_error_message (err) : "made");
    cg_error_destroy (&err);
    cg_remote_hub_destroy (&second);

    EXPECT (cg_remote_hub_allow (hub, "sb-one", relay.public_key, &err) == 0, "admit sb-one");
    EXPECT (cg_remote_hub_allow (hub, "sb-two", relay.public_key, &err) < 0 && err->code == EEXIST,
            "the same key for another sandbox is refused");
    cg_error_destroy (&err);
    EXPECT (cg_remote_hub_allow (hub, "SB", stranger.public_key, &err) < 0 && err->code == EINVAL,
            "a bad id is refused");
    cg_error_destroy (&err);
    EXPECT (cg_remote_hub_allow (hub, "sb-three", "not a key", &err) < 0 && err->code == EINVAL,
            "a bad key is refused");
    cg_error_destroy (&err);

    //  The admitted relay: its HELLO arrives under sb-one even though it claims sb-two.
    zsock_t *dealer = cg_remote_dial (endpoint, server.public_key, &relay, 1 << 20, &err);
    CHECK (dealer, "dial: %s", err ? cg_error_message (err) : "");
    zsock_set_sndtimeo (dealer, 2000);
    zmsg_t *hello = cg_remote_encode (
        &(cg_remote_msg_t){.verb = CG_REMOTE_HELLO, .version = 1, .id = B ("sb-two")});
    zmsg_send (&hello, dealer);
    zframe_t *route = NULL;
    char *sandbox = NULL;
    zmsg_t *got = s_hub_wait (hub, 5000, &route, &sandbox);
    EXPECT (got && sandbox && strcmp (sandbox, "sb-one") == 0,
            "the admitted relay's message arrives under the id its key was given: %s",
            sandbox ? sandbox : "nothing");
    //  The way back reaches it.
    if (got) {
        zmsg_t *welcome =
            cg_remote_encode (&(cg_remote_msg_t){.verb = CG_REMOTE_WELCOME, .version = 1});
        EXPECT (cg_remote_hub_send (hub, route, &welcome, &err) == 0 && !welcome, "welcome sent");
        zsock_set_rcvtimeo (dealer, 5000);
        zmsg_t *back = zmsg_recv (dealer);
        EXPECT (back && zframe_streq (zmsg_first (back), "WELCOME"), "the relay gets WELCOME");
        zmsg_destroy (&back);
    }
    zmsg_destroy (&got);
    zframe_destroy (&route);
    zstr_free (&sandbox);
    size_t refused = cg_remote_hub_refused (hub);

    //  A relay with a key the hub never got, a client without CURVE, and a relay that
    //  trusts another server's key: nothing gets through.
    zsock_t *unknown = cg_remote_dial (endpoint, server.public_key, &stranger, 1 << 20, &err);
    zsock_t *plain = zsock_new (ZMQ_DEALER);
    zsock_connect (plain, "%s", endpoint);
    zsock_t *fooled = cg_remote_dial (endpoint, other_server.public_key, &relay, 1 << 20, &err);
    zsock_t *clients[] = {unknown, plain, fooled};
    for (size_t i = 0; i < 3; i++) {
        zsock_set_sndtimeo (clients[i], 0);
        zmsg_t *msg = cg_remote_encode (
            &(cg_remote_msg_t){.verb = CG_REMOTE_HELLO, .version = 1, .id = B ("sb-one")});
        zmsg_send (&msg, clients[i]);
        zmsg_destroy (&msg);
    }
    got = s_hub_wait (hub, 1500, &route, &sandbox);
    EXPECT (!got,
            "no message from an unknown key, a plain client or a relay fooled about the server");
    EXPECT (cg_remote_hub_refused (hub) >= refused + 1,
            "the unknown key's handshake was refused: %zu", cg_remote_hub_refused (hub) - refused);
    zmsg_destroy (&got);
    zframe_destroy (&route);
    zstr_free (&sandbox);
    for (size_t i = 0; i < 3; i++)
        zsock_destroy (&clients[i]);

    //  Forgotten: the sandbox's relay can no longer come in (a new connection).
    cg_remote_hub_forget (hub, "sb-one");
    zsock_destroy (&dealer);
    dealer = cg_remote_dial (endpoint, server.public_key, &relay, 1 << 20, &err);
    hello = cg_remote_encode (
        &(cg_remote_msg_t){.verb = CG_REMOTE_HELLO, .version = 1, .id = B ("sb-one")});
    zsock_set_sndtimeo (dealer, 0);
    zmsg_send (&hello, dealer);
    zmsg_destroy (&hello);
    got = s_hub_wait (hub, 1500, &route, &sandbox);
    EXPECT (!got, "a forgotten sandbox's relay gets nothing through");
    zmsg_destroy (&got);
    zframe_destroy (&route);
    zstr_free (&sandbox);
    zsock_destroy (&dealer);

    //  The table is capped.
    int admitted = 0;
    for (int i = 0; i <= CG_REMOTE_RELAYS_MAX; i++) {
        cg_remote_keys_t keys;
        char id[32];
        snprintf (id, sizeof id, "sb-%d", i);
        cg_remote_keys_new (&keys, NULL);
        if (cg_remote_hub_allow (hub, id, keys.public_key, &err) == 0)
            admitted++;
    }
    EXPECT (admitted == CG_REMOTE_RELAYS_MAX && err && err->code == EAGAIN,
            "%d admitted, the next refused: %s", admitted, err ? cg_error_message (err) : "");
    cg_error_destroy (&err);
    cg_remote_hub_destroy (&hub);
    EXPECT (!hub, "destroy sets NULL");
}

int
main (void)
{
    zsys_init ();
    zsys_set_logstream (NULL);
    test_messages ();
    test_spec ();
    test_connection ();
    test_seccomp ();
    test_link ();
    printf ("%d passed, %d failed\n", s_passes, s_failures);
    return s_failures ? 1 : 0;
}
