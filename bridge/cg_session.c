/*  cg_session — one sandbox (container + workspace) with its kernels started lazily, and
    the execution of one cell into one outcome (cg_outcome_t). */
#define _GNU_SOURCE
#include "bridge/cg_session_int.h"
#include "bridge/cg_command.h"
#include "base/cg_fault.h"
#include "base/cg_util.h"
#include "base/cg_fs.h"
#include "artifacts/cg_artifacts.h"
#include "artifacts/cg_preview.h"
#include "artifacts/cg_wsfs.h"

#include <errno.h>
#include <sodium.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

int
cg_session_workspace_create (const cg_config_t *config, const char *session_dir, cg_error_t **err)
{
    cg_wsfs_limits_t limits = {.size_mb = config->workspace_mb,
                               .inodes = config->workspace_inodes,
                               .uid = (uid_t)config->sandbox_uid,
                               .gid = (gid_t)config->sandbox_gid};
    return cg_wsfs_create (session_dir, &limits, err);
}

char *
cg_session_container_id (const char *container_prefix, const char *slot)
{
    return cg_strdupf ("%s%s", container_prefix, slot);
}

char *
cg_session_bundle_dir (const char *session_dir)
{
    return cg_strdupf ("%s/bundle", session_dir);
}

void
cg_session_dir_remove (const char *session_dir)
{
    cg_error_t *err = NULL;
    if (cg_wsfs_remove (session_dir, &err) < 0)
        cg_log (1, "%s", cg_error_message (err));
    cg_error_destroy (&err);
    if (cg_rm_rf (session_dir, &err) < 0)
        cg_log (1, "%s", cg_error_message (err));
    cg_error_destroy (&err);
}

static int
s_start_container (cg_session_t *self, cg_error_t **err)
{
    int64_t t0 = cg_now_us ();
    if (cg_container_create (self->backend, &self->sandbox, err) < 0)
        return -1;
    self->container_running = true;
    int64_t t1 = cg_now_us ();
    if (cg_fault_at ("container_start", err) < 0 || cg_session_egress_attach_ (self, err) < 0)
        return -1;
    cg_container_stats_t stats = {.oom_kills = -1};
    cg_container_stats (self->backend, &self->sandbox, &stats, NULL);
    self->oom_kills = stats.oom_kills;
    cg_log (3, "start %s: container %.1f ms, egress and stats %.1f ms", self->container_id,
            (double)(t1 - t0) / 1000, (double)(cg_now_us () - t1) / 1000);
    return 0;
}

//  Starts the container if it is not running (a restart may have stopped it).
static int
s_ensure_container (cg_session_t *self, cg_error_t **err)
{
    return self->container_running ? 0 : s_start_container (self, err);
}

//  The instance name in CONTAINER_PREFIX ("cg-<name>-", cg_instance_prefix). Caller frees.
static char *
s_instance_of (const char *container_prefix)
{
    const char *name =
        strncmp (container_prefix, "cg-", 3) == 0 ? container_prefix + 3 : container_prefix;
    size_t len = strlen (name);
    return cg_strdupf ("%.*s", (int)(len > 0 && name[len - 1] == '-' ? len - 1 : len), name);
}

cg_session_t *
cg_session_alloc_ (cg_backend_t *backend, const cg_config_t *config, const char *sessions_dir,
                   const char *container_prefix, const char *slot_or_null, cg_sandbox_kind_t kind,
                   bool shared_site)
{
    cg_session_t *self = cg_xcalloc (1, sizeof *self);
    if (slot_or_null)
        snprintf (self->slot, sizeof self->slot, "%s", slot_or_null);
    else
        cg_random_hex (self->slot, 6);
    self->instance = s_instance_of (container_prefix);
    self->backend = backend;
    self->config = config;
    self->ran_mb = -1;
    self->dir = cg_strdupf ("%s/%s", sessions_dir, self->slot);
    self->bundle_dir = cg_session_bundle_dir (self->dir);
    self->workspace = cg_strdupf ("%s/" CG_WSFS_WORKSPACE, self->dir);
    self->run_dir = cg_strdupf ("%s/run", self->dir);
    self->ipc_dir = cg_strdupf ("%s/" CG_WSFS_IPC, self->dir);
    self->site_dir = shared_site ? cg_xstrdup (cg_backend_shared_site (backend))
                                 : cg_strdupf ("%s/" CG_WSFS_SITE, self->dir);
    self->container_id = cg_session_container_id (container_prefix, self->slot);
    self->sandbox = (cg_sandbox_t){.id = self->container_id,
                                   .bundle_dir = self->bundle_dir,
                                   .workspace = self->workspace,
                                   .run_dir = self->run_dir,
                                   .ipc_dir = self->ipc_dir,
                                   .site_dir = self->site_dir,
                                   .instance = self->instance,
                                   .session = self->slot,
                                   .kind = kind};
    return self;
}

