/*  cg_gateway — the Jupyter Kernel Gateway REST API: kernelspecs and kernels. */
#include "gateway/cg_gateway_int.h"
#include "bridge/cg_notebook_command.h"
#include "artifacts/cg_http_guard.h"
#include "base/cg_kernels.h"
#include "base/cg_log.h"
#include "base/cg_util.h"

#include <errno.h>
#include <sodium.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define S_BODY_MAX (64 * 1024)
#define S_KEY_PREFIX "gw-"
#define S_ATTACH_PREFIX "attach-"

const char *
cg_gateway_kernel_name (const char *language)
{
    const cg_language_t *entry = cg_kernels_find (cg_kernels (), language);
    return entry && entry->kernel_name ? entry->kernel_name : language;
}

const char *
cg_gateway_language (const char *kernel_name)
{
    const cg_language_t *entry = cg_kernels_by_kernel_name (cg_kernels (), kernel_name);
    return entry ? entry->name : NULL;
}

//  --------------------------------------------------------------------------
//  Models

//  Jupyter's time format, "%Y-%m-%dT%H:%M:%S.%fZ", of US (µs since the epoch).
static json_t *
s_timestamp (int64_t us)
{
    time_t seconds = (time_t)(us / 1000000);
    struct tm tm;
    gmtime_r (&seconds, &tm);
    char text[40];
    size_t n = strftime (text, sizeof text, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf (text + n, sizeof text - n, ".%06dZ", (int)(us % 1000000));
    return json_string (text);
}

static json_t *
s_kernel_model (const cg_registry_kernel_t *kernel)
{
    return json_pack ("{s:s, s:s, s:o, s:s, s:i}", "id", kernel->id, "name",
                      cg_gateway_kernel_name (kernel->language), "last_activity",
                      s_timestamp (kernel->last_activity_us), "execution_state",
                      kernel->frontend_busy ? "busy" : kernel->execution_state, "connections",
                      kernel->connections);
}

//  The kernelspecs of the catalogue's languages with a kernel (base/cg_kernels.h), each
//  under its Jupyter kernel name; python's is the default.
static json_t *
s_load_kernelspecs (const cg_config_t *config)
{
    (void)config;
    const cg_kernels_t *kernels = cg_kernels ();
    json_t *specs = json_object ();
    const char *fallback = NULL;
    for (size_t i = 0; i < cg_kernels_count (kernels); i++) {
        const cg_language_t *l = cg_kernels_at (kernels, i);
        if (l->command)
            continue;
        json_t *spec = json_pack ("{s:s, s:{s:[], s:s, s:s, s:s, s:{}, s:{}}, s:{}}", "name",
                                  l->kernel_name, "spec", "argv", "display_name", l->display_name,
                                  "language", l->spec_language, "interrupt_mode", "signal", "env",
                                  "metadata", "resources");
        json_object_set_new (specs, l->kernel_name, spec);
        fallback = fallback ? fallback : l->kernel_name;
    }
    const cg_language_t *python = cg_kernels_find (kernels, "python");
    const char *name = python && !python->command ? python->kernel_name : fallback;
    return json_pack ("{s:s?, s:o}", "default", name, "kernelspecs", specs);
}

//  The kernelspecs: the languages' (a new session each) and, for each kernel running, an
//  "attach-<kernel id>" one that opens that very kernel (an agent's included), named
//  after its session. A new object.
static json_t *
s_kernelspecs (cg_gateway_t *self)
{
    json_t *all = json_deep_copy (self->kernelspecs);
    json_t *specs = json_object_get (all, "kernelspecs");
    zlistx_t *sessions = cg_registry_sessions (self->registry, NULL);
    for (cg_registry_session_t *s = zlistx_first (sessions); s; s = zlistx_next (sessions))
        for (int k = 0; k < CG_REGISTRY_KERNELS; k++) {
            const cg_registry_kernel_t *kernel = &s->kernels[k];
            json_t *base = json_object_get (specs, cg_gateway_kernel_name (kernel->language));
            if (!kernel->language[0] || !kernel->pid || !base)
                continue;
            cleanup_free char *name = cg_strdupf (S_ATTACH_PREFIX "%s", kernel->id);
            cleanup_free char *display =
                cg_strdupf ("%s session %s (%s, live)",
                            strcmp (s->owner, CG_GATEWAY_OWNER) == 0 ? "Notebook" : "Agent's",
                            s->id, kernel->language);
            json_t *spec = json_deep_copy (base);
            json_object_set_new (spec, "name", json_string (name));
            json_object_set_new (json_object_get (spec, "spec"), "display_name",
                                 json_string (display));
            json_object_set_new (specs, name, spec);
        }
    zlistx_destroy (&sessions);
    return all;
}

//  --------------------------------------------------------------------------
//  Access

//  True when EXCHANGE carries the gateway token: "Authorization: token T" (as
//  GatewayClient sends it) or "Bearer T", compared in constant time.
static bool
s_authorized (cg_gateway_t *self, cg_http_exchange_t *exchange)
{
    const char *header = cg_http_exchange_header (exchange, "Authorization");
    if (!header)
        return false;
    const char *given = NULL;
    if (strncasecmp (header, "token ", 6) == 0)
        given = header + 6;
    else if (strncasecmp (header, "bearer ", 7) == 0)
        given = header + 7;
    size_t len = strlen (self->token);
    return given && strlen (given) == len && sodium_memcmp (given, self->token, len) == 0;
}

//  The checks every gateway request passes first. Returns true when it may go on (else
//  it was answered).
static bool
s_admit (cg_gateway_t *self, cg_http_exchange_t *exchange)
{
    //  As for /mcp: Host must name this listener (on loopback), an Origin must be it.
    if (!cg_http_guard_origin (self->http, exchange)) {
        cg_http_respond_error (exchange, 403, "forbidden", "Host or Origin is not this server");
        return false;
    }
    if (!s_authorized (self, exchange)) {
        static const char *const headers[] = {"WWW-Authenticate",
                                              "token realm=\"cellgate gateway\"", NULL};
        static const char body[] = "{\"error\":\"unauthorized\",\"message\":\"the gateway needs "
                                   "its token: Authorization: token <gateway token>\"}";
        cg_http_respond (exchange, 401, "application/json", body, sizeof body - 1, headers);
        return false;
    }
    return true;
}

//  --------------------------------------------------------------------------
//  Kernels

static void
s_not_found (cg_http_exchange_t *exchange, const char *what)
{
    cleanup_free char *message = cg_strdupf ("no such %s", what);
    cg_http_respond_error (exchange, 404, "not_found", message);
}

//  GET /api/kernels: every session's kernels that run.
static void
s_list_kernels (cg_gateway_t *self, cg_http_exchange_t *exchange)
{
    json_t *list = json_array ();
    zlistx_t *sessions = cg_registry_sessions (self->registry, NULL);
    for (cg_registry_session_t *s = zlistx_first (sessions); s; s = zlistx_next (sessions))
        for (int k = 0; k < CG_REGISTRY_KERNELS; k++)
            if (s->kernels[k].language[0] && s->kernels[k].pid)
                json_array_append_new (list, s_kernel_model (&s->kernels[k]));
    zlistx_destroy (&sessions);
    cg_http_respond_json (exchange, 200, list, NULL);
}

//  A request waiting for its runner's answer: a start (SESSION_ID's LANGUAGE kernel) or
//  a restart (KERNEL_ID).
typedef struct {
    cg_http_exchange_t *exchange;
    char session_id[16];
    char language[16];
    char kernel_id[37];
} s_waiting_t;

static void
s_waiting_free (void **item)
{
    s_waiting_t *waiting = *item;
    if (waiting)
        cg_http_exchange_release (&waiting->exchange);
    free (waiting);
    *item = NULL;
}

//  Keeps EXCHANGE until the runner answers the request sent under the returned key.
static char *
s_wait (cg_gateway_t *self, cg_http_exchange_t *exchange, const char *session_id,
        const char *language, const char *kernel_id)
{
    char *key = cg_strdupf (S_KEY_PREFIX "%u", ++self->next_key);
    s_waiting_t *waiting = cg_xcalloc (1, sizeof *waiting);
    waiting->exchange = cg_http_exchange_keep (exchange);
    snprintf (waiting->session_id, sizeof waiting->session_id, "%s", session_id ? session_id : "");
    snprintf (waiting->language, sizeof waiting->language, "%s", language);
    snprintf (waiting->kernel_id, sizeof waiting->kernel_id, "%s", kernel_id ? kernel_id : "");
    zhashx_insert (self->waiting, key, waiting);
    return key;
}

//  The variables a kernel may get (cg_gateway_kernel_env).
#define S_ENV_ALLOWED "LANG", "LC_ALL", "TZ"
json_t *
cg_gateway_kernel_env (const json_t *env, const char **why)
{
    json_t *kept = json_object ();
    if (!env)
        return kept;
    const char *name;
    json_t *value;
    *why = json_is_object (env) ? NULL : "env must be an object of strings";
    json_object_foreach (CG_UNCONST (env), name, value)
    {
        if (!json_is_string (value) || json_string_length (value) > 4096) {
            *why = "env values must be strings of at most 4096 bytes";
            break;
        }
        static const char *const allowed[] = {S_ENV_ALLOWED};
        bool ok = strncmp (name, "KERNEL_", 7) == 0 && strlen (name) <= 64
                  && strspn (name, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") == strlen (name);
        for (size_t i = 0; i < sizeof allowed / sizeof *allowed; i++)
            ok |= strcmp (name, allowed[i]) == 0;
        if (ok)
            json_object_set (kept, name, value);
        else
            cg_log (2, "gateway: a kernel's env variable was dropped (only KERNEL_*, LANG, "
                       "LC_ALL and TZ reach a kernel)");
    }
    const char *dir = json_string_value (json_object_get (kept, "KERNEL_WORKING_DIR"));
    if (!*why && dir && dir[0] != '/' && (strstr (dir, "..") || strchr (dir, '\\')))
        *why = "KERNEL_WORKING_DIR must be a path in the workspace, without '..'";
    if (*why)
        json_decref (kept);
    return *why ? NULL : kept;
}

//  The kernel a start request asks to attach to rather than start: its name
//  "attach-<kernel id>" (the kernelspecs GET /api/kernelspecs lists for the kernels
//  running), or env KERNEL_ID (Enterprise Gateway's name for a new kernel's id: here an
//  existing kernel's). Returns the id (borrowed from NAME or ENV), or NULL.
static const char *
s_attach_id (const char *name, const json_t *env)
{
    if (name && strncmp (name, S_ATTACH_PREFIX, strlen (S_ATTACH_PREFIX)) == 0)
        return name + strlen (S_ATTACH_PREFIX);
    return json_string_value (json_object_get (env, "KERNEL_ID"));
}

//  Starts a kernel of LANGUAGE in a new session with ENV; the answer comes with STARTED.
static void
s_start_session (cg_gateway_t *self, cg_http_exchange_t *exchange, const char *language,
                 const json_t *env)
{
    char id[16];
    cg_random_hex (id + 3, 6);
    memcpy (id, "nb_", 3);
    cg_registry_session_t *session =
        cg_registry_create (self->registry, CG_GATEWAY_OWNER, id, language, NULL, NULL);
    if (!session)
        return cg_http_respond_error (exchange, 503, "max_sessions",
                                      "every sandbox is in use (--max-sessions); close one first");
    cleanup_free char *key = s_wait (self, exchange, id, language, NULL);
    cleanup_free char *env_text = json_dumps (env, JSON_COMPACT);
    cg_runner_start (session->runner, key, language, env_text);
    cg_log (2, "gateway: starting a %s kernel in session %s", language, id);
}

//  POST /api/kernels {"name", "env"}: a new session (its own sandbox) with that kernel,
//  or a running kernel attached to (s_attach_id).
static void
s_start_kernel (cg_gateway_t *self, cg_http_exchange_t *exchange)
{
    size_t len;
    const char *body = cg_http_exchange_body (exchange, &len);
    json_error_t error;
    json_t *request = len ? json_loadb (body, len, 0, &error) : json_object ();
    const char *name = json_string_value (json_object_get (request, "name"));
    const char *fallback = json_string_value (json_object_get (self->kernelspecs, "default"));
    const char *language = cg_gateway_language (name ? name : fallback ? fallback : "");
    const char *bad_env = NULL;
    json_t *env = json_is_object (request)
                      ? cg_gateway_kernel_env (json_object_get (request, "env"), &bad_env)
                      : NULL;
    const char *attach = env ? s_attach_id (name, env) : NULL;
    cg_registry_session_t *session = NULL;
    cg_registry_kernel_t *kernel =
        attach ? cg_registry_kernel_find (self->registry, attach, &session) : NULL;
    //  A null name (Notebook 6's gateway client for a session without one) is the default.
    json_t *given = json_object_get (request, "name");
    if (!json_is_object (request) || (given && !name && !json_is_null (given)))
        cg_http_respond_error (
            exchange, 400, "bad_request",
            "the body must be a JSON object: {\"name\": kernelspec, \"env\": {}}");
    else if (bad_env)
        cg_http_respond_error (exchange, 400, "bad_request", bad_env);
    else if (attach && (!kernel || !kernel->pid))
        s_not_found (exchange, "kernel to attach to (GET /api/kernels lists them)");
    else if (attach) {
        cg_log (2, "gateway: a front end attaches to kernel %s (session %s)", kernel->id,
                session->id);
        cg_http_respond_json (exchange, 201, s_kernel_model (kernel), NULL);
    }
    else if (!language
             || !json_object_get (json_object_get (self->kernelspecs, "kernelspecs"),
                                  cg_gateway_kernel_name (language)))
        s_not_found (exchange, "kernelspec (GET /api/kernelspecs lists them)");
    else
        s_start_session (self, exchange, language, env);
    json_decref (env);
    json_decref (request);
}

//  A kernel's routes: /api/kernels/{id}[/interrupt|/restart|/channels].
static void
s_kernel_route (cg_gateway_t *self, cg_http_exchange_t *exchange, const char *rest)
{
    const char *method = cg_http_exchange_method (exchange);
    size_t id_len = strcspn (rest, "/");
    const char *action = rest[id_len] ? rest + id_len + 1 : NULL;
    char id[37] = "";
    if (id_len < sizeof id)
        memcpy (id, rest, id_len), id[id_len] = '\0';
    cg_registry_session_t *session = NULL;
    cg_registry_kernel_t *kernel =
        id[0] ? cg_registry_kernel_find (self->registry, id, &session) : NULL;
    if (!kernel || !kernel->pid)
        return s_not_found (exchange, "kernel");
    bool get = strcmp (method, "GET") == 0, post = strcmp (method, "POST") == 0;
    if (!action && get)
        cg_http_respond_json (exchange, 200, s_kernel_model (kernel), NULL);
    else if (!action && strcmp (method, "DELETE") == 0) {
        //  An agent's kernel a front end attached to: the front end is done with it (Jupyter
        //  Server sends this at its own shutdown and waits for a success); the kernel and its
        //  session live on for the agent, whose close_session ends them.
        if (strcmp (session->owner, CG_GATEWAY_OWNER) != 0) {
            cg_log (2, "gateway: a front end detached from kernel %s (session %s lives on)",
                    kernel->id, session->id);
            return cg_http_respond (exchange, 204, NULL, NULL, 0, NULL);
        }
        cg_log (2, "gateway: kernel %s deleted (session %s)", kernel->id, session->id);
        cg_registry_retire (self->registry, session);
        cg_http_respond (exchange, 204, NULL, NULL, 0, NULL);
    }
    else if (action && strcmp (action, "interrupt") == 0 && post) {
        cg_runner_interrupt (session->runner, kernel->language);
        cg_http_respond (exchange, 204, NULL, NULL, 0, NULL);
    }
    else if (action && strcmp (action, "restart") == 0 && post) {
        if (session->busy)
            return cg_http_respond_error (exchange, 409, "session_busy",
                                          "the session is running an MCP call; interrupt it first");
        cleanup_free char *key = s_wait (self, exchange, NULL, kernel->language, kernel->id);
        cg_runner_restart (session->runner, key, kernel->language);
    }
    else if (action && strcmp (action, "channels") == 0 && get)
        cg_gateway_ws_attach (self, exchange, kernel);
    else if (!action || strcmp (action, "interrupt") == 0 || strcmp (action, "restart") == 0
             || strcmp (action, "channels") == 0)
        cg_http_respond_error (exchange, 405, "method_not_allowed", "method not allowed here");
    else
        s_not_found (exchange, "resource");
}

//  --------------------------------------------------------------------------
//  Routes

static void
s_api (void *arg, cg_http_exchange_t *exchange)
{
    cg_gateway_t *self = arg;
    if (!s_admit (self, exchange))
        return;
    const char *path = cg_http_exchange_path (exchange);
    const char *method = cg_http_exchange_method (exchange);
    bool get = strcmp (method, "GET") == 0;
    if (strcmp (path, "/api") == 0 || strcmp (path, "/api/") == 0) {
        if (get)
            cg_http_respond_json (exchange, 200, json_pack ("{s:s}", "version", "2.5.2"), NULL);
        else
            cg_http_respond_error (exchange, 405, "method_not_allowed", "GET only");
    }
    else if (strcmp (path, "/api/kernelspecs") == 0 && get)
        cg_http_respond_json (exchange, 200, s_kernelspecs (self), NULL);
    else if (strncmp (path, "/api/kernelspecs/", 17) == 0 && get) {
        json_t *specs = s_kernelspecs (self);
        json_t *spec = json_object_get (json_object_get (specs, "kernelspecs"), path + 17);
        if (spec)
            cg_http_respond_json (exchange, 200, json_incref (spec), NULL);
        else
            s_not_found (exchange, "kernelspec");
        json_decref (specs);
    }
    else if (strcmp (path, "/api/kernels") == 0 && get)
        s_list_kernels (self, exchange);
    else if (strcmp (path, "/api/kernels") == 0 && strcmp (method, "POST") == 0)
        s_start_kernel (self, exchange);
    else if (strncmp (path, "/api/kernels/", 13) == 0)
        s_kernel_route (self, exchange, path + 13);
    else
        s_not_found (exchange, "resource");
}

//  GET /kernelspecs/{name}/{resource}: the kernels ship no logos.
static void
s_resources (void *arg, cg_http_exchange_t *exchange)
{
    cg_gateway_t *self = arg;
    if (s_admit (self, exchange))
        s_not_found (exchange, "kernelspec resource");
}

//  --------------------------------------------------------------------------
//  Runner answers

bool
cg_gateway_owns_key (cg_gateway_t *self, const char *key)
{
    return zhashx_lookup (self->waiting, key) != NULL;
}

void
cg_gateway_runner_event (cg_gateway_t *self, const cg_runner_event_t *event)
{
    if (event->tag != CG_RUNNER_STARTED && event->tag != CG_RUNNER_RESTARTED)
        return;
    const char *key = event->key;
    s_waiting_t *waiting = zhashx_lookup (self->waiting, key);
    if (!waiting)
        return;
    const char *why = event->started.why;
    cg_registry_session_t *session = NULL;
    cg_registry_kernel_t *kernel = NULL;
    if (event->tag == CG_RUNNER_RESTARTED)
        kernel = cg_registry_kernel_find (self->registry, waiting->kernel_id, &session);
    else if ((session = cg_registry_find (self->registry, CG_GATEWAY_OWNER, waiting->session_id)))
        kernel = cg_registry_session_kernel (session, waiting->language);
    bool started = event->tag == CG_RUNNER_STARTED;
    if (!why || *why || !kernel || !kernel->pid) {
        cleanup_free char *message =
            cg_strdupf ("the kernel did not %s: %s", started ? "start" : "restart",
                        why && *why ? why : "it is gone");
        cg_http_respond_error (waiting->exchange, 500, "kernel_failed", message);
        if (started && session)
            cg_registry_retire (self->registry, session);
    }
    else {
        cg_log (2, "gateway: kernel %s %s", kernel->id, started ? "started" : "restarted");
        cg_http_respond_json (waiting->exchange, started ? 201 : 200, s_kernel_model (kernel),
                              NULL);
    }
    zhashx_delete (self->waiting, key);
}

//  --------------------------------------------------------------------------
//  Life

//  The token: the configured one, else the one kept 0600 in <state dir>/gateway-token
//  (made at first start). Returns it (caller frees), or NULL (logged).
static char *
s_token (const cg_config_t *config)
{
    if (config->gateway_token)
        return cg_xstrdup (config->gateway_token);
    cg_error_t *err = NULL;
    char *token = cg_http_guard_kept_token (config->state_dir, "gateway-token", &err);
    if (!token) {
        cg_log (0, "gateway: cannot keep its token: %s (set --gateway-token, or --gateway off)",
                cg_error_message (err));
        cg_error_destroy (&err);
    }
    return token;
}

cg_gateway_t *
cg_gateway_new (const cg_config_t *config, cg_registry_t *registry, cg_http_t *http,
                cg_loop_t *loop)
{
    char *token = s_token (config);
    if (!token)
        return NULL;
    cg_gateway_t *self = cg_xcalloc (1, sizeof *self);
    self->config = config;
    self->registry = registry;
    self->http = http;
    self->token = token;
    self->kernelspecs = s_load_kernelspecs (config);
    self->waiting = zhashx_new ();
    zhashx_set_destructor (self->waiting, s_waiting_free);
    self->sockets = zlistx_new ();
    self->loop = loop;
    cg_loop_before_wait (loop, cg_gateway_ws_before_wait, self);
    //  One large kernel message per WebSocket at most (cg_gateway_ws.c).
    self->decoder = cg_worker_new_nice ("gateway decoder", CG_GATEWAY_SOCKETS_MAX, CG_WORKER_NICE);
    cg_worker_watch (self->decoder, loop, cg_gateway_ws_decoded, self);
    cg_http_route (http, "/api", 0, S_BODY_MAX, s_api, self);
    cg_http_route (http, "/api/", CG_HTTP_PREFIX, S_BODY_MAX, s_api, self);
    cg_http_route (http, "/kernelspecs/", CG_HTTP_PREFIX | CG_HTTP_GET_ONLY, 0, s_resources, self);
    //  What a person runs to use the kernels: where the token is, never the token (it is
    //  the operator's key, and the log may end up where others read it).
    cleanup_free char *file =
        config->gateway_token ? NULL : cg_strdupf ("%s/gateway-token", config->state_dir);
    cleanup_free char *command = cg_notebook_command (cg_http_base_url (http), file, NULL);
    cg_log (2, "gateway: %s", command);
    return self;
}

void
cg_gateway_destroy (cg_gateway_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    cg_gateway_t *self = *self_p;
    cg_gateway_ws_close_all (self);
    cg_loop_forget (self->loop, self);
    cg_worker_cancel_waiting (self->decoder);
    cg_worker_destroy (&self->decoder); /* what it held belongs to no connection now */
    zlistx_destroy (&self->sockets);
    zhashx_destroy (&self->waiting);
    json_decref (self->kernelspecs);
    sodium_memzero (self->token, strlen (self->token));
    free (self->token);
    free (self);
    *self_p = NULL;
}
