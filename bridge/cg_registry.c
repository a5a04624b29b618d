/*  cg_registry — the one owner of sandbox sessions: limits, busy flags, idle TTL,
    download tokens and the on-disk layout. */
#include "bridge/cg_registry.h"
#include "bridge/cg_registry_int.h"
#include "bridge/cg_closed.h"
#include "bridge/cg_outcome.h"
#include "bridge/cg_pool.h"
#include "bridge/cg_runner.h"
#include "bridge/cg_runner_msg.h"
#include "bridge/cg_session.h"
#include "base/cg_util.h"
#include "base/cg_fs.h"

#include <assert.h>
#include <inttypes.h>
#include <signal.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

cg_kept_t *
cg_registry_kept (cg_registry_t *self)
{
    return self->kept;
}

cg_backend_t *
cg_registry_backend (cg_registry_t *self)
{
    return self->backend;
}

cg_egress_t *
cg_registry_egress (cg_registry_t *self)
{
    return self->egress;
}

//  How many closed ids are remembered: each for the idle TTL (after which it would have
//  expired anyway), the oldest forgotten first past this many.
#define S_CLOSED_MAX 1024

void
cg_registry_set_listener (cg_registry_t *self, cg_registry_event_fn *fn, void *arg)
{
    self->listener = fn;
    self->listener_arg = arg;
}

static void s_retire (cg_registry_t *self, cg_registry_session_t *session, const char *reason);
static void s_closing_add (cg_registry_t *self, cg_registry_session_t *session);

//  Stops a runner and waits for it (and so its sandbox) to be gone. SIGINT and SIGTERM
//  are blocked in this thread meanwhile: an interrupted wait would leave the runner's
//  thread running while the server exits.
static void
s_runner_join (zactor_t **runner_p)
{
    sigset_t signals, old;
    sigemptyset (&signals);
    sigaddset (&signals, SIGINT);
    sigaddset (&signals, SIGTERM);
    pthread_sigmask (SIG_BLOCK, &signals, &old);
    zactor_destroy (runner_p);
    pthread_sigmask (SIG_SETMASK, &old, NULL);
}

//  Forgets a kernel record's process: its key and fds.
static void
s_kernel_clear (cg_registry_kernel_t *kernel)
{
    if (kernel->key)
        sodium_memzero (kernel->key, strlen (kernel->key));
    zstr_free (&kernel->key);
    for (int i = 0; i < 5; i++) {
        if (kernel->fds[i] > 0)
            close (kernel->fds[i]);
        kernel->fds[i] = -1;
    }
    kernel->pid = 0;
}

static void
s_session_free (void **item)
{
    cg_registry_session_t *session = *item;
    if (!session)
        return;
    //  The workspace's file system is released as soon as the runner unmounts it.
    cg_workspace_destroy (&session->ws);
    s_runner_join (&session->runner);
    //  The runner removes what it made; a session that only had uploads has its
    //  workspace and directory left, so they are removed here. A kept one stays.
    if (session->dir && !session->kept)
        cg_session_dir_remove (session->dir);
    free (session->dir);
    free (session->owner);
    free (session->id);
    free (session->busy);
    free (session->language);
    free (session->name);
    free (session->notice);
    json_decref (session->egress_allow);
    zlistx_destroy (&session->packages);
    zlistx_destroy (&session->languages);
    for (int i = 0; i < CG_REGISTRY_KERNELS; i++)
        s_kernel_clear (&session->kernels[i]);
    free (session);
    *item = NULL;
}