//  Makes the session's directories, its disk (workspace and package layer) and ipc dir
//  (cg_wsfs), then starts its container; each step may be made to fail by --test-fail-at
//  (cg_fault).
static int
s_create (cg_session_t *self, cg_error_t **err)
{
    const cg_config_t *config = self->config;
    cleanup_free char *ipc_mount_point = cg_strdupf ("%s/ipc", self->run_dir);
    int64_t t0 = cg_now_us ();
    if (cg_mkdir_p (self->bundle_dir, 0700, err) < 0 || cg_fault_at ("session_dir", err) < 0
        || cg_session_workspace_create (config, self->dir, err) < 0)
        return -1;
    int64_t t1 = cg_now_us ();
    if (!(self->ws = cg_workspace_open (self->workspace, err)) || cg_fault_at ("workspace", err) < 0
        || cg_container_site_prepare (self->site_dir, config->sandbox_uid, config->sandbox_gid, err)
               < 0
        || cg_fault_at ("site", err) < 0 || cg_mkdir_p (ipc_mount_point, 0755, err) < 0
        || cg_fault_at ("ipc_dir", err) < 0)
        return -1;
    cg_log (3, "start %s: workspace file system %.1f ms, workspace scan and dirs %.1f ms",
            self->container_id, (double)(t1 - t0) / 1000, (double)(cg_now_us () - t1) / 1000);
    return s_start_container (self, err);
}

//  cg_session_new_as, with the shared package layer as the sandbox's own when SHARED_SITE.
static cg_session_t *
s_new (cg_backend_t *backend, const cg_config_t *config, const char *sessions_dir,
       const char *container_prefix, const char *slot_or_null, cg_sandbox_kind_t kind,
       const char *client_session, bool shared_site, cg_error_t **err)
{
    if (shared_site && !cg_backend_shared_site (backend)) {
        cg_error_set (err, ENOTSUP, "the shared package layer is off (see the server log)");
        return NULL;
    }
    cg_session_t *self = cg_session_alloc_ (backend, config, sessions_dir, container_prefix,
                                            slot_or_null, kind, shared_site);
    self->client_session = client_session ? cg_xstrdup (client_session) : NULL;
    self->sandbox.client_session = self->client_session;
    if (s_create (self, err) < 0) {
        cg_error_wrap (err, "create session sandbox");
        cg_session_destroy (&self);
    }
    return self;
}

cg_session_t *
cg_session_new (cg_backend_t *backend, const cg_config_t *config, const char *sessions_dir,
                const char *container_prefix, const char *slot_or_null, cg_error_t **err)
{
    return s_new (backend, config, sessions_dir, container_prefix, slot_or_null,
                  slot_or_null ? CG_SANDBOX_SESSION : CG_SANDBOX_ONESHOT, NULL, false, err);
}

cg_session_t *
cg_session_new_as (cg_backend_t *backend, const cg_config_t *config, const char *sessions_dir,
                   const char *container_prefix, const char *slot_or_null, cg_sandbox_kind_t kind,
                   const char *client_session, cg_error_t **err)
{
    return s_new (backend, config, sessions_dir, container_prefix, slot_or_null, kind,
                  client_session, false, err);
}

cg_session_t *
cg_session_new_shared_installer (cg_backend_t *backend, const cg_config_t *config,
                                 const char *sessions_dir, const char *container_prefix,
                                 cg_error_t **err)
{
    return s_new (backend, config, sessions_dir, container_prefix, NULL, CG_SANDBOX_INSTALLER, NULL,
                  true, err);
}

const char *
cg_session_dir (cg_session_t *self)
{
    return self->dir;
}

cg_workspace_t *
cg_session_workspace (cg_session_t *self)
{
    return self->ws;
}

void
cg_session_destroy (cg_session_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    cg_session_t *self = *self_p;
    cg_command_waiter_destroy (&self->waiter);
    for (int i = 0; i < MAX_KERNELS; i++) {
        cg_kernel_destroy (&self->kernels[i]);
        cg_kernel_spec_destroy (&self->specs[i]);
    }
    cg_session_egress_detach_ (self);
    cg_error_t *err = NULL;
    if (self->container_running && cg_container_destroy (self->backend, &self->sandbox, &err) < 0)
        cg_log (1, "%s", cg_error_message (err));
    cg_error_destroy (&err);
    cg_workspace_destroy (&self->ws);
    cg_session_dir_remove (self->dir);
    cg_session_free_ (self_p);
}

void
cg_session_free_ (cg_session_t **self_p)
{
    cg_session_t *self = *self_p;
    cg_command_waiter_destroy (&self->waiter);
    for (int i = 0; i < MAX_KERNELS; i++) {
        cg_kernel_keep (&self->kernels[i]);
        cg_kernel_spec_destroy (&self->specs[i]);
    }
    cg_workspace_destroy (&self->ws);
    json_decref (self->egress_allow);
    free (self->dir);
    free (self->bundle_dir);
    free (self->workspace);
    free (self->run_dir);
    free (self->ipc_dir);
    free (self->site_dir);
    free (self->container_id);
    free (self->instance);
    free (self->client_session);
    free (self);
    *self_p = NULL;
}

