/*  cg_notebook_command — what a person runs to reach a session's kernel in Jupyter: the
    Jupyter Notebook command line for the gateway (gateway/), which the gateway logs and the
    session tools (mcp/tools/) hand a stdio client. Below both front ends, so that neither
    includes the other. */
#ifndef CG_NOTEBOOK_COMMAND_H
#define CG_NOTEBOOK_COMMAND_H

/*  The command a person runs to open Jupyter Notebook against the gateway at URL (Debian's
    jupyter-notebook, which scripts/setup.sh serve installs): its token read from TOKEN_FILE
    ("$(cat FILE)"), or with TOKEN_FILE NULL a placeholder for the --gateway-token given;
    --allow-root when this process runs as root (the notebook refuses root without it);
    with KERNEL_ID (or NULL) every notebook opens that running kernel. Never the token
    itself. Caller owns the result. */
char *cg_notebook_command (const char *url, const char *token_file, const char *kernel_id);

#endif
