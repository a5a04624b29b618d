/*  mcp_harness — the MCP core in memory for unit tests (mcp_harness.h). */
#define _GNU_SOURCE
#include "mcp_harness.h"
#include "containers/cg_backend_ops.h"
#include "base/cg_fs.h"
#include "base/cg_log.h"
#include "base/cg_util.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

//  --------------------------------------------------------------------------
//  The fake backend: no container is ever made.

static int s_impl;

static void *
s_new (const cg_sandbox_limits_t *limits, const char *const *shared_site, cg_error_t **err)
{
    (void)limits, (void)shared_site, (void)err;
    return &s_impl;
}

static void
s_destroy (void **impl_p)
{
    *impl_p = NULL;
}

static const char *
s_name (void *impl)
{
    (void)impl;
    return "fake (no containers)";
}

static int
s_create (void *impl, const cg_sandbox_t *sandbox, cg_error_t **err)
{
    (void)impl, (void)sandbox;
    return cg_error_set (err, ENOTSUP, "the test's fake backend makes no container");
}

static pid_t
s_exec (void *impl, const cg_sandbox_t *sandbox, const cg_exec_spec_t *spec, cg_error_t **err)
{
    (void)impl, (void)sandbox, (void)spec;
    return cg_error_set (err, ENOTSUP, "the test's fake backend runs nothing");
}

static int
s_signal_others (void *impl, const cg_sandbox_t *sandbox, int signal, const pid_t *keep,
                 size_t keep_count, cg_error_t **err)
{
    (void)impl, (void)sandbox, (void)signal, (void)keep, (void)keep_count, (void)err;
    return 0;
}

static int
s_renice (void *impl, const cg_sandbox_t *sandbox, int nice)
{
    (void)impl, (void)sandbox, (void)nice;
    return 0;
}

static int
s_stats (void *impl, const cg_sandbox_t *sandbox, cg_container_stats_t *stats, cg_error_t **err)
{
    (void)impl, (void)sandbox, (void)stats;
    return cg_error_set (err, ENOTSUP, "no container");
}

static void
s_peak_begin (void *impl, const cg_sandbox_t *sandbox, cg_container_peak_t *peak)
{
    (void)impl, (void)sandbox, (void)peak;
}

static double
s_peak_end (void *impl, const cg_sandbox_t *sandbox, cg_container_peak_t *peak)
{
    (void)impl, (void)sandbox, (void)peak;
    return 0;
}

static int
s_destroy_container (void *impl, const cg_sandbox_t *sandbox, cg_error_t **err)
{
    (void)impl, (void)sandbox, (void)err;
    return 0;
}

static int
s_remove_orphans (void *impl, const char *prefix, cg_error_t **err)
{
    (void)impl, (void)prefix, (void)err;
    return 0;
}

static int
s_remove_unowned (void *impl, cg_container_owned_fn *owned, void *arg, cg_error_t **err)
{
    (void)impl, (void)owned, (void)arg, (void)err;
    return 0;
}

static const cg_backend_ops_t s_fake_ops = {.kind = "fake",
                                            .new = s_new,
                                            .destroy = s_destroy,
                                            .name = s_name,
                                            .create = s_create,
                                            .exec = s_exec,
                                            .signal_others = s_signal_others,
                                            .renice = s_renice,
                                            .stats = s_stats,
                                            .peak_begin = s_peak_begin,
                                            .peak_end = s_peak_end,
                                            .destroy_container = s_destroy_container,
                                            .remove_orphans = s_remove_orphans,
                                            .remove_unowned = s_remove_unowned};

//  --------------------------------------------------------------------------
//  The capturing channel

static void
s_channel_send (cg_channel_t *base, json_t *message, const char *text, size_t len)
{
    (void)text, (void)len;
    json_array_append (((h_channel_t *)base)->sent, message);
}

static void
s_channel_free (cg_channel_t *base)
{
    h_channel_t *self = (h_channel_t *)base;
    json_decref (self->sent);
    free (self);
}

static bool
s_channel_ping (cg_channel_t *base)
{
    return !((h_channel_t *)base)->gone;
}

static const cg_channel_ops_t s_channel_ops = {
    .send = s_channel_send, .free = s_channel_free, .ping = s_channel_ping};

cg_client_t *
h_client (const char *id)
{
    cg_client_t *client = cg_xcalloc (1, sizeof *client);
    client->id = cg_xstrdup (id);
    client->log_level = -1;
    return client;
}

void
h_client_free (cg_client_t **client_p)
{
    if (*client_p)
        free ((*client_p)->id);
    free (*client_p);
    *client_p = NULL;
}

h_channel_t *
h_channel (cg_client_t *client)
{
    h_channel_t *self = cg_xcalloc (1, sizeof *self);
    self->base.ops = &s_channel_ops;
    self->base.client = client;
    self->base.budget = 1024 * 1024;
    self->base.refs = 1;
    self->base.standing = true;
    self->sent = json_array ();
    return self;
}

