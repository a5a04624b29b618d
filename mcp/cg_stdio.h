/*  cg_stdio — MCP's stdio transport: newline-delimited JSON-RPC read from one fd and
    written to another, one standing channel for everything sent to the one client. */
#ifndef CG_STDIO_H
#define CG_STDIO_H

#include "mcp/cg_server.h"

typedef struct cg_stdio_t cg_stdio_t;

/*  Serves SERVER's stdio client on IN_FD/OUT_FD (borrowed). Lines longer than
    MESSAGE_MAX bytes are refused and skipped. */
cg_stdio_t *cg_stdio_new (cg_server_t *server, int in_fd, int out_fd, size_t message_max);
void cg_stdio_destroy (cg_stdio_t **self_p);

/*  The fd to poll for input (-1 while a long line is parsed off the loop: the lines after
    it wait); when readable, call cg_stdio_read, which reads what is there and hands each
    complete line to the server, in order. */
int cg_stdio_fd (cg_stdio_t *self);
void cg_stdio_read (cg_stdio_t *self);

/*  False once the input has ended (and its last line is handled) or the output failed. */
bool cg_stdio_open (cg_stdio_t *self);

/*  False once a write to the client failed (it is gone). */
bool cg_stdio_writable (cg_stdio_t *self);

/*  The standing channel to the stdio client (borrowed). */
cg_channel_t *cg_stdio_channel (cg_stdio_t *self);

#endif