cg_registry_t *
cg_registry_new (const cg_config_t *config, cg_backend_t *backend, cg_instance_t *instance,
                 cg_egress_t *egress)
{
    cg_registry_t *self = cg_xcalloc (1, sizeof *self);
    *self = (cg_registry_t){
        .config = config, .backend = backend, .instance = instance, .egress = egress};
    //  A name never used before in this process: a registry made at a freed one's address
    //  would find its name still bound while ZeroMQ closes the old socket in the background
    //  (zsock_new_pull failed, and unit_registry aborted, under load).
    static atomic_uint made;
    self->results_endpoint =
        cg_strdupf ("inproc://cg-results-%p-%u", (void *)self, atomic_fetch_add (&made, 1));
    self->results = zsock_new_pull (self->results_endpoint);
    self->sessions = zhashx_new ();
    self->closing = zlistx_new ();
    zlistx_set_destructor (self->closing, s_session_free);
    self->closed = cg_closed_new (S_CLOSED_MAX, (int64_t)config->idle_ttl_s * 1000000);
    if (instance)
        self->pool = cg_pool_new (config, backend, cg_instance_sessions_dir (instance),
                                  cg_instance_prefix (instance), self->results_endpoint, egress);
    self->kept = cg_kept_new (config->oneshot_keep_s, config->oneshot_keep_bytes);
    self->runs = cg_registry_runs_new ();
    return self;
}

void
cg_registry_destroy (cg_registry_t **self_p)
{
    cg_registry_t *self = *self_p;
    if (!self)
        return;
    cg_registry_stop (self);
    cg_loop_unwatch (self->loop, &self->results_watch);
    cg_registry_runs_destroy (&self->runs);
    for (cg_registry_session_t *s = zlistx_first (self->closing); s;
         s = zlistx_next (self->closing))
        cg_loop_unwatch (self->loop, &s->closing_watch);
    zlistx_destroy (&self->closing);
    cg_pool_destroy (&self->pool);
    zhashx_destroy (&self->sessions);
    cg_closed_destroy (&self->closed);
    cg_kept_destroy (&self->kept);
    //  What the runners sent that nobody reads any more: their outcomes are freed.
    while (zsock_events (self->results) & ZMQ_POLLIN) {
        cg_runner_event_t *event = cg_runner_event_recv (self->results);
        cg_runner_event_destroy (&event);
    }
    zsock_destroy (&self->results);
    free (self->results_endpoint);
    free (self);
    *self_p = NULL;
}

void
cg_registry_stop (cg_registry_t *self)
{
    zlistx_t *all = zhashx_values (self->sessions);
    for (cg_registry_session_t *s = zlistx_first (all); s; s = zlistx_next (all))
        s_retire (self, s, "shutdown");
    zlistx_destroy (&all);
    cg_pool_stop (self->pool);
}

cg_registry_session_t *
cg_registry_find (cg_registry_t *self, const char *owner, const char *id)
{
    if (!id)
        return NULL;
    cleanup_free char *key = cg_strdupf ("%s/%s", owner, id);
    return zhashx_lookup (self->sessions, key);
}

bool
cg_registry_full (cg_registry_t *self)
{
    return zhashx_size (self->sessions) + self->oneshots >= (size_t)self->config->max_sessions;
}

bool
cg_registry_oneshot_full (cg_registry_t *self)
{
    return cg_registry_full (self) && self->oneshots >= (size_t)self->config->oneshot_reserve;
}

//  Writes to OUT "N <what>" and the idle times of the sessions in LIST, with their ids
//  when NAMED.
static void
s_holders_add (FILE *out, zlistx_t *list, const char *what, bool named, int64_t now)
{
    if (zlistx_size (list) == 0)
        return;
    fprintf (out, "%s%zu %s (", ftell (out) ? "; " : "", zlistx_size (list), what);
    const char *sep = "";
    for (cg_registry_session_t *s = zlistx_first (list); s; s = zlistx_next (list), sep = ", ") {
        fprintf (out, "%s%s%s", sep, named ? s->id : "", named ? " " : "");
        if (s->busy)
            fprintf (out, "running");
        else
            fprintf (out, "idle %ld s", (long)((now - s->last_activity_us) / 1000000));
    }
    fputc (')', out);
}

