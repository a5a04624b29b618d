/*  cg_tools_packages — install_package: a pip or npm package from the operator's local
    sources (--wheelhouse, --npm-mirror), installed by a bash command inside the session's
    sandbox (or a one-shot sandbox that writes the shared layer), never on the host, with
    the sandbox's network still off. */
#include "mcp/tools/cg_tools.h"
#include "artifacts/cg_execlog_queue.h"
#include "base/cg_util.h"
#include "containers/cg_container.h"

#include <ctype.h>
#include <string.h>

#define S_NAME_MAX 214
#define S_VERSION_MAX 64

//  The timeout of an install, in seconds.
#define S_INSTALL_TIMEOUT_S CG_TIMEOUT_MAX_S

//  What the install command prints last when it worked: "cellgate-version: <version>".
#define S_VERSION_MARK "cellgate-version: "

//  A global install while another runs.
#define S_INSTALL_BUSY_MESSAGE                                                               \
    "Another global install (no session_id) is writing the shared package layer; try again " \
    "when it has finished, or install into a session with session_id."

//  The install command's exit status when the package is not in the source.
#define S_NOT_FOUND_EXIT 3

//  --------------------------------------------------------------------------
//  Package names
//
//  Untrusted input: the name ends up in a bash command, so only characters that need no
//  quoting pass (letters, digits and . _ - ~ +, a / after an npm scope), and never a
//  leading - (an option), a URL, a path or a space.

//  True when the LEN characters at TEXT are letters, digits or in EXTRA, start and end
//  with a letter or digit, and number 1 to MAX.
static bool
s_word (const char *text, size_t len, const char *extra, size_t max)
{
    if (len == 0 || len > max || !isalnum ((unsigned char)text[0])
        || !isalnum ((unsigned char)text[len - 1]))
        return false;
    for (size_t i = 0; i < len; i++)
        if ((!isalnum ((unsigned char)text[i]) && !strchr (extra, text[i]))
            || (text[i] == '.' && text[i + 1] == '.'))
            return false;
    return true;
}

//  Splits SPEC (a pip requirement "name" or "name==version") into *NAME and *VERSION
//  (NULL when none; caller frees both). Returns false when it is not one.
static bool
s_pip_spec (const char *spec, char **name, char **version)
{
    const char *eq = strstr (spec, "==");
    size_t name_len = eq ? (size_t)(eq - spec) : strlen (spec);
    if (!s_word (spec, name_len, "._-", S_NAME_MAX)
        || (eq && !s_word (eq + 2, strlen (eq + 2), ".+!_-", S_VERSION_MAX)))
        return false;
    *name = cg_xstrndup (spec, name_len);
    *version = eq ? cg_xstrdup (eq + 2) : NULL;
    return true;
}

//  Splits SPEC (an npm "name", "@scope/name", either with "@version") into *NAME and
//  *VERSION (NULL when none; caller frees both). Returns false when it is not one.
static bool
s_npm_spec (const char *spec, char **name, char **version)
{
    const char *start = spec[0] == '@' ? spec + 1 : spec;
    const char *slash = spec[0] == '@' ? strchr (start, '/') : NULL;
    if (spec[0] == '@' && (!slash || !s_word (start, (size_t)(slash - start), "._~-", S_NAME_MAX)))
        return false;
    const char *base = slash ? slash + 1 : spec;
    const char *at = strchr (base, '@');
    size_t base_len = at ? (size_t)(at - base) : strlen (base);
    if (!s_word (base, base_len, "._~-", S_NAME_MAX)
        || (at && !s_word (at + 1, strlen (at + 1), ".+-", S_VERSION_MAX)))
        return false;
    for (const char *c = spec; c < base + base_len; c++)
        if (isupper ((unsigned char)*c))
            return false; /* npm names are lower case */
    *name = cg_xstrndup (spec, (size_t)(base + base_len - spec));
    *version = at ? cg_xstrdup (at + 1) : NULL;
    return true;
}

bool
cg_tools_package_spec (bool python, const char *spec, char **name, char **version)
{
    *name = *version = NULL;
    return python ? s_pip_spec (spec, name, version) : s_npm_spec (spec, name, version);
}

//  --------------------------------------------------------------------------
//  The install command

