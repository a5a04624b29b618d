/*  cg_help — what `cellgate help [TOPIC]` and `--help` print: the commands, how MCP is
    served (stdio and Streamable HTTP, with examples), the listener's routes, the Jupyter
    gateway, and the options from cg_config's and cg_aliases' tables; `help --markdown`
    prints those tables as docs/configuration.md, `help --man` as the manual page. */
#ifndef CG_HELP_H
#define CG_HELP_H

#include <stdio.h>

/*  Writes the help on TOPIC to OUT: NULL (or "help") the program's, else a topic's ("mcp",
    "gateway", "kernel"), with "--markdown" docs/configuration.md, or with "--man" the manual
    page cellgate(1) in roff. Returns 0, or -1 when
    TOPIC names no topic (nothing written). */
int cg_help_print (FILE *out, const char *topic);

#endif
