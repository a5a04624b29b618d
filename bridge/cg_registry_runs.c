/*  cg_registry_runs — every run's one end. A front end hands the registry a run's report
    when the run starts (cg_registry_run_begin); the registry reads the runners' results
    socket on the loop, and when a RESULT comes for a run begun, ends it here before any
    front end sees it: the session's bookkeeping, the early observers, the front end's
    answer, the other observers. So the way up from a sandbox goes straight: the runner,
    the registry, the front end that answers. A gateway cell (no runner's RESULT) and a
    run its front end stops waiting for end through the same call. */
#include "bridge/cg_outcome.h"
#include "bridge/cg_registry.h"
#include "bridge/cg_registry_int.h"
#include "bridge/cg_runner_msg.h"
#include "base/cg_log.h"
#include "base/cg_util.h"

#include <assert.h>
#include <string.h>

//  A run begun: its report, whose strings are the copies in TEXTS, and its session's name.
typedef struct {
    cg_run_report_t report;
    char *texts[7];           /* front_end, tool, client_id, client_name, key, run_id, script */
    char *owner, *session_id; /* the session it runs in; NULL: a one-shot sandbox */
} s_run_t;

//  Copies TEXT (NULL: none) into RUN's texts at SLOT; returns the copy.
static const char *
s_keep (s_run_t *run, int slot, const char *text)
{
    return run->texts[slot] = text ? cg_xstrdup (text) : NULL;
}

static void
s_run_free (void **item)
{
    s_run_t *run = *item;
    if (!run)
        return;
    for (size_t i = 0; i < sizeof run->texts / sizeof *run->texts; i++)
        free (run->texts[i]);
    json_decref (run->report.request);
    cg_outcome_destroy (&run->report.outcome);
    free (run->owner);
    free (run->session_id);
    free (run);
    *item = NULL;
}

//  The table has no destructor: a run taken out of it (zhashx_delete) is the taker's.
zhashx_t *
cg_registry_runs_new (void)
{
    return zhashx_new ();
}

void
cg_registry_runs_destroy (zhashx_t **runs_p)
{
    if (!*runs_p)
        return;
    for (void *run = zhashx_first (*runs_p); run; run = zhashx_next (*runs_p))
        s_run_free (&run);
    zhashx_destroy (runs_p);
}

//  Takes the run begun under KEY out of RUNS: the caller's (s_run_free), or NULL.
static s_run_t *
s_take (zhashx_t *runs, const char *key)
{
    s_run_t *run = key ? zhashx_lookup (runs, key) : NULL;
    if (run)
        zhashx_delete (runs, key);
    return run;
}

void
cg_registry_observe_runs (cg_registry_t *self, cg_run_observer_fn *fn, void *arg)
{
    assert (fn && self->observers_len < CG_REGISTRY_RUN_OBSERVERS);
    self->observers[self->observers_len].fn = fn;
    self->observers[self->observers_len].early = false;
    self->observers[self->observers_len++].arg = arg;
}

void
cg_registry_observe_runs_early (cg_registry_t *self, cg_run_observer_fn *fn, void *arg)
{
    cg_registry_observe_runs (self, fn, arg);
    self->observers[self->observers_len - 1].early = true;
}

void
cg_registry_on_events (cg_registry_t *self, cg_registry_events_fn *fn, void *arg)
{
    self->events = fn;
    self->events_arg = arg;
}

void
cg_registry_run_ended (cg_registry_t *self, cg_registry_session_t *session,
                       const cg_run_report_t *run)
{
    cg_outcome_t *outcome = run->outcome;
    if (session) {
        if (run->key && session->busy && strcmp (session->busy, run->key) == 0)
            cg_registry_set_busy (session, NULL);
        session->executions++;
        cg_registry_touch (session);
        const char *language = outcome ? outcome->language : NULL;
        cg_registry_kernel_t *kernel =
            language ? cg_registry_session_kernel (session, language) : NULL;
        if (kernel)
            kernel->last_activity_us = zclock_time () * 1000;
        if (outcome && outcome->ran)
            cg_registry_add_language (session, language);
        cleanup_free char *notice = cg_registry_take_notice (session);
        if (notice && outcome)
            cg_outcome_add_notice (outcome, notice);
        cg_registry_save (self, session);
    }
    for (size_t i = 0; i < self->observers_len; i++)
        if (self->observers[i].early)
            self->observers[i].fn (self->observers[i].arg, session, run);
    if (run->answer)
        run->answer (run->answer_arg, session, run);
    for (size_t i = 0; i < self->observers_len; i++)
        if (!self->observers[i].early)
            self->observers[i].fn (self->observers[i].arg, session, run);
}

