/*  cg_pool — the warm pool of ready sandboxes, each claimed once and never given back. */
#include "bridge/cg_pool.h"
#include "base/cg_log.h"
#include "bridge/cg_runner.h"
#include "bridge/cg_runner_msg.h"
#include "bridge/cg_session.h"
#include "base/cg_util.h"
#include "base/cg_fs.h"
#include "artifacts/cg_wsfs.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

//  The most sandboxes one language may keep waiting.
#define S_SIZE_MAX 64
//  While a sandbox warms up or stops, the pool looks at it this often; else it checks the
//  host's memory this often.
#define S_BUSY_TICK_MS 100
#define S_IDLE_TICK_MS 1000
//  What a sandbox of a language is taken to use before one was measured, in MB.
#define S_ESTIMATE_MB 128
//  After a failed warm-up, the pool waits this long times the failures in a row (at most
//  S_BACKOFF_MAX of them) before it tries again.
#define S_BACKOFF_US 5000000
#define S_BACKOFF_MAX 12
//  At most this many sandboxes warm at once, beside user calls or not (each at a low
//  priority: cg_runner's warm-up).
#define S_WARMING_MAX 2
//  Demand: the claims of each language are counted per window; the pool keeps their EWMA
//  (weight S_ALPHA for the window just closed) and their peak, which decays by S_ALPHA a
//  window. A language's target is the largest of that peak (a burst seen lately), the
//  open window's claims, and the claims expected while one sandbox warms up (the EWMA's
//  rate times the measured warm-up time, plus one), from 1 to its --pool size. It starts
//  at that size and shrinks when claims stop: from 4, to 1 in 14 idle windows (a warm-up
//  costs seconds of CPU: what is made is not thrown away at the first lull).
#define S_WINDOW_US 10000000
#define S_ALPHA 0.1
//  A warm-up's duration before one was measured, in ms.
#define S_WARM_ESTIMATE_MS 3000
//  A warming sandbox's CPU weight, its cgroup's as a task's at this nice (cg_container_renice):
//  full while none of the server's user calls runs, a tenth of a user's sandbox while one
//  does; set again this often (its container may not have existed the last time).
#define S_NICE_QUIET 0
#define S_NICE_BUSY 10
#define S_RENICE_US 500000
//  The file in a pooled sandbox's directory that says it waits in the pool; removed when
//  it is claimed. The orphan sweep keys on the instance, so it removes both alike.
#define S_MARKER "pool"

typedef enum { S_WARMING, S_READY, S_STOPPING } s_state_t;

//  A language's recent demand and what the pool did about it.
typedef struct {
    uint64_t hits;   /* claims a ready sandbox served */
    uint64_t misses; /* claims that found none ready (the caller went cold) */
    int claims;      /* claims in the open window */
    double demand;   /* EWMA of claims per closed window */
    double peak;     /* the most claims in a closed window, decaying */
    double warm_ms;  /* EWMA of its warm-ups' durations */
} s_demand_t;

typedef struct {
    int language; /* index into the catalogue (cg_kernels) */
    char slot[13];
    char *dir;
    zactor_t *runner;
    s_state_t state;
    int64_t started_us; /* when its warm-up started */
    int nice;           /* the CPU weight last given, as a nice value; -1: none */
    int64_t renice_us;  /* when it is given again */
    double memory_mb;   /* measured when it became ready; < 0: unknown */
} s_entry_t;

struct cg_pool_t {
    const cg_config_t *config;
    cg_backend_t *backend;
    const char *sessions_dir;
    const char *container_prefix;
    const char *results_endpoint;
    cg_egress_t *egress; /* --egress proxy's service, or NULL */
    int sizes[CG_KERNELS_MAX];
    double estimate_mb[CG_KERNELS_MAX]; /* the last measured sandbox of each language */
    char *preload;                      /* Python code, or NULL */
    zlistx_t *entries;                  /* s_entry_t, owned */
    int failures;                       /* failed warm-ups in a row */
    int64_t next_fill_us;               /* no warm-up starts before this */
    int64_t next_memory_us;             /* when MemAvailable is read next */
    bool pressured;                     /* MemAvailable was below the threshold */
    s_demand_t demand[CG_KERNELS_MAX];
    int64_t window_end_us; /* when the open demand window closes */
};

