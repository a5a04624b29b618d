/*  Unit tests: cg_registry_run_ended — the one end of every run: the session's bookkeeping
    (busy, executions, last activity of the session and its kernel, languages, notice) done
    before the front end's answer and the run observers, and the observers told in the
    order they were added, a one-shot run (no session) and a run without an outcome
    included. No sandbox runs: the registry has no instance, and the sessions are made
    here. The runs begun (cg_registry_run_begin): a runner's RESULT for one is ended by the
    registry before any front end sees it; one ended now, or dropped, leaves a late RESULT
    to the events' function; a RESULT that carries its session's REPORT applies it first.
    Also: closed sessions whose runners ended side by side are all freed. */
#include "bridge/cg_registry.h"
#include "bridge/cg_registry_int.h"
#include "base/cg_config.h"
#include "base/cg_loop.h"
#include "base/cg_util.h"
#include "cg_test.h"

#include <stdlib.h>
#include <string.h>

//  What the observers saw, in order: "<name>:<executions>:<busy or ->:<session or ->;".
static char s_seen[1024];

static void
s_observe (void *arg, const cg_registry_session_t *session, const cg_run_report_t *run)
{
    (void)run;
    size_t len = strlen (s_seen);
    snprintf (s_seen + len, sizeof s_seen - len, "%s:%d:%s:%s;", (const char *)arg,
              session ? session->executions : -1, session && session->busy ? session->busy : "-",
              session ? session->id : "-");
}

//  The front end's answer (cg_run_report_t's answer), seen as an observer is.
static void
s_answer (void *arg, cg_registry_session_t *session, const cg_run_report_t *run)
{
    s_observe (arg, session, run);
}

//  A session as the registry would hold it, busy with call KEY (NULL: idle).
static cg_registry_session_t *
s_session (const char *key)
{
    cg_registry_session_t *session = cg_xcalloc (1, sizeof *session);
    session->id = cg_xstrdup ("s1");
    session->owner = cg_xstrdup ("stdio");
    session->language = cg_xstrdup ("python");
    session->busy = key ? cg_xstrdup (key) : NULL;
    session->executions = 2;
    snprintf (session->kernels[0].language, sizeof session->kernels[0].language, "python");
    return session;
}

static void
s_session_free (cg_registry_session_t **session_p)
{
    cg_registry_session_t *session = *session_p;
    free (session->id);
    free (session->owner);
    free (session->language);
    free (session->busy);
    free (session->notice);
    zlistx_destroy (&session->languages);
    free (session);
    *session_p = NULL;
}

static void
s_bookkeeping (cg_registry_t *registry)
{
    cg_registry_session_t *session = s_session ("k1");
    session->notice = cg_xstrdup ("session s1 was closed before");
    cg_outcome_t *outcome = cg_outcome_new ("python", "exec_1", "s1");
    outcome->ran = true;
    cg_run_report_t run = {.front_end = "mcp",
                           .tool = "execute_code",
                           .key = "k1",
                           .outcome = outcome,
                           .answer = s_answer,
                           .answer_arg = "answer"};
    s_seen[0] = '\0';
    cg_registry_run_ended (registry, session, &run);
    EXPECT (strcmp (s_seen, "answer:3:-:s1;first:3:-:s1;second:3:-:s1;third:3:-:s1;") == 0,
            "the bookkeeping, the answer, then the observers in order: %s", s_seen);
    EXPECT (!session->busy, "no longer busy");
    EXPECT (session->executions == 3, "executions %d", session->executions);
    EXPECT (session->last_activity_us > 0 && session->last_activity_at[0], "active now");
    EXPECT (session->kernels[0].last_activity_us > 0, "its kernel active now");
    EXPECT (session->languages && zlistx_size (session->languages) == 1
                && strcmp (zlistx_first (session->languages), "python") == 0,
            "the language is recorded");
    EXPECT (!session->notice, "the notice is taken");
    EXPECT (outcome->notice && strstr (outcome->notice, "was closed before"),
            "the notice goes to the outcome: %s", outcome->notice ? outcome->notice : "(none)");
    cg_outcome_destroy (&outcome);
    s_session_free (&session);
}

