/*  cg_channel — where MCP messages to a client go, whatever carries them: one small
    interface (send, free) that each transport implements (cg_stdio: lines on stdout;
    cg_streamable: one HTTP POST's answer, JSON or an SSE stream), in the spirit of
    redis's ConnectionType. The MCP core sends on a channel and never asks which
    transport it is. */
#ifndef CG_CHANNEL_H
#define CG_CHANNEL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*  An MCP client: the stdio peer, or one Streamable HTTP session (Mcp-Session-Id). Each
    client has its own sandbox sessions; no client sees another's. */
typedef struct {
    char *id; /* "stdio", or the Mcp-Session-Id */
    bool initialized;
    char version[16];        /* the negotiated protocol version */
    int log_level;           /* logging/setLevel (cg_log levels); -1: none asked */
    int64_t last_seen_us;    /* its last request */
    char name[64];           /* clientInfo.name from initialize (cut), "" when none */
    char client_version[32]; /* clientInfo.version from initialize (cut), "" when none */
    bool elicitation;        /* it declared form elicitation: a cell's input() asks the user */
    bool stateless;          /* 2026-07-28 HTTP requests of one bearer token (no session) */
    int owner; /* with several --http-token tokens: 1 + the index of the one it sent; 0: the
                  client is its own owner (one token or none; stdio) */
} cg_client_t;

/*  True when CLIENT (may be NULL) takes resource_link content blocks. */
bool cg_client_links (const cg_client_t *client);

/*  True when A and B share one owner, whose share of each table a per-client cap bounds
    (--max-*-per-client): the same token of several in --http-token, or else the same
    client. */
bool cg_client_same_owner (const cg_client_t *a, const cg_client_t *b);

typedef struct cg_channel_t cg_channel_t;
typedef struct cg_channel_out_t cg_channel_out_t;
typedef struct cg_worker_t cg_worker_t;

/*  What a transport implements. SEND delivers MESSAGE (borrowed; TEXT is its encoding,
    LEN bytes, without a newline); FREE releases the transport's channel once nobody
    holds it (an unfinished answer is ended there). */
typedef struct {
    void (*send) (cg_channel_t *self, json_t *message, const char *text, size_t len);
    void (*free) (cg_channel_t *self);
    //  Optional: keeps an unanswered request's connection open (a comment on its stream)
    //  and returns false once its client is gone (NULL: it never goes, as stdio's).
    bool (*ping) (cg_channel_t *self);
} cg_channel_ops_t;

/*  A transport's channel starts with this (its own fields follow). */
struct cg_channel_t {
    const cg_channel_ops_t *ops;
    cg_client_t *client; /* whose channel it is (borrowed) */
    size_t budget;       /* the largest message sent, serialized (--max-result-bytes) */
    int refs;
    unsigned status;      /* the HTTP status of an answer sent alone (0: 200; cg_channel_status) */
    bool standing;        /* it outlives each request (stdio's): later notifications still arrive */
    cg_worker_t *encoder; /* encodes its large messages off the loop (NULL: all on the loop) */
    cg_channel_out_t *out_head, *out_tail; /* sent, in order, behind one still being encoded */
};

/*  A message whose rough size (cg_channel_send) reaches this is encoded on the channel's
    encoder: a result of a megabyte takes 10-20 ms to serialize and fit, which the loop and
    every other client would wait for. */
#define CG_CHANNEL_ENCODE_AWAY (64 * 1024)

/*  Asks for STATUS as the HTTP status of SELF's answer (when the transport has one and the
    answer is sent alone, not on a stream): 2026-07-28's 400 and 404 errors. */
void cg_channel_status (cg_channel_t *self, unsigned status);

/*  Sends MESSAGE (stolen) on SELF: encoded compact, a tools/call result fitted into the
    budget first (cg_result_encode; resource links when the client's revision has them).
    A large message is encoded on SELF's encoder and goes out when that is done; the
    messages sent on SELF after it wait for it, so a channel's messages keep their order.
    SELF is kept until then. */
void cg_channel_send (cg_channel_t *self, json_t *message);

/*  Takes a reference to SELF and returns it; cg_channel_release gives one back (the last
    frees the channel) and sets *self_p to NULL. */
cg_channel_t *cg_channel_keep (cg_channel_t *self);
void cg_channel_release (cg_channel_t **self_p);

#endif
