/*  cg_keep — sessions that outlive the server: kept marker, session records, re-adoption. */
#define _GNU_SOURCE
#include "cg_keep.h"
#include "cg_instance.h"
#include "cg_session.h"
#include "cg_util.h"
#include "../artifacts/cg_wsfs.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <fcntl.h>
#include <sodium.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

//  A record or marker is small: anything larger is not ours.
#define S_RECORD_MAX (64 * 1024)

bool
cg_keep_enabled (const cg_config_t *config)
{
    //  Over HTTP an owner is an Mcp-Session-Id, which dies with the server: nothing to keep.
    return config->keep_sessions && strcmp (config->keep_sessions, "on") == 0 && !config->http;
}

bool
cg_keep_eligible (const cg_config_t *config, const cg_registry_session_t *session)
{
    return cg_keep_enabled (config) && strcmp (session->owner, "stdio") == 0;
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

//  Reads PATH as a JSON object (at most S_RECORD_MAX bytes), or NULL.
static json_t *
s_load (const char *path)
{
    cleanup_free char *text = cg_read_file (path, S_RECORD_MAX, NULL, NULL);
    json_t *json = text ? json_loads (text, 0, NULL) : NULL;
    if (json && !json_is_object (json))
        json_decref (json);
    return json && json_is_object (json) ? json : NULL;
}

//  Writes JSON (stolen) to NAME in DIR, 0600, atomically. Returns 0, or -1 with *err set.
static int
s_store (const char *dir, const char *name, json_t *json, cg_error_t **err)
{
    cleanup_free char *text = json_dumps (json, JSON_COMPACT);
    json_decref (json);
    cleanup_free char *path = cg_strdupf ("%s/%s", dir, name);
    return cg_write_file (path, text, strlen (text), 0600, err);
}

int
cg_keep_mark (const char *instance_dir, const cg_config_t *config, cg_error_t **err)
{
    char fingerprint[33];
    s_fingerprint (config, fingerprint);
    return s_store (
        instance_dir, CG_KEEP_MARKER,
        json_pack ("{s:s, s:s}", "state_dir", config->state_dir, "fingerprint", fingerprint), err);
}

int
cg_keep_check (const char *instance_dir, const cg_config_t *config)
{
    cleanup_free char *path = cg_strdupf ("%s/%s", instance_dir, CG_KEEP_MARKER);
    json_t *marker = s_load (path);
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
static void
s_each_slot (const char *sessions_dir, void (*fn) (void *arg, const char *slot), void *arg)
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
    json_t *record = s_load (path);
    if (record)
        json_array_append_new (collect->records, record);
}

void
cg_keep_collect (const char *sessions_dir, json_t *lost)
{
    s_collect_t collect = {sessions_dir, lost};
    s_each_slot (sessions_dir, s_collect_one, &collect);
}

void
cg_keep_save (const cg_registry_session_t *session)
{
    if (!session->dir)
        return;
    //  The idle deadline survives as the wall-clock time of the last activity.
    double idle_s = (double)(cg_now_us () - session->last_activity_us) / 1e6;
    json_t *record = json_pack (
        "{s:i, s:s, s:s, s:s, s:s?, s:s, s:s, s:s, s:i, s:f, s:o, s:o}", "version", 1, "id",
        session->id, "owner", session->owner, "language", session->language, "name", session->name,
        "slot", session->slot, "token", session->token, "started_at", session->started_at,
        "executions", session->executions, "last_activity", (double)time (NULL) - idle_s,
        "packages", cg_registry_names (session->packages), "languages",
        cg_registry_names (session->languages));
    cg_error_t *err = NULL;
    if (s_store (session->dir, CG_KEEP_RECORD, record, &err) < 0)
        cg_log (1, "keep session %s: %s", session->id, cg_error_message (err));
    cg_error_destroy (&err);
}

void
cg_keep_forget (const char *session_dir)
{
    cleanup_free char *path = cg_strdupf ("%s/%s", session_dir, CG_KEEP_RECORD);
    unlink (path);
}

int
cg_keep_restore_json (json_t *record, cg_registry_session_t *session)
{
    memset (session, 0, sizeof *session);
    const char *id = json_string_value (json_object_get (record, "id"));
    const char *owner = json_string_value (json_object_get (record, "owner"));
    const char *language = json_string_value (json_object_get (record, "language"));
    const char *token = json_string_value (json_object_get (record, "token"));
    const char *started = json_string_value (json_object_get (record, "started_at"));
    const char *name = json_string_value (json_object_get (record, "name"));
    if (!id || !owner || !language || !token || strlen (token) != 32 || !started)
        return -1;
    session->id = cg_xstrdup (id);
    session->owner = cg_xstrdup (owner);
    session->language = cg_xstrdup (language);
    session->name = name ? cg_xstrdup (name) : NULL;
    snprintf (session->token, sizeof session->token, "%s", token);
    snprintf (session->started_at, sizeof session->started_at, "%s", started);
    session->executions = (int)json_integer_value (json_object_get (record, "executions"));
    //  Idle since the recorded last activity, the time the server was down included.
    double last = json_number_value (json_object_get (record, "last_activity"));
    double idle_s = last > 0 ? (double)time (NULL) - last : 0;
    session->last_activity_us = cg_now_us () - (int64_t)(idle_s > 0 ? idle_s * 1e6 : 0);
    session->started_us = session->last_activity_us;
    time_t last_time = (time_t)last;
    struct tm tm;
    if (last > 0 && gmtime_r (&last_time, &tm))
        strftime (session->last_activity_at, sizeof session->last_activity_at, "%Y-%m-%dT%H:%M:%SZ",
                  &tm);
    else
        cg_utc_now (session->last_activity_at, false);
    session->memory_mb = -1;
    size_t i;
    json_t *item;
    json_array_foreach (json_object_get (record, "packages"), i, item) if (json_is_string (item))
        cg_registry_add_package (session, json_string_value (item));
    json_array_foreach (json_object_get (record, "languages"), i, item) if (json_is_string (item))
        cg_registry_add_language (session, json_string_value (item));
    return 0;
}

int
cg_keep_restore (const char *session_dir, cg_registry_session_t *session)
{
    cleanup_free char *path = cg_strdupf ("%s/%s", session_dir, CG_KEEP_RECORD);
    json_t *record = s_load (path);
    int rc = record ? cg_keep_restore_json (record, session) : -1;
    json_decref (record);
    return rc;
}

bool
cg_keep_pid_in (pid_t pid, const char *container_id)
{
    cleanup_free char *path = cg_strdupf ("/proc/%ld/cgroup", (long)pid);
    cleanup_free char *text = cg_read_file (path, 64 * 1024, NULL, NULL);
    cleanup_free char *tail = cg_strdupf ("/%s\n", container_id);
    return pid > 0 && text && strstr (text, tail);
}

bool
cg_keep_container_alive (const char *bundle_dir, const char *container_id)
{
    cleanup_free char *path = cg_strdupf ("%s/init.pid", bundle_dir);
    cleanup_free char *text = cg_read_file (path, 64, NULL, NULL);
    return text && cg_keep_pid_in ((pid_t)atol (text), container_id);
}

char **
cg_keep_kernels (const char *bundle_dir, int max)
{
    char **languages = cg_strv_new ((size_t)max);
    DIR *dir = opendir (bundle_dir);
    struct dirent *entry;
    int count = 0;
    while (dir && count < max && (entry = readdir (dir))) {
        size_t len = strlen (entry->d_name);
        if (strncmp (entry->d_name, "kernel-", 7) == 0 && len > 11 && len < 48
            && strcmp (entry->d_name + len - 4, ".key") == 0)
            languages[count++] = cg_strdupf ("%.*s", (int)(len - 11), entry->d_name + 7);
    }
    if (dir)
        closedir (dir);
    return languages;
}

typedef struct {
    cg_registry_t *registry;
    cg_backend_t *backend;
    cg_instance_t *instance;
    int restored;
} s_adopt_t;

//  One directory of the kept instance: a recorded session is restored; anything else
//  (a one-shot sandbox's, a session's half made) goes, its container first.
static void
s_adopt_one (void *arg, const char *slot)
{
    s_adopt_t *adopt = arg;
    const char *sessions_dir = cg_instance_sessions_dir (adopt->instance);
    cleanup_free char *dir = cg_strdupf ("%s/%s", sessions_dir, slot);
    cg_registry_session_t fields;
    if (cg_keep_restore (dir, &fields) == 0) {
        if (cg_registry_restore (adopt->registry, &fields, slot, NULL))
            adopt->restored++;
        return;
    }
    cleanup_free char *id = cg_strdupf ("%s%s", cg_instance_prefix (adopt->instance), slot);
    cg_sandbox_t sandbox = {.id = id};
    cg_error_t *err = NULL;
    if (cg_container_destroy (adopt->backend, &sandbox, &err) < 0)
        cg_log (1, "%s", cg_error_message (err));
    cg_error_destroy (&err);
    cg_session_dir_remove (dir);
}

int
cg_keep_adopt (cg_registry_t *registry, cg_backend_t *backend, cg_instance_t *instance,
               const cg_config_t *config)
{
    s_adopt_t adopt = {registry, backend, instance, 0};
    if (!cg_keep_enabled (config))
        return 0;
    s_each_slot (cg_instance_sessions_dir (instance), s_adopt_one, &adopt);
    size_t i;
    json_t *record;
    json_array_foreach (cg_instance_lost (instance), i, record)
    {
        cg_registry_session_t fields;
        if (cg_keep_restore_json (record, &fields) == 0
            && cg_registry_restore (registry, &fields, NULL,
                                    "The server restarted with other sandbox settings (memory, "
                                    "CPUs, kernels or runtime), so this session's sandbox could "
                                    "not be kept: it runs in a new sandbox and its variables and "
                                    "files are gone."))
            adopt.restored++;
    }
    if (adopt.restored)
        cg_log (2, "re-adopted %d session(s) kept by the previous server", adopt.restored);
    return adopt.restored;
}
