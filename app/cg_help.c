/*  cg_help — what `cellgate help [TOPIC]`, `--help`, `help --markdown` and `help --man` print. */
#include "app/cg_help.h"
#include "bridge/cg_notebook_command.h"
#include "base/cg_aliases.h"
#include "base/cg_config.h"
#include "base/cg_limits.h"
#include "base/cg_util.h"
#include "base/cg_version.h"
#include "gateway/cg_gateway.h"

#include <string.h>
#include <unistd.h>

//  One topic: its name, a one-line summary for the overview, and its own page (the text
//  before the options, which every topic shares).
typedef struct {
    const char *name;
    const char *summary;
    const char *page;
} s_topic_t;

static const s_topic_t s_topics[] = {
    {"mcp", "serve MCP: on stdio (default), or on Streamable HTTP with --http",
     "usage: cellgate mcp [options]\n"
     "\n"
     "Serves MCP (revisions 2026-07-28, stateless; 2025-11-25, 2025-06-18 and 2025-03-26 with\n"
     "their handshake): code execution in sandboxes (Python, JavaScript, bash), files and the\n"
     "execution log. As root sandboxes are runc containers; as a normal user the same in a\n"
     "user namespace (--backend rootless, chosen by itself): no sudo. Two transports:\n"
     "\n"
     "stdio (the default): one client, the program that started cellgate, sends JSON-RPC\n"
     "lines on stdin and reads them on stdout; logs go to stderr. When stdin ends (a\n"
     "request file piped in), the calls still running may finish for --eof-grace seconds\n"
     "(10), then are cancelled: every call is answered and logged before it exits.\n"
     "Claude Code (as root, or as a normal user):\n"
     "    claude mcp add --scope user cellgate -- /path/to/cellgate/build/cellgate mcp\n"
     "\n"
     "Streamable HTTP (--http [HOST:]PORT): any number of clients POST JSON-RPC to\n"
     "http://HOST:PORT/mcp, each with its own sandboxes (Mcp-Session-Id). A bare PORT\n"
     "listens on 127.0.0.1; any other address needs a bearer token (--http-token or\n"
     "CELLGATE_HTTP_TOKEN).\n"
     "    cellgate mcp --http 8765                   # MCP at http://127.0.0.1:8765/mcp\n"
     "    claude mcp add --transport http cellgate http://127.0.0.1:8765/mcp\n"
     "    CELLGATE_HTTP_TOKEN=$(openssl rand -hex 32) cellgate mcp --http 0.0.0.0:8765\n"
     "    n8n's MCP Client node: URL http://HOST:8765/mcp, transport \"HTTP Streamable\",\n"
     "    header Authorization: Bearer <token>\n"
     "    curl -sS http://127.0.0.1:8765/mcp -H 'Content-Type: application/json' \\\n"
     "      -H 'Accept: application/json, text/event-stream' -D - --data \\\n"
     "      '{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{"
     "\"protocolVersion\":\n"
     "      \"2025-11-25\",\"capabilities\":{},\"clientInfo\":{\"name\":\"curl\","
     "\"version\":\"1\"}}}'\n"
     "    (then send the Mcp-Session-Id it returns with every request; DELETE /mcp ends it)\n"
     "\n"
     "The listener (--http's; on stdio --http-listen's, 127.0.0.1:8080 or the next free port\n"
     "of 8081-8089) serves, each route with its own credential and no other:\n"
     "    /mcp            MCP over HTTP: --http-token (none needed on loopback)\n"
     "    /files/         downloads: each link carries its own token\n"
     "    /api/           the Jupyter Kernel Gateway: the gateway token (cellgate help gateway)\n"
     "    /metrics        Prometheus text: the admin token\n"
     "    /admin/sessions list or DELETE sessions: the admin token\n"
     "The admin token is --admin-token, else <state-dir>/admin-token (0600, made at first\n"
     "start); the log says where, never what:\n"
     "    curl -H \"Authorization: Bearer $(cat <state-dir>/admin-token)\" "
     "http://127.0.0.1:8080/metrics\n"},
    {"gateway", "open the agents' kernels, or new ones, from Jupyter Notebook",
     NULL /* s_gateway_page: it names this user's token file */},
    {"kernel", "start one sandboxed Python kernel (for Jupyter clients and benchmarks)",
     "usage: cellgate kernel [options]\n"
     "\n"
     "Starts one sandboxed Python kernel, prints the host path of its connection file\n"
     "(for jupyter_client, `jupyter console --existing FILE`, benchmarks) and runs until\n"
     "stdin closes.\n"},
};
#define S_TOPIC_COUNT (sizeof s_topics / sizeof s_topics[0])

