/*  cg_instance — one running server's claim on the state dir: a locked instance dir,
    its container name prefix, and the clean-up of what crashed servers left. */
#define _GNU_SOURCE
#include "bridge/cg_instance.h"
#include "base/cg_util.h"
#include "base/cg_fs.h"
#include "artifacts/cg_wsfs.h"

#include <dirent.h>
#include <sodium.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

//  The instance's kept marker (--keep-sessions): its state dir and the fingerprint of the
//  settings a sandbox is made with.
#define S_MARKER "kept.json"

bool
cg_instance_keeps (const cg_config_t *config)
{
    //  Over HTTP an owner is an Mcp-Session-Id, which dies with the server: nothing to keep.
    return config->keep_sessions && !config->http;
}

//  The fingerprint of what a sandbox and its kernels are made with (the session directory's
//  layout included): a kept sandbox made under other settings is not adopted. 32 hex
//  digits into OUT.
static void
s_fingerprint (const cg_config_t *config, char out[33])
{
    cleanup_free char *text = cg_strdupf (
        "runtime=%s kernels=%s memory=%d cpus=%g pids=%d tmp=%d nofile=%d fsize=%d ws=%d/%d "
        "uid=%d gid=%d wheelhouse=%s npm=%s message=%zu layout=" CG_WSFS_WORKSPACE "," CG_WSFS_SITE
        "," CG_WSFS_IPC,
        config->runtime, config->kernels_dir, config->memory_mb, config->cpus, config->pids,
        config->tmp_mb, config->nofile, config->fsize_mb, config->workspace_mb,
        config->workspace_inodes, config->sandbox_uid, config->sandbox_gid,
        config->wheelhouse ? config->wheelhouse : "", config->npm_mirror ? config->npm_mirror : "",
        config->max_message_bytes);
    unsigned char hash[16];
    crypto_generichash (hash, sizeof hash, (const unsigned char *)text, strlen (text), NULL, 0);
    sodium_bin2hex (out, 33, hash, sizeof hash);
}

static int
s_mark (const char *instance_dir, const cg_config_t *config, cg_error_t **err)
{
    char fingerprint[33];
    s_fingerprint (config, fingerprint);
    return cg_write_json (
        instance_dir, S_MARKER,
        json_pack ("{s:s, s:s}", "state_dir", config->state_dir, "fingerprint", fingerprint), 0600,
        err);
}

static int
s_check (const char *instance_dir, const cg_config_t *config)
{
    cleanup_free char *path = cg_strdupf ("%s/%s", instance_dir, S_MARKER);
    json_t *marker = cg_read_json_object (path, CG_KEEP_RECORD_MAX);
    if (!marker)
        return -1;
    char fingerprint[33];
    s_fingerprint (config, fingerprint);
    const char *state = json_string_value (json_object_get (marker, "state_dir"));
    const char *print = json_string_value (json_object_get (marker, "fingerprint"));
    int rc = !state || strcmp (state, config->state_dir) != 0 ? -2
             : print && strcmp (print, fingerprint) == 0      ? 1
                                                              : 0;
    json_decref (marker);
    return rc;
}

//  Calls FN (with ARG) for each session directory name in SESSIONS_DIR.
void
cg_instance_each_slot (const char *sessions_dir, void (*fn) (void *arg, const char *slot),
                       void *arg)
{
    DIR *dir = opendir (sessions_dir);
    if (!dir)
        return;
    struct dirent *entry;
    while ((entry = readdir (dir)))
        if (entry->d_name[0] != '.' && strlen (entry->d_name) == 12
            && strspn (entry->d_name, "0123456789abcdef") == 12)
            fn (arg, entry->d_name);
    closedir (dir);
}

typedef struct {
    const char *sessions_dir;
    json_t *records;
} s_collect_t;

static void
s_collect_one (void *arg, const char *slot)
{
    s_collect_t *collect = arg;
    cleanup_free char *path = cg_strdupf ("%s/%s/%s", collect->sessions_dir, slot, CG_KEEP_RECORD);
    json_t *record = cg_read_json_object (path, CG_KEEP_RECORD_MAX);
    if (record)
        json_array_append_new (collect->records, record);
}

static void
s_collect (const char *sessions_dir, json_t *lost)
{
    s_collect_t collect = {sessions_dir, lost};
    cg_instance_each_slot (sessions_dir, s_collect_one, &collect);
}

//  An instance dir without a lock file younger than this is being created: left alone.
#define S_CREATING_S 60

struct cg_instance_t {
    cg_backend_t *backend;     /* borrowed */
    const cg_config_t *config; /* borrowed: the server's, for its lifetime */
    char *instances_dir;
    char *dir;
    char *sessions_dir;
    char *prefix;
    int lock_fd;
    bool keep;    /* --keep-sessions: recorded sessions outlive this server */
    json_t *lost; /* records of kept sessions whose sandboxes could not be adopted */
};