const char *
cg_pool_language_name (int index)
{
    const cg_language_t *language =
        index >= 0 ? cg_kernels_at (cg_kernels (), (size_t)index) : NULL;
    return language ? language->name : NULL;
}

static int
s_language_index (const char *name, size_t len)
{
    char buf[CG_KERNELS_NAME_MAX + 1];
    if (len == 0 || len > CG_KERNELS_NAME_MAX)
        return -1;
    memcpy (buf, name, len);
    buf[len] = '\0';
    const cg_kernels_t *kernels = cg_kernels ();
    return cg_kernels_index (kernels, cg_kernels_find (kernels, buf));
}

int
cg_pool_parse (const char *text, int sizes[CG_KERNELS_MAX], cg_error_t **err)
{
    memset (sizes, 0, sizeof (int) * CG_KERNELS_MAX);
    if (strcmp (text, "off") == 0 || strcmp (text, "0") == 0)
        return 0;
    bool fallback = strcmp (text, CG_CONFIG_POOL_DEFAULT) == 0;
    for (const char *item = text; *item;) {
        size_t len = strcspn (item, ",");
        const char *equals = memchr (item, '=', len);
        int index = equals ? s_language_index (item, (size_t)(equals - item)) : -1;
        if (index < 0 && fallback) { /* the default, naming a language not offered */
            item += len + (item[len] == ',');
            continue;
        }
        char *end = NULL;
        long size = equals ? strtol (equals + 1, &end, 10) : -1;
        if (index < 0 || !end || end != item + len || end == equals + 1 || size < 0
            || size > S_SIZE_MAX) {
            cleanup_free char *names = cg_kernels_names (cg_kernels (), ", ");
            return cg_error_set (err, EINVAL,
                                 "--pool %s: expected LANGUAGE=N,... with LANGUAGE one of %s "
                                 "and N from 0 to %d, or off",
                                 text, names, S_SIZE_MAX);
        }
        sizes[index] = (int)size;
        item += len + (item[len] == ',');
    }
    return 0;
}

char *
cg_pool_preload_code (const char *text, cg_error_t **err)
{
    if (strcmp (text, "none") == 0)
        return NULL;
    char *code = NULL;
    size_t code_len = 0;
    FILE *out = open_memstream (&code, &code_len);
    if (!out)
        abort (); /* out of memory */
    for (const char *item = text; *item;) {
        size_t len = strcspn (item, ",");
        bool ok = len > 0 && (isalpha ((unsigned char)item[0]) || item[0] == '_');
        for (size_t i = 0; i < len && ok; i++)
            ok = isalnum ((unsigned char)item[i]) || item[i] == '_'
                 || (item[i] == '.' && i + 1 < len && item[i + 1] != '.');
        if (!ok) {
            fclose (out);
            free (code);
            cg_error_set (err, EINVAL,
                          "--pool-preload %s: expected module names separated by commas "
                          "(numpy,pandas), or none",
                          text);
            return NULL;
        }
        //  A throwaway namespace: the module is in sys.modules, no name is bound.
        fprintf (out, "try:\n    exec('import %.*s', {})\nexcept Exception:\n    pass\n", (int)len,
                 item);
        item += len + (item[len] == ',');
    }
    fclose (out);
    return code;
}

//  What a pooled kernel of LANGUAGE runs before it is claimed: --pool-preload's imports for
//  python, its kernel spec's metadata.cellgate.warmup for another (base/cg_kernels.h).
static const char *
s_preload (cg_pool_t *self, int language)
{
    const cg_language_t *l = cg_kernels_at (cg_kernels (), (size_t)language);
    if (!l || l->command)
        return NULL;
    return strcmp (l->name, "python") == 0 ? self->preload : l->warmup;
}

