/*  cg_channel — where MCP messages to a client go, whatever carries them. */
#include "mcp/cg_channel.h"
#include "mcp/cg_result.h"

#include <string.h>

bool
cg_client_links (const cg_client_t *client)
{
    //  resource_link blocks exist from revision 2025-06-18 on.
    return client && strcmp (client->version, "2025-06-18") >= 0;
}

bool
cg_client_same_owner (const cg_client_t *a, const cg_client_t *b)
{
    return a->owner ? a->owner == b->owner : a == b;
}

void
cg_channel_send (cg_channel_t *self, json_t *message)
{
    char *text = cg_result_encode (message, self->budget, cg_client_links (self->client));
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

void
cg_channel_status (cg_channel_t *self, unsigned status)
{
    self->status = status;
}
