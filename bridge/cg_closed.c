/*  cg_closed — a bounded memory of the sessions closed lately: a ring of MAX entries,
    the oldest overwritten first, each ignored once older than its keep time. */
#include "bridge/cg_closed.h"
#include "base/cg_util.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    char *owner; /* NULL: an empty slot */
    char *id;
    int64_t closed_us;
} s_entry_t;

struct cg_closed_t {
    s_entry_t *entries;
    size_t max;
    size_t next; /* the slot the next id goes to (the oldest) */
    int64_t keep_us;
};

cg_closed_t *
cg_closed_new (size_t max, int64_t keep_us)
{
    cg_closed_t *self = cg_xcalloc (1, sizeof *self);
    self->entries = cg_xcalloc (max, sizeof *self->entries);
    self->max = max;
    self->keep_us = keep_us;
    return self;
}

static void
s_clear (s_entry_t *entry)
{
    free (entry->owner);
    free (entry->id);
    *entry = (s_entry_t){0};
}

void
cg_closed_destroy (cg_closed_t **self_p)
{
    cg_closed_t *self = *self_p;
    if (!self)
        return;
    for (size_t i = 0; i < self->max; i++)
        s_clear (&self->entries[i]);
    free (self->entries);
    free (self);
    *self_p = NULL;
}

//  The entry of OWNER's ID, or NULL.
static s_entry_t *
s_find (const cg_closed_t *self, const char *owner, const char *id)
{
    for (size_t i = 0; i < self->max; i++) {
        s_entry_t *entry = &self->entries[i];
        if (entry->owner && strcmp (entry->id, id) == 0 && strcmp (entry->owner, owner) == 0)
            return entry;
    }
    return NULL;
}

void
cg_closed_add (cg_closed_t *self, const char *owner, const char *id, int64_t now_us)
{
    cg_closed_forget (self, owner, id);
    s_entry_t *entry = &self->entries[self->next];
    s_clear (entry);
    *entry = (s_entry_t){.owner = cg_xstrdup (owner), .id = cg_xstrdup (id), .closed_us = now_us};
    self->next = (self->next + 1) % self->max;
}

int64_t
cg_closed_since (const cg_closed_t *self, const char *owner, const char *id, int64_t now_us)
{
    const s_entry_t *entry = s_find (self, owner, id);
    if (!entry || now_us - entry->closed_us > self->keep_us)
        return -1;
    return now_us - entry->closed_us;
}

void
cg_closed_forget (cg_closed_t *self, const char *owner, const char *id)
{
    s_entry_t *entry = s_find (self, owner, id);
    if (entry)
        s_clear (entry);
}