int
cg_session_prestart_command (cg_session_t *self, cg_error_t **err)
{
    if (!self->waiter)
        self->waiter = cg_command_prestart (self->backend, &self->sandbox, err);
    return self->waiter ? 0 : -1;
}

cg_kernel_t *
cg_session_kernel (cg_session_t *self, const char *language, cg_error_t **err)
{
    int index = cg_session_kernel_index_ (self, language, true);
    if (index < 0) {
        cg_error_set (err, ENOSPC, "too many kernels in one session");
        return NULL;
    }
    if (!self->specs[index] && cg_session_load_spec_ (self, index, language, err) < 0)
        return NULL;
    if (!self->kernels[index]) {
        if (!self->container_running && s_start_container (self, err) < 0)
            return NULL;
        self->kernels[index] =
            cg_kernel_start (self->backend, &self->sandbox, self->specs[index], self->config, err);
    }
    return self->kernels[index];
}

int
cg_session_idle_items (cg_session_t *self, zmq_pollitem_t *items, int max)
{
    int count = 0;
    for (int i = 0; i < MAX_KERNELS; i++)
        if (self->kernels[i])
            count += cg_kernel_idle_items (self->kernels[i], items + count, max - count);
    return count;
}

void
cg_session_drain (cg_session_t *self)
{
    for (int i = 0; i < MAX_KERNELS; i++)
        if (self->kernels[i])
            cg_kernel_discard (self->kernels[i]);
}

//  --------------------------------------------------------------------------
//  Results

//  Puts one stream of the run into OUTCOME's STREAM: whole when it fits the result's cap,
//  else cut to head + marker + tail, with the whole text (as kept) saved in the workspace
//  as outputs/<execution_id>-NAME.txt and named in STREAM's file, and (when the execution
//  log keeps output) up to CG_LOG_STREAM_MAX bytes of it in STREAM's full text. Untrusted:
//  TEXT is the kernel's or the command's bytes; the stream gets them cleaned to UTF-8
//  (cg_outcome_stream_set), the saved file keeps them raw.
static void
s_fill_stream (cg_session_t *self, const cg_exec_request_t *request, cg_outcome_stream_t *stream,
               const char *name, cg_text_t *text)
{
    const cg_config_t *config = self->config;
    cg_text_finish (text);
    if (text->len + text->dropped <= config->max_output_bytes) {
        cg_outcome_stream_set (stream, text->data, text->len);
        stream->truncated = false;
        return;
    }
    size_t cut_len = 0, whole_len = 0;
    cleanup_free char *cut =
        cg_output_cut (text->data, text->len, config->output_head_bytes, config->output_tail_bytes,
                       text->dropped ? text->cut : CG_OUTPUT_NO_CUT, text->dropped_chars, &cut_len);
    cg_outcome_stream_set (stream, cut, cut_len);
    stream->truncated = true;
    cleanup_free char *whole = text->dropped ? cg_output_join (text->data, text->len, text->cut,
                                                               text->dropped_chars, &whole_len)
                                             : NULL;
    if (config->execution_log == CG_EXECUTION_LOG_FULL)
        cg_outcome_stream_set_full (stream, whole ? whole : text->data,
                                    whole ? whole_len : text->len, CG_LOG_STREAM_MAX,
                                    text->dropped > 0);
    if (!request->session_id)
        return; /* a one-shot sandbox is gone with its files */
    cleanup_free char *rel =
        cg_strdupf ("%s/%s-%s.txt", CG_ARTIFACTS_OUTPUT_DIR, request->execution_id, name);
    cg_error_t *err = NULL;
    if (cg_workspace_write (self->ws, rel, whole ? whole : text->data,
                            whole ? whole_len : text->len, true, (uid_t)config->sandbox_uid,
                            (gid_t)config->sandbox_gid, &err)
        == 0) {
        free (stream->file);
        stream->file = cg_strdupf ("%s/%s", CG_WORKSPACE_MOUNT, rel);
    }
    else
        cg_log (1, "save full %s: %s", name, cg_error_message (err));
    cg_error_destroy (&err);
}

static void
s_fill_run (cg_session_t *self, const cg_exec_request_t *request, cg_outcome_t *outcome,
            cg_run_t *run)
{
    if (run->messages_refused) {
        cleanup_free char *text = cg_strdupf (
            "%zu output message(s) from the kernel were refused: each was larger than the "
            "%.0f MB the server accepts (--max-message-mb); an output (a display, say) may be "
            "missing. Save large results to a file in " CG_WORKSPACE_MOUNT " instead.",
            run->messages_refused, (double)self->config->max_message_bytes / (1024 * 1024));
        cg_outcome_add_notice (outcome, text);
    }
    if (run->displays_dropped) {
        cleanup_free char *text = cg_strdupf (
            "%zu display output(s) (%.1f MB) were dropped: this run's display outputs passed "
            "the %.0f MB (--max-display-mb) or the 1000 outputs the server keeps per run.",
            run->displays_dropped, (double)run->display_bytes_dropped / (1024 * 1024),
            (double)self->config->max_display_bytes / (1024 * 1024));
        cg_outcome_add_notice (outcome, text);
    }
    outcome->ran = true;
    s_fill_stream (self, request, &outcome->out, "stdout", &run->out);
    s_fill_stream (self, request, &outcome->err, "stderr", &run->err);
    json_decref (outcome->outputs);
    outcome->outputs = json_incref (run->outputs);
    json_decref (outcome->return_value);
    outcome->return_value = json_incref (run->return_value);
    outcome->execution_count = run->execution_count > 0 ? run->execution_count : 0;
    outcome->duration_us = run->ended_us - run->started_us;
}

