/*  cg_result — what one tools/call result may weigh: each heavy payload once, and the
    whole result within the client's budget, with what was left out replaced by links to
    the files the server saved and a note saying so. */
#ifndef CG_RESULT_H
#define CG_RESULT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/*  Room kept below the budget for the note that says what was left out. */
#define CG_RESULT_NOTE_ROOM 4096

/*  Returns how many bytes VALUE (borrowed) takes when serialized as the transports send
    it (compact). */
size_t cg_result_size (json_t *value);

/*  A run result's output ITEM ({type, data, metadata, path?, download_url?}, borrowed,
    changed in place) has its MIME display (base64 in data) carried by the image block
    at CONTENT_INDEX of the same result: drops the base64 from ITEM's data and records
    instead "omitted" (the MIME types taken out of data), "mime_type", "size_bytes" (the
    decoded size) and "content_index". The saved file's path and download_url, when the
    item has them, stay where they are. */
void cg_result_link_output (json_t *item, const char *mime, size_t content_index);

/*  Fits RESULT (a tools/call result {content, structuredContent?, isError?}, borrowed,
    changed in place) into BUDGET bytes serialized (cg_result_size). When it is larger,
    replaces what is heaviest first: image and audio blocks (by a resource_link to the
    saved file when LINKS, the client's protocol revision has them, and a download URL is
    known; else by a text block naming the file), then the display data in
    structuredContent.outputs (as above: "omitted"), then long strings (cut to head and
    tail with seed 002's marker), then the tails of long arrays; and appends a text block
    that says what was left out and where it is. Returns how many things were left out
    (0 when RESULT already fit). BUDGET must exceed CG_RESULT_NOTE_ROOM. */
size_t cg_result_fit (json_t *result, size_t budget, bool links);

/*  Serializes MESSAGE (a JSON-RPC message, borrowed) as the transports send it: compact.
    When it is a response carrying a tools/call result and is longer than BUDGET bytes,
    first fits that result (cg_result_fit, LINKS as there, changing MESSAGE) so that the
    whole message stays within BUDGET. Returns the text; the caller owns it. Aborts when
    out of memory. */
char *cg_result_encode (json_t *message, size_t budget, bool links);

#endif