static void
s_entry_free (void **item)
{
    s_entry_t *entry = *item;
    if (!entry)
        return;
    //  The runner removes its sandbox and directory; a runner that never made one leaves
    //  the directory (and its marker), removed here.
    zactor_destroy (&entry->runner);
    if (entry->dir) {
        cleanup_free char *marker = cg_strdupf ("%s/%s", entry->dir, S_MARKER);
        unlink (marker);
        rmdir (entry->dir);
    }
    free (entry->dir);
    free (entry);
    *item = NULL;
}

cg_pool_t *
cg_pool_new (const cg_config_t *config, cg_backend_t *backend, const char *sessions_dir,
             const char *container_prefix, const char *results_endpoint, cg_egress_t *egress)
{
    int sizes[CG_KERNELS_MAX];
    cg_error_t *err = NULL;
    char *preload = NULL;
    if (!config->pool || cg_pool_parse (config->pool, sizes, &err) < 0
        || (!(preload = cg_pool_preload_code (config->pool_preload, &err)) && err)) {
        cg_log (1, "no warm pool: %s", err ? cg_error_message (err) : "--pool unset");
        cg_error_destroy (&err);
        return NULL;
    }
    int total = 0;
    for (int i = 0; i < CG_KERNELS_MAX; i++)
        total += sizes[i];
    if (total == 0) {
        free (preload);
        return NULL;
    }
    cg_pool_t *self = cg_xcalloc (1, sizeof *self);
    *self = (cg_pool_t){.config = config,
                        .backend = backend,
                        .sessions_dir = sessions_dir,
                        .container_prefix = container_prefix,
                        .results_endpoint = results_endpoint,
                        .egress = egress,
                        .preload = preload};
    memcpy (self->sizes, sizes, sizeof sizes);
    for (int i = 0; i < CG_KERNELS_MAX; i++) {
        self->estimate_mb[i] = S_ESTIMATE_MB;
        self->demand[i].demand = sizes[i];
        self->demand[i].peak = sizes[i];
        self->demand[i].warm_ms = S_WARM_ESTIMATE_MS;
    }
    self->window_end_us = cg_now_us () + S_WINDOW_US;
    self->entries = zlistx_new ();
    zlistx_set_destructor (self->entries, s_entry_free);
    return self;
}

void
cg_pool_stop (cg_pool_t *self)
{
    if (!self)
        return;
    for (s_entry_t *e = zlistx_first (self->entries); e; e = zlistx_next (self->entries))
        if (e->state != S_STOPPING) {
            cg_runner_term (e->runner);
            e->state = S_STOPPING;
        }
}

void
cg_pool_destroy (cg_pool_t **self_p)
{
    cg_pool_t *self = *self_p;
    if (!self)
        return;
    cg_pool_stop (self);
    zlistx_destroy (&self->entries);
    free (self->preload);
    free (self);
    *self_p = NULL;
}

//  Starts warming a sandbox of LANGUAGE (an index) in a fresh slot.
static void
s_fill (cg_pool_t *self, int language)
{
    const char *name = cg_pool_language_name (language);
    if (!name)
        return; /* not the catalogue's: never asked for (the sizes come from it) */
    s_entry_t *entry = cg_xcalloc (1, sizeof *entry);
    entry->language = language;
    entry->memory_mb = -1;
    entry->started_us = cg_now_us ();
    entry->nice = -1;
    cg_random_hex (entry->slot, 6);
    entry->dir = cg_strdupf ("%s/%s", self->sessions_dir, entry->slot);
    cg_error_t *err = NULL;
    cleanup_free char *marker = cg_strdupf ("%s/%s", entry->dir, S_MARKER);
    if (cg_mkdir_p (entry->dir, 0700, &err) < 0) {
        cg_log (1, "pool: %s", cg_error_message (err));
        cg_error_destroy (&err);
    }
    FILE *file = fopen (marker, "w");
    if (file) {
        fprintf (file, "%s\n", name);
        fclose (file);
    }
    cg_runner_args_t *args = cg_xcalloc (1, sizeof *args);
    *args = (cg_runner_args_t){.backend = self->backend,
                               .config = self->config,
                               .sessions_dir = self->sessions_dir,
                               .container_prefix = self->container_prefix,
                               .results_endpoint = self->results_endpoint,
                               .pooled = true,
                               .egress = self->egress,
                               .preload = s_preload (self, language)};
    memcpy (args->slot, entry->slot, sizeof entry->slot);
    snprintf (args->language, sizeof args->language, "%s", name);
    entry->runner = zactor_new (cg_runner_actor, args);
    zlistx_add_end (self->entries, entry);
    cg_log (3, "pool: warming a %s sandbox (%s)", name, entry->slot);
}

