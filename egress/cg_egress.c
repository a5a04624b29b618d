/*  cg_egress — --egress proxy: squid, the relay and each sandbox's listener. */
#define _GNU_SOURCE
#include "egress/cg_egress.h"
#include "egress/cg_egress_int.h"
#include "egress/cg_egress_netns.h"
#include "egress/cg_egress_relay.h"
#include "egress/cg_egress_squid.h"
#include "base/cg_fs.h"
#include "base/cg_limits.h"
#include "base/cg_log.h"
#include "base/cg_util.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

int
cg_egress_take_test_args (int *argc, char **argv, cg_egress_test_t *test, cg_error_t **err)
{
    int kept = 0;
    for (int i = 0; i < *argc; i++) {
        const char **field = strcmp (argv[i], "--test-egress-hosts-file") == 0  ? &test->hosts_file
                             : strcmp (argv[i], "--test-egress-allow-net") == 0 ? &test->allow_net
                                                                                : NULL;
        if (!field) {
            argv[kept++] = argv[i];
            continue;
        }
        if (i + 1 >= *argc)
            return cg_error_set (err, EINVAL, "%s needs a value", argv[i]);
        *field = argv[++i];
    }
    *argc = kept;
    argv[kept] = NULL;
    if (test->hosts_file || test->allow_net)
        cg_log (1, "egress test settings in use (--test-egress-*): not for production");
    return 0;
}

//  The server's list from CONFIG (a list, or @FILE). Returns it, or NULL with *err set.
static cg_egress_policy_t *
s_policy (const cg_config_t *config, cg_error_t **err)
{
    const char *text = config->egress_allow;
    if (!text || !*text) {
        cg_error_set (err, EINVAL,
                      "--egress proxy needs --egress-allow: the hosts sandboxes may reach "
                      "(e.g. --egress-allow pypi.org,files.pythonhosted.org)");
        return NULL;
    }
    //  Comma-separated pieces, each entries or @FILE (the flag given more than once is
    //  joined with commas: cg_config).
    cg_egress_policy_t *policy = cg_egress_policy_new ();
    cleanup_free char *copy = cg_xstrdup (text);
    char *save = NULL;
    for (char *piece = strtok_r (copy, ",", &save); piece; piece = strtok_r (NULL, ",", &save)) {
        piece += strspn (piece, " \t\n");
        cleanup_free char *file_text =
            piece[0] == '@' ? cg_read_file (piece + 1, 1024 * 1024, NULL, err) : NULL;
        if ((piece[0] == '@' && !file_text)
            || cg_egress_policy_add (policy, file_text ? file_text : piece, err) < 0) {
            cg_error_wrap (err, "--egress-allow %s", piece);
            cg_egress_policy_destroy (&policy);
            return NULL;
        }
    }
    if (cg_egress_policy_count (policy) == 0) {
        cg_error_set (err, EINVAL, "--egress-allow names no host");
        cg_egress_policy_destroy (&policy);
    }
    return policy;
}

int
cg_egress_check (const cg_config_t *config, cg_error_t **err)
{
    if (config->egress == CG_EGRESS_OFF)
        return 0;
    cg_egress_policy_t *policy = s_policy (config, err);
    if (!policy)
        return -1;
    cg_egress_policy_destroy (&policy);
    if (!cg_egress_squid_path ())
        return cg_error_set (err, ENOENT,
                             "--egress proxy runs squid, which is not installed (apt install "
                             "squid, or scripts/setup.sh)");
    return 0;
}

//  --------------------------------------------------------------------------
//  squid

//  Writes squid's per-session rules (the narrowed sessions) and, when RELOAD, tells squid to
//  read them again. Returns 0, or -1 with *err set. Called with the lock held.
static int
s_write_sessions (cg_egress_t *self, bool reload, cg_error_t **err)
{
    cg_egress_session_rule_t rules[CG_EGRESS_SLOTS];
    size_t count = 0;
    for (size_t i = 0; i < CG_EGRESS_SLOTS; i++)
        if (self->slots[i].used && self->slots[i].narrow)
            rules[count++] = (cg_egress_session_rule_t){.src = self->slots[i].src,
                                                        .policy = self->slots[i].narrow};
    cleanup_free char *text = cg_egress_squid_sessions (rules, count);
    cleanup_free char *path = cg_strdupf ("%s/sessions.conf", self->dir);
    if (!text)
        return cg_error_set (err, EINVAL, "egress: a session's rule could not be written");
    if (cg_write_file (path, text, strlen (text), 0644, err) < 0)
        return -1;
    if (reload && self->squid_pid > 0)
        kill (self->squid_pid, SIGHUP);
    return 0;
}