static void
s_other_call (cg_registry_t *registry)
{
    //  A run whose key is not the session's busy one leaves the busy call alone; a run with
    //  no outcome (the runner gave none) still counts, and records no language.
    cg_registry_session_t *session = s_session ("k1");
    session->notice = cg_xstrdup ("dropped");
    cg_run_report_t run = {.front_end = "gateway", .tool = "gateway"};
    s_seen[0] = '\0';
    cg_registry_run_ended (registry, session, &run);
    EXPECT (strcmp (s_seen, "first:3:k1:s1;second:3:k1:s1;third:3:k1:s1;") == 0, "%s", s_seen);
    EXPECT (session->busy && strcmp (session->busy, "k1") == 0, "still busy with k1");
    EXPECT (!session->languages, "no language without an outcome");
    EXPECT (!session->notice, "the notice is taken even so");
    s_session_free (&session);
}

static void
s_oneshot (cg_registry_t *registry)
{
    cg_outcome_t *outcome = cg_outcome_new ("bash", "exec_2", NULL);
    cg_run_report_t run = {.front_end = "mcp", .tool = "calculate", .outcome = outcome};
    s_seen[0] = '\0';
    cg_registry_run_ended (registry, NULL, &run);
    EXPECT (strcmp (s_seen, "first:-1:-:-;second:-1:-:-;third:-1:-:-;") == 0, "%s", s_seen);
    cg_outcome_destroy (&outcome);
}

//  An early observer (the notebook record's kind) is told after the bookkeeping and before
//  the answer, whatever order the observers were added in.
static void
s_early (const cg_config_t *config)
{
    cg_registry_t *registry = cg_registry_new (config, NULL, NULL, NULL);
    cg_registry_observe_runs (registry, s_observe, "late");
    cg_registry_observe_runs_early (registry, s_observe, "early");
    cg_registry_session_t *session = s_session ("k1");
    cg_outcome_t *outcome = cg_outcome_new ("python", "exec_1", "s1");
    cg_run_report_t run = {.front_end = "mcp",
                           .key = "k1",
                           .outcome = outcome,
                           .answer = s_answer,
                           .answer_arg = "answer"};
    s_seen[0] = '\0';
    cg_registry_run_ended (registry, session, &run);
    EXPECT (strcmp (s_seen, "early:3:-:s1;answer:3:-:s1;late:3:-:s1;") == 0,
            "the bookkeeping, the early observer, the answer, then the others: %s", s_seen);
    cg_outcome_destroy (&outcome);
    s_session_free (&session);
    cg_registry_destroy (&registry);
}

//  A stand-in runner: ready at once, it ends at the first word it gets ($TERM), and the
//  actor's pipe then signals, as a runner's does when its sandbox is gone.
static void
s_runner_actor (zsock_t *pipe, void *arg)
{
    (void)arg;
    zsock_signal (pipe, 0);
    char *word = zstr_recv (pipe);
    zstr_free (&word);
}