//  Removes DIR, a server's state: the mounts (workspace file systems) it left below it
//  first, so that the removal never has to cross into them. Failures are logged.
static void
s_remove_state (const char *dir)
{
    cg_error_t *err = NULL;
    int detached = cg_wsfs_unmount_below (dir, &err);
    if (detached > 0)
        cg_log (2, "unmounted %d workspace file system(s) below %s", detached, dir);
    if (detached < 0 || cg_rm_rf (dir, &err) < 0)
        cg_log (1, "clean up %s: %s", dir, cg_error_message (err));
    cg_error_destroy (&err);
}

//  Locks instance NAME's lock file. Returns the locked fd; -2 when its server is alive,
//  or when it has no lock file yet and is younger than S_CREATING_S (a server is creating
//  it: the lock comes last); -1 when it has no lock (a server that died while creating it).
static int
s_claim (const char *instances_dir, const char *name)
{
    cleanup_free char *dir = cg_strdupf ("%s/%s", instances_dir, name);
    cleanup_free char *lock = cg_strdupf ("%s/lock", dir);
    int fd = open (lock, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
    if (fd >= 0 && flock (fd, LOCK_EX | LOCK_NB) < 0) {
        close (fd);
        return -2;
    }
    struct stat st;
    if (fd < 0 && (stat (dir, &st) < 0 || st.st_mtime > time (NULL) - S_CREATING_S))
        return -2;
    return fd;
}

//  Removes one dead instance NAME: its containers first, then its mounts, then its
//  files. Returns 1 when it is gone, else 0 (a failure, logged).
static int
s_reap_instance (cg_backend_t *backend, const char *instances_dir, const char *name)
{
    cleanup_free char *dir = cg_strdupf ("%s/%s", instances_dir, name);
    cleanup_free char *prefix = cg_strdupf ("cg-%s-", name);
    cg_error_t *err = NULL;
    int removed = cg_container_remove_orphans (backend, prefix, &err);
    if (removed < 0)
        cg_log (1, "clean up instance %s: %s", name, cg_error_message (err));
    else if (removed > 0)
        cg_log (2, "removed %d sandbox(es) left by a stopped server (instance %s)", removed, name);
    cg_error_destroy (&err);
    if (removed < 0)
        return 0;
    s_remove_state (dir);
    cg_log (2, "removed the state a stopped server left (instance %s)", name);
    return 1;
}

//  Looks at one instance left in INSTANCES_DIR at start-up: a live server's is left
//  alone; a dead one is removed, unless SELF keeps sessions and it kept some under the
//  same settings: the first such becomes SELF's (its name in NAME, its lock held), later
//  ones wait for a later server; one kept for another state dir is left alone. Records of
//  kept sessions made under other settings go to SELF->lost.
static void
s_look_at (cg_instance_t *self, const char *instances_dir, const char *entry, char name[13])
{
    int fd = s_claim (instances_dir, entry);
    if (fd == -2)
        return;
    cleanup_free char *dir = cg_strdupf ("%s/%s", instances_dir, entry);
    int kept = self->keep ? s_check (dir, self->config) : -1;
    if (kept == 1 && fd >= 0 && !name[0] && strlen (entry) == 12) {
        snprintf (name, 13, "%s", entry);
        self->lock_fd = fd;
        return;
    }
    if (fd >= 0)
        close (fd);
    if (kept == 1 || kept == -2)
        return;
    if (kept == 0) {
        cleanup_free char *sessions = cg_strdupf ("%s/sessions", dir);
        s_collect (sessions, self->lost);
        cg_log (1, "the sandboxes kept in %s were made with other settings: removing them", dir);
    }
    s_reap_instance (self->backend, instances_dir, entry);
}

//  Whether instance NAME still has its state in INSTANCES_DIR (ARG), or in STATE_DIR's when
//  its sandbox names another server's state dir (on a shared engine): a live server's, or
//  one kept for the next server. A sandbox of any other instance belongs to nobody.
static bool
s_owned (const char *state_dir, const char *name, void *instances_dir)
{
    cleanup_free char *dir = state_dir ? cg_strdupf ("%s/instances/%s", state_dir, name)
                                       : cg_strdupf ("%s/%s", (const char *)instances_dir, name);
    struct stat st;
    return lstat (dir, &st) == 0;
}

//  Removes the sandboxes of instances whose state is gone. Returns how many.
static int
s_reap_unowned (cg_backend_t *backend, const char *instances_dir)
{
    cg_error_t *err = NULL;
    int removed = cg_container_remove_unowned (backend, s_owned, CG_UNCONST (instances_dir), &err);
    if (removed < 0)
        cg_log (1, "clean up sandboxes of gone instances: %s", cg_error_message (err));
    cg_error_destroy (&err);
    return removed > 0 ? removed : 0;
}

cg_instance_t *
cg_instance_new (cg_backend_t *backend, const cg_config_t *config, cg_error_t **err)
{
    cleanup_free char *instances_dir = cg_strdupf ("%s/instances", config->state_dir);
    if (cg_mkdir_p (instances_dir, 0700, err) < 0)
        return NULL;
    cg_instance_t *self = cg_xcalloc (1, sizeof *self);
    self->backend = backend;
    self->config = config;
    self->lock_fd = -1;
    self->keep = cg_instance_keeps (config);
    self->lost = json_array ();
    self->instances_dir = cg_xstrdup (instances_dir);
    char name[13] = "";
    DIR *dir = opendir (instances_dir);
    if (dir) {
        struct dirent *entry;
        while ((entry = readdir (dir)))
            if (entry->d_name[0] != '.')
                s_look_at (self, instances_dir, entry->d_name, name);
        closedir (dir);
    }
    s_reap_unowned (backend, instances_dir);
    if (name[0])
        cg_log (2, "taking over instance %s and the sessions it kept", name);
    else
        cg_random_hex (name, 6);
    self->dir = cg_strdupf ("%s/%s", instances_dir, name);
    self->sessions_dir = cg_strdupf ("%s/sessions", self->dir);
    self->prefix = cg_strdupf ("cg-%s-", name);
    cleanup_free char *lock = cg_strdupf ("%s/lock", self->dir);
    cleanup_free char *new_lock = cg_strdupf ("%s/lock.new", self->dir);
    if (cg_mkdir_p (self->sessions_dir, 0711, err) < 0) {
        cg_instance_destroy (&self);
        return NULL;
    }
    //  A new instance's lock file appears locked (made and locked under another name,
    //  then renamed): a sweep never finds it free while this server lives. A taken-over
    //  instance's lock is held already.
    if (self->lock_fd < 0) {
        self->lock_fd = open (new_lock, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (self->lock_fd < 0 || flock (self->lock_fd, LOCK_EX | LOCK_NB) < 0
            || rename (new_lock, lock) < 0) {
            cg_error_set (err, errno, "lock %s: %s", lock, strerror (errno));
            cg_instance_destroy (&self);
            return NULL;
        }
    }
    if (self->keep && s_mark (self->dir, config, err) < 0) {
        cg_instance_destroy (&self);
        return NULL;
    }
    return self;
}

//  Frees *SELF_P (and KEPT) and sets it to NULL; its lock is released.
static void
s_free (cg_instance_t **self_p, json_t *kept)
{
    cg_instance_t *self = *self_p;
    json_decref (kept);
    json_decref (self->lost);
    if (self->lock_fd >= 0)
        close (self->lock_fd);
    free (self->instances_dir);
    free (self->dir);
    free (self->sessions_dir);
    free (self->prefix);
    free (self);
    *self_p = NULL;
}

void
cg_instance_destroy (cg_instance_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    cg_instance_t *self = *self_p;
    json_t *kept = json_array ();
    if (self->keep && self->lock_fd >= 0)
        s_collect (self->sessions_dir, kept);
    if (json_array_size (kept)) {
        cg_log (2, "left %zu session(s) running for the next server (--keep-sessions)",
                json_array_size (kept));
        s_free (self_p, kept);
        return;
    }
    cg_error_t *err = NULL;
    if (self->dir && cg_container_remove_orphans (self->backend, self->prefix, &err) < 0)
        cg_log (1, "%s", cg_error_message (err));
    cg_error_destroy (&err);
    if (self->dir)
        s_remove_state (self->dir);
    s_free (self_p, kept);
}

int
cg_instance_sweep (cg_instance_t *self)
{
    //  What servers that stopped left, as at start-up, except the instances that kept
    //  sessions (a kept marker): those are the next starting server's to re-adopt.
    int reaped = 0;
    DIR *dir = opendir (self->instances_dir);
    if (!dir)
        return 0;
    struct dirent *entry;
    while ((entry = readdir (dir))) {
        if (entry->d_name[0] == '.')
            continue;
        int fd = s_claim (self->instances_dir, entry->d_name);
        if (fd == -2)
            continue;
        cleanup_free char *path = cg_strdupf ("%s/%s", self->instances_dir, entry->d_name);
        cleanup_free char *marker = cg_strdupf ("%s/" S_MARKER, path);
        if (access (marker, F_OK) < 0)
            reaped += s_reap_instance (self->backend, self->instances_dir, entry->d_name);
        if (fd >= 0)
            close (fd);
    }
    closedir (dir);
    return reaped + s_reap_unowned (self->backend, self->instances_dir);
}

json_t *
cg_instance_lost (cg_instance_t *self)
{
    return self->lost;
}

const char *
cg_instance_sessions_dir (cg_instance_t *self)
{
    return self->sessions_dir;
}

const char *
cg_instance_prefix (cg_instance_t *self)
{
    return self->prefix;
}