char *
cg_registry_holders (cg_registry_t *self, const char *owner)
{
    zlistx_t *mine = zlistx_new (), *others = zlistx_new ();
    for (cg_registry_session_t *s = zhashx_first (self->sessions); s;
         s = zhashx_next (self->sessions))
        zlistx_add_end (strcmp (s->owner, owner) == 0 ? mine : others, s);
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream (&text, &len);
    if (!out)
        abort (); /* out of memory */
    int64_t now = cg_now_us ();
    s_holders_add (out, mine, "of your sessions", true, now);
    s_holders_add (out, others, "sessions of other clients", false, now);
    if (self->oneshots)
        fprintf (out, "%s%zu one-shot runs", ftell (out) ? "; " : "", self->oneshots);
    if (zlistx_size (self->closing))
        fprintf (out, "%s%zu closing", ftell (out) ? "; " : "", zlistx_size (self->closing));
    fclose (out);
    zlistx_destroy (&mine);
    zlistx_destroy (&others);
    return text;
}

//  A runner's arguments (the runner takes them over).
static cg_runner_args_t *
s_runner_args (cg_registry_t *self, const char *slot, const char *language, bool oneshot)
{
    cg_runner_args_t *args = cg_xcalloc (1, sizeof *args);
    *args = (cg_runner_args_t){.backend = self->backend,
                               .config = self->config,
                               .sessions_dir = cg_instance_sessions_dir (self->instance),
                               .container_prefix = cg_instance_prefix (self->instance),
                               .results_endpoint = self->results_endpoint,
                               .oneshot = oneshot,
                               .egress = self->egress};
    if (slot)
        snprintf (args->slot, sizeof args->slot, "%s", slot);
    if (language)
        snprintf (args->language, sizeof args->language, "%s", language);
    return args;
}

static zactor_t *
s_runner_start (cg_registry_t *self, const char *slot, const char *language, bool oneshot)
{
    return zactor_new (cg_runner_actor, s_runner_args (self, slot, language, oneshot));
}

//  Makes SESSION's directory (in slot SESSION->slot) and workspace, unless ADOPT (they
//  exist: a kept sandbox), and starts its runner. The workspace exists from the start so
//  that files can be uploaded before the sandbox runs; the runner creates the rest when
//  the session first runs. NOTE: said by the first run's result, or NULL.
static void
s_session_prepare (cg_registry_t *self, cg_registry_session_t *session, bool adopt,
                   const char *note)
{
    session->dir = cg_strdupf ("%s/%s", cg_instance_sessions_dir (self->instance), session->slot);
    cleanup_free char *workspace = cg_strdupf ("%s/" CG_WSFS_WORKSPACE, session->dir);
    cg_error_t *err = NULL;
    if ((!adopt
         && (cg_mkdir_p (session->dir, 0700, &err) < 0
             || cg_session_workspace_create (self->config, session->dir, &err) < 0))
        || !(session->ws = cg_workspace_open (workspace, &err)))
        cg_log (1, "session %s workspace: %s", session->id, cg_error_message (err));
    cg_error_destroy (&err);
    cg_runner_args_t *args = s_runner_args (self, session->slot, session->language, false);
    snprintf (args->client_session, sizeof args->client_session, "%s", session->id);
    args->adopt = adopt;
    args->egress_allow = session->egress_allow ? json_deep_copy (session->egress_allow) : NULL;
    if (note)
        snprintf (args->note, sizeof args->note, "%s", note);
    session->runner = zactor_new (cg_runner_actor, args);
}

//  Registers SESSION, whose runner runs, and records it (cg_keep).
static void
s_insert (cg_registry_t *self, cg_registry_session_t *session)
{
    cleanup_free char *key = cg_strdupf ("%s/%s", session->owner, session->id);
    zhashx_insert (self->sessions, key, session);
    cg_registry_save (self, session);
    if (self->listener)
        self->listener (self->listener_arg, session, NULL);
}