//  Reads what a warming sandbox said: READY <KiB> or FAILED <why>.
static void
s_take_word (cg_pool_t *self, s_entry_t *entry)
{
    long kib = -1;
    cleanup_free char *detail = NULL;
    if (cg_runner_warm_recv (entry->runner, &kib, &detail)) {
        entry->state = S_READY;
        entry->memory_mb = kib < 0 ? -1 : (double)kib / 1024;
        if (entry->memory_mb > 0)
            self->estimate_mb[entry->language] = entry->memory_mb;
        self->failures = 0;
        double warm_ms = (double)(cg_now_us () - entry->started_us) / 1000;
        s_demand_t *d = &self->demand[entry->language];
        d->warm_ms += 0.5 * (warm_ms - d->warm_ms);
        cg_log (3, "pool: a %s sandbox is ready (%s, %.0f MB, %.0f ms)",
                cg_pool_language_name (entry->language), entry->slot, entry->memory_mb, warm_ms);
    }
    else {
        cg_log (1, "pool: a %s sandbox failed to warm up: %s",
                cg_pool_language_name (entry->language), detail ? detail : "its runner ended");
        if (self->failures < S_BACKOFF_MAX)
            self->failures++;
        self->next_fill_us = cg_now_us () + (int64_t)self->failures * S_BACKOFF_US;
        cg_runner_term (entry->runner);
        entry->state = S_STOPPING;
    }
}

//  Returns the host's MemAvailable in MB, or -1 when it cannot be read.
static long
s_mem_available_mb (void)
{
    cleanup_free char *text = cg_read_file ("/proc/meminfo", 65536, NULL, NULL);
    char *line = text ? strstr (text, "MemAvailable:") : NULL;
    return line ? atol (line + strlen ("MemAvailable:")) / 1024 : -1;
}

//  Under memory pressure the ready sandboxes are stopped and none is started.
static void
s_check_memory (cg_pool_t *self, int64_t now)
{
    if (now < self->next_memory_us)
        return;
    self->next_memory_us = now + (int64_t)S_IDLE_TICK_MS * 1000;
    long available = s_mem_available_mb ();
    bool pressured = available >= 0 && available < self->config->pool_min_available_mb;
    if (pressured && !self->pressured)
        cg_log (1,
                "pool: MemAvailable is %ld MB, below --pool-min-available-mb %d: emptying "
                "the pool",
                available, self->config->pool_min_available_mb);
    self->pressured = pressured;
    for (s_entry_t *e = zlistx_first (self->entries); e && pressured;
         e = zlistx_next (self->entries))
        if (e->state == S_READY) {
            cg_runner_term (e->runner);
            e->state = S_STOPPING;
        }
}

//  Closes the demand windows that ended by NOW: each language's EWMA takes in its claims.
static void
s_roll_window (cg_pool_t *self, int64_t now)
{
    for (int n = 0; now >= self->window_end_us; n++) {
        for (int i = 0; i < CG_KERNELS_MAX; i++) {
            s_demand_t *d = &self->demand[i];
            d->demand += S_ALPHA * (d->claims - d->demand);
            d->peak *= 1 - S_ALPHA;
            if (d->claims > d->peak)
                d->peak = d->claims;
            d->claims = 0;
        }
        //  After a long sleep, a few windows are enough: the demand is all but gone.
        self->window_end_us = n < 32 ? self->window_end_us + S_WINDOW_US : now + S_WINDOW_US;
    }
}

