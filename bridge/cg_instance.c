/*  cg_instance — one running server's claim on the state dir: a locked instance dir,
    its container name prefix, and the clean-up of what crashed servers left. */
#define _GNU_SOURCE
#include "cg_instance.h"
#include "cg_util.h"
#include "../artifacts/cg_wsfs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

//  An instance dir without a lock file younger than this is being created: left alone.
#define S_CREATING_S 60

struct cg_instance_t {
    cg_backend_t *backend; /* borrowed */
    char *instances_dir;
    char *dir;
    char *sessions_dir;
    char *prefix;
    int lock_fd;
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

//  Removes one dead instance: its containers first, then its mounts, then its files.
//  Returns 1 when it was dead and is gone, else 0 (alive, being created, or a failure,
//  logged).
static int
s_reap_instance (cg_backend_t *backend, const char *instances_dir, const char *name)
{
    cleanup_free char *dir = cg_strdupf ("%s/%s", instances_dir, name);
    cleanup_free char *lock = cg_strdupf ("%s/lock", dir);
    cleanup_close int fd = open (lock, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
    if (fd >= 0 && flock (fd, LOCK_EX | LOCK_NB) < 0)
        return 0; /* its server is alive */
    struct stat st;
    if (fd < 0 && (stat (dir, &st) < 0 || st.st_mtime > time (NULL) - S_CREATING_S))
        return 0; /* gone already, or a server is creating it (the lock comes last) */
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

//  Reaps every instance below INSTANCES_DIR whose server is gone. Returns how many.
static int
s_reap_dead (cg_backend_t *backend, const char *instances_dir)
{
    int reaped = 0;
    DIR *dir = opendir (instances_dir);
    if (!dir)
        return 0;
    struct dirent *entry;
    while ((entry = readdir (dir)))
        if (entry->d_name[0] != '.')
            reaped += s_reap_instance (backend, instances_dir, entry->d_name);
    closedir (dir);
    return reaped;
}

cg_instance_t *
cg_instance_new (cg_backend_t *backend, const cg_config_t *config, cg_error_t **err)
{
    cleanup_free char *instances_dir = cg_strdupf ("%s/instances", config->state_dir);
    if (cg_mkdir_p (instances_dir, 0700, err) < 0)
        return NULL;
    s_reap_dead (backend, instances_dir);
    char name[13];
    cg_random_hex (name, 6);
    cg_instance_t *self = cg_xcalloc (1, sizeof *self);
    self->backend = backend;
    self->lock_fd = -1;
    self->instances_dir = cg_xstrdup (instances_dir);
    self->dir = cg_strdupf ("%s/%s", instances_dir, name);
    self->sessions_dir = cg_strdupf ("%s/sessions", self->dir);
    self->prefix = cg_strdupf ("cg-%s-", name);
    cleanup_free char *lock = cg_strdupf ("%s/lock", self->dir);
    cleanup_free char *new_lock = cg_strdupf ("%s/lock.new", self->dir);
    if (cg_mkdir_p (self->sessions_dir, 0711, err) < 0) {
        cg_instance_destroy (&self);
        return NULL;
    }
    //  The lock file appears locked (made and locked under another name, then renamed):
    //  a sweep never finds it free while this server lives.
    self->lock_fd = open (new_lock, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (self->lock_fd < 0 || flock (self->lock_fd, LOCK_EX | LOCK_NB) < 0
        || rename (new_lock, lock) < 0) {
        cg_error_set (err, errno, "lock %s: %s", lock, strerror (errno));
        cg_instance_destroy (&self);
        return NULL;
    }
    return self;
}

void
cg_instance_destroy (cg_instance_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    cg_instance_t *self = *self_p;
    cg_error_t *err = NULL;
    if (cg_container_remove_orphans (self->backend, self->prefix, &err) < 0)
        cg_log (1, "%s", cg_error_message (err));
    cg_error_destroy (&err);
    s_remove_state (self->dir);
    if (self->lock_fd >= 0)
        close (self->lock_fd);
    free (self->instances_dir);
    free (self->dir);
    free (self->sessions_dir);
    free (self->prefix);
    free (self);
    *self_p = NULL;
}

int
cg_instance_sweep (cg_instance_t *self)
{
    return s_reap_dead (self->backend, self->instances_dir);
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
