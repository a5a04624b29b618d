/*  cg_utf8 — making untrusted bytes (kernel and command output) carriable as JSON text. */
#include "base/cg_utf8.h"
#include "base/cg_util.h"

#include <string.h>

size_t
cg_utf8_char_len (const unsigned char *s, size_t len)
{
    if (len == 0)
        return 0;
    unsigned char c = s[0];
    if (c < 0x80)
        return 1;
    //  The second byte's range depends on the first (RFC 3629, section 4): this rules out
    //  overlong forms, UTF-16 surrogates and code points past U+10FFFF.
    size_t need;
    unsigned char lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF)
        need = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        need = 3;
        lo = c == 0xE0 ? 0xA0 : 0x80;
        hi = c == 0xED ? 0x9F : 0xBF;
    }
    else if (c >= 0xF0 && c <= 0xF4) {
        need = 4;
        lo = c == 0xF0 ? 0x90 : 0x80;
        hi = c == 0xF4 ? 0x8F : 0xBF;
    }
    else
        return 0;
    if (len < need || s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < need; i++)
        if (s[i] < 0x80 || s[i] > 0xBF)
            return 0;
    return need;
}

int
cg_utf8_prefix (const char *s, size_t max)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t len = strnlen (s, max + 4), n = 0;
    while (n < len) {
        size_t char_len = cg_utf8_char_len (u + n, len - n);
        if (char_len == 0)
            char_len = 1; /* a stray byte stays a byte: never a cut character */
        if (n + char_len > max)
            break;
        n += char_len;
    }
    return (int)n;
}

char *
cg_utf8_clean (const char *data, size_t len, size_t *out_len)
{
    static const char replacement[] = "\xEF\xBF\xBD";
    const unsigned char *s = (const unsigned char *)data;
    //  At worst every byte becomes three.
    char *out = cg_xmalloc (3 * len + 1);
    size_t n = 0;
    for (size_t i = 0; i < len;) {
        size_t char_len = s[i] ? cg_utf8_char_len (s + i, len - i) : 0;
        if (char_len == 0) {
            memcpy (out + n, replacement, 3);
            n += 3;
            i++;
        }
        else {
            memcpy (out + n, s + i, char_len);
            n += char_len;
            i += char_len;
        }
    }
    out[n] = '\0';
    if (out_len)
        *out_len = n;
    return cg_xrealloc (out, n + 1);
}