cg_registry_session_t *
cg_registry_create (cg_registry_t *self, const char *owner, const char *id, const char *language,
                    const char *name, json_t *egress_allow)
{
    if (cg_registry_full (self))
        return NULL;
    int64_t closed_us = cg_closed_since (self->closed, owner, id, cg_now_us ());
    cg_closed_forget (self->closed, owner, id);
    cg_registry_session_t *session = cg_xcalloc (1, sizeof *session);
    if (closed_us >= 0)
        session->notice = cg_strdupf ("Session %s was closed %" PRId64 " s ago (close_session); "
                                      "this is a new session: the variables and files from "
                                      "before are gone.",
                                      id, closed_us / 1000000);
    session->id = cg_xstrdup (id);
    session->owner = cg_xstrdup (owner);
    session->language = cg_xstrdup (language);
    session->name = name ? cg_xstrdup (name) : NULL;
    cg_utc_now (session->started_at, false);
    memcpy (session->last_activity_at, session->started_at, sizeof session->started_at);
    session->started_us = session->last_activity_us = cg_now_us ();
    session->memory_mb = -1;
    cg_random_hex (session->token, 16);
    session->egress_allow = egress_allow ? json_deep_copy (egress_allow) : NULL;
    //  A warm sandbox from the pool, made fresh for whoever claims it first, when one is
    //  ready; else a cold one. The pool's have the server's egress list: a session with a
    //  list of its own starts cold; so does every session where a container carries its
    //  client's session id from its making (docker's label session_id).
    session->runner = egress_allow || !cg_backend_pools_sessions (self->backend)
                          ? NULL
                          : cg_pool_claim (self->pool, language, false, session->slot,
                                           &session->dir, &session->ws);
    if (!session->runner) {
        cg_random_hex (session->slot, 6);
        s_session_prepare (self, session, false, NULL);
    }
    s_insert (self, session);
    return session;
}

cg_registry_session_t *
cg_registry_restore (cg_registry_t *self, cg_registry_session_t *fields, const char *slot,
                     const char *note)
{
    cg_registry_session_t *session = cg_xcalloc (1, sizeof *session);
    *session = *fields;
    memset (fields, 0, sizeof *fields);
    if (slot)
        snprintf (session->slot, sizeof session->slot, "%s", slot);
    else
        cg_random_hex (session->slot, 6);
    if (cg_registry_full (self) || cg_registry_find (self, session->owner, session->id)) {
        cg_log (1, "cannot re-adopt kept session %s: %s", session->id,
                cg_registry_full (self) ? "--max-sessions sandboxes exist" : "its id is taken");
        //  Its runner takes the kept sandbox over only to destroy it.
        session->dir =
            slot ? cg_strdupf ("%s/%s", cg_instance_sessions_dir (self->instance), session->slot)
                 : NULL;
        cg_runner_args_t *args = s_runner_args (self, session->slot, NULL, false);
        args->adopt = slot != NULL;
        session->runner = zactor_new (cg_runner_actor, args);
        cg_runner_term (session->runner);
        void *item = session;
        s_session_free (&item);
        return NULL;
    }
    s_session_prepare (self, session, slot != NULL, note);
    s_insert (self, session);
    return session;
}

void
cg_registry_save (cg_registry_t *self, cg_registry_session_t *session)
{
    if (cg_registry_keeps (self->config, session))
        cg_registry_keep_save (session);
}

zactor_t *
cg_registry_oneshot_start (cg_registry_t *self)
{
    if (cg_registry_oneshot_full (self))
        return NULL;
    self->oneshots++;
    return s_runner_start (self, NULL, NULL, true);
}