bool
cg_registry_run_begin (cg_registry_t *self, const cg_registry_session_t *session,
                       const cg_run_report_t *run)
{
    assert (run->key && !run->outcome);
    //  One run per runner at a time: a session's, or a one-shot sandbox's (past the
    //  limit, in --oneshot-reserve's slots); the shared installer's besides.
    size_t most = (size_t)self->config->max_sessions + (size_t)self->config->oneshot_reserve + 1;
    if (zhashx_lookup (self->runs, run->key) || zhashx_size (self->runs) >= most) {
        cg_log (0, "registry: run %s not begun (%s)", run->key,
                zhashx_lookup (self->runs, run->key) ? "its key is taken" : "too many runs");
        return false;
    }
    s_run_t *copy = cg_xcalloc (1, sizeof *copy);
    copy->report = (cg_run_report_t){.front_end = s_keep (copy, 0, run->front_end),
                                     .tool = s_keep (copy, 1, run->tool),
                                     .client_id = s_keep (copy, 2, run->client_id),
                                     .client_name = s_keep (copy, 3, run->client_name),
                                     .key = s_keep (copy, 4, run->key),
                                     .request = json_deep_copy (run->request),
                                     .run_id = s_keep (copy, 5, run->run_id),
                                     .script = s_keep (copy, 6, run->script),
                                     .silent = run->silent,
                                     .answer = run->answer,
                                     .answer_arg = run->answer_arg};
    if (session) {
        copy->owner = cg_xstrdup (session->owner);
        copy->session_id = cg_xstrdup (session->id);
    }
    zhashx_insert (self->runs, run->key, copy);
    return true;
}

//  Ends RUN (taken out of the table: a late RESULT finds nothing) with OUTCOME (taken;
//  NULL: none), in its session as it is now (gone: NULL), and frees it.
static void
s_end (cg_registry_t *self, s_run_t *run, cg_outcome_t *outcome)
{
    run->report.outcome = outcome;
    cg_registry_session_t *session =
        run->session_id ? cg_registry_find (self, run->owner, run->session_id) : NULL;
    cg_registry_run_ended (self, session, &run->report);
    void *item = run;
    s_run_free (&item);
}

bool
cg_registry_run_end_now (cg_registry_t *self, const char *key, cg_outcome_t *outcome)
{
    s_run_t *run = s_take (self->runs, key);
    if (run)
        s_end (self, run, outcome);
    else
        cg_outcome_destroy (&outcome);
    return run != NULL;
}

bool
cg_registry_run_begun (cg_registry_t *self, const char *key)
{
    return key && zhashx_lookup (self->runs, key) != NULL;
}

void
cg_registry_results_cb (cg_loop_t *loop, short revents, void *arg)
{
    (void)loop;
    (void)revents;
    cg_registry_t *self = arg;
    cg_runner_event_t *event = cg_runner_event_recv (self->results);
    s_run_t *run = NULL;
    //  The session's REPORT that came with it first, as if it had come just before.
    if (event && event->tag == CG_RUNNER_RESULT && event->result.slot)
        cg_registry_apply_report (self, event->result.slot, event->result.pid, event->result.kib);
    if (!event || cg_registry_runner_report (self, event))
        ;
    else if (event->tag == CG_RUNNER_RESULT && (run = s_take (self->runs, event->key))) {
        s_end (self, run, event->result.outcome);
        event->result.outcome = NULL;
    }
    else if (self->events)
        self->events (self->events_arg, event);
    cg_runner_event_destroy (&event);
}

void
cg_registry_run_drop (cg_registry_t *self, const char *key)
{
    void *run = s_take (self->runs, key);
    s_run_free (&run);
}
