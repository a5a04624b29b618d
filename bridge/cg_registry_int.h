/*  cg_registry_int — the registry's fields, for its own files (cg_registry.c, the runs'
    cg_registry_runs.c) and the unit tests. No other code includes it. */
#ifndef CG_REGISTRY_INT_H
#define CG_REGISTRY_INT_H

#include "bridge/cg_closed.h"
#include "bridge/cg_pool.h"
#include "bridge/cg_registry.h"

struct cg_registry_t {
    const cg_config_t *config;
    cg_backend_t *backend;
    cg_instance_t *instance;
    cg_egress_t *egress; /* --egress proxy's service, or NULL */
    char *results_endpoint;
    zsock_t *results;    /* what the runners send (PULL) */
    zhashx_t *sessions;  /* owner + "/" + id -> cg_registry_session_t */
    zlistx_t *closing;   /* sessions whose runners are destroying their sandboxes */
    size_t oneshots;     /* one-shot runners alive */
    zactor_t *installer; /* the one shared installer running (borrowed), or NULL */
    cg_registry_event_fn *listener;
    void *listener_arg;
    cg_closed_t *closed; /* the ids close_session closed lately */
    cg_pool_t *pool;     /* the warm pool, or NULL */
    cg_kept_t *kept;     /* one-shot runs' files kept for download */
    struct {
        cg_run_observer_fn *fn;
        void *arg;
        bool early; /* told before the answer (cg_registry_observe_runs_early) */
    } observers[CG_REGISTRY_RUN_OBSERVERS]; /* told of every run's end, in order */
    size_t observers_len;
    zhashx_t *runs;                /* key -> the report of a run begun (cg_registry_run_begin) */
    cg_registry_events_fn *events; /* the runners' events that are not the registry's */
    void *events_arg;
    cg_loop_t *loop;                /* the process's, or NULL (cg_registry_on_loop) */
    cg_loop_watch_t *results_watch; /* the results socket's, on LOOP */
};

/*  The runs' table (cg_registry_runs.c): made by cg_registry_new, freed by
    cg_registry_destroy (a run still in it is dropped unanswered). */
zhashx_t *cg_registry_runs_new (void);
void cg_registry_runs_destroy (zhashx_t **runs_p);

/*  The results socket's watch (cg_registry_runs.c): reads one event and ends its run, or
    hands it to the events' function. */
void cg_registry_results_cb (cg_loop_t *loop, short revents, void *arg);

/*  A runner's report of the session in SLOT (REPORT, or the one a RESULT carries): its
    kernel's host pid and the sandbox's memory in KiB (-1 unknown). Unknown slots are
    ignored. */
void cg_registry_apply_report (cg_registry_t *self, const char *slot, long pid, long kib);

#endif
