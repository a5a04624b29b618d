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
/*  The size of the ipc directory's own tmpfs (artifacts/cg_wsfs): room for the kernels'
    connection files and sockets (a few hundred bytes and six inodes per kernel). */
#define CG_IPC_TMPFS_KB 1024
#define CG_IPC_TMPFS_INODES 256

/*  The longest session id a client may give (letters, digits, '_', '.', '-'): tools,
    download URLs and the HTTP route all use this one bound. */
#define CG_SESSION_ID_MAX 128

/*  The longest human-readable name start_session accepts for a session. */
#define CG_SESSION_NAME_MAX 128

/*  The HTTP listener's connections (cg_http_limits_t, settings --http-*): at most this many
    from one peer address; this many of all of them kept for the server's owner (127.0.0.1,
    ::1); and the seconds a connection has to send a whole request. */
#define CG_HTTP_PER_ADDRESS_DEFAULT 128
#define CG_HTTP_OWNER_RESERVE_DEFAULT 32
#define CG_HTTP_REQUEST_TIMEOUT_S_DEFAULT 30

/*  The download listener's default address (--http-listen) and, when its port is taken,
    the ports tried after it in order (8081 to 8089), before any free one. */
#define CG_HTTP_LISTEN_HOST "127.0.0.1"
#define CG_HTTP_LISTEN_PORT 8080
#define CG_HTTP_LISTEN_TRIES 10

/*  A run's timeout in whole seconds: the tools' `timeout` argument, their `timeout_ms`
    (the same range in milliseconds) and --default-timeout. Plain decimal literals, so
    that CG_STR and CG_MS_STR can spell them in messages. */
#define CG_TIMEOUT_MIN_S 1
#define CG_TIMEOUT_MAX_S 300
#define CG_TIMEOUT_MIN_MS (CG_TIMEOUT_MIN_S * 1000)
#define CG_TIMEOUT_MAX_MS (CG_TIMEOUT_MAX_S * 1000)

/*  A whole-seconds literal spelled in milliseconds: CG_MS_STR (CG_TIMEOUT_MAX_S) is "300000". */
#define CG_MS_STR(seconds) CG_STR (seconds) "000"

/*  Each seed's default timeout of its running tools: seed 000's execute_code (seed 002's
    CODEXEC_DEFAULT_TIMEOUT_MS too, so its tools share it: --default-timeout), seed 004's
    run_python (SANDBOX_EXEC_TIMEOUT_S: --run-python-timeout), in seconds; and seed 001's
    (the seed001 tool profile), fixed, in milliseconds. */
#define CG_DEFAULT_TIMEOUT_S 30
#define CG_RUN_PYTHON_TIMEOUT_S 60
#define CG_SEED001_TIMEOUT_MS 5000

/*  A workspace text file small enough to be returned inline: a run's created or
    modified text files (seed 003) and read_artifact's text of a text file. */
#define CG_TEXT_FILE_INLINE_MAX (64 * 1024)

/*  A run's stdout or stderr kept per execution-log entry, in bytes: a result cut for the
    client still logs its whole output up to this (the saved output file holds the rest). */
#define CG_LOG_STREAM_MAX (1024 * 1024)

#endif