//  Three closed sessions whose runners ended before the loop looked: one turn frees them
//  all. The walk that deleted by zlistx_find read the second of two side by side after
//  freeing it (the server aborted in zsock_events on a NULL runner, in parallel CI runs).
static void
s_closing_side_by_side (const cg_config_t *config)
{
    cg_registry_t *registry = cg_registry_new (config, NULL, NULL, NULL);
    cg_loop_t *loop = cg_loop_new ();
    cg_registry_on_loop (registry, loop);
    cg_registry_session_t *sessions[3];
    for (int i = 0; i < 3; i++) {
        sessions[i] = s_session (NULL);
        sessions[i]->runner = zactor_new (s_runner_actor, NULL);
    }
    for (int i = 0; i < 3; i++)
        cg_registry_retire (registry, sessions[i]); /* sends $TERM; the registry owns it */
    //  Until all three have ended (their pipes signal), at most 5 s.
    for (int tries = 0; tries < 500; tries++) {
        bool all = true;
        for (int i = 0; i < 3; i++)
            all &= (zsock_events (sessions[i]->runner) & ZMQ_POLLIN) != 0;
        if (all)
            break;
        zclock_sleep (10);
    }
    size_t oneshots = 0, closing = 0;
    cg_registry_counts (registry, &oneshots, &closing);
    EXPECT (closing == 3, "three closing: %zu", closing);
    cg_loop_run_once (loop);
    cg_registry_counts (registry, &oneshots, &closing);
    EXPECT (closing == 0, "all three freed in one turn: %zu left", closing);
    cg_registry_destroy (&registry);
    cg_loop_destroy (&loop);
}

//  The events' function (the process's router in the program): what reached it.
static void
s_events (void *arg, cg_runner_event_t *event)
{
    (void)arg;
    size_t len = strlen (s_seen);
    snprintf (s_seen + len, sizeof s_seen - len, "events:%s:%s;", event->name, event->key);
}

//  Sends a runner's RESULT for KEY (with an outcome) to REGISTRY's results socket, as a
//  runner does, and lets LOOP take it.
static void
s_result (zsock_t *push, cg_loop_t *loop, const char *key)
{
    cg_outcome_t *outcome = cg_outcome_new ("python", "exec_2", NULL);
    zsock_send (push, "ssp", "RESULT", key, outcome);
    s_seen[0] = '\0';
    cg_loop_run_once (loop);
}

static void
s_begun_runs (const cg_config_t *config)
{
    cg_registry_t *registry = cg_registry_new (config, NULL, NULL, NULL);
    cg_loop_t *loop = cg_loop_new ();
    cg_registry_on_loop (registry, loop);
    cg_registry_on_events (registry, s_events, NULL);
    cg_registry_observe_runs (registry, s_observe, "late");
    cg_registry_observe_runs_early (registry, s_observe, "early");
    zsock_t *push = zsock_new_push (registry->results_endpoint);
    cg_run_report_t run = {.front_end = "mcp",
                           .tool = "execute_code",
                           .client_id = "stdio",
                           .key = "k9",
                           .answer = s_answer,
                           .answer_arg = "answer"};
    EXPECT (cg_registry_run_begin (registry, NULL, &run), "a run begun");
    EXPECT (!cg_registry_run_begin (registry, NULL, &run), "one run per key");
    s_result (push, loop, "k9");
    EXPECT (strcmp (s_seen, "early:-1:-:-;answer:-1:-:-;late:-1:-:-;") == 0,
            "the registry ends a begun run's RESULT itself, before any front end: %s", s_seen);
    EXPECT (!cg_registry_run_begun (registry, "k9"), "and forgets it");
    s_result (push, loop, "k9");
    EXPECT (strcmp (s_seen, "events:RESULT:k9;") == 0, "a second RESULT goes on: %s", s_seen);
    //  Ended now (a cancelled call answered at once): answered and observed at once; its
    //  runner's RESULT goes on to the front ends (which have no call for it any more).
    run.key = "k10";
    cg_registry_run_begin (registry, NULL, &run);
    s_seen[0] = '\0';
    EXPECT (cg_registry_run_end_now (registry, "k10", cg_outcome_new ("python", "exec_3", NULL)),
            "ended now");
    EXPECT (strcmp (s_seen, "early:-1:-:-;answer:-1:-:-;late:-1:-:-;") == 0, "ended now: %s",
            s_seen);
    s_result (push, loop, "k10");
    EXPECT (strcmp (s_seen, "events:RESULT:k10;") == 0, "after an end now: %s", s_seen);
    //  Dropped (its call ended otherwise): nothing told, its RESULT goes on.
    run.key = "k11";
    cg_registry_run_begin (registry, NULL, &run);
    cg_registry_run_drop (registry, "k11");
    s_result (push, loop, "k11");
    EXPECT (strcmp (s_seen, "events:RESULT:k11;") == 0, "after a drop: %s", s_seen);
    EXPECT (!cg_registry_run_end_now (registry, "k12", NULL), "no run under k12");
    //  A run still begun when the registry ends is freed unanswered.
    run.key = "k13";
    cg_registry_run_begin (registry, NULL, &run);
    zsock_destroy (&push);
    cg_registry_destroy (&registry);
    cg_loop_destroy (&loop);
}