zactor_t *
cg_registry_oneshot_claim (cg_registry_t *self, const char *language, json_t *egress_allow)
{
    if (cg_registry_oneshot_full (self))
        return NULL;
    if (egress_allow) {
        self->oneshots++;
        cg_runner_args_t *args = s_runner_args (self, NULL, NULL, true);
        args->egress_allow = json_deep_copy (egress_allow);
        return zactor_new (cg_runner_actor, args);
    }
    zactor_t *runner = cg_pool_claim (self->pool, language, true, NULL, NULL, NULL);
    if (!runner)
        return cg_registry_oneshot_start (self);
    self->oneshots++;
    return runner;
}

//  The packages list's item functions (strings it owns).
static void
s_string_free (void **item)
{
    free (*item);
    *item = NULL;
}

static int
s_string_compare (const void *a, const void *b)
{
    return strcmp (a, b);
}

//  Adds NAME (copied) to the list at *LIST (made on first use) unless it is there.
static void
s_add_name (zlistx_t **list, const char *name)
{
    if (!*list) {
        *list = zlistx_new ();
        zlistx_set_destructor (*list, s_string_free);
        zlistx_set_comparator (*list, s_string_compare);
    }
    //  Find compares, add takes a copy.
    char *copy = cg_xstrdup (name);
    if (zlistx_find (*list, copy))
        free (copy);
    else
        zlistx_add_end (*list, copy);
}

void
cg_registry_add_package (cg_registry_session_t *session, const char *package)
{
    s_add_name (&session->packages, package);
}

void
cg_registry_add_language (cg_registry_session_t *session, const char *language)
{
    s_add_name (&session->languages, language);
}

zactor_t *
cg_registry_installer_start (cg_registry_t *self)
{
    if (cg_registry_oneshot_full (self))
        return NULL;
    self->oneshots++;
    cg_runner_args_t *args = s_runner_args (self, NULL, NULL, true);
    args->shared_installer = true;
    self->installer = zactor_new (cg_runner_actor, args);
    return self->installer;
}

bool
cg_registry_installing (cg_registry_t *self)
{
    return self->installer != NULL;
}

void
cg_registry_oneshot_end (cg_registry_t *self, zactor_t **runner_p)
{
    if (!*runner_p)
        return;
    self->oneshots--;
    if (*runner_p == self->installer) {
        self->installer = NULL;
        s_runner_join (runner_p);
        return;
    }
    //  Its sandbox is destroyed in the background, as a closed session's is: the answer
    //  has gone out, and the main loop never waits for a teardown.
    cg_registry_session_t *closing = cg_xcalloc (1, sizeof *closing);
    closing->runner = *runner_p;
    *runner_p = NULL;
    cg_runner_term (closing->runner);
    s_closing_add (self, closing);
}

void
cg_registry_touch (cg_registry_session_t *session)
{
    session->last_activity_us = cg_now_us ();
    cg_utc_now (session->last_activity_at, false);
}

void
cg_registry_set_busy (cg_registry_session_t *session, const char *key)
{
    free (session->busy);
    session->busy = key ? cg_xstrdup (key) : NULL;
    if (!key)
        cg_registry_touch (session);
}

void
cg_registry_retire (cg_registry_t *self, cg_registry_session_t *session)
{
    cg_closed_add (self->closed, session->owner, session->id, cg_now_us ());
    s_retire (self, session, "closed");
}

char *
cg_registry_take_notice (cg_registry_session_t *session)
{
    char *notice = session->notice;
    session->notice = NULL;
    return notice;
}

static void
s_retire (cg_registry_t *self, cg_registry_session_t *session, const char *reason)
{
    if (self->listener)
        self->listener (self->listener_arg, session, reason);
    //  At the server's stop a kept session's sandbox stays for the next server.
    session->kept = strcmp (reason, "shutdown") == 0 && cg_registry_keeps (self->config, session);
    if (session->kept) {
        cg_registry_keep_save (session);
        cg_runner_keep (session->runner);
    }
    else if (session->dir)
        cg_registry_keep_forget (session->dir);
    cg_runner_term (session->runner);
    cleanup_free char *key = cg_strdupf ("%s/%s", session->owner, session->id);
    zhashx_delete (self->sessions, key);
    s_closing_add (self, session);
}

