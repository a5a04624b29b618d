/*  cg_keep — sessions that outlive the server (--keep-sessions): the instance's kept
    marker with its settings' fingerprint, each session's record (record.json, 0600, in
    its host-only session dir), and the re-adoption of both by the next server. */
#ifndef CG_KEEP_H
#define CG_KEEP_H

#include "cg_config.h"
#include "cg_error.h"
#include "cg_registry.h"

#include <jansson.h>
#include <stdbool.h>
#include <sys/types.h>

/*  The name of the instance's kept marker and of a session's record. */
#define CG_KEEP_MARKER "kept.json"
#define CG_KEEP_RECORD "record.json"

/*  Returns true when CONFIG keeps sessions: --keep-sessions on, over stdio (an HTTP
    owner, an Mcp-Session-Id, dies with the server: HTTP sessions are never kept). */
bool cg_keep_enabled (const cg_config_t *config);

/*  Returns true when SESSION is kept across a restart under CONFIG: keeping is on and its
    owner is the stdio client (an HTTP owner, an Mcp-Session-Id, dies with the server). */
bool cg_keep_eligible (const cg_config_t *config, const cg_registry_session_t *session);

/*  Writes INSTANCE_DIR's kept marker: CONFIG's state dir and the fingerprint of the
    settings a sandbox is made with. Returns 0, or -1 with *err set. */
int cg_keep_mark (const char *instance_dir, const cg_config_t *config, cg_error_t **err);

/*  Reads INSTANCE_DIR's kept marker. Returns 1 when it was written under settings equal
    to CONFIG's (same state dir, same fingerprint), 0 when under other settings, -2 when
    for another state dir (moved, or reached by another path: not this server's to
    touch), -1 when there is none (the instance kept nothing). */
int cg_keep_check (const char *instance_dir, const cg_config_t *config);

/*  Appends to LOST (an array) the records of every session in SESSIONS_DIR. */
void cg_keep_collect (const char *sessions_dir, json_t *lost);

/*  Writes SESSION's record into its directory (atomically, 0600), for the next server;
    its last activity is saved as wall-clock time, so the idle TTL runs on across a
    restart. Failures are logged. */
void cg_keep_save (const cg_registry_session_t *session);

/*  Removes SESSION_DIR's record: the session is not kept. */
void cg_keep_forget (const char *session_dir);

/*  Reads SESSION_DIR's record into SESSION (id, owner, language, name, token, start,
    executions, last activity, packages, languages); SESSION is zeroed first and its
    strings are new. Returns 0, or -1 when there is no valid record. */
int cg_keep_restore (const char *session_dir, cg_registry_session_t *session);

/*  As cg_keep_restore, from RECORD (a record as cg_keep_collect gathers them). */
int cg_keep_restore_json (json_t *record, cg_registry_session_t *session);

/*  Returns true when host process PID runs in the cgroup of container CONTAINER_ID (so a
    pid read from a pid file is still that container's process, not a reused pid). */
bool cg_keep_pid_in (pid_t pid, const char *container_id);

/*  Returns true when the container CONTAINER_ID whose bundle is BUNDLE_DIR still runs: the
    init pid the host recorded there is a process in its cgroup. */
bool cg_keep_container_alive (const char *bundle_dir, const char *container_id);

/*  Returns the languages (a new strv, at most MAX) whose kernel keys (kernel-<language>.key,
    cg_kernel_adopt) are in BUNDLE_DIR. */
char **cg_keep_kernels (const char *bundle_dir, int max);

/*  Re-adopts at start-up what the previous server kept in INSTANCE's sessions dir (each
    recorded session is restored into REGISTRY and its runner re-adopts the sandbox;
    anything else there, a one-shot sandbox's, is removed) and restores LOST's sessions
    (records of an instance whose sandboxes could not be kept) as fresh sessions whose
    next run says their state was lost. Returns how many sessions were restored. */
int cg_keep_adopt (cg_registry_t *registry, cg_backend_t *backend, cg_instance_t *instance,
                   const cg_config_t *config);

#endif