//  The gateway's page, with the command for the user running this (their state dir's
//  token file, --allow-root for root).
static void
s_gateway_page (FILE *out)
{
    size_t count;
    const cg_config_option_t *options = cg_config_options (&count);
    cleanup_free char *state = cg_config_default_text (&options[0], CG_CONFIG_FOR_THIS);
    cleanup_free char *file = cg_strdupf ("%s/gateway-token", state);
    cleanup_free char *command = cg_notebook_command (
        "http://" CG_HTTP_LISTEN_HOST ":" CG_STR (CG_HTTP_LISTEN_PORT), file, NULL);
    fprintf (
        out,
        "usage: cellgate mcp [options]   (the gateway is on unless --gateway off)\n"
        "\n"
        "Every cellgate mcp serves the Jupyter Kernel Gateway API (/api/kernels,\n"
        "/api/kernelspecs and each kernel's WebSocket) on its listener: a person runs\n"
        "notebooks whose kernels live in cellgate's sandboxes, and can open the very kernel\n"
        "an agent is using (kernel_id and gateway_url in start_session's and execute_code's\n"
        "results; \"Agent's session ...\" in the notebook's kernel menu; KERNEL_ID=<kernel id>\n"
        "opens it in every notebook). The token is --gateway-token, else one made at first\n"
        "start and kept 0600 in <state-dir>/gateway-token; the start-up log prints this\n"
        "command with the listener's real address, and never the token:\n"
        "    %s\n"
        "(scripts/setup.sh serve installs Debian's jupyter-notebook; `jupyter server` takes\n"
        "the same flags.)\n",
        command);
}

static void
s_overview (FILE *out)
{
    fprintf (out, "usage: cellgate <command> [options]\n\ncommands:\n");
    for (size_t i = 0; i < S_TOPIC_COUNT; i++)
        if (s_topics[i].page)
            fprintf (out, "  %-16s %s\n", s_topics[i].name, s_topics[i].summary);
    fprintf (out, "  %-16s %s\n", "help [TOPIC]",
             "this text, or a topic's: cellgate help mcp | gateway | kernel");
    fprintf (out, "  %-16s %s\n", "help --markdown", "the options as docs/configuration.md");
    fprintf (out, "  %-16s %s\n", "help --man", "the manual page cellgate(1), in roff");
    fprintf (out, "  %-16s %s\n\n", "--version", "print the version");
    fprintf (out, "Jupyter: cellgate help gateway. Metrics and admin: cellgate help mcp.\n\n");
}

//  TEXT with the bytes a Markdown table cell would take as markup escaped.
static void
s_markdown_text (FILE *out, const char *text)
{
    for (const char *c = text; *c; c++)
        switch (*c) {
            case '|':
                fputs ("\\|", out);
                break;
            case '<':
                fputs ("&lt;", out);
                break;
            case '>':
                fputs ("&gt;", out);
                break;
            case '*':
                fputs ("\\*", out);
                break;
            default:
                fputc (*c, out);
        }
}

//  How an alias's value is written, for the docs.
static const char *
s_alias_form (cg_alias_kind_t kind)
{
    switch (kind) {
        case CG_ALIAS_SAME:
            return NULL;
        case CG_ALIAS_MINUTES:
            return "in minutes";
        case CG_ALIAS_MS:
            return "in milliseconds";
        case CG_ALIAS_MEMORY:
            return "a Docker size: 512m, 1g";
        case CG_ALIAS_PORT:
            return "a port on 127.0.0.1";
        case CG_ALIAS_PATH:
            return "~/ is $HOME";
    }
    return NULL;
}