zlistx_t *
cg_registry_sessions (cg_registry_t *self, const char *owner)
{
    zlistx_t *list = zlistx_new ();
    for (cg_registry_session_t *s = zhashx_first (self->sessions); s;
         s = zhashx_next (self->sessions))
        if (!owner || strcmp (s->owner, owner) == 0)
            zlistx_add_end (list, s);
    return list;
}

int
cg_registry_reap_idle (cg_registry_t *self)
{
    int64_t ttl_us = (int64_t)self->config->idle_ttl_s * 1000000;
    int64_t now = cg_now_us ();
    int64_t next = INT64_MAX;
    zlistx_t *expired = zlistx_new ();
    for (cg_registry_session_t *s = zhashx_first (self->sessions); s;
         s = zhashx_next (self->sessions)) {
        //  A session a Jupyter front end is attached to is in use, as a busy one is.
        bool attached = false;
        for (int k = 0; k < CG_REGISTRY_KERNELS; k++)
            attached |= s->kernels[k].connections > 0;
        if (s->busy || attached)
            continue;
        int64_t due = s->last_activity_us + ttl_us;
        if (due <= now)
            zlistx_add_end (expired, s);
        else if (due < next)
            next = due;
    }
    for (cg_registry_session_t *s = zlistx_first (expired); s; s = zlistx_next (expired)) {
        cg_log (2, "closing session %s: idle for %d s", s->id, self->config->idle_ttl_s);
        s_retire (self, s, "idle_timeout");
    }
    zlistx_destroy (&expired);
    //  The pool refills while user calls run too, yielding the CPU to them (quiet: no
    //  one-shot and no busy session).
    bool quiet = self->oneshots == 0;
    for (cg_registry_session_t *s = zhashx_first (self->sessions); s && quiet;
         s = zhashx_next (self->sessions))
        quiet = !s->busy;
    int pool_ms = cg_pool_tick (self->pool, quiet);
    int64_t wait_ms = next == INT64_MAX ? -1 : (next - now) / 1000 + 1;
    if (wait_ms > 60000)
        wait_ms = 60000;
    return pool_ms >= 0 && (wait_ms < 0 || pool_ms < wait_ms) ? pool_ms : (int)wait_ms;
}

//  A closing runner signalled (its sandbox is gone): those that did are freed; their joins
//  return at once.
static void
s_closed_cb (cg_loop_t *loop, short revents, void *arg)
{
    (void)revents;
    cg_registry_t *self = arg;
    //  Deleted at the cursor, which then moves back one: two that signalled side by side
    //  are both freed, and the walk never reads a freed one (zlistx_find moved the cursor
    //  onto the item, so a "next" taken before it was the freed one's neighbour again).
    for (cg_registry_session_t *s = zlistx_first (self->closing); s;
         s = zlistx_next (self->closing))
        if (zsock_events (s->runner) & ZMQ_POLLIN) {
            cg_loop_unwatch (loop, &s->closing_watch);
            zlistx_delete (self->closing, zlistx_cursor (self->closing));
        }
}

static void
s_closing_add (cg_registry_t *self, cg_registry_session_t *session)
{
    zlistx_add_end (self->closing, session);
    if (self->loop)
        session->closing_watch =
            cg_loop_watch_socket (self->loop, session->runner, ZMQ_POLLIN, s_closed_cb, self);
}

static int
s_reap_idle_cb (cg_loop_t *loop, void *arg)
{
    (void)loop;
    return cg_registry_reap_idle (arg);
}