#define S_TEXT_FILES_TOTAL (256 * 1024)

//  Seed 003's output files: {rel: text} for the small text files (UTF-8, no NUL, at most
//  64 KiB each, 256 KiB in all) that DIFF says the run created or modified, leaving out
//  the outputs the server itself saved for EXECUTION_ID.
static json_t *
s_text_files (cg_session_t *self, json_t *diff, const char *execution_id)
{
    json_t *files = json_object ();
    cleanup_free char *own = cg_strdupf ("%s/%s-", CG_ARTIFACTS_OUTPUT_DIR, execution_id);
    size_t total = 0;
    const char *lists[] = {"created", "modified"};
    for (int k = 0; k < 2; k++) {
        size_t i;
        json_t *name;
        json_array_foreach (json_object_get (diff, lists[k]), i, name)
        {
            const char *rel = json_string_value (name);
            if (strncmp (rel, own, strlen (own)) == 0)
                continue;
            size_t len = 0;
            cleanup_free char *text =
                cg_workspace_read (self->ws, rel, CG_TEXT_FILE_INLINE_MAX, &len, NULL, NULL);
            if (!text || memchr (text, '\0', len) || total + len > S_TEXT_FILES_TOTAL)
                continue;
            json_t *value = json_stringn (text, len); /* NULL unless valid UTF-8 */
            if (value) {
                json_object_set_new (files, rel, value);
                total += len;
            }
        }
    }
    return files;
}

//  Writes seed 003's input FILES ([{path, base64}]) into the workspace, replacing what is
//  there. Returns 0, or -1 with *err set.
static int
s_write_files (cg_session_t *self, json_t *files, cg_error_t **err)
{
    size_t i;
    json_t *item;
    json_array_foreach (files, i, item)
    {
        const char *b64 = json_string_value (json_object_get (item, "base64"));
        const char *rel = json_string_value (json_object_get (item, "path"));
        size_t cap = strlen (b64) / 4 * 3 + 3, len = 0;
        cleanup_free unsigned char *bytes = cg_xmalloc (cap);
        if (sodium_base642bin (bytes, cap, b64, strlen (b64), " \r\n", &len, NULL,
                               sodium_base64_VARIANT_ORIGINAL)
            != 0)
            return cg_error_set (err, EINVAL, "files: %s: not valid base64", rel);
        if (cg_workspace_write (self->ws, rel, bytes, len, true, (uid_t)self->config->sandbox_uid,
                                (gid_t)self->config->sandbox_gid, err)
            < 0)
            return cg_error_wrap (err, "files");
    }
    return 0;
}

//  True when DIFF (cg_workspace_diff) has an image or PDF file created or modified.
static bool
s_wrote_figure (json_t *diff)
{
    const char *lists[] = {"created", "modified"};
    for (int k = 0; k < 2; k++) {
        size_t i;
        json_t *name;
        json_array_foreach (json_object_get (diff, lists[k]), i, name)
        {
            const char *mime = cg_mime_type (json_string_value (name));
            if (strncmp (mime, "image/", 6) == 0 || strcmp (mime, "application/pdf") == 0)
                return true;
        }
    }
    return false;
}

//  Saves REQUEST's display outputs (OUTCOME's) as files as --save-displays says: figures
//  only unless the run saved an image itself (DIFF, may be NULL when it was not
//  scanned), everything, or nothing. Returns how many were saved.
static size_t
s_save_displays (cg_session_t *self, const cg_exec_request_t *request, cg_outcome_t *outcome,
                 json_t *diff)
{
    cg_save_displays_t mode = self->config->save_displays;
    unsigned kinds = mode == CG_SAVE_DISPLAYS_ALL ? CG_DISPLAYS_FIGURES | CG_DISPLAYS_DOCUMENTS
                     : mode == CG_SAVE_DISPLAYS_NONE || (diff && s_wrote_figure (diff))
                         ? 0
                         : CG_DISPLAYS_FIGURES;
    if (!request->session_id || !kinds || json_array_size (outcome->outputs) == 0)
        return 0;
    return cg_artifacts_save_displays (self->ws, outcome->outputs, request->execution_id, kinds,
                                       (uid_t)self->config->sandbox_uid,
                                       (gid_t)self->config->sandbox_gid);
}

