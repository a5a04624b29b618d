/*  cg_channel — where MCP messages to a client go, whatever carries them. */
#include "cg_channel.h"
#include "cg_result.h"

#include <string.h>

void
cg_channel_send (cg_channel_t *self, json_t *message)
{
    //  resource_link blocks exist from revision 2025-06-18 on.
    bool links = self->client && strcmp (self->client->version, "2025-06-18") >= 0;
    char *text = cg_result_encode (message, self->budget, links);
    self->ops->send (self, message, text, strlen (text));
    free (text);
    json_decref (message);
}

cg_channel_t *
cg_channel_keep (cg_channel_t *self)
{
    self->refs++;
    return self;
}

void
cg_channel_release (cg_channel_t **self_p)
{
    cg_channel_t *self = *self_p;
    if (!self)
        return;
    *self_p = NULL;
    if (--self->refs <= 0)
        self->ops->free (self);
}