void
cg_registry_on_loop (cg_registry_t *self, cg_loop_t *loop)
{
    self->loop = loop;
    cg_loop_before_wait (loop, s_reap_idle_cb, self);
    self->results_watch =
        cg_loop_watch_socket (loop, self->results, ZMQ_POLLIN, cg_registry_results_cb, self);
    for (cg_registry_session_t *s = zlistx_first (self->closing); s;
         s = zlistx_next (self->closing))
        s->closing_watch = cg_loop_watch_socket (loop, s->runner, ZMQ_POLLIN, s_closed_cb, self);
}

cg_registry_session_t *
cg_registry_find_slot (cg_registry_t *self, const char *slot)
{
    for (cg_registry_session_t *s = zhashx_first (self->sessions); s;
         s = zhashx_next (self->sessions))
        if (strcmp (s->slot, slot) == 0)
            return s;
    return NULL;
}

void
cg_registry_counts (cg_registry_t *self, size_t *oneshots, size_t *closing)
{
    *oneshots = self->oneshots;
    *closing = zlistx_size (self->closing);
}

//  The channel fields of a KERNELS report, in cg_registry_kernel_t's fds order.
static const char *const s_kernel_channels[] = {"shell", "iopub", "stdin", "control", "hb"};

//  Writes a new random (version 4) UUID into OUT.
static void
s_uuid (char out[37])
{
    uint8_t b[16];
    randombytes_buf (b, sizeof b);
    b[6] = (uint8_t)((b[6] & 0x0f) | 0x40);
    b[8] = (uint8_t)((b[8] & 0x3f) | 0x80);
    snprintf (out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
              b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
              b[14], b[15]);
}

//  Updates KERNEL (of LANGUAGE) from ITEM, one kernel of a KERNELS report; its fds are
//  taken (ITEM's are set to -1).
static void
s_kernel_update (cg_registry_kernel_t *kernel, const char *language, json_t *item)
{
    if (!kernel->language[0]) {
        snprintf (kernel->language, sizeof kernel->language, "%s", language);
        s_uuid (kernel->id);
        for (int c = 0; c < 5; c++)
            kernel->fds[c] = -1;
    }
    s_kernel_clear (kernel);
    kernel->pid = (long)json_integer_value (json_object_get (item, "pid"));
    const char *key = json_string_value (json_object_get (item, "key"));
    kernel->key = kernel->pid && key ? cg_xstrdup (key) : NULL;
    for (int c = 0; c < 5; c++) {
        json_int_t fd = json_integer_value (json_object_get (item, s_kernel_channels[c]));
        kernel->fds[c] = fd > 0 ? (int)fd : -1;
        json_object_set_new (item, s_kernel_channels[c], json_integer (-1));
    }
    kernel->generation++;
    kernel->frontend_busy = false;
    snprintf (kernel->execution_state, sizeof kernel->execution_state, "%s",
              kernel->pid ? "idle" : "dead");
    kernel->last_activity_us = zclock_time () * 1000;
}

static void
s_kernels (cg_registry_t *self, const char *slot, json_t *report)
{
    cg_registry_session_t *session = cg_registry_find_slot (self, slot);
    size_t i;
    json_t *item;
    json_array_foreach (report, i, item)
    {
        const char *language = json_string_value (json_object_get (item, "language"));
        if (!session || !language)
            continue;
        cg_registry_kernel_t *kernel = cg_registry_session_kernel (session, language);
        for (int k = 0; !kernel && k < CG_REGISTRY_KERNELS; k++)
            if (!session->kernels[k].language[0])
                kernel = &session->kernels[k];
        //  A kernel that never ran gets no record; one that ran keeps its id; an
        //  unchanged one is left alone (its attached WebSockets stay).
        long pid = (long)json_integer_value (json_object_get (item, "pid"));
        if (!kernel || (!pid && !kernel->language[0]))
            continue;
        if (kernel->language[0] && kernel->pid == pid && pid != -1)
            continue;
        s_kernel_update (kernel, language, item);
    }
    cg_runner_kernels_close (report);
    json_decref (report);
}

