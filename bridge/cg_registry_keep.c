/*  cg_registry_keep — the registry's side of --keep-sessions: each kept session's record
    (record.json, 0600, in its host-only session dir), written when the session changes and
    read back by the next server (cg_adopt). */
#define _GNU_SOURCE
#include "bridge/cg_registry.h"
#include "bridge/cg_instance.h"
#include "base/cg_fs.h"
#include "base/cg_util.h"

#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

bool
cg_registry_keeps (const cg_config_t *config, const cg_registry_session_t *session)
{
    return cg_instance_keeps (config) && strcmp (session->owner, "stdio") == 0;
}

void
cg_registry_keep_save (const cg_registry_session_t *session)
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
    //  A session's own egress list stays its own in the next server: never the wider one.
    if (session->egress_allow)
        json_object_set (record, "egress_allow", session->egress_allow);
    cg_error_t *err = NULL;
    if (cg_write_json (session->dir, CG_KEEP_RECORD, record, 0600, &err) < 0)
        cg_log (1, "keep session %s: %s", session->id, cg_error_message (err));
    cg_error_destroy (&err);
}

void
cg_registry_keep_forget (const char *session_dir)
{
    cleanup_free char *path = cg_strdupf ("%s/%s", session_dir, CG_KEEP_RECORD);
    unlink (path);
}

int
cg_registry_keep_restore_json (json_t *record, cg_registry_session_t *session)
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
    json_t *egress_allow = json_object_get (record, "egress_allow");
    if (json_is_array (egress_allow))
        session->egress_allow = json_deep_copy (egress_allow);
    size_t i;
    json_t *item;
    json_array_foreach (json_object_get (record, "packages"), i, item) if (json_is_string (item))
        cg_registry_add_package (session, json_string_value (item));
    json_array_foreach (json_object_get (record, "languages"), i, item) if (json_is_string (item))
        cg_registry_add_language (session, json_string_value (item));
    return 0;
}

int
cg_registry_keep_restore (const char *session_dir, cg_registry_session_t *session)
{
    cleanup_free char *path = cg_strdupf ("%s/%s", session_dir, CG_KEEP_RECORD);
    json_t *record = cg_read_json_object (path, CG_KEEP_RECORD_MAX);
    int rc = record ? cg_registry_keep_restore_json (record, session) : -1;
    json_decref (record);
    return rc;
}