//  Where install_package takes packages from: the operator's local sources, the index or
//  registry through the egress proxy (--egress proxy), or both (the local one first).
typedef struct {
    bool local;       /* --wheelhouse (pip) or --npm-mirror (npm) */
    bool online;      /* --egress proxy: the index the sandbox's environment names */
    const char *hash; /* pip's hash-checked mode: "name==version --hash=sha256:..." lines */
} s_sources_t;

//  The bash command installing NAME (VERSION may be NULL) with pip into the sandbox's
//  own layer, from SOURCES: the wheelhouse first (--no-index), then the index through the
//  proxy when the wheelhouse has no match. Caller frees.
static char *
s_pip_command (const char *name, const char *version, const s_sources_t *sources)
{
    //  pip's own requirements file in hash mode: every line pinned, with its hash.
    cleanup_free char *target =
        sources->hash ? cg_strdupf ("--require-hashes -r /tmp/cellgate-hashes.txt")
                      : cg_strdupf ("'%s%s%s'", name, version ? "==" : "", version ? version : "");
    return cg_strdupf (
        "cd /tmp || exit 1\n"
        "%s%s%s"
        "pip_install() { python3 -m pip install \"$@\" --target " CG_SITE_MOUNT
        "/python --upgrade --no-cache-dir --disable-pip-version-check "
        "--no-warn-script-location --progress-bar off %s 2>&1; }\n"
        "rc=1; out=''\n"
        "%s"
        "%s"
        "printf '%%s\\n' \"$out\"\n"
        "if [ $rc -ne 0 ]; then\n"
        "  case \"$out\" in *'No matching distribution found'*) exit %d ;; esac\n"
        "  exit $rc\n"
        "fi\n"
        "python3 -c 'import importlib.metadata as m, sys; print(\"" S_VERSION_MARK
        "\" + m.version(sys.argv[1]))' '%s'\n",
        sources->hash ? "printf '%s\\n' '" : "", sources->hash ? sources->hash : "",
        sources->hash ? "' > /tmp/cellgate-hashes.txt || exit 1\n" : "", target,
        sources->local ? "out=$(pip_install --no-index --find-links " CG_WHEELHOUSE_MOUNT
                         "); rc=$?\n"
                       : "",
        sources->online ? "if [ $rc -ne 0 ] && { [ -z \"$out\" ] || case \"$out\" in *'No "
                          "matching distribution found'*) true ;; *) false ;; esac; }; then "
                          "out=$(pip_install); rc=$?; fi\n"
                        : "",
        S_NOT_FOUND_EXIT, name);
}

//  The bash command installing NAME (VERSION may be NULL: the newest) with npm into the
//  sandbox's own layer: from its tarball in the mirror (as npm pack names it) when SOURCES
//  has one and it is there, else from the registry through the proxy when SOURCES is
//  online. Caller frees.
static char *
s_npm_command (const char *name, const char *version, const s_sources_t *sources)
{
    //  npm pack names @scope/name's tarball scope-name-<version>.tgz.
    cleanup_free char *base = cg_xstrdup (name[0] == '@' ? name + 1 : name);
    char *slash = strchr (base, '/');
    if (slash)
        *slash = '-';
    return cg_strdupf (
        "cd /tmp || exit 1\n"
        "shopt -s nullglob\n"
        "mirror=" CG_NPM_MIRROR_MOUNT "\n"
        "if [ -n '%s' ]; then found=(\"$mirror/%s-%s.tgz\"); [ -f \"${found[0]}\" ] || found=()\n"
        "else found=(\"$mirror\"/%s-[0-9]*.tgz); fi\n"
        "tgz=$(printf '%%s\\n' \"${found[@]}\" | sort -V | tail -n 1)\n"
        "if [ -n \"$tgz\" ]; then\n"
        "  npm install --offline --no-audit --no-fund --no-update-notifier --loglevel=warn "
        "--prefix " CG_SITE_MOUNT "/node \"$tgz\" 2>&1 || exit $?\n"
        "elif %s; then\n"
        "  out=$(npm install --no-audit --no-fund --no-update-notifier --loglevel=warn "
        "--prefix " CG_SITE_MOUNT "/node '%s%s%s' 2>&1); rc=$?\n"
        "  printf '%%s\\n' \"$out\"\n"
        "  case \"$out\" in *E404*|*'No matching version'*) exit %d ;; esac\n"
        "  [ $rc -eq 0 ] || exit $rc\n"
        "else echo \"no %s-%s.tgz in the npm mirror\"; exit %d; fi\n"
        "node -p '\"" S_VERSION_MARK "\" + require(\"" CG_SITE_MOUNT
        "/node/node_modules/%s/package.json\").version'\n",
        version ? version : "", base, version ? version : "", base,
        sources->online ? "true" : "false", name, version ? "@" : "", version ? version : "",
        S_NOT_FOUND_EXIT, base, version ? version : "<version>", S_NOT_FOUND_EXIT, name);
}

