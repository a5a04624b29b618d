/*  cg_remote_msg — the messages between a remote sandbox's relay and the server (issue 31,
    docs/design/scale-out.md): one ZeroMQ multipart message each, over the CURVE link
    (remote/cg_remote_link). Frame 0 is the verb; the frames after it, by verb:

    relay to server (CG_REMOTE_UP)
      HELLO    <version> <sandbox>        first on a connection; <sandbox> must be the id the
                                          link authenticated (the server checks, not this)
      STARTED  <exec> <pid>               an EXEC's process runs, as <pid> in the sandbox
      EXITED   <exec> <status>            it ended: its exit code, or 128 + its signal
      FAILED   <exec> <message>           it could not be started
      OUT      <exec> <stream> <bytes>    what it wrote to stdout (1) or stderr (2), when its
                                          spec asked for its output; every OUT of a process
                                          comes before its EXITED
      STATS    <memory> <peak> <oom>      bytes, bytes, OOM kills (-1: unknown)
      FROM     <kernel> <channel> <peer> <part>...
                                          an ATTACHed kernel's message on channel 0-4 (shell,
                                          iopub, stdin, control, hb) to <peer>, byte for byte
      BYE      <message>                  the relay is ending

    server to relay (CG_REMOTE_DOWN)
      WELCOME  <version>
      EXEC     <exec> <spec>              start a process: spec is JSON {argv, env, cwd,
                                          stdin, output, seccomp} (cg_remote_spec_parse)
      IN       <exec> <bytes>             bytes for its stdin (when its spec asked for it);
                                          none: its stdin is closed
      SIGNAL   <exec>|* <signal>          signal an EXEC's process, or (*) every process but
                                          the relay
      STATS?                              ask for STATS
      PUT      <name> <bytes>             a small file (a kernel's connection file) into the
                                          sandbox's ipc dir, readable by the sandbox user only
      ATTACH   <kernel> <name>            the kernel started by EXEC <kernel> binds the ipc
                                          sockets connection file <name> (PUT before) names:
                                          forward its channels (until its EXITED)
      TO       <kernel> <channel> <peer> <part>...
                                          a message to an ATTACHed kernel on channel 0-4
                                          from <peer>
      BYE      <message>

    Numbers are decimal ASCII without sign or leading zeros (but -1 where it may be unknown);
    an exec or sandbox id is 1 to 64 of [0-9a-z_-]; a peer is 0 to 255 opaque bytes (a
    ZeroMQ routing id; empty on iopub, where it is none); a message's text is UTF-8 without
    NUL, 1,024 bytes at most. Every verb's frame count is fixed, but TO and FROM's parts:
    1 to CG_REMOTE_PARTS_MAX. Everything a relay sends is outside input to the server: the
    sandbox's code may have taken the relay over. */
#ifndef CG_REMOTE_MSG_H
#define CG_REMOTE_MSG_H

#include "base/cg_error.h"

#include <czmq.h>
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*  The protocol's version (HELLO and WELCOME carry it). */
#define CG_REMOTE_VERSION 1

/*  Parts of one kernel message in TO or FROM: its routing ids, delimiter, signature, four
    JSON parts and its buffers. */
#define CG_REMOTE_PARTS_MAX 64

/*  A frame's limits: ids, a peer, a text, a PUT's contents, an EXEC's spec. */
#define CG_REMOTE_ID_MAX 64
#define CG_REMOTE_PEER_MAX 255
#define CG_REMOTE_TEXT_MAX 1024
#define CG_REMOTE_PUT_MAX 65536
#define CG_REMOTE_SPEC_MAX 65536

/*  The kernel channels TO and FROM name, by number. */
#define CG_REMOTE_CHANNELS 5
#define CG_REMOTE_IOPUB 1

typedef enum {
    CG_REMOTE_UP,   /* relay to server */
    CG_REMOTE_DOWN, /* server to relay */
} cg_remote_dir_t;

typedef enum {
    CG_REMOTE_HELLO,
    CG_REMOTE_STARTED,
    CG_REMOTE_EXITED,
    CG_REMOTE_FAILED,
    CG_REMOTE_OUT,
    CG_REMOTE_STATS,
    CG_REMOTE_FROM,
    CG_REMOTE_WELCOME,
    CG_REMOTE_EXEC,
    CG_REMOTE_IN,
    CG_REMOTE_SIGNAL,
    CG_REMOTE_STATS_ASK,
    CG_REMOTE_PUT,
    CG_REMOTE_ATTACH,
    CG_REMOTE_TO,
    CG_REMOTE_BYE,
} cg_remote_verb_t;

/*  Bytes borrowed from a message's frames. */
typedef struct {
    const void *data;
    size_t size;
} cg_remote_bytes_t;

/*  One message, decoded (every pointer borrowed from the frames it came from) or to be
    encoded. Only the fields of its verb mean anything. */
