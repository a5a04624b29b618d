/*  cg_fault — failure injection for tests: `--test-fail-at STEP[,STEP...]` makes each named
    step of a sandbox's creation fail once (a step named N times fails the first N times
    it is reached), so tests can check that a half-made sandbox is
    torn down. Off unless that flag is on the command line (no environment variable, no
    config file), and then logged at start-up. */
#ifndef CG_FAULT_H
#define CG_FAULT_H

#include "base/cg_error.h"

/*  The steps of a sandbox's creation, in the order they happen: the session's directories,
    its workspace file system, package layer and ipc dir, the OCI config, the started
    container, then per kernel its spec, connection file, sockets, process and handshake. */
#define CG_FAULT_STEPS                                                                             \
    "session_dir", "workspace", "site", "ipc_dir", "oci_config", "container_start", "kernel_spec", \
        "connection_file", "kernel_sockets", "kernel_exec", "handshake"

/*  Removes every `--test-fail-at LIST` pair from ARGV (shifting the rest down and
    updating *ARGC) and arms the steps LIST names (comma-separated). Call it once, before
    any thread starts. Returns how many steps were armed, or -1 with *err set for an
    unknown step or a flag without a value. */
int cg_fault_take_args (int *argc, char **argv, cg_error_t **err);

/*  Returns -1 with *err set ("injected failure at STEP") when STEP has failures left to
    inject (taking one), else 0. Thread-safe; costs one load when nothing is armed. */
int cg_fault_at (const char *step, cg_error_t **err);

#endif
