/*  cg_pool — the warm pool: per language, sandboxes whose kernels are started, handshaken
    and (Python) preloaded before anyone asks, each handed to one session or one-shot run
    and never back. A pooled sandbox has its own slot (directory, workspace, container),
    made fresh for it, and its kernel its own HMAC key; no user code runs in it before it
    is claimed. Single-threaded: the registry calls everything here from the main loop. */
#ifndef CG_POOL_H
#define CG_POOL_H

#include "artifacts/cg_metrics.h"
#include "artifacts/cg_workspace.h"
#include "containers/cg_container.h"
#include "egress/cg_egress.h"
#include "base/cg_config.h"
#include "base/cg_error.h"
#include "base/cg_kernels.h"

#include <czmq.h>
#include <stdbool.h>

typedef struct cg_pool_t cg_pool_t;

/*  Parses --pool's TEXT ("python=1,javascript=1,bash=1"; "off" or "0": none) into SIZES,
    indexed as the process's catalogue (base/cg_kernels.h) lists its languages (a language
    not named gets 0; a name may be an alias). Returns 0, or -1 with *err set for a language
    the catalogue does not offer or a bad or too large count. */
int cg_pool_parse (const char *text, int sizes[CG_KERNELS_MAX], cg_error_t **err);

/*  Returns the name of the catalogue's language INDEX ("python", "r", "bash"), or NULL. */
const char *cg_pool_language_name (int index);

/*  Checks --pool-preload's TEXT (comma-separated dotted module names, or "none"). Returns
    the Python code that imports them silently (each in a throwaway namespace, a missing
    one skipped), NULL for "none"; or NULL with *err set for a bad name. Caller owns the
    result. */
char *cg_pool_preload_code (const char *text, cg_error_t **err);

/*  Creates the pool of CONFIG's --pool sizes (NULL when they are all 0 or do not parse:
    no pool). Its runners make their sandboxes in SESSIONS_DIR with container ids
    CONTAINER_PREFIX + slot and send their messages to RESULTS_ENDPOINT, as the
    registry's do, with EGRESS's way out when it is not NULL. All arguments are borrowed and must outlive the pool. */
cg_pool_t *cg_pool_new (const cg_config_t *config, cg_backend_t *backend, const char *sessions_dir,
                        const char *container_prefix, const char *results_endpoint,
                        cg_egress_t *egress);

/*  Tells every pooled runner to stop (their sandboxes are destroyed in parallel). */
void cg_pool_stop (cg_pool_t *self);

/*  Stops the pooled runners and waits for each, and frees the pool. Safe on NULL. */
void cg_pool_destroy (cg_pool_t **self_p);

/*  Takes in what the warming sandboxes said, empties the pool when the host's
    MemAvailable is below --pool-min-available-mb, stops ready sandboxes beyond a
    language's target, and while the pool's memory budget allows, starts warming
    sandboxes for languages below their target, at most two at once, beside user calls
    or not; their cgroups' CPU weight is full when QUIET (no user call in flight), low
    beside user calls (their processes at nice 10 either way: cg_runner). A language's
    target follows its recent claims per 10 s window: the largest of their decaying
    peak, the open window's, and those expected during one measured warm-up (at their
    EWMA rate) plus one; from 1 to its --pool size, which it starts at. Returns the ms
    until it wants to be called again, or -1. */
int cg_pool_tick (cg_pool_t *self, bool quiet);

/*  Hands over a ready sandbox of LANGUAGE, or returns NULL (none ready: the caller
    starts a cold one). The runner returned is the caller's (stop it as any runner);
    it is told it belongs to a one-shot run when ONESHOT. For a session (not ONESHOT) the
    caller also gets the sandbox's SLOT, *DIR_P (its host directory) and *WS_P (its
    workspace, may be NULL), which it owns. The pool forgets the sandbox. */
zactor_t *cg_pool_claim (cg_pool_t *self, const char *language, bool oneshot, char slot[13],
                         char **dir_p, cg_workspace_t **ws_p);

/*  Adds each pooled language's hits, misses (claims cg_pool_claim answered with NULL),
    target, ready and warming sandboxes to GAUGES. Nothing on NULL. */
void cg_pool_metrics (cg_pool_t *self, cg_metrics_gauges_t *gauges);

/*  Returns the sandboxes ready in the pool (0 on NULL). */
size_t cg_pool_ready (cg_pool_t *self);

#endif