//  Records what REQUEST's run did to the workspace: seed 004's artifacts (created and
//  modified files, the display outputs saved for it included), seed 002's
//  created/modified/deleted names and, when the caller sent seed 003's files, seed 003's
//  output files (else files is empty). As in seed 004, only a run that succeeded is
//  scanned; MARKED says the workspace's changes were marked before it ran.
static void
s_fill_artifacts (cg_session_t *self, const cg_exec_request_t *request, cg_outcome_t *outcome,
                  bool marked)
{
    json_t *diff = NULL, *after = NULL;
    cleanup_free char *notice = NULL;
    cg_error_t *err = NULL;
    if (marked && outcome->end == CG_OUTCOME_OK)
        diff = cg_workspace_changes (self->ws, &after, &notice, &err);
    //  The code's own files decide which displays are saved; the saved ones are listed too.
    if (s_save_displays (self, request, outcome, diff) > 0 && diff) {
        json_decref (after);
        json_decref (diff);
        free (notice);
        diff = cg_workspace_changes (self->ws, &after, &notice, &err);
    }
    if (marked && outcome->end == CG_OUTCOME_OK && !diff)
        cg_log (1, "scan workspace after the run: %s", cg_error_message (err));
    cg_error_destroy (&err);
    if (notice)
        cg_outcome_add_notice (outcome, notice);
    if (!diff)
        diff = json_pack ("{s:[], s:[], s:[]}", "created", "modified", "deleted");
    outcome->artifacts = cg_artifacts_from_diff (diff, after);
    outcome->files =
        request->files ? s_text_files (self, diff, outcome->execution_id) : json_object ();
    outcome->created = json_incref (json_object_get (diff, "created"));
    outcome->modified = json_incref (json_object_get (diff, "modified"));
    outcome->deleted = json_incref (json_object_get (diff, "deleted"));
    json_decref (diff);
    json_decref (after);
}

//  Kills whatever the cell left running beside the kernel (forked children, a fork
//  bomb's processes) so the session is clean for the next call.
//  Fills KEEP (room for MAX_KERNELS) with the host pids of the running kernels; returns
//  how many.
static size_t
s_kernel_pids (cg_session_t *self, pid_t *keep)
{
    size_t count = 0;
    for (int i = 0; i < MAX_KERNELS; i++)
        if (self->kernels[i] && cg_kernel_pid (self->kernels[i]) > 0)
            keep[count++] = cg_kernel_pid (self->kernels[i]);
    return count;
}

static void
s_kill_strays (cg_session_t *self)
{
    pid_t keep[MAX_KERNELS];
    size_t count = s_kernel_pids (self, keep);
    cg_error_t *err = NULL;
    if (cg_container_signal_others (self->backend, &self->sandbox, SIGKILL, keep, count, &err) < 0)
        cg_log (1, "%s", cg_error_message (err));
    cg_error_destroy (&err);
}

//  Replaces a stuck or dead kernel: kill it and everything beside it, start a new one;
//  when that fails, restart the whole container. Returns 0 when a kernel runs again.
static int
s_restart_kernel (cg_session_t *self, const char *language, cg_error_t **err)
{
    int index = cg_session_kernel_index_ (self, language, false);
    if (index >= 0)
        cg_kernel_destroy (&self->kernels[index]);
    s_kill_strays (self);
    cg_error_t *first = NULL;
    if (cg_session_kernel (self, language, &first))
        return 0;
    cg_log (1, "restart kernel in %s: %s; restarting the container", self->container_id,
            cg_error_message (first));
    cg_error_destroy (&first);
    for (int i = 0; i < MAX_KERNELS; i++)
        cg_kernel_destroy (&self->kernels[i]);
    cg_container_destroy (self->backend, &self->sandbox, NULL);
    self->container_running = false;
    return cg_session_kernel (self, language, err) ? 0 : -1;
}

int
cg_session_restart (cg_session_t *self, const char *language, cg_error_t **err)
{
    return s_restart_kernel (self, language, err);
}

//  True when the sandbox's OOM counter went up since it was last read.
static bool
s_oom_since (cg_session_t *self)
{
    //  The OOM counter is read only when a kernel died, against the count kept since the
    //  container started: no cgroup reads on the warm path.
    cg_container_stats_t after = {.oom_kills = -1};
    cg_container_stats (self->backend, &self->sandbox, &after, NULL);
    bool oom = after.oom_kills > self->oom_kills && self->oom_kills >= 0;
    self->oom_kills = after.oom_kills;
    return oom;
}

