/*  cg_help — what `cellgate help [COMMAND]` and `--help` print: the commands, how MCP is
    served (stdio and Streamable HTTP, with examples) and the options from cg_config's
    table. */
#ifndef CG_HELP_H
#define CG_HELP_H

#include <stdio.h>

/*  Writes the help on TOPIC to OUT: NULL (or "help") the program's, else a command's
    ("mcp", "kernel"). Returns 0, or -1 when TOPIC names no command (nothing written). */
int cg_help_print (FILE *out, const char *topic);

#endif
