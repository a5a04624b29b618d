/*  fuzz_egress_log — squid's access log lines as cellgate reads them (cg_egress_log_parse):
    squid writes them, but the host and method are the sandbox's text. Any bytes.

    Input: one line (any bytes, NULs and tabs included).

    Invariants: a line that parses has every string NUL-terminated within its field, printable
    ASCII without spaces (host, method) or an address; port 0-65535, status 0-999, counts not
    negative; a denial has a reason; and the parser never reads past LEN (ASan: the line is
    copied to a buffer of exactly its size). */
#define _GNU_SOURCE
#include "cg_fuzz.h"

#include "egress/cg_egress_squid.h"
#include "base/cg_util.h"

#include <arpa/inet.h>
#include <string.h>

static void
s_check_text (const char *text, size_t size, bool spaces)
{
    size_t len = strnlen (text, size);
    CG_FUZZ_CHECK (len < size, "NUL-terminated within its field");
    for (size_t i = 0; i < len; i++)
        CG_FUZZ_CHECK ((text[i] > 0x20 || (spaces && text[i] == ' ')) && text[i] < 0x7f,
                       "printable ASCII");
}

static void
s_check_address (const char *text, bool empty_ok)
{
    unsigned char addr[16];
    s_check_text (text, 46, false);
    if (empty_ok && !*text)
        return;
    CG_FUZZ_CHECK (inet_pton (AF_INET, text, addr) == 1 || inet_pton (AF_INET6, text, addr) == 1,
                   "an address");
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
    char *line = cg_xmalloc (size ? size : 1);
    memcpy (line, data, size);
    cg_egress_record_t record;
    if (cg_egress_log_parse (line, size, &record) == 0) {
        s_check_address (record.src, false);
        s_check_address (record.server_addr, true);
        s_check_text (record.method, sizeof record.method, false);
        CG_FUZZ_CHECK (record.method[0], "a method");
        s_check_text (record.host, sizeof record.host, false);
        s_check_text (record.reason, sizeof record.reason, true);
        CG_FUZZ_CHECK (record.port >= 0 && record.port <= 65535, "a port");
        CG_FUZZ_CHECK (record.status >= 0 && record.status <= 999, "a status");
        CG_FUZZ_CHECK (record.bytes_up >= 0 && record.bytes_down >= 0 && record.ms >= 0
                           && record.time_ms >= 0,
                       "counts not negative");
        CG_FUZZ_CHECK (record.decision == CG_EGRESS_ALLOWED
                           || (record.decision == CG_EGRESS_DENIED && record.reason[0]),
                       "a denial has a reason");
    }
    free (line);
    return 0;
}
