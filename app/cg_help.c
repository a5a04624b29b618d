/*  cg_help — what `cellgate help [COMMAND]` and `--help` print. */
#include "app/cg_help.h"
#include "base/cg_config.h"

#include <string.h>

//  One command: its name, a one-line summary for the overview, and its own page (the
//  text before the options, which every command shares).
typedef struct {
    const char *name;
    const char *summary;
    const char *page;
} s_command_t;

static const s_command_t s_commands[] = {
    {"mcp", "serve MCP: on stdio (default), or on Streamable HTTP with --http",
     "usage: cellgate mcp [options]\n"
     "\n"
     "Serves MCP (revisions 2025-11-25, 2025-06-18, 2025-03-26): code execution in\n"
     "sandboxes (Python, JavaScript, bash), files and the execution log. Two transports:\n"
     "\n"
     "stdio (the default): one client, the program that started cellgate, sends JSON-RPC\n"
     "lines on stdin and reads them on stdout; logs go to stderr. When stdin ends (a\n"
     "request file piped in), the calls still running may finish for --eof-grace seconds\n"
     "(10), then are cancelled: every call is answered and logged before it exits.\n"
     "Claude Code:\n"
     "    claude mcp add cellgate -- /path/to/cellgate/build/cellgate mcp\n"
     "    claude mcp add cellgate -- sudo /path/to/cellgate/build/cellgate mcp   # not root\n"
     "\n"
     "Streamable HTTP (--http [HOST:]PORT): any number of clients POST JSON-RPC to\n"
     "http://HOST:PORT/mcp, each with its own sandboxes (Mcp-Session-Id); downloads are\n"
     "served on the same listener. A bare PORT listens on 127.0.0.1; any other address\n"
     "needs a bearer token (--http-token or CELLGATE_HTTP_TOKEN).\n"
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
     "    (then send the Mcp-Session-Id it returns with every request; DELETE /mcp ends it)\n"},
    {"kernel", "start one sandboxed Python kernel (for Jupyter clients and benchmarks)",
     "usage: cellgate kernel [options]\n"
     "\n"
     "Starts one sandboxed Python kernel, prints the host path of its connection file\n"
     "(for jupyter_client, `jupyter console --existing FILE`, benchmarks) and runs until\n"
     "stdin closes.\n"},
};
#define S_COMMAND_COUNT (sizeof s_commands / sizeof s_commands[0])

static void
s_overview (FILE *out)
{
    fprintf (out, "usage: cellgate <command> [options]\n\ncommands:\n");
    for (size_t i = 0; i < S_COMMAND_COUNT; i++)
        fprintf (out, "  %-16s %s\n", s_commands[i].name, s_commands[i].summary);
    fprintf (out, "  %-16s %s\n", "help [COMMAND]",
             "this text, or a command's (cellgate help mcp)");
    fprintf (out, "  %-16s %s\n\n", "--version", "print the version");
}

int
cg_help_print (FILE *out, const char *topic)
{
    if (!topic || strcmp (topic, "help") == 0 || strcmp (topic, "--help") == 0) {
        s_overview (out);
        cg_config_print_usage (out);
        return 0;
    }
    for (size_t i = 0; i < S_COMMAND_COUNT; i++)
        if (strcmp (topic, s_commands[i].name) == 0) {
            fprintf (out, "%s\n", s_commands[i].page);
            cg_config_print_usage (out);
            return 0;
        }
    return -1;
}
