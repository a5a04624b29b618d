/*  cg_error — errors that carry an errno-style code and a message with context. */
#define _GNU_SOURCE
#include "base/cg_error.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*  The base's lowest floor: libc only (cg_util's helpers report through this file), and
    like them it aborts on out-of-memory. */
static void *
s_alloc (size_t size)
{
    void *ptr = malloc (size);
    if (!ptr)
        abort ();
    return ptr;
}

__attribute__ ((format (printf, 1, 0))) static char *
s_vformat (const char *fmt, va_list args)
{
    char *out = NULL;
    if (vasprintf (&out, fmt, args) < 0)
        abort ();
    return out;
}

__attribute__ ((format (printf, 1, 2))) static char *
s_format (const char *fmt, ...)
{
    va_list args;
    va_start (args, fmt);
    char *out = s_vformat (fmt, args);
    va_end (args);
    return out;
}

int
cg_error_set (cg_error_t **err, int code, const char *fmt, ...)
{
    if (!err || *err)
        return -1;
    va_list args;
    va_start (args, fmt);
    cg_error_t *self = s_alloc (sizeof *self);
    self->code = code;
    self->message = s_vformat (fmt, args);
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
    char *context = s_vformat (fmt, args);
    va_end (args);
    char *message = s_format ("%s: %s", context, (*err)->message);
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