//  KERNEL did not finish the cell (END: stuck after an interrupt, dead or silent, or the
//  request could not be sent): restarts it and says in OUTCOME what happened, first the
//  timeout or cancel that started it, whatever the kernel did after the interrupt.
static void
s_kernel_lost (cg_session_t *self, const cg_exec_request_t *request, cg_kernel_t *kernel,
               cg_exec_end_t end, cg_run_t *run, cg_outcome_t *outcome)
{
    cg_error_t *err = NULL;
    //  Dead, or its helper gone while its process lives on (missed heartbeats alone never
    //  end a run: cg_kernel_execute waits for the deadline while the process lives).
    bool exited = end != CG_EXEC_DIED || cg_kernel_exited (kernel);
    bool oom = end == CG_EXEC_DIED && s_oom_since (self);
    int grace = self->config->interrupt_grace_ms;
    int restarted = s_restart_kernel (self, request->language, &err);
    const char *then =
        restarted == 0 ? "The kernel was restarted: " S_STATE_LOST : cg_error_message (err);
    cleanup_free char *what = end == CG_EXEC_STUCK
                                  ? cg_strdupf ("did not stop within %d ms of the interrupt", grace)
                              : exited ? cg_xstrdup ("exited after the interrupt")
                                       : cg_xstrdup ("stopped answering after the interrupt");
    cleanup_free char *message = NULL;
    if (run->timed_out) {
        message = cg_strdupf ("Execution timed out after %g seconds and the kernel %s. %s",
                              request->timeout_s, what, then);
        cg_outcome_fail (outcome, CG_OUTCOME_TIMEOUT, -1, CG_OUTCOME_ERROR_TIMEOUT, message);
    }
    else if (run->cancelled) {
        message = cg_strdupf ("Execution was cancelled and the kernel %s. %s", what, then);
        cg_outcome_fail (outcome, CG_OUTCOME_CANCELLED, 130, CG_OUTCOME_ERROR_RUNTIME, message);
    }
    else if (end == CG_EXEC_FAILED) {
        message = cg_strdupf ("The code did not run: it could not be sent to the kernel. %s", then);
        cg_outcome_fail (outcome, CG_OUTCOME_SETUP_FAILURE, -1, CG_OUTCOME_ERROR_SANDBOX, message);
    }
    else if (oom) {
        message = cg_strdupf ("The kernel ran out of memory (limit %d MB) and was killed. %s",
                              self->config->memory_mb, then);
        cg_outcome_fail (outcome, CG_OUTCOME_RUNTIME_ERROR, 137, CG_OUTCOME_ERROR_RUNTIME, message);
    }
    else if (!exited) {
        message = cg_strdupf (
            "The kernel stopped answering while running the cell (its process was still running). "
            "%s",
            then);
        cg_outcome_fail (outcome, CG_OUTCOME_RUNTIME_ERROR, 137, CG_OUTCOME_ERROR_RUNTIME, message);
    }
    else {
        message = cg_strdupf ("The kernel died while running the cell. %s", then);
        cg_outcome_fail (outcome, CG_OUTCOME_RUNTIME_ERROR, 137, CG_OUTCOME_ERROR_RUNTIME, message);
    }
    cg_outcome_stream_append_line (&outcome->err, message);
    outcome->timed_out = run->timed_out;
    outcome->cancelled = run->cancelled;
    outcome->kernel_restarted = restarted == 0;
    if (restarted < 0)
        outcome->end = CG_OUTCOME_SETUP_FAILURE;
    cg_error_destroy (&err);
}

//  The exit code of a cell that ended in SystemExit (Python's sys.exit) as a script's
//  process would have it: the number given (modulo 256), 0 for none, 1 for anything else
//  (a message); -1 when the cell ended in another error.
static int
s_system_exit_code (const cg_run_t *run)
{
    if (!run->ename || strcmp (run->ename, "SystemExit") != 0)
        return -1;
    const char *value = run->evalue ? run->evalue : "";
    if (!*value || strcmp (value, "None") == 0)
        return 0;
    char *end;
    errno = 0;
    long long code = strtoll (value, &end, 10);
    return *end || errno ? 1 : (int)(code & 0xff);
}