//  One option's row: flag, environment names, default (root's and a normal user's), and
//  meaning with its bounds.
static void
s_markdown_row (FILE *out, const cg_config_option_t *option, const cg_alias_t *aliases,
                size_t alias_count)
{
    fprintf (out, "| `%s` | `%s`", option->flag, option->env);
    for (size_t k = 0; k < alias_count; k++)
        if (aliases[k].target && strcmp (aliases[k].target, option->env) == 0) {
            const char *form = s_alias_form (aliases[k].kind);
            fprintf (out, "<br>`%s`%s%s%s", aliases[k].name, form ? " (" : "", form ? form : "",
                     form ? ")" : "");
        }
    cleanup_free char *fallback = cg_config_default_text (option, CG_CONFIG_FOR_DOCS);
    bool literal = option->fallback && strcmp (fallback, option->fallback) == 0;
    fputs (literal ? " | `" : " | ", out);
    s_markdown_text (out, fallback);
    fputs (literal ? "` | " : " | ", out);
    s_markdown_text (out, option->help);
    if (option->kind == CG_CONFIG_INT || option->kind == CG_CONFIG_DOUBLE
        || option->kind == CG_CONFIG_BYTES || option->kind == CG_CONFIG_MB) {
        char min[32], max[32];
        fprintf (out, " (%s to %s%s)", cg_number_text (option->min, min),
                 cg_number_text (option->max, max), option->kind == CG_CONFIG_MB ? " MB" : "");
    }
    else if (option->kind == CG_CONFIG_BOOL)
        fputs (" (on/off)", out);
    else if (option->kind == CG_CONFIG_ENUM) {
        const char *const *values = cg_config_values (option);
        for (size_t v = 0; values && values[v]; v++)
            fprintf (out, "%s%s%s", v ? ", " : " (one of: ", values[v], values[v + 1] ? "" : ")");
    }
    fputs (" |\n", out);
}

static void
s_markdown (FILE *out)
{
    size_t count, alias_count;
    const cg_config_option_t *options = cg_config_options (&count);
    const cg_alias_t *aliases = cg_aliases (&alias_count);
    fputs (
        "# Configuration\n"
        "\n"
        "<!-- Generated by `build/cellgate help --markdown` from the option table\n"
        "     (base/cg_config.c) and the alias table (base/cg_aliases.c): do not edit.\n"
        "     ctest docs_configuration fails when this file differs from it. -->\n"
        "\n"
        "Every setting of `cellgate mcp` (and `cellgate kernel`): its flag, its environment\n"
        "names, its default and what it does. A flag wins over its `CELLGATE_*` variable, which\n"
        "wins over the original specifications' names (`SANDBOX_*`, `CODEXEC_*`; the first one\n"
        "set wins), which win over the default. `--flag VALUE` and `--flag=VALUE` are the same;\n"
        "an on/off option alone means on, and takes on/off, true/false, yes/no or 1/0 in any\n"
        "case. Where a normal user's default differs from root's (the rootless backend), both\n"
        "are given. `cellgate help` prints the same list with the defaults of the user running\n"
        "it.\n"
        "\n"
        "| flag | environment | default | meaning |\n"
        "|---|---|---|---|\n",
        out);
    for (size_t i = 0; i < count; i++)
        s_markdown_row (out, &options[i], aliases, alias_count);
    fputs ("\n## Names with no setting\n"
           "\n"
           "These variables of the original specifications set nothing; cellgate warns at\n"
           "start-up when one is set, as it does for any other unknown `SANDBOX_*` or\n"
           "`CODEXEC_*` name.\n"
           "\n"
           "| name | why |\n"
           "|---|---|\n",
           out);
    for (size_t k = 0; k < alias_count; k++)
        if (!aliases[k].target) {
            fprintf (out, "| `%s` | ", aliases[k].name);
            s_markdown_text (out, aliases[k].note);
            fputs (" |\n", out);
        }
}

//  TEXT for roff: backslashes and hyphens escaped, and a line that would start with a
//  control character ('.' or '\'') protected with \&.
static void
s_roff_text (FILE *out, const char *text)
{
    for (const char *c = text; *c; c++) {
        if ((c == text || c[-1] == '\n') && (*c == '.' || *c == '\''))
            fputs ("\\&", out);
        if (*c == '\\')
            fputs ("\\e", out);
        else if (*c == '-')
            fputs ("\\-", out);
        else
            fputc (*c, out);
    }
}