//  The environment of sandboxes in proxy mode.
static void
s_make_env (cg_egress_t *self, const cg_config_t *config)
{
    char **env = cg_strv_new (16);
    size_t n = 0;
    const char *proxy = "http://127.0.0.1:" CG_STR (CG_EGRESS_PORT);
    static const char *const names[] = {"HTTP_PROXY",  "HTTPS_PROXY",      "http_proxy",
                                        "https_proxy", "npm_config_proxy", "npm_config_https_proxy",
                                        NULL};
    for (int i = 0; names[i]; i++)
        env[n++] = cg_strdupf ("%s=%s", names[i], proxy);
    //  `pip install x` typed by the model installs into the session's package layer (on
    //  PYTHONPATH; Debian's pip refuses the system's, PEP 668), as install_package does.
    env[n++] = cg_xstrdup ("PIP_TARGET=" CG_EGRESS_SITE_PYTHON);
    env[n++] = cg_xstrdup ("NO_PROXY=localhost,127.0.0.1");
    env[n++] = cg_xstrdup ("no_proxy=localhost,127.0.0.1");
    if (config->pip_index_url) {
        env[n++] = cg_strdupf ("PIP_INDEX_URL=%s", config->pip_index_url);
        //  An index the operator gave as plain http:// is meant: pip ignores one unless
        //  its host is trusted.
        const char *url = config->pip_index_url;
        if (strncmp (url, "http://", 7) == 0) {
            size_t len = strcspn (url + 7, "/:?#");
            env[n++] = cg_strdupf ("PIP_TRUSTED_HOST=%.*s", (int)len, url + 7);
        }
    }
    if (config->npm_registry)
        env[n++] = cg_strdupf ("npm_config_registry=%s", config->npm_registry);
    //  Node's fetch ignores the proxy variables: this preload routes it through undici's
    //  EnvHttpProxyAgent (kernels/javascript/cellgate-proxy.js).
    env[n++] = cg_xstrdup ("NODE_OPTIONS=--require " CG_EGRESS_NODE_PRELOAD);
    env[n] = NULL;
    self->env = env;
}

