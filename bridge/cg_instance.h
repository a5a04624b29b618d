/*  cg_instance — one running server's claim on the state dir: a locked instance dir,
    its container name prefix, and the clean-up of what crashed servers left. */
#ifndef CG_INSTANCE_H
#define CG_INSTANCE_H

#include "containers/cg_container.h"
#include "base/cg_config.h"
#include "base/cg_error.h"

#include <jansson.h>

typedef struct cg_instance_t cg_instance_t;

/*  Creates STATE/instances/<12 hex>, locked for this process's life, after removing
    the containers and directories of instances whose server is gone (their lock is
    free). With --keep-sessions, a dead instance that kept sessions under the same
    settings (its kept marker) is taken over instead of created (one per start; others
    wait), and one that kept them under other settings is removed, its records kept for
    cg_instance_lost. BACKEND and CONFIG are borrowed. Returns a new instance the caller owns, or
    NULL with *err set. */
cg_instance_t *cg_instance_new (cg_backend_t *backend, const cg_config_t *config, cg_error_t **err);

/*  Removes what servers that are gone left in the state dir, as cg_instance_new does: for
    each instance whose lock is free, its containers, the mounts below its directory and
    the directory, each step logged. Leaves live instances (this one included) alone, and
    instances that kept sessions (--keep-sessions): the next starting server's.
    Safe on any thread while the server runs (it reads only what it was created with).
    Returns how many instances were removed. */
int cg_instance_sweep (cg_instance_t *self);

/*  Removes this instance's remaining containers and its directory; with --keep-sessions,
    when sessions recorded there were kept (cg_keep), leaves all of it for the next server
    and only releases the lock. */
void cg_instance_destroy (cg_instance_t **self_p);

/*  Returns the records (a JSON array, borrowed) of the sessions a previous server kept
    under other sandbox settings: their sandboxes were removed at start-up. */
json_t *cg_instance_lost (cg_instance_t *self);

/*  Returns the directory sessions are created in. */
const char *cg_instance_sessions_dir (cg_instance_t *self);

/*  Returns the prefix of this instance's container ids ("cg-<12 hex>-"). */
const char *cg_instance_prefix (cg_instance_t *self);

/*  A session's record in its directory (cg_registry_keep_save), at most
    CG_KEEP_RECORD_MAX bytes; anything larger is not ours. */
#define CG_KEEP_RECORD "record.json"
#define CG_KEEP_RECORD_MAX (64 * 1024)

/*  Returns true when CONFIG keeps sessions: --keep-sessions on, over stdio (an HTTP
    owner, an Mcp-Session-Id, dies with the server: HTTP sessions are never kept). */
bool cg_instance_keeps (const cg_config_t *config);

/*  Calls FN (with ARG) for each session directory name (12 hex digits) in SESSIONS_DIR. */
void cg_instance_each_slot (const char *sessions_dir, void (*fn) (void *arg, const char *slot),
                            void *arg);

#endif
