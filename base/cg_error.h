/*  cg_error — errors that carry an errno-style code and a message with context. */
#ifndef CG_ERROR_H
#define CG_ERROR_H

#include <stdarg.h>

typedef struct {
    int code;      /* errno-style code, or 0 when none applies */
    char *message; /* full message, outermost context first */
} cg_error_t;

/*  Sets *err to a new error with CODE and a printf-style message, if err is not NULL
    and *err is still NULL (the first failure wins). Always returns -1 so callers can
    write `return cg_error_set (err, ...)`. */
int cg_error_set (cg_error_t **err, int code, const char *fmt, ...)
    __attribute__ ((format (printf, 3, 4)));

/*  Prefixes the message of *err with "CONTEXT: ". Does nothing when err or *err is
    NULL. Returns -1. */
int cg_error_wrap (cg_error_t **err, const char *fmt, ...) __attribute__ ((format (printf, 2, 3)));

/*  Frees *self_p and sets it to NULL. Safe on NULL. */
void cg_error_destroy (cg_error_t **self_p);

/*  Returns the message of ERR, or "unknown error" when ERR is NULL. */
const char *cg_error_message (const cg_error_t *err);

#endif