cg_egress_t *
cg_egress_new (const cg_config_t *config, const char *state_dir, const char *exe,
               const cg_egress_test_t *test, cg_error_t **err)
{
    cg_egress_t *self = cg_xcalloc (1, sizeof *self);
    cleanup_free char *fifo = NULL; /* before the first goto: clang refuses a jump past it */
    pthread_mutex_init (&self->lock, NULL);
    self->config = config;
    self->log_fd = self->log_hold_fd = self->relay_fd = self->squid_pidfd = -1;
    //  squid's files: as root it runs as another user (proxy), which must reach them, so they
    //  live under /run rather than in a state dir that may be private.
    self->dir = geteuid () == 0 ? cg_strdupf ("/run/cellgate/egress-%d", (int)getpid ())
                                : cg_strdupf ("%s/egress", state_dir);
    if (geteuid () == 0 && cg_mkdir_p ("/run/cellgate", 0755, err) < 0)
        goto failed;
    if (!(self->policy = s_policy (config, err)))
        goto failed;
    if (cg_mkdir_p (self->dir, 0755, err) < 0)
        goto failed;
    self->dir_made = true;
    fifo = cg_strdupf ("%s/access.fifo", self->dir);
    unlink (fifo);
    if (mkfifo (fifo, 0600) < 0) {
        cg_error_set (err, errno, "%s: %s", fifo, strerror (errno));
        goto failed;
    }
    //  Read end first (squid's open for writing waits for a reader), and a write end held
    //  here so that squid's restart is never an end of file.
    self->log_fd = open (fifo, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    self->log_hold_fd = open (fifo, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    if (self->log_fd < 0 || self->log_hold_fd < 0) {
        cg_error_set (err, errno, "%s: %s", fifo, strerror (errno));
        goto failed;
    }
    if (cg_egress_squid_prepare (self, test, fifo, err) < 0
        || s_write_sessions (self, false, err) < 0 || cg_egress_squid_start (self, true, err) < 0)
        goto failed;
    self->relay_pid = cg_egress_relay_spawn (exe, self->squid_port, &self->relay_fd, err);
    if (self->relay_pid < 0)
        goto failed;
    s_make_env (self, config);
    cg_log (2, "egress: proxy mode, squid on 127.0.0.1:%d (pid %d), relay pid %d; allowed: %s",
            self->squid_port, (int)self->squid_pid, (int)self->relay_pid, config->egress_allow);
    return self;
failed:
    cg_error_wrap (err, "--egress proxy");
    cg_egress_destroy (&self);
    return NULL;
}

void
cg_egress_end_process (pid_t *pid)
{
    if (*pid <= 0)
        return;
    kill (*pid, SIGTERM);
    for (int i = 0; i < 40; i++) {
        if (waitpid (*pid, NULL, WNOHANG) == *pid) {
            *pid = 0;
            return;
        }
        usleep (50 * 1000);
    }
    kill (*pid, SIGKILL);
    waitpid (*pid, NULL, 0);
    *pid = 0;
}

void
cg_egress_stop (cg_egress_t *self)
{
    if (!self)
        return;
    pthread_mutex_lock (&self->lock);
    if (!self->stopping) {
        self->stopping = true;
        if (self->relay_fd >= 0)
            close (self->relay_fd); //  the relay ends when its control socket closes
        self->relay_fd = -1;
        if (self->squid_pid > 0)
            kill (self->squid_pid, SIGTERM);
        //  squid keeps what it has open; nothing reads these files again.
        if (self->dir_made)
            cg_rm_rf (self->dir, NULL);
        self->dir_made = false;
    }
    pthread_mutex_unlock (&self->lock);
}

void
cg_egress_destroy (cg_egress_t **self_p)
{
    cg_egress_t *self = *self_p;
    if (!self)
        return;
    cg_egress_stop (self);
    cg_egress_end_process (&self->relay_pid);
    cg_egress_squid_stop (self);
    if (self->log_fd >= 0)
        close (self->log_fd);
    if (self->log_hold_fd >= 0)
        close (self->log_hold_fd);
    for (size_t i = 0; i < CG_EGRESS_SLOTS; i++)
        cg_egress_slot_clear (&self->slots[i]);
    cg_egress_policy_destroy (&self->policy);
    cg_strv_free (self->env);
    if (self->dir_made)
        cg_rm_rf (self->dir, NULL);
    free (self->dir);
    pthread_mutex_destroy (&self->lock);
    free (self);
    *self_p = NULL;
}

const cg_egress_policy_t *
cg_egress_policy (cg_egress_t *self)
{
    return self->policy;
}

const char *const *
cg_egress_env (cg_egress_t *self)
{
    return (const char *const *)self->env;
}

cg_egress_policy_t *
cg_egress_narrow (cg_egress_t *self, json_t *egress_allow, cg_error_t **err)
{
    cg_egress_policy_t *narrow = NULL;
    if (cg_egress_policy_narrow_json (self->policy, egress_allow, &narrow, err) < 0) {
        cg_error_wrap (err, "egress_allow");
        return NULL;
    }
    return narrow;
}

//  --------------------------------------------------------------------------
//  Sessions

int
cg_egress_attach (cg_egress_t *self, const char *slot, pid_t init_pid, cg_egress_policy_t *narrow,
                  cg_error_t **err)
{
    int listen_fd = cg_egress_netns_listen (init_pid, CG_EGRESS_PORT, err);
    if (listen_fd < 0) {
        cg_egress_policy_destroy (&narrow);
        return -1;
    }
    pthread_mutex_lock (&self->lock);
    int rc = -1;
    cg_egress_slot_t *entry = cg_egress_slot_new (self, slot, err);
    if (entry) {
        entry->narrow = narrow;
        narrow = NULL;
        const cg_config_t *config = self->config;
        cg_egress_limits_t limits = {
            .max_conns = config->egress_max_conns,
            .max_up = (long long)config->egress_max_mb_up * 1024 * 1024,
            .max_down = (long long)config->egress_max_mb_down * 1024 * 1024,
            .per_minute = config->egress_per_minute,
        };
        rc = cg_egress_relay_add (self->relay_fd, slot, entry->src, &limits, listen_fd, err);
        if (rc == 0 && entry->narrow)
            rc = s_write_sessions (self, true, err);
        if (rc < 0)
            cg_egress_slot_clear (entry);
    }
    pthread_mutex_unlock (&self->lock);
    cg_egress_policy_destroy (&narrow);
    close (listen_fd);
    return rc;
}

void
cg_egress_detach (cg_egress_t *self, const char *slot)
{
    pthread_mutex_lock (&self->lock);
    cg_egress_slot_t *entry = cg_egress_slot_find (self, slot);
    if (entry && self->stopping)
        cg_egress_slot_clear (entry); /* the relay and squid are ending */
    else if (entry) {
        cg_error_t *err = NULL;
        if (cg_egress_relay_remove (self->relay_fd, slot, &err) < 0)
            cg_log (1, "egress: %s", cg_error_message (err));
        cg_error_destroy (&err);
        bool narrowed = entry->narrow != NULL;
        cg_egress_slot_clear (entry);
        if (narrowed && s_write_sessions (self, true, &err) < 0)
            cg_log (1, "egress: %s", cg_error_message (err));
        cg_error_destroy (&err);
    }
    pthread_mutex_unlock (&self->lock);
}