//  The front end's answer that notes the session's pid and memory (a RESULT's REPORT).
static void
s_answer_report (void *arg, cg_registry_session_t *session, const cg_run_report_t *run)
{
    (void)arg;
    (void)run;
    size_t len = strlen (s_seen);
    snprintf (s_seen + len, sizeof s_seen - len, "answer:%ld:%.1f;", session ? session->pid : -1,
              session ? session->memory_mb : -2);
}

//  A RESULT that carries its session's REPORT (a runner sends them as one message): the
//  report is the session's before the run ends, as when the REPORT came just before.
static void
s_result_with_report (const cg_config_t *config)
{
    cg_registry_t *registry = cg_registry_new (config, NULL, NULL, NULL);
    cg_loop_t *loop = cg_loop_new ();
    cg_registry_on_loop (registry, loop);
    cg_registry_session_t *session = s_session ("k20");
    snprintf (session->slot, sizeof session->slot, "slot20");
    session->memory_mb = -1;
    zhashx_insert (registry->sessions, "stdio/s1", session);
    zsock_t *push = zsock_new_push (registry->results_endpoint);
    cg_run_report_t run = {.front_end = "mcp",
                           .tool = "execute_code",
                           .client_id = "stdio",
                           .key = "k20",
                           .answer = s_answer_report};
    EXPECT (cg_registry_run_begin (registry, session, &run), "a run begun");
    cg_outcome_t *outcome = cg_outcome_new ("python", "exec_20", "s1");
    zsock_send (push, "sspsii", "RESULT", "k20", outcome, "slot20", 4242, 2048);
    s_seen[0] = '\0';
    cg_loop_run_once (loop);
    EXPECT (strcmp (s_seen, "answer:4242:2.0;") == 0, "the answer sees the report: %s", s_seen);
    //  One without a report leaves them as they are.
    run.key = "k21";
    cg_registry_run_begin (registry, session, &run);
    zsock_send (push, "ssp", "RESULT", "k21", cg_outcome_new ("python", "exec_21", "s1"));
    s_seen[0] = '\0';
    cg_loop_run_once (loop);
    EXPECT (strcmp (s_seen, "answer:4242:2.0;") == 0, "a plain RESULT: %s", s_seen);
    zhashx_delete (registry->sessions, "stdio/s1");
    s_session_free (&session);
    zsock_destroy (&push);
    cg_registry_destroy (&registry);
    cg_loop_destroy (&loop);
}

int
main (void)
{
    cg_config_t config;
    cg_error_t *err = NULL;
    char *argv[] = {NULL};
    if (cg_config_load (&config, 0, argv, &err) < 0) {
        fprintf (stderr, "config: %s\n", cg_error_message (err));
        return 1;
    }
    cg_registry_t *registry = cg_registry_new (&config, NULL, NULL, NULL);
    cg_registry_observe_runs (registry, s_observe, "first");
    cg_registry_observe_runs (registry, s_observe, "second");
    cg_registry_observe_runs (registry, s_observe, "third");
    s_bookkeeping (registry);
    s_other_call (registry);
    s_oneshot (registry);
    cg_registry_destroy (&registry);
    s_early (&config);
    s_closing_side_by_side (&config);
    s_begun_runs (&config);
    s_result_with_report (&config);
    cg_config_clear (&config);
    printf ("%d passed, %d failed\n", s_passes, s_failures);
    return s_failures ? 1 : 0;
}