//  One option as a tagged paragraph: flag, what it does, its default and environment names.
static void
s_man_option (FILE *out, const cg_config_option_t *option, const cg_alias_t *aliases,
              size_t alias_count)
{
    fputs (".TP\n.B ", out);
    s_roff_text (out, option->flag);
    fputs (option->kind == CG_CONFIG_BOOL ? " \\fR[\\fIon\\fR|\\fIoff\\fR]\n" : " \\fIVALUE\\fR\n",
           out);
    s_roff_text (out, option->help);
    fputs (".\n.br\nDefault: ", out);
    cleanup_free char *fallback = cg_config_default_text (option, CG_CONFIG_FOR_DOCS);
    s_roff_text (out, fallback);
    fputs (". Environment: \\fB", out);
    s_roff_text (out, option->env);
    fputs ("\\fR", out);
    for (size_t k = 0; k < alias_count; k++)
        if (aliases[k].target && strcmp (aliases[k].target, option->env) == 0) {
            fputs (", ", out);
            s_roff_text (out, aliases[k].name);
        }
    fputs (".\n", out);
}

//  The manual page cellgate(1): the commands, `cellgate help mcp`'s page, and every option
//  from the option and alias tables (the same rows as `help --markdown`).
static void
s_man (FILE *out)
{
    size_t count, alias_count;
    const cg_config_option_t *options = cg_config_options (&count);
    const cg_alias_t *aliases = cg_aliases (&alias_count);
    fputs (".\\\" Generated by `cellgate help --man` from the option table: do not edit.\n"
           ".TH CELLGATE 1 \"\" \"cellgate ",
           out);
    s_roff_text (out, CG_VERSION);
    fputs ("\" \"User Commands\"\n"
           ".SH NAME\n"
           "cellgate \\- sandboxed code execution for AI agents (MCP) and Jupyter front ends\n"
           ".SH SYNOPSIS\n"
           ".B cellgate\n"
           ".I command\n"
           "[\\fIoptions\\fR]\n"
           ".SH COMMANDS\n",
           out);
    for (size_t i = 0; i < S_TOPIC_COUNT; i++) {
        if (!s_topics[i].page)
            continue;
        fputs (".TP\n.B ", out);
        s_roff_text (out, s_topics[i].name);
        fputc ('\n', out);
        s_roff_text (out, s_topics[i].summary);
        fputs (" (\\fBcellgate help ", out);
        s_roff_text (out, s_topics[i].name);
        fputs ("\\fR).\n", out);
    }
    fputs (".TP\n.B \\-\\-version\nPrints the version.\n"
           ".PP\nThe Jupyter Kernel Gateway is served beside MCP: \\fBcellgate help gateway\\fR.\n"
           ".SH DESCRIPTION\n.nf\n",
           out);
    s_roff_text (out, s_topics[0].page);
    fputs (".fi\n"
           ".SH OPTIONS\n"
           "A flag wins over its environment variable, which wins over the original\n"
           "specifications' names (SANDBOX_*, CODEXEC_*), which win over the default.\n"
           "\\fB\\-\\-flag VALUE\\fR and \\fB\\-\\-flag=VALUE\\fR are the same; an on/off option\n"
           "alone means on. Where a normal user's default differs from root's, both are given.\n",
           out);
    for (size_t i = 0; i < count; i++)
        s_man_option (out, &options[i], aliases, alias_count);
    fputs (".SH FILES\n"
           ".TP\n.I /var/lib/cellgate\n"
           "The state directory as root (a normal user's: ~/.local/state/cellgate): sandboxes,\n"
           "workspaces, the execution log, the script library, and the tokens admin\\-token and\n"
           "gateway\\-token (0600, made at first start).\n"
           ".TP\n.I /etc/cellgate/token\n"
           "The Debian package's system unit (cellgate.service): the bearer token of /mcp.\n"
           ".SH SEE ALSO\n"
           "\\fBcellgate help\\fR, \\fBrunc\\fR(8), /usr/share/doc/cellgate.\n",
           out);
}

int
cg_help_print (FILE *out, const char *topic)
{
    if (topic && strcmp (topic, "--markdown") == 0) {
        s_markdown (out);
        return 0;
    }
    if (topic && strcmp (topic, "--man") == 0) {
        s_man (out);
        return 0;
    }
    if (!topic || strcmp (topic, "help") == 0 || strcmp (topic, "--help") == 0) {
        s_overview (out);
        cg_config_print_usage (out);
        return 0;
    }
    for (size_t i = 0; i < S_TOPIC_COUNT; i++)
        if (strcmp (topic, s_topics[i].name) == 0) {
            if (s_topics[i].page)
                fprintf (out, "%s\n", s_topics[i].page);
            else
                s_gateway_page (out);
            if (s_topics[i].page)
                cg_config_print_usage (out);
            return 0;
        }
    return -1;
}