void
h_channel_free (h_channel_t **self_p)
{
    cg_channel_t *base = &(*self_p)->base;
    cg_channel_release (&base);
    *self_p = NULL;
}

json_t *
h_take (h_channel_t *channel)
{
    json_t *sent = channel->sent;
    channel->sent = json_array ();
    return sent;
}

json_t *
h_send (h_t *self, h_channel_t *channel, const char *fmt, ...)
{
    va_list args;
    va_start (args, fmt);
    cleanup_free char *text = cg_vstrdupf (fmt, args);
    va_end (args);
    json_error_t error;
    json_t *message = json_loads (text, 0, &error);
    if (!message) {
        fprintf (stderr, "h_send: not JSON (%s): %s\n", error.text, text);
        abort (); /* the test's own mistake */
    }
    channel->base.status = 0;
    cg_server_handle (&self->server, &channel->base, message);
    json_decref (message);
    return h_take (channel);
}

json_t *
h_answer (json_t *sent, json_int_t id)
{
    size_t i;
    json_t *message;
    json_array_foreach (sent, i, message)
    {
        json_t *its = json_object_get (message, "id");
        if (json_is_integer (its) && json_integer_value (its) == id
            && !json_object_get (message, "method"))
            return message;
    }
    return NULL;
}

json_t *
h_note (json_t *sent, const char *method)
{
    size_t i;
    json_t *message;
    json_array_foreach (sent, i, message)
    {
        const char *its = json_string_value (json_object_get (message, "method"));
        if (its && strcmp (its, method) == 0 && !json_object_get (message, "id"))
            return message;
    }
    return NULL;
}

void
h_initialize (h_t *self, h_channel_t *channel, const char *version)
{
    json_t *sent = h_send (self, channel,
                           "{\"jsonrpc\": \"2.0\", \"id\": 9000, \"method\": \"initialize\", "
                           "\"params\": {\"protocolVersion\": \"%s\", \"capabilities\": {}, "
                           "\"clientInfo\": {\"name\": \"harness\", \"version\": \"1\"}}}",
                           version);
    json_decref (sent);
}

//  --------------------------------------------------------------------------
//  The server

int
h_start (h_t *self, const char **args, cg_server_setup_fn *extra)
{
    *self = (h_t){0};
    snprintf (self->state_dir, sizeof self->state_dir, "/tmp/cg-test-mcp-XXXXXX");
    if (!mkdtemp (self->state_dir)) {
        perror ("mkdtemp");
        return -1;
    }
    const char *flags[64] = {"--state-dir",   self->state_dir, "--pool",      "off",
                             "--http-listen", "off",           "--log-level", "error"};
    int argc = 8;
    for (int i = 0; args && args[i] && argc < 63; i++)
        flags[argc++] = args[i];
    cg_error_t *err = NULL;
    if (cg_config_load (&self->config, argc, CG_UNCONST (flags), &err) < 0)
        goto failed;
    cg_log_set_level (self->config.log_level);
    cg_sandbox_limits_t limits = {.backend = "fake",
                                  .state_dir = self->config.state_dir,
                                  .sandbox_uid = (int)getuid (),
                                  .sandbox_gid = (int)getgid ()};
    self->backend = cg_backend_of (&s_fake_ops, &limits, &err);
    self->instance = self->backend ? cg_instance_new (self->backend, &self->config, &err) : NULL;
    if (!self->instance)
        goto failed;
    cg_server_core_init (&self->server, &self->config,
                         cg_registry_new (&self->config, self->backend, self->instance, NULL));
    cg_serve_mcp_features (&self->server, extra);
    return 0;
failed:
    fprintf (stderr, "h_start: %s\n", cg_error_message (err));
    cg_error_destroy (&err);
    return -1;
}

void
h_stop (h_t *self)
{
    cg_server_t *server = &self->server;
    if (server->registry) {
        cg_registry_stop (server->registry);
        zhashx_destroy (&server->calls); /* before the registry: its one-shot runners */
        cg_registry_destroy (&server->registry);
        cg_server_core_fini (server);
    }
    cg_instance_destroy (&self->instance);
    cg_backend_destroy (&self->backend);
    cg_config_clear (&self->config);
    cg_rm_rf (self->state_dir, NULL);
}

int
h_error_code (json_t *message)
{
    return (int)json_integer_value (json_object_get (json_object_get (message, "error"), "code"));
}

const char *
h_error_text (json_t *message)
{
    const char *text =
        json_string_value (json_object_get (json_object_get (message, "error"), "message"));
    return text ? text : "";
}

json_t *
h_result (json_t *message)
{
    return json_object_get (message, "result");
}