//  --------------------------------------------------------------------------
//  The tool

#define S_HASHES_MAX 64

//  install_package's HASHES (pip's hash-checked mode): {"name==version": "<sha256 hex>"}
//  for the package and each dependency, PACKAGE among them. Returns the requirement lines
//  ("name==version --hash=sha256:...", newline-separated; safe inside single quotes: names,
//  versions and hex only), or NULL with *ERROR set. Caller frees.
static char *
s_hash_lines (json_t *hashes, const char *package, const char **error)
{
    if (!json_is_object (hashes) || json_object_size (hashes) == 0
        || json_object_size (hashes) > S_HASHES_MAX) {
        *error = "'hashes' must be an object of 1 to " CG_STR (
            S_HASHES_MAX) " entries: \"name==version\": \"<sha256 in hex>\"";
        return NULL;
    }
    if (!json_object_get (hashes, package)) {
        *error = "with 'hashes', 'package' must be name==version and one of its keys";
        return NULL;
    }
    size_t cap = 256, len = 0;
    char *lines = cg_xcalloc (1, cap);
    const char *key;
    json_t *value;
    json_object_foreach (hashes, key, value)
    {
        cleanup_free char *name = NULL, *version = NULL;
        const char *hex = json_string_value (value);
        bool ok = s_pip_spec (key, &name, &version) && version && hex && strlen (hex) == 64;
        for (size_t i = 0; ok && i < 64; i++)
            ok = isxdigit ((unsigned char)hex[i]) && !isupper ((unsigned char)hex[i]);
        if (!ok) {
            free (lines);
            *error = "each 'hashes' key must be name==version and each value a sha256 in "
                     "lower-case hex (64 characters)";
            return NULL;
        }
        size_t need = strlen (key) + 64 + 32;
        if (len + need > cap)
            lines = cg_xrealloc (lines, cap = (len + need) * 2);
        len += (size_t)snprintf (lines + len, cap - len, "%s%s --hash=sha256:%s", len ? "\n" : "",
                                 key, hex);
    }
    return lines;
}

