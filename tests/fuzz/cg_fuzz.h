/*  cg_fuzz — what the fuzz targets share: reading a fuzzer's input as a byte stream, the
    length-prefixed frames a target splits it into, an invariant check that aborts (so that
    libFuzzer and the replay both report it as a crash), and a scratch directory. */
#ifndef CG_FUZZ_H
#define CG_FUZZ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bridge/cg_wire.h"

/*  Every target defines this (libFuzzer's entry point); replay.c calls it per file. */
int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);

/*  The unread rest of an input. */
typedef struct {
    const uint8_t *data;
    size_t size;
} cg_fuzz_in_t;

/*  Returns the next byte, or 0 once the input is used up. */
uint8_t cg_fuzz_byte (cg_fuzz_in_t *in);

/*  Returns true while input is left. */
bool cg_fuzz_more (const cg_fuzz_in_t *in);

/*  Takes the next frame: a 2-byte big-endian length N, then N bytes (fewer when the input
    ends first). Sets *FRAME to the bytes (borrowed from the input) and *LEN to their
    count. Returns false when not even the length is left. */
bool cg_fuzz_frame (cg_fuzz_in_t *in, const uint8_t **frame, size_t *len);

/*  Aborts with WHAT on stderr when COND is false: a broken invariant is a crash. */
#define CG_FUZZ_CHECK(cond, what) cg_fuzz_check ((cond), (what), __FILE__, __LINE__)
void cg_fuzz_check (bool cond, const char *what, const char *file, int line);

/*  Returns true when the LEN bytes at DATA are valid UTF-8 (RFC 3629: no overlongs, no
    surrogates, nothing past U+10FFFF). NUL counts as valid. */
bool cg_fuzz_utf8_valid (const void *data, size_t len);

/*  Returns how many UTF-8 lead bytes (bytes that are not 10xxxxxx) the LEN bytes hold. */
size_t cg_fuzz_utf8_leads (const void *data, size_t len);

/*  Returns a kernel message of TYPE (TYPE_LEN bytes) with the LEN bytes at CONTENT as its
    content's JSON text, taken as they come, whose parent is the running cell (msg_id
    "cell"), signed with WIRE's key and decoded by cg_wire_decode: what a compromised
    kernel holding its key can make the server accept. Returns the message (caller owns
    it), or NULL when the decoder refused it. */
cg_msg_t *cg_fuzz_kernel_msg (cg_wire_t *wire, const char *type, size_t type_len,
                              const uint8_t *content, size_t len, unsigned serial);

/*  Once per process: libsodium initialised and the server's log quiet. */
void cg_fuzz_init (void);

/*  Returns a new directory "<tmp>/cellgate-fuzz-<NAME>-XXXXXX" (in /dev/shm when it
    exists: fuzzers write files at every run), removed with everything below it at
    exit. The string is static; abort on failure. */
const char *cg_fuzz_scratch_dir (const char *name);

#endif