//  How many sandboxes of LANGUAGE the pool keeps now: its recent demand, at least 1 and at
//  most its --pool size (0 for a language not pooled).
static int
s_target (const cg_pool_t *self, int language)
{
    const s_demand_t *d = &self->demand[language];
    double want = d->peak > d->claims ? d->peak : d->claims;
    double during_warm_up = d->demand * d->warm_ms * 1000 / S_WINDOW_US + 1;
    if (during_warm_up > want)
        want = during_warm_up;
    int target = (int)want;
    if (target < want)
        target++;
    if (target < 1)
        target = 1;
    return target < self->sizes[language] ? target : self->sizes[language];
}

//  Counts the sandboxes of each language that are warming or ready in COUNTS, the warming
//  ones in *WARMING, and returns what they use (or are taken to use), in MB.
static double
s_count (cg_pool_t *self, int counts[CG_KERNELS_MAX], int *warming)
{
    double used_mb = 0;
    memset (counts, 0, sizeof (int) * CG_KERNELS_MAX);
    *warming = 0;
    for (s_entry_t *e = zlistx_first (self->entries); e; e = zlistx_next (self->entries)) {
        if (e->state == S_STOPPING)
            continue;
        *warming += e->state == S_WARMING;
        counts[e->language]++;
        used_mb += e->memory_mb >= 0 ? e->memory_mb : self->estimate_mb[e->language];
    }
    return used_mb;
}

//  Stops the ready sandboxes of a language beyond its target (its demand fell).
static void
s_shrink (cg_pool_t *self)
{
    int counts[CG_KERNELS_MAX], warming;
    s_count (self, counts, &warming);
    for (s_entry_t *e = zlistx_first (self->entries); e; e = zlistx_next (self->entries))
        if (e->state == S_READY && counts[e->language] > s_target (self, e->language)) {
            cg_log (3, "pool: %s demand fell to %d: stopping sandbox %s",
                    cg_pool_language_name (e->language), s_target (self, e->language), e->slot);
            counts[e->language]--;
            cg_runner_term (e->runner);
            e->state = S_STOPPING;
        }
}

//  Picks the language to warm next: the one furthest below its target, within the memory
//  budget, while fewer than WARMING_MAX warm; or -1.
static int
s_next_language (cg_pool_t *self, int warming_max)
{
    int counts[CG_KERNELS_MAX], warming;
    double used_mb = s_count (self, counts, &warming);
    if (warming >= warming_max)
        return -1;
    int best = -1, best_gap = 0;
    for (int i = 0; i < CG_KERNELS_MAX; i++) {
        int gap = s_target (self, i) - counts[i];
        if (self->sizes[i] > 0 && gap > best_gap
            && used_mb + self->estimate_mb[i] <= self->config->pool_memory_mb) {
            best = i;
            best_gap = gap;
        }
    }
    return best;
}

//  Weighs the warming sandboxes for the CPU: full when QUIET (no user call in flight), low
//  beside user calls, reaching each by the names cg_session gives it.
static void
s_weigh (cg_pool_t *self, bool quiet, int64_t now)
{
    int nice = quiet ? S_NICE_QUIET : S_NICE_BUSY;
    for (s_entry_t *e = zlistx_first (self->entries); e; e = zlistx_next (self->entries)) {
        if (e->state != S_WARMING || (e->nice == nice && now < e->renice_us))
            continue;
        cleanup_free char *id = cg_session_container_id (self->container_prefix, e->slot);
        cleanup_free char *bundle = cg_session_bundle_dir (e->dir);
        cg_sandbox_t sandbox = {.id = id, .bundle_dir = bundle, .kind = CG_SANDBOX_POOL};
        cg_container_renice (self->backend, &sandbox, nice);
        e->nice = nice;
        e->renice_us = now + S_RENICE_US;
    }
}