void
cg_tools_install_package (const cg_request_t *req, json_t *arguments)
{
    const cg_config_t *config = cg_server_config (req->server);
    cg_registry_t *registry = cg_server_registry (req->server);
    const char *package = json_string_value (json_object_get (arguments, "package"));
    const char *language = json_string_value (json_object_get (arguments, "language"));
    json_t *session_arg = json_object_get (arguments, "session_id");
    const char *session_id = json_string_value (session_arg);
    const char *canonical = NULL;
    if (!cg_tools_language_arg (req, json_object_get (arguments, "language"), &canonical))
        return;
    bool python = canonical && strcmp (canonical, "python") == 0;
    bool node = canonical && strcmp (canonical, "javascript") == 0;
    cleanup_free char *name = NULL;
    cleanup_free char *version = NULL;
    const char *error = NULL;
    if (!package || !language)
        error = "'package' and 'language' are required strings";
    else if (!python && !node)
        error = "'language' must be python (pip) or node (npm)";
    else if (session_arg && !json_is_null (session_arg)
             && (!session_id || !cg_tools_valid_session_id (session_id)))
        error = CG_SESSION_ID_RULE;
    else if (python ? !s_pip_spec (package, &name, &version)
                    : !s_npm_spec (package, &name, &version))
        error = python ? "'package' must be a Python package name, optionally with ==version "
                         "(e.g. requests or requests==2.31.0): letters, digits, '.', '_', '-'; "
                         "no URLs, paths, options or spaces"
                       : "'package' must be an npm package name, optionally scoped and with "
                         "@version (e.g. left-pad, @scope/pkg@1.2.0): lower-case letters, "
                         "digits, '.', '_', '~', '-'; no URLs, paths, options or spaces";
    if (error) {
        cg_request_result (req, cg_tools_error_object ("invalid_params", error, session_id));
        return;
    }
    json_t *hashes = json_object_get (arguments, "hashes");
    cleanup_free char *hash_lines = NULL;
    if (hashes && !python)
        error = "'hashes' is pip's hash-checked mode (npm checks each package's integrity "
                "from the registry itself)";
    else if (hashes)
        hash_lines = s_hash_lines (hashes, package, &error);
    if (error) {
        cg_request_result (req, cg_tools_error_object ("invalid_params", error, session_id));
        return;
    }
    s_sources_t sources = {.local = (python ? config->wheelhouse : config->npm_mirror) != NULL,
                           .online = cg_registry_egress (registry) != NULL,
                           .hash = hash_lines};
    if (!sources.local && !sources.online) {
        const char *message =
            python ? "No Python package source is configured: start cellgate with --wheelhouse "
                     "DIR (or CELLGATE_WHEELHOUSE), a directory of wheels (pip download -d DIR "
                     "pkg on a connected machine), or with --egress proxy and the index's host "
                     "allowed. Sandboxes have no network."
                   : "No npm package source is configured: start cellgate with --npm-mirror DIR "
                     "(or CELLGATE_NPM_MIRROR), a directory of npm tarballs (npm pack pkg on a "
                     "connected machine), or with --egress proxy and the registry's host "
                     "allowed. Sandboxes have no network.";
        cg_request_result (req, cg_tools_error_object ("no_package_source", message, session_id));
        return;
    }
    cg_registry_session_t *session =
        session_id ? cg_registry_find (registry, req->client->id, session_id) : NULL;
    zactor_t *installer = NULL;
    json_t *refusal = NULL;
    if (session_id && !session) {
        cleanup_free char *message = cg_strdupf ("No active session with id %s", session_id);
        refusal = cg_tools_error_object ("session_not_found", message, session_id);
    }
    else if (session && session->busy)
        refusal = cg_tools_error_object ("session_busy", CG_TOOLS_BUSY_MESSAGE, session_id);
    //  One writer of the shared layer at a time: two pip or npm runs in it would collide.
    else if (!session && cg_registry_installing (registry))
        refusal = cg_tools_error_object ("install_busy", S_INSTALL_BUSY_MESSAGE, NULL);
    else if (!session && !(installer = cg_registry_installer_start (registry)))
        refusal = cg_tools_max_sessions (req, NULL, NULL);
    if (refusal) {
        cg_request_result (req, refusal);
        return;
    }
    cleanup_free char *command =
        python ? s_pip_command (name, version, &sources) : s_npm_command (name, version, &sources);
    char execution_id[18] = "exec_";
    cg_random_hex (execution_id + 5, 6);
    json_t *request = json_pack ("{s:s, s:s, s:f, s:s, s:s}", "language", "bash", "code", command,
                                 "timeout", (double)S_INSTALL_TIMEOUT_S, "execution_id",
                                 execution_id, "tool", req->tool->name);
    if (session)
        json_object_set_new (request, "session_id", json_string (session->id));
    cg_call_t *call = cg_tools_dispatch (req, request, session, installer);
    call->context = json_pack ("{s:s, s:s, s:s}", "package", package, "name", name, "language",
                               python ? "python" : "node");
    cg_tools_begin (req->server, call);
    json_decref (request);
}

//  The version the command printed last (untrusted: sandbox output), or NULL. Caller
//  frees.
static char *
s_printed_version (const char *out)
{
    const char *mark = NULL;
    for (const char *at = strstr (out, S_VERSION_MARK); at; at = strstr (at + 1, S_VERSION_MARK))
        mark = at;
    if (!mark)
        return NULL;
    mark += strlen (S_VERSION_MARK);
    size_t len = strcspn (mark, "\n");
    return s_word (mark, len, ".+!_-", S_VERSION_MAX) ? cg_xstrndup (mark, len) : NULL;
}

//  The install's output for the result: what it printed, without the version line.
static char *
s_install_output (const cg_outcome_t *outcome)
{
    cleanup_free char *out = cg_xstrdup (outcome->out.text);
    char *mark = strstr (out, S_VERSION_MARK);
    while (mark && strstr (mark + 1, S_VERSION_MARK))
        mark = strstr (mark + 1, S_VERSION_MARK);
    if (mark)
        *mark = '\0';
    size_t len = strlen (out);
    while (len > 0 && (out[len - 1] == '\n' || out[len - 1] == ' '))
        out[--len] = '\0';
    return outcome->err.len ? cg_strdupf ("%s%s%s", out, len ? "\n" : "", outcome->err.text)
                            : cg_xstrdup (out);
}