cg_registry_kernel_t *
cg_registry_session_kernel (cg_registry_session_t *session, const char *language)
{
    for (int k = 0; k < CG_REGISTRY_KERNELS; k++)
        if (session->kernels[k].language[0] && strcmp (session->kernels[k].language, language) == 0)
            return &session->kernels[k];
    return NULL;
}

cg_registry_kernel_t *
cg_registry_kernel_find (cg_registry_t *self, const char *id, cg_registry_session_t **session_p)
{
    for (cg_registry_session_t *s = zhashx_first (self->sessions); s;
         s = zhashx_next (self->sessions))
        for (int k = 0; k < CG_REGISTRY_KERNELS; k++)
            if (s->kernels[k].language[0] && strcmp (s->kernels[k].id, id) == 0) {
                *session_p = s;
                return &s->kernels[k];
            }
    *session_p = NULL;
    return NULL;
}

bool
cg_registry_runner_report (cg_registry_t *self, cg_runner_event_t *event)
{
    if (event->tag != CG_RUNNER_REPORT && event->tag != CG_RUNNER_KERNELS)
        return false;
    if (event->tag == CG_RUNNER_REPORT) {
        cg_registry_apply_report (self, event->key, event->report.pid, event->report.kib);
        return true;
    }
    s_kernels (self, event->key, event->kernels.report);
    event->kernels.report = NULL;
    return true;
}

void
cg_registry_apply_report (cg_registry_t *self, const char *slot, long pid, long kib)
{
    cg_registry_session_t *s = cg_registry_find_slot (self, slot);
    if (s) {
        s->pid = pid;
        s->memory_mb = kib < 0 ? -1 : kib / 1024.0;
    }
}

int
cg_registry_usage (cg_registry_session_t *session, cg_wsfs_usage_t *usage)
{
    return session->dir ? cg_wsfs_usage (session->dir, usage, NULL) : -1;
}

cg_workspace_t *
cg_registry_download (void *arg, const char *id, const char *token, size_t token_len)
{
    cg_registry_t *self = arg;
    for (cg_registry_session_t *s = zhashx_first (self->sessions); s;
         s = zhashx_next (self->sessions))
        if (s->ws && strcmp (s->id, id) == 0 && token_len == strlen (s->token)
            && sodium_memcmp (s->token, token, token_len) == 0)
            return s->ws;
    return cg_kept_download (self->kept, id, token, token_len);
}

void
cg_registry_metrics_cb (void *arg, cg_metrics_gauges_t *gauges)
{
    cg_registry_t *self = arg;
    gauges->sessions = zhashx_size (self->sessions);
    gauges->oneshots = self->oneshots;
    gauges->closing = zlistx_size (self->closing);
    gauges->sandboxes_max = (size_t)self->config->max_sessions;
    gauges->pool = cg_pool_ready (self->pool);
    cg_pool_metrics (self->pool, gauges);
    if (self->egress) {
        cg_egress_totals_t totals;
        cg_egress_totals (self->egress, &totals);
        gauges->egress = true;
        gauges->egress_allowed = totals.allowed;
        gauges->egress_denied = totals.denied;
        gauges->egress_bytes_up = totals.bytes_up;
        gauges->egress_bytes_down = totals.bytes_down;
    }
    for (cg_registry_session_t *s = zhashx_first (self->sessions); s;
         s = zhashx_next (self->sessions)) {
        size_t i = 0;
        while (i < gauges->languages_len && strcmp (gauges->languages[i].name, s->language) != 0)
            i++;
        if (i == CG_METRICS_LANGUAGES_MAX)
            continue;
        if (i == gauges->languages_len)
            gauges->languages[gauges->languages_len++].name = s->language;
        gauges->languages[i].count++;
    }
}

json_t *
cg_registry_names (zlistx_t *list)
{
    json_t *names = json_array ();
    for (const char *name = list ? zlistx_first (list) : NULL; name; name = zlistx_next (list))
        json_array_append_new (names, json_string (name));
    return names;
}
