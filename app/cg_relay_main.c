/*  cellgate-relay — `cellgate relay` as a program of its own, for remote sandboxes: it links
    remote/ and base/ only, so the sandbox image (Dockerfile.kernel) needs libzmq, czmq,
    jansson and libsodium for it, not the server's libraries; small enough (under Docker's
    500 KiB) to be shipped to a node as a Docker config. */
#include "remote/cg_remote_relay.h"

int
main (int argc, char **argv)
{
    return cg_remote_relay_main (argc, argv);
}