//  Runs REQUEST's cell in KERNEL and records how it went in OUTCOME, escalating a timeout.
static void
s_run_cell (cg_session_t *self, const cg_exec_request_t *request, cg_kernel_t *kernel,
            zsock_t *control, cg_control_cb *control_cb, void *arg, cg_run_t *run,
            cg_outcome_t *outcome)
{
    int64_t deadline = cg_now_us () + (int64_t)(request->timeout_s * 1e6);
    cg_exec_end_t end = cg_kernel_execute (kernel, request->code, request->stdin_text, deadline,
                                           control, control_cb, arg, run);
    if (end == CG_EXEC_DIED && !run->started) {
        //  The kernel died before it took this request (with its container, say, killed by
        //  the call before): the code never ran. Restart the kernel and run it, once.
        cg_error_t *err = NULL;
        kernel = s_restart_kernel (self, request->language, &err) == 0
                     ? cg_session_kernel (self, request->language, &err)
                     : NULL;
        if (!kernel) {
            s_fill_run (self, request, outcome, run);
            cleanup_free char *message = cg_strdupf (
                "The kernel had died before this code started and could not be restarted (%s); "
                "the code did not run.",
                cg_error_message (err));
            cg_outcome_fail (outcome, CG_OUTCOME_SETUP_FAILURE, -1, CG_OUTCOME_ERROR_SANDBOX,
                             message);
            cg_error_destroy (&err);
            return;
        }
        cg_run_reset (run);
        end = cg_kernel_execute (kernel, request->code, request->stdin_text, deadline, control,
                                 control_cb, arg, run);
        outcome->kernel_restarted = true;
        cg_outcome_add_notice (outcome,
                               "The kernel had died before this code started (its container or the "
                               "kernel was killed since the last call); it was restarted and the "
                               "code ran in the new one: " S_STATE_LOST);
    }
    s_fill_run (self, request, outcome, run);

    if (end == CG_EXEC_DONE && !run->timed_out && !run->cancelled) {
        int exit_code = s_system_exit_code (run);
        if (run->reply_status && strcmp (run->reply_status, "ok") != 0 && exit_code != 0) {
            cleanup_free char *message =
                run->ename ? cg_strdupf ("%s: %s", run->ename, run->evalue ? run->evalue : "")
                           : cg_strdupf ("execution %s", run->reply_status);
            cg_outcome_fail (outcome, CG_OUTCOME_RUNTIME_ERROR, exit_code > 0 ? exit_code : 1,
                             CG_OUTCOME_ERROR_RUNTIME, message);
        }
    }
    else if (end == CG_EXEC_DONE) {
        s_kill_strays (self);
        if (strcmp (request->language, "python") == 0 && cg_kernel_reap_children (kernel) < 0)
            cg_log (1, "reap children of the kernel in %s: no reply", self->container_id);
        //  Only a session's kernel lives on: a one-shot sandbox goes with its run.
        const char *kept =
            request->session_id ? "; the kernel was interrupted and its state kept." : ".";
        if (run->timed_out) {
            cleanup_free char *message =
                cg_strdupf ("Execution timed out after %g seconds%s", request->timeout_s, kept);
            cg_outcome_fail (outcome, CG_OUTCOME_TIMEOUT, -1, CG_OUTCOME_ERROR_TIMEOUT, message);
            cg_outcome_stream_append_line (&outcome->err, message); /* seed 004 says it in stderr */
        }
        else {
            cleanup_free char *message = cg_strdupf ("Execution was cancelled%s", kept);
            cg_outcome_fail (outcome, CG_OUTCOME_CANCELLED, 130, CG_OUTCOME_ERROR_RUNTIME, message);
        }
        outcome->timed_out = run->timed_out;
        outcome->cancelled = run->cancelled;
    }
    else if (end == CG_EXEC_STUCK || end == CG_EXEC_DIED || end == CG_EXEC_FAILED)
        s_kernel_lost (self, request, kernel, end, run, outcome);
    else {
        cg_outcome_fail (outcome, CG_OUTCOME_SETUP_FAILURE, -1, CG_OUTCOME_ERROR_SANDBOX,
                         "The server is shutting down.");
    }
}

//  Runs REQUEST's code as a one-shot bash command and records how it went in OUTCOME.
static void
s_run_command (cg_session_t *self, const cg_exec_request_t *request, zsock_t *control,
               cg_control_cb *control_cb, void *arg, cg_run_t *run, cg_outcome_t *outcome)
{
    pid_t keep[MAX_KERNELS];
    size_t count = s_kernel_pids (self, keep);
    cg_error_t *err = NULL;
    int exit_code = -1;
    int64_t deadline = cg_now_us () + (int64_t)(request->timeout_s * 1e6);
    cg_exec_end_t end = cg_command_run (self->backend, &self->sandbox, keep, count, request->code,
                                        request->stdin_text, deadline, control, control_cb, arg,
                                        run, &self->waiter, &exit_code, &err);
    s_fill_run (self, request, outcome, run);
    if (end == CG_EXEC_FAILED) {
        cg_outcome_fail (outcome, CG_OUTCOME_SETUP_FAILURE, -1, CG_OUTCOME_ERROR_SANDBOX,
                         cg_error_message (err));
        cg_error_destroy (&err);
        return;
    }
    outcome->exit_code = exit_code;
    if (end == CG_EXEC_ABORTED)
        cg_outcome_fail (outcome, CG_OUTCOME_SETUP_FAILURE, -1, CG_OUTCOME_ERROR_SANDBOX,
                         "The server is shutting down.");
    else if (run->timed_out) {
        cleanup_free char *message = cg_strdupf ("Execution timed out after %g seconds; the "
                                                 "command and everything it started were killed.",
                                                 request->timeout_s);
        cg_outcome_fail (outcome, CG_OUTCOME_TIMEOUT, -1, CG_OUTCOME_ERROR_TIMEOUT, message);
        cg_outcome_stream_append_line (&outcome->err, message);
    }
    else if (run->cancelled)
        cg_outcome_fail (
            outcome, CG_OUTCOME_CANCELLED, 130, CG_OUTCOME_ERROR_RUNTIME,
            "Execution was cancelled; the command and everything it started were killed.");
    else if (exit_code != 0) {
        cleanup_free char *message = cg_strdupf ("bash exited with code %d", exit_code);
        cg_outcome_fail (outcome, CG_OUTCOME_RUNTIME_ERROR, exit_code, CG_OUTCOME_ERROR_RUNTIME,
                         message);
    }
    outcome->timed_out = run->timed_out;
    outcome->cancelled = run->cancelled;
}

