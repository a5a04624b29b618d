/*  cg_kernelspec — a kernel spec (a catalogue language's kernel.json): how to start a kernel
    of one language and what it supports. */
#ifndef CG_KERNELSPEC_H
#define CG_KERNELSPEC_H

#include "base/cg_error.h"
#include "base/cg_kernels.h"

#include <stdbool.h>
#include <stddef.h>

/*  A kernel spec (a catalogue language's kernel.json). */
typedef struct {
    char *language;
    char ipc_name[CG_KERNELS_NAME_MAX
                  + 1];     /* its ipc sockets' base name in the ipc dir: the language for
                               cellgate's own kernels, "k" and 4 hex digits of its hash for
                               any other (xeus kernels refuse an ipc path of over 23 bytes) */
    char **argv;            /* NULL-terminated; "{connection_file}" is substituted */
    char **env;             /* NULL-terminated KEY=VALUE from the spec's "env" */
    bool interrupt_message; /* interrupt_mode "message": interrupt_request on control */
    bool endpoint_colon;    /* ipc endpoints are <ip>:<port> instead of <ip>-<port> */
    bool stdin_file;        /* stdin goes to run/stdin-<language> before each cell, for a
                               kernel without input_request (metadata.cellgate.stdin "file") */
} cg_kernel_spec_t;

/*  Loads the kernel.json of LANGUAGE (a name or alias) from where the process's catalogue
    found it (base/cg_kernels.h). Returns a new spec the caller owns, its language the
    canonical name, or NULL with *err set. */
cg_kernel_spec_t *cg_kernel_spec_load (const char *language, cg_error_t **err);
void cg_kernel_spec_destroy (cg_kernel_spec_t **self_p);

/*  The environment a kernel of SPEC gets (caller frees, cg_strv_free): the sandbox's
    allow-listed base, the spec's own variables, and CELLGATE_MAX_MESSAGE_BYTES (MAX_MESSAGE;
    kernels/python/cellgate_startup.py keeps ordinary outputs under it). */
char **cg_kernelspec_env (const cg_kernel_spec_t *spec, size_t max_message);

#endif
