/*  cg_utf8 — making untrusted bytes (kernel and command output) carriable as JSON text. */
#ifndef CG_UTF8_H
#define CG_UTF8_H

#include <stdbool.h>
#include <stddef.h>

/*  Returns a new NUL-terminated copy of the LEN bytes at DATA in which every byte that is
    not part of a well-formed UTF-8 character (RFC 3629: no overlong forms, surrogates or
    code points past U+10FFFF; a sequence cut short counts byte by byte) and every NUL is
    replaced by U+FFFD; every valid character is kept. *OUT_LEN gets the copy's length
    when OUT_LEN is not NULL. Caller owns the result. */
char *cg_utf8_clean (const char *data, size_t len, size_t *out_len);

/*  Returns the length of the well-formed UTF-8 character at DATA (LEN bytes available),
    or 0 when the bytes there do not start one. */
size_t cg_utf8_char_len (const unsigned char *data, size_t len);

/*  Returns the byte length of the longest prefix of the NUL-terminated S that is at most
    MAX bytes and does not end inside a UTF-8 character: the length to give "%.*s" for an
    excerpt of a client's text in a message. A plain "%.64s" can cut a character in two,
    and a message that is not UTF-8 cannot become a JSON string. */
int cg_utf8_prefix (const char *s, size_t max);

#endif
