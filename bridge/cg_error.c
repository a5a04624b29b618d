/*  cg_error — errors that carry an errno-style code and a message with context. */
#include "cg_error.h"
#include "cg_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int
cg_error_set (cg_error_t **err, int code, const char *fmt, ...)
{
    if (!err || *err)
        return -1;
    va_list args;
    va_start (args, fmt);
    cg_error_t *self = cg_xmalloc (sizeof *self);
    self->code = code;
    self->message = cg_vstrdupf (fmt, args);
    va_end (args);
    *err = self;
    return -1;
}

int
cg_error_wrap (cg_error_t **err, const char *fmt, ...)
{
    if (!err || !*err)
        return -1;
    va_list args;
    va_start (args, fmt);
    char *context = cg_vstrdupf (fmt, args);
    va_end (args);
    char *message = cg_strdupf ("%s: %s", context, (*err)->message);
    free (context);
    free ((*err)->message);
    (*err)->message = message;
    return -1;
}

void
cg_error_destroy (cg_error_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    free ((*self_p)->message);
    free (*self_p);
    *self_p = NULL;
}

const char *
cg_error_message (const cg_error_t *err)
{
    return err ? err->message : "unknown error";
}
