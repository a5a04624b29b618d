/*  cg_remote_relay — `cellgate relay`, a remote sandbox's init (issue 31): it dials the
    server's hub over the CURVE link (cg_remote_link) with the sandbox's key, then starts
    and signals the processes the server asks for (EXEC, SIGNAL), reports their exits and
    the sandbox's memory, writes the kernels' connection files into its ipc dir (PUT), and
    forwards each ATTACHed kernel's five channels, frame for frame, between the kernel's
    ipc sockets and the link (TO, FROM). Messages stay signed by the kernel's key, which the
    relay never reads. The processes it starts run as --uid/--gid (when it is root), with no
    new privileges, in a network namespace with no interface (--isolate-net), so they can
    neither use the relay's connection nor read its key. */
#ifndef CG_REMOTE_RELAY_H
#define CG_REMOTE_RELAY_H

/*  The processes (kernels and commands) a relay runs at once, and the peers (a server's
    client sockets) a kernel's channel serves at once. */
#define CG_REMOTE_EXECS_MAX 64
#define CG_REMOTE_PEERS_MAX 16

/*  `cellgate relay --server tcp://HOST:PORT --server-key Z85 --keys FILE --sandbox ID
    --ipc-dir DIR [--uid N --gid N] [--isolate-net] [--max-message-mb N] [--attach-ms N]`
    (how long an ATTACH looks for the kernel's sockets; 60,000): KEYS holds the
    relay's public and secret key (Z85), one a line. Runs until the server says BYE, the
    link's key is refused for good, or SIGTERM. Returns the process's exit status. */
int cg_remote_relay_main (int argc, char **argv);

#endif