//  Writes the session's package_install line (seed 002's session log); VERSION is NULL
//  when the install failed.
static void
s_log_install (cg_server_t *server, const cg_registry_session_t *session, const char *package,
               const char *version)
{
    cg_execlog_t *log = cg_server_execlog (server);
    if (!log)
        return;
    json_t *entry =
        json_pack ("{s:s, s:s, s:s, s:s?, s:b}", "type", "package_install", "session_id",
                   session->id, "package", package, "version", version, "success", version != NULL);
    if (version == NULL)
        json_object_set_new (entry, "version", json_null ());
    cg_execlog_queue_session_event (cg_server_log_worker (server), log, &entry);
}

json_t *
cg_tools_install_finish (cg_server_t *server, cg_call_t *call, cg_registry_session_t *session,
                         const cg_outcome_t *outcome)
{
    const char *package = json_string_value (json_object_get (call->context, "package"));
    const char *name = json_string_value (json_object_get (call->context, "name"));
    bool python =
        strcmp (json_string_value (json_object_get (call->context, "language")), "python") == 0;
    cleanup_free char *output = s_install_output (outcome);
    cleanup_free char *version = s_printed_version (outcome->out.text);
    if (outcome->end == CG_OUTCOME_OK && outcome->exit_code == 0 && version) {
        if (session) {
            cg_registry_add_package (session, name);
            s_log_install (server, session, name, version);
        }
        json_t *structured =
            json_pack ("{s:b, s:s, s:s, s:s, s:s, s:s}", "success", 1, "package", name, "version",
                       version, "install_output", output, "language", python ? "python" : "node",
                       "scope", session ? "session" : "shared");
        if (call->session_id)
            json_object_set_new (structured, "session_id", json_string (call->session_id));
        cleanup_free char *text = cg_strdupf (
            "Installed %s %s %s; import it now, no restart needed.", name, version,
            session ? "in the session" : "in the shared layer (every new session sees it)");
        return cg_tools_object_result (structured, text, false);
    }
    cleanup_free char *message = NULL;
    const char *error = "install_failed";
    bool exited =
        outcome->ran && (outcome->end == CG_OUTCOME_OK || outcome->end == CG_OUTCOME_RUNTIME_ERROR);
    const cg_config_t *config = cg_server_config (server);
    const char *local = python ? config->wheelhouse : config->npm_mirror;
    if (exited && outcome->exit_code == S_NOT_FOUND_EXIT && !local) {
        error = "package_not_found";
        message = cg_strdupf ("%s was not found in the %s the proxy reaches (%s); see "
                              "install_output for what %s said.",
                              package, python ? "package index" : "npm registry",
                              python ? config->pip_index_url ?: "pip's default"
                                     : config->npm_registry ?: "npm's default",
                              python ? "pip" : "npm");
    }
    else if (exited && outcome->exit_code == S_NOT_FOUND_EXIT) {
        error = "package_not_found";
        message = cg_strdupf (
            "%s is not in the %s: cellgate looked in %s (%s, seen in the sandbox as %s). Add it "
            "there on a connected machine (%s) and try again.",
            package, python ? "wheelhouse" : "npm mirror", local,
            python ? "--wheelhouse" : "--npm-mirror",
            python ? CG_WHEELHOUSE_MOUNT : CG_NPM_MIRROR_MOUNT,
            python ? "pip download -d DIR <package>" : "npm pack <package>, in DIR");
    }
    else if (outcome->end == CG_OUTCOME_TIMEOUT)
        message = cg_strdupf ("installing %s took longer than %d s", package, S_INSTALL_TIMEOUT_S);
    else if (!exited && outcome->message)
        message = cg_strdupf ("installing %s: %s", package, outcome->message);
    else
        message = cg_strdupf ("installing %s failed (exit code %d); see install_output", package,
                              outcome->exit_code);
    if (session && exited)
        s_log_install (server, session, name ? name : package, NULL);
    json_t *result = cg_tools_error_object (error, message, call->session_id);
    json_t *structured = json_object_get (result, "structuredContent");
    json_object_set_new (structured, "package", json_string (package));
    json_object_set_new (structured, "install_output", json_string (output));
    return result;
}
