/*  cg_fault — failure injection for tests: `--test-fail-at STEP[,STEP...]` makes each named
    step of a sandbox's creation fail once (a step named N times fails the first N times
    it is reached), so tests can check that a half-made sandbox is
    torn down. Off unless that flag is on the command line (no environment variable, no
    config file), and then logged at start-up. `--test-hold-at POINT:PATH` makes the work
    that reaches the hold point POINT wait there, once, until the file PATH exists, so tests
    can hold a worker's job in flight without timing it. */
#ifndef CG_FAULT_H
#define CG_FAULT_H

#include "base/cg_error.h"

/*  The steps of a sandbox's creation, in the order they happen: the session's directories,
    its workspace file system, package layer and ipc dir, the OCI config, the started
    container, then per kernel its spec, connection file, sockets, process and handshake;
    and of its end: the runtime's delete of its container (runc; as if the runtime died in
    it). */
#define CG_FAULT_STEPS                                                                             \
    "session_dir", "workspace", "site", "ipc_dir", "oci_config", "container_start", "kernel_spec", \
        "connection_file", "kernel_sockets", "kernel_exec", "handshake", "container_delete"

/*  The hold points: the execution log's reader about to search or read the log; its writer
    about to write a run's or a session's line, or to index a line it has just written; a
    transport's parser (stdio, Streamable HTTP) about to parse a large message; the encoder
    about to encode a large message to a client; the gateway's decoder about to check a large
    kernel message. */
#define CG_FAULT_HOLDS \
    "log_read", "log_write", "log_index", "request_parse", "encode", "gateway_decode"

/*  Removes every `--test-fail-at LIST` and `--test-hold-at POINT:PATH` pair from ARGV (shifting the rest down and
    updating *ARGC) and arms the steps LIST names (comma-separated) and the holds. Call it
    once, before any thread starts. Returns how many steps and holds were armed, or -1 with
    *err set for an unknown step or point or a flag without a value. */
int cg_fault_take_args (int *argc, char **argv, cg_error_t **err);

/*  Returns -1 with *err set ("injected failure at STEP") when STEP has failures left to
    inject (taking one), else 0. Thread-safe; costs one load when nothing is armed. */
int cg_fault_at (const char *step, cg_error_t **err);

/*  When the hold POINT is armed (and not yet taken), waits until its file exists, logging
    the wait. Returns at once otherwise. Thread-safe; for worker threads, never the loop. */
void cg_fault_hold (const char *point);

#endif