typedef struct {
    cg_remote_verb_t verb;
    int64_t version; /* HELLO, WELCOME */
    //  HELLO: the sandbox; EXEC, STARTED, EXITED, FAILED, OUT, IN, SIGNAL, ATTACH, TO, FROM:
    //  the exec (SIGNAL: "*" for every process); PUT: the file's name.
    cg_remote_bytes_t id;
    //  FAILED, BYE: the message; EXEC: the spec; PUT, OUT, IN: the bytes; ATTACH: the
    //  connection file's name.
    cg_remote_bytes_t text;
    //  STARTED: the pid; EXITED: the status; SIGNAL: the signal; STATS: memory, peak, OOM
    //  kills; OUT: the stream (1 or 2).
    int64_t number[3];
    int channel;                    /* TO, FROM */
    cg_remote_bytes_t peer;         /* TO, FROM */
    const cg_remote_bytes_t *parts; /* TO, FROM: the kernel message's frames */
    size_t part_count;
} cg_remote_msg_t;

/*  The frames of one message at most (verb, kernel, channel, peer and the parts). */
#define CG_REMOTE_FRAMES_MAX (4 + CG_REMOTE_PARTS_MAX)

/*  True when the SIZE bytes at DATA are an exec or sandbox id: 1 to CG_REMOTE_ID_MAX of
    [0-9a-z_-]. */
bool cg_remote_id_ok (const void *data, size_t size);

/*  VERB's name on the wire ("HELLO"). Static. */
const char *cg_remote_verb_name (cg_remote_verb_t verb);

/*  Decodes FRAMES (COUNT of them, outside input) sent in direction DIR into *MSG, whose
    pointers then borrow from FRAMES. Returns 0, or -1 with *err set (EPROTO) saying which
    frame is wrong and why; *MSG is undefined then. */
int cg_remote_decode (const cg_remote_bytes_t *frames, size_t count, cg_remote_dir_t dir,
                      cg_remote_msg_t *msg, cg_error_t **err);

/*  Points FRAMES (room for MAX) at ZMSG's frames, borrowed. Returns how many, or -1 when
    ZMSG has more than MAX. */
int cg_remote_frames_of (zmsg_t *zmsg, cg_remote_bytes_t *frames, size_t max);

/*  Encodes MSG as a new message (the caller owns it). MSG must be valid for its verb (as
    cg_remote_decode would take it): anything else is a programmer's mistake and aborts. */
zmsg_t *cg_remote_encode (const cg_remote_msg_t *msg);

/*  Reads the kernel connection file NAME in DIR_FD, a dir the sandbox's code may write (no
    link followed, nothing but a regular file opened, never blocking, 64 KiB at most): its
    sockets' base name (the last part of "ip": 1 to 64 of [A-Za-z0-9._-], no leading dot;
    the caller frees it) and the five channels' ports into PORTS (shell, iopub, stdin,
    control, hb). Both ends read it: the relay to find the kernel's sockets, the server to
    bind their mirror. Returns NULL when it is not an ipc kernel's connection file. */
char *cg_remote_connection_read (int dir_fd, const char *name, int ports[CG_REMOTE_CHANNELS]);

/*  An EXEC's spec, parsed: strings allocated, NULL-terminated lists. */
typedef struct {
    char **argv;     /* 1 to CG_REMOTE_ARGS_MAX */
    char **env;      /* 0 to CG_REMOTE_ARGS_MAX, each KEY=VALUE */
    char *cwd;       /* absolute */
    bool stdin;      /* its stdin is a pipe the server writes (IN), else /dev/null */
    bool output;     /* its stdout and stderr come back (OUT), else the relay's stderr */
    json_t *seccomp; /* the seccomp profile it runs under (OCI's linux.seccomp), or NULL */
} cg_remote_spec_t;

#define CG_REMOTE_ARGS_MAX 256
#define CG_REMOTE_ARG_MAX 4096

/*  Parses SPEC (SIZE bytes of JSON: {"argv": [...], "env": [...], "cwd": "/...", and
    optionally "stdin" and "output", booleans, and "seccomp", an object (compiled by the
    relay, cg_remote_seccomp); nothing else) into *OUT. Strings must be UTF-8 without NUL, CG_REMOTE_ARG_MAX bytes at most.
    Returns 0 (free with cg_remote_spec_free), or -1 with *err set (EPROTO). */
int cg_remote_spec_parse (const void *spec, size_t size, cg_remote_spec_t *out, cg_error_t **err);

/*  Makes the JSON text of a spec of ARGV, ENV (NULL-terminated; ENV may be NULL), CWD,
    STDIN, OUTPUT and SECCOMP (borrowed; NULL: none). Caller frees. */
char *cg_remote_spec_text (const char *const *argv, const char *const *env, const char *cwd,
                           bool stdin, bool output, const json_t *seccomp);

/*  Frees what cg_remote_spec_parse made; safe on a zeroed spec. */
void cg_remote_spec_free (cg_remote_spec_t *spec);

#endif
