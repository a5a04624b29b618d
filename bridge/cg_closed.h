/*  cg_closed — a bounded memory of the sessions closed lately (by close_session), so that
    a call naming one is told it was closed instead of silently getting a new session. */
#ifndef CG_CLOSED_H
#define CG_CLOSED_H

#include <stddef.h>
#include <stdint.h>

typedef struct cg_closed_t cg_closed_t;

/*  Creates a memory of at most MAX closed ids (MAX > 0), each forgotten KEEP_US after it
    was closed, or earlier when MAX newer ones were added. Caller owns it. */
cg_closed_t *cg_closed_new (size_t max, int64_t keep_us);

/*  Frees SELF and sets *self_p to NULL. Safe on NULL. */
void cg_closed_destroy (cg_closed_t **self_p);

/*  Remembers that OWNER's session ID was closed at NOW_US (a monotonic clock). */
void cg_closed_add (cg_closed_t *self, const char *owner, const char *id, int64_t now_us);

/*  Returns how many microseconds before NOW_US OWNER's session ID was closed, or -1 when
    it is not remembered (never closed, forgotten, or made again since: cg_closed_forget). */
int64_t cg_closed_since (const cg_closed_t *self, const char *owner, const char *id,
                         int64_t now_us);

/*  Forgets OWNER's session ID (a session of that id exists again). */
void cg_closed_forget (cg_closed_t *self, const char *owner, const char *id);

#endif
