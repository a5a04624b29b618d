/*  cg_util — small helpers shared by every module: memory, strings, time, ids, cleanup. */
#define _GNU_SOURCE
#include "base/cg_util.h"

#include <ctype.h>
#include <sodium.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

void *
cg_xmalloc (size_t size)
{
    void *ptr = malloc (size ? size : 1);
    if (!ptr)
        abort ();
    return ptr;
}

void *
cg_xcalloc (size_t count, size_t size)
{
    void *ptr = calloc (count ? count : 1, size ? size : 1);
    if (!ptr)
        abort ();
    return ptr;
}

void *
cg_xrealloc (void *ptr, size_t size)
{
    void *out = realloc (ptr, size ? size : 1);
    if (!out)
        abort ();
    return out;
}

char *
cg_xstrdup (const char *s)
{
    char *out = strdup (s);
    if (!out)
        abort ();
    return out;
}

char *
cg_xstrndup (const char *s, size_t n)
{
    char *out = strndup (s, n);
    if (!out)
        abort ();
    return out;
}

char *
cg_vstrdupf (const char *fmt, va_list args)
{
    char *out = NULL;
    if (vasprintf (&out, fmt, args) < 0)
        abort ();
    return out;
}

char *
cg_strdupf (const char *fmt, ...)
{
    va_list args;
    va_start (args, fmt);
    char *out = cg_vstrdupf (fmt, args);
    va_end (args);
    return out;
}

char **
cg_strv_new (size_t count)
{
    return cg_xcalloc (count + 1, sizeof (char *));
}

size_t
cg_strv_count (const char *const *strv)
{
    size_t count = 0;
    while (strv && strv[count])
        count++;
    return count;
}

void
cg_strv_free (char **strv)
{
    for (size_t i = 0; strv && strv[i]; i++)
        free (strv[i]);
    free (strv);
}

int64_t
cg_now_us (void)
{
    struct timespec ts;
    clock_gettime (CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

const char *
cg_number_text (double value, char out[32])
{
    if (value > -1e18 && value < 1e18 && value == (double)(long long)value)
        snprintf (out, 32, "%lld", (long long)value);
    else
        snprintf (out, 32, "%.15g", value);
    return out;
}

bool
cg_valid_name (const char *name, size_t max, const char *extra)
{
    size_t len = name ? strlen (name) : 0;
    if (len == 0 || len > max || !isalnum ((unsigned char)name[0]))
        return false;
    for (size_t i = 0; i < len; i++)
        if (!isalnum ((unsigned char)name[i]) && !strchr (extra, name[i]))
            return false;
    return true;
}

void
cg_random_hex (char *buf, size_t nbytes)
{
    unsigned char raw[64];
    size_t done = 0;
    while (done < nbytes) {
        size_t chunk = nbytes - done < sizeof raw ? nbytes - done : sizeof raw;
        randombytes_buf (raw, chunk);
        sodium_bin2hex (buf + 2 * done, 2 * chunk + 1, raw, chunk);
        done += chunk;
    }
    buf[2 * nbytes] = '\0';
}

void
cg_cleanup_free (void *ptr)
{
    free (*(void **)ptr);
}

void
cg_cleanup_close (int *fd)
{
    if (*fd >= 0)
        close (*fd);
}

void
cg_utc_now (char out[32], bool basic)
{
    time_t now = time (NULL);
    struct tm tm;
    gmtime_r (&now, &tm);
    strftime (out, 32, basic ? "%Y%m%dT%H%M%SZ" : "%Y-%m-%dT%H:%M:%SZ", &tm);
}
