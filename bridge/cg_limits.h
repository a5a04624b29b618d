/*  cg_limits — the names and limits every layer shares, each defined once here. */
#ifndef CG_LIMITS_H
#define CG_LIMITS_H

/*  A macro's value as a string literal: CG_STR (CG_SESSION_ID_MAX) is "128". */
#define CG_STR_(x) #x
#define CG_STR(x) CG_STR_ (x)

/*  Inside every sandbox: the workspace, what the host writes for the sandbox to read
    (read-only inside: stdin files, command scripts), and the one writable directory
    below it, for the kernels' ZeroMQ ipc sockets and connection files (ipykernel
    rewrites its own). */
#define CG_WORKSPACE_MOUNT "/mnt/data"
#define CG_RUN_MOUNT "/run/cellgate"
#define CG_IPC_MOUNT CG_RUN_MOUNT "/ipc"

/*  The longest session id a client may give (letters, digits, '_', '.', '-'): tools,
    download URLs and the HTTP route all use this one bound. */
#define CG_SESSION_ID_MAX 128

/*  A session's optional name, in characters. */
#define CG_SESSION_NAME_MAX 128

/*  A run's timeout, in seconds (a client may give it in milliseconds too). */
#define CG_TIMEOUT_MIN_S 1
#define CG_TIMEOUT_MAX_S 300

#endif
