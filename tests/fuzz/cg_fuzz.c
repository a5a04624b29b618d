/*  cg_fuzz — what the fuzz targets share (see cg_fuzz.h). */
#define _GNU_SOURCE
#include "cg_fuzz.h"

#include "base/cg_util.h"
#include "base/cg_fs.h"
#include "bridge/cg_wire.h"

#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

uint8_t
cg_fuzz_byte (cg_fuzz_in_t *in)
{
    if (in->size == 0)
        return 0;
    in->size--;
    return *in->data++;
}

bool
cg_fuzz_more (const cg_fuzz_in_t *in)
{
    return in->size > 0;
}

bool
cg_fuzz_frame (cg_fuzz_in_t *in, const uint8_t **frame, size_t *len)
{
    if (in->size < 2)
        return false;
    size_t want = (size_t)in->data[0] << 8 | in->data[1];
    in->data += 2;
    in->size -= 2;
    *len = want < in->size ? want : in->size;
    *frame = in->data;
    in->data += *len;
    in->size -= *len;
    return true;
}

void
cg_fuzz_check (bool cond, const char *what, const char *file, int line)
{
    if (cond)
        return;
    fprintf (stderr, "%s:%d: invariant broken: %s\n", file, line, what);
    abort ();
}

bool
cg_fuzz_utf8_valid (const void *data, size_t len)
{
    const unsigned char *p = data;
    size_t i = 0;
    while (i < len) {
        unsigned char c = p[i];
        size_t n;
        unsigned int cp;
        if (c < 0x80) {
            i++;
            continue;
        }
        if (c >= 0xC2 && c <= 0xDF)
            n = 1, cp = c & 0x1F;
        else if (c >= 0xE0 && c <= 0xEF)
            n = 2, cp = c & 0x0F;
        else if (c >= 0xF0 && c <= 0xF4)
            n = 3, cp = c & 0x07;
        else
            return false;
        if (len - i - 1 < n)
            return false;
        for (size_t k = 1; k <= n; k++) {
            if ((p[i + k] & 0xC0) != 0x80)
                return false;
            cp = cp << 6 | (p[i + k] & 0x3F);
        }
        if ((n == 2 && cp < 0x800) || (n == 3 && (cp < 0x10000 || cp > 0x10FFFF))
            || (cp >= 0xD800 && cp <= 0xDFFF))
            return false;
        i += n + 1;
    }
    return true;
}

size_t
cg_fuzz_utf8_leads (const void *data, size_t len)
{
    const unsigned char *p = data;
    size_t leads = 0;
    for (size_t i = 0; i < len; i++)
        leads += (p[i] & 0xC0) != 0x80;
    return leads;
}

cg_msg_t *
cg_fuzz_kernel_msg (cg_wire_t *wire, const char *type, size_t type_len, const uint8_t *content,
                    size_t len, unsigned serial)
{
    json_t *type_json = json_stringn (type, type_len);
    if (!type_json)
        return NULL; /* not a string a kernel could put in JSON */
    char msg_id[32];
    snprintf (msg_id, sizeof msg_id, "kernel-%u", serial);
    json_t *header =
        json_pack ("{s:s, s:o, s:s}", "msg_id", msg_id, "msg_type", type_json, "version", "5.3");
    cleanup_free char *header_text = json_dumps (header, JSON_COMPACT);
    json_decref (header);
    const char *parent = "{\"msg_id\":\"cell\",\"msg_type\":\"execute_request\"}";
    cg_frame_t frames[6] = {
        {"<IDS|MSG>", 9},          {NULL, 64}, {header_text, strlen (header_text)},
        {parent, strlen (parent)}, {"{}", 2},  {content, len},
    };
    char signature[65];
    cg_wire_sign (wire, &frames[2], signature);
    frames[1].data = signature;
    cg_msg_t *msg = NULL;
    cg_wire_decode (wire, frames, 6, &msg);
    return msg;
}

void
cg_fuzz_init (void)
{
    static bool ready;
    if (ready)
        return;
    ready = true;
    if (sodium_init () < 0)
        abort ();
    cg_log_set_level (-1);
}

static char *s_scratch[8];

static void
s_scratch_remove (void)
{
    for (size_t i = 0; i < sizeof s_scratch / sizeof s_scratch[0] && s_scratch[i]; i++) {
        cg_error_t *err = NULL;
        cg_rm_rf (s_scratch[i], &err);
        cg_error_destroy (&err);
        free (s_scratch[i]);
        s_scratch[i] = NULL;
    }
}

const char *
cg_fuzz_scratch_dir (const char *name)
{
    size_t slot = 0;
    while (slot < sizeof s_scratch / sizeof s_scratch[0] && s_scratch[slot])
        slot++;
    if (slot == sizeof s_scratch / sizeof s_scratch[0])
        abort ();
    const char *base = access ("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    char *dir = cg_strdupf ("%s/cellgate-fuzz-%s-XXXXXX", base, name);
    if (!mkdtemp (dir)) {
        perror ("mkdtemp");
        abort ();
    }
    if (slot == 0)
        atexit (s_scratch_remove);
    s_scratch[slot] = dir;
    return dir;
}