//  Returns LANGUAGE's kernel, started when there is none. A kernel that exited since
//  the last call (killed from outside, or by something an earlier cell left running) is
//  replaced before any code is sent to it, and *NOTICE says so (caller frees). Returns
//  NULL with *err set when no kernel runs.
static cg_kernel_t *
s_live_kernel (cg_session_t *self, const char *language, char **notice, cg_error_t **err)
{
    cg_kernel_t *kernel = cg_session_kernel (self, language, err);
    if (!kernel || !cg_kernel_exited (kernel))
        return kernel;
    cg_log (1, "the %s kernel in %s exited since the last call; restarting it", language,
            self->container_id);
    bool oom = s_oom_since (self);
    if (s_restart_kernel (self, language, err) < 0) {
        cg_error_wrap (err,
                       "the %s kernel had exited since the last call and could not be restarted; "
                       "the code did not run",
                       language);
        return NULL;
    }
    *notice = cg_strdupf (
        "The %s kernel had exited since the last call (%s); it was restarted before this "
        "code ran: " S_STATE_LOST,
        language,
        oom ? "out of memory"
            : "killed from outside the cell, or by something an earlier cell left running");
    return cg_session_kernel (self, language, err);
}

//  The outcome of REQUEST when it did not run: ERROR, with ERR's message.
static cg_outcome_t *
s_not_run (const cg_exec_request_t *request, cg_outcome_error_t error, cg_error_t **err)
{
    cg_outcome_t *outcome =
        cg_outcome_setup_failure (request->language, request->execution_id, request->session_id,
                                  error, cg_error_message (*err));
    cg_error_destroy (err);
    return outcome;
}

cg_outcome_t *
cg_session_execute (cg_session_t *self, const cg_exec_request_t *request, zsock_t *control,
                    cg_control_cb *control_cb, void *arg)
{
    bool command = strcmp (request->language, "bash") == 0;
    cg_error_t *err = NULL;
    cleanup_free char *notice = NULL;
    cg_kernel_t *kernel = command ? NULL : s_live_kernel (self, request->language, &notice, &err);
    if (command ? s_ensure_container (self, &err) < 0 : !kernel)
        return s_not_run (request, CG_OUTCOME_ERROR_SANDBOX, &err);
    if (request->files && s_write_files (self, request->files, &err) < 0)
        return s_not_run (request, CG_OUTCOME_ERROR_INVALID_PARAMS, &err);
    cg_error_t *scan_err = NULL;
    bool marked = cg_workspace_mark (self->ws, &scan_err) == 0;
    if (!marked)
        cg_log (1, "scan workspace before the run: %s", cg_error_message (scan_err));
    cg_error_destroy (&scan_err);
    cg_run_t run;
    cg_run_init (&run, self->config->max_output_kept_bytes);
    run.display_max = self->config->max_display_bytes;
    run.on_output = request->on_output;
    run.on_output_arg = request->on_output_arg;
    run.ask = request->ask;
    run.ask_arg = request->ask_arg;
    cg_outcome_t *outcome =
        cg_outcome_new (request->language, request->execution_id, request->session_id);
    cg_container_peak_t peak;
    cg_container_peak_begin (self->backend, &self->sandbox, &peak);
    if (command)
        s_run_command (self, request, control, control_cb, arg, &run, outcome);
    else
        s_run_cell (self, request, kernel, control, control_cb, arg, &run, outcome);
    if (notice) {
        outcome->kernel_restarted = true;
        cg_outcome_add_notice (outcome, notice);
    }
    s_fill_artifacts (self, request, outcome, marked);
    cg_run_clear (&run);
    //  The sandbox's peak memory during this run, from its cgroup.
    double peak_mb = cg_container_peak_end (self->backend, &self->sandbox, &peak);
    self->ran_mb = self->container_running ? peak.current_mb : -1;
    outcome->memory_known = self->container_running && peak_mb >= 0;
    outcome->memory_peak_mb = peak_mb;
    //  Here on the runner's thread, not the server's loop: previews decode untrusted images
    //  (in a helper process), and may take up to their timeout.
    cg_preview_limits_t limits = {.budget = self->config->image_budget,
                                  .timeout_ms = self->config->preview_timeout_ms,
                                  .memory_mb = self->config->preview_memory_mb};
    outcome->previews = cg_preview_plan (outcome->outputs, outcome->artifacts, self->ws, &limits);
    return outcome;
}

void
cg_session_report (cg_session_t *self, const char *language, long *pid, double *memory_mb)
{
    int index = language && *language ? cg_session_kernel_index_ (self, language, false) : -1;
    *pid = index >= 0 && self->kernels[index] ? (long)cg_kernel_pid (self->kernels[index]) : 0;
    //  Right after a run, what its end read (the cgroup's files once per cell, not twice).
    cg_container_stats_t stats = {0};
    *memory_mb = self->container_running && self->ran_mb >= 0 ? self->ran_mb
                 : self->container_running
                         && cg_container_stats (self->backend, &self->sandbox, &stats, NULL) == 0
                     ? stats.memory_mb
                     : -1;
    self->ran_mb = -1;
}

void
cg_session_renice (cg_session_t *self, int nice)
{
    if (self->container_running)
        cg_container_renice (self->backend, &self->sandbox, nice);
}
