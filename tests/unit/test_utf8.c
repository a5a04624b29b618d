/*  Unit tests: cg_utf8_clean keeps every well-formed character and replaces only invalid
    bytes and NULs with U+FFFD; cg_utf8_prefix never ends an excerpt inside a character. */
#include "base/cg_utf8.h"
#include "base/cg_util.h"
#include "cg_test.h"

#include <string.h>

#define R "\xEF\xBF\xBD"

static void
s_case (const char *name, const char *in, size_t in_len, const char *expected)
{
    size_t len = 0;
    cleanup_free char *out = cg_utf8_clean (in, in_len, &len);
    CHECK (len == strlen (expected) && memcmp (out, expected, len) == 0 && out[len] == '\0',
           "got \"%s\" (%zu bytes), expected \"%s\"", out, len, expected);
    s_passes++;
}

static void
s_prefix (const char *name, const char *in, size_t max, int expected)
{
    int got = cg_utf8_prefix (in, max);
    CHECK (got == expected, "%s: got %d, expected %d", name, got, expected);
    s_passes++;
}

int
main (void)
{
    s_prefix ("short ASCII whole", "abc", 64, 3);
    s_prefix ("ASCII cut at MAX", "abcdef", 4, 4);
    s_prefix ("two-byte character not split", "abc\xC3\xA9", 4, 3);
    s_prefix ("two-byte character whole", "abc\xC3\xA9", 5, 5);
    s_prefix ("four-byte character not split", "a\xF0\x9F\x98\x80z", 4, 1);
    s_prefix ("four-byte character whole", "a\xF0\x9F\x98\x80z", 5, 5);
    s_prefix ("a stray byte counts as one",
              "a\xFF"
              "b",
              2, 2);
    s_prefix ("empty", "", 8, 0);
    s_prefix ("MAX 0", "abc", 0, 0);
    s_case ("plain ASCII", "hello", 5, "hello");
    s_case ("valid multi-byte kept", "h\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80", 10,
            "h\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80");
    s_case ("NUL replaced, text after it kept", "b\0c", 3, "b" R "c");
    s_case ("one invalid byte among valid text", "ok \xFF ok", 7, "ok " R " ok");
    s_case ("overlong form", "\xC0\xAF", 2, R R);
    s_case ("UTF-16 surrogate", "\xED\xA0\x80", 3, R R R);
    s_case ("past U+10FFFF", "\xF4\x90\x80\x80", 4, R R R R);
    s_case ("sequence cut short at the end", "a\xE2\x82", 3, "a" R R);
    s_case ("lone continuation byte", "\x80z", 2, R "z");
    s_case ("empty", "", 0, "");
    printf ("%d passed, %d failed\n", s_passes, s_failures);
    return s_failures ? 1 : 0;
}