int
cg_pool_tick (cg_pool_t *self, bool quiet)
{
    if (!self)
        return -1;
    zlistx_t *done = zlistx_new ();
    for (s_entry_t *e = zlistx_first (self->entries); e; e = zlistx_next (self->entries)) {
        if (!(zsock_events (zactor_sock (e->runner)) & ZMQ_POLLIN))
            continue;
        if (e->state == S_WARMING)
            s_take_word (self, e);
        else if (e->state == S_STOPPING)
            zlistx_add_end (done, e); /* its runner has ended: the join returns at once */
    }
    for (s_entry_t *e = zlistx_first (done); e; e = zlistx_next (done))
        zlistx_delete (self->entries, zlistx_find (self->entries, e));
    zlistx_destroy (&done);
    int64_t now = cg_now_us ();
    s_roll_window (self, now);
    s_check_memory (self, now);
    s_shrink (self);
    //  Refills while user calls run too, each at a low priority.
    int language;
    while (!self->pressured && now >= self->next_fill_us
           && (language = s_next_language (self, S_WARMING_MAX)) >= 0)
        s_fill (self, language);
    s_weigh (self, quiet, now);
    bool busy = false;
    for (s_entry_t *e = zlistx_first (self->entries); e && !busy; e = zlistx_next (self->entries))
        busy = e->state != S_READY;
    return busy ? S_BUSY_TICK_MS : S_IDLE_TICK_MS;
}

zactor_t *
cg_pool_claim (cg_pool_t *self, const char *language, bool oneshot, char slot[13], char **dir_p,
               cg_workspace_t **ws_p)
{
    if (!self || !language)
        return NULL;
    int index = s_language_index (language, strlen (language));
    s_entry_t *entry = NULL;
    for (s_entry_t *e = zlistx_first (self->entries); e && !entry; e = zlistx_next (self->entries))
        if (e->language == index && e->state == S_WARMING
            && zsock_events (zactor_sock (e->runner)) & ZMQ_POLLIN)
            s_take_word (self, e);
    for (s_entry_t *e = zlistx_first (self->entries); e && !entry; e = zlistx_next (self->entries))
        if (e->language == index && e->state == S_READY)
            entry = e;
    if (index >= 0 && self->sizes[index] > 0) {
        self->demand[index].claims++;
        *(entry ? &self->demand[index].hits : &self->demand[index].misses) += 1;
    }
    if (!entry)
        return NULL;
    zlistx_detach (self->entries, zlistx_find (self->entries, entry));
    zactor_t *runner = entry->runner;
    cg_runner_claim (runner, oneshot);
    cleanup_free char *marker = cg_strdupf ("%s/%s", entry->dir, S_MARKER);
    unlink (marker);
    cg_log (3, "pool: %s sandbox %s claimed by a %s", language, entry->slot,
            oneshot ? "one-shot run" : "session");
    if (!oneshot) {
        memcpy (slot, entry->slot, sizeof entry->slot);
        cleanup_free char *workspace = cg_strdupf ("%s/" CG_WSFS_WORKSPACE, entry->dir);
        *ws_p = cg_workspace_open (workspace, NULL);
        *dir_p = entry->dir;
    }
    else
        free (entry->dir);
    free (entry);
    return runner;
}

size_t
cg_pool_ready (cg_pool_t *self)
{
    size_t ready = 0;
    for (s_entry_t *e = self ? zlistx_first (self->entries) : NULL; e;
         e = zlistx_next (self->entries))
        ready += e->state == S_READY;
    return ready;
}

void
cg_pool_metrics (cg_pool_t *self, cg_metrics_gauges_t *gauges)
{
    if (!self)
        return;
    size_t ready[CG_KERNELS_MAX] = {0}, warming[CG_KERNELS_MAX] = {0};
    for (s_entry_t *e = zlistx_first (self->entries); e; e = zlistx_next (self->entries)) {
        ready[e->language] += e->state == S_READY;
        warming[e->language] += e->state == S_WARMING;
    }
    for (int i = 0; i < CG_KERNELS_MAX && gauges->pool_languages_len < CG_METRICS_LANGUAGES_MAX;
         i++) {
        if (self->sizes[i] == 0)
            continue;
        cg_metrics_pool_t *l = &gauges->pool_languages[gauges->pool_languages_len++];
        l->name = cg_pool_language_name (i);
        l->hits = self->demand[i].hits;
        l->misses = self->demand[i].misses;
        l->target = (size_t)s_target (self, i);
        l->ready = ready[i];
        l->warming = warming[i];
    }
}
