/*  cg_channel — where MCP messages to a client go, whatever carries them. */
#include "mcp/cg_channel.h"
#include "base/cg_fault.h"
#include "base/cg_util.h"
#include "base/cg_worker.h"
#include "mcp/cg_result.h"

#include <string.h>

/*  A message sent on a channel while an earlier one is still being encoded. */
struct cg_channel_out_t {
    cg_work_t work; /* its encoding, when it is a large one */
    cg_channel_t *channel;
    json_t *message;
    char *text; /* its encoding, NULL until done */
    size_t budget;
    bool links;
    cg_channel_out_t *next;
};

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

//  Adds to *SIZE the rough size of VALUE's encoding (its strings and keys, a few bytes for
//  everything else), stopping once it reaches CG_CHANNEL_ENCODE_AWAY: a walk over what the
//  loop would encode anyway, without the escaping and copying, and bounded for a large one.
static void
s_rough_size (json_t *value, size_t *size, int depth)
{
    if (*size >= CG_CHANNEL_ENCODE_AWAY)
        return;
    if (depth > 32) { /* deeper than any message of ours: no cheap guess */
        *size = CG_CHANNEL_ENCODE_AWAY;
        return;
    }
    *size += 8;
    if (json_is_string (value))
        *size += json_string_length (value);
    else if (json_is_array (value)) {
        size_t i;
        json_t *item;
        json_array_foreach (value, i, item)
        {
            s_rough_size (item, size, depth + 1);
            if (*size >= CG_CHANNEL_ENCODE_AWAY)
                return;
        }
    }
    else if (json_is_object (value)) {
        const char *key;
        json_t *item;
        json_object_foreach (value, key, item)
        {
            *size += strlen (key);
            s_rough_size (item, size, depth + 1);
            if (*size >= CG_CHANNEL_ENCODE_AWAY)
                return;
        }
    }
}

//  Sends what is at the head of SELF's queue and encoded, in order.
static void
s_flush (cg_channel_t *self)
{
    cg_channel_out_t *out;
    while ((out = self->out_head) && out->text) {
        if (!(self->out_head = out->next))
            self->out_tail = NULL;
        self->ops->send (self, out->message, out->text, strlen (out->text));
        free (out->text);
        json_decref (out->message);
        free (out);
    }
}

//  On the encoder's thread. MESSAGE may share parts with what the loop keeps (a task's
//  result): it is only read here, and a result that must be cut is cut in a copy.
static void
s_encode_work (cg_work_t *work)
{
    cg_channel_out_t *out = (cg_channel_out_t *)work;
    cg_fault_hold ("encode"); /* a test's large answer in flight */
    out->text = json_dumps (out->message, JSON_COMPACT | JSON_REAL_PRECISION (15));
    if (out->text && strlen (out->text) <= out->budget)
        return;
    free (out->text);
    json_t *copy = json_deep_copy (out->message);
    if (!copy)
        abort ();
    out->text = cg_result_encode (copy, out->budget, out->links);
    json_decref (copy);
}

//  Back on the loop: the message (encoded here when the encoder ended first) and those
//  behind it go out.
static void
s_encode_after (cg_work_t *work, bool ran)
{
    cg_channel_out_t *out = (cg_channel_out_t *)work;
    cg_channel_t *self = out->channel;
    if (!ran || !out->text) {
        free (out->text);
        out->text = cg_result_encode (out->message, out->budget, out->links);
    }
    s_flush (self);
    cg_channel_release (&self);
}

void
cg_channel_send (cg_channel_t *self, json_t *message)
{
    bool links = cg_client_links (self->client);
    size_t rough = 0;
    if (self->encoder)
        s_rough_size (message, &rough, 0);
    bool away = rough >= CG_CHANNEL_ENCODE_AWAY;
    if (!away && !self->out_head) {
        char *text = cg_result_encode (message, self->budget, links);
        self->ops->send (self, message, text, strlen (text));
        free (text);
        json_decref (message);
        return;
    }
    cg_channel_out_t *out = cg_xcalloc (1, sizeof *out);
    *out = (cg_channel_out_t){.work = {.work_cb = s_encode_work, .after_cb = s_encode_after},
                              .channel = self,
                              .message = message,
                              .budget = self->budget,
                              .links = links};
    if (self->out_tail)
        self->out_tail->next = out;
    else
        self->out_head = out;
    self->out_tail = out;
    //  A small message behind a large one is encoded now and waits; a large one whose
    //  encoder is full is encoded here (the loop slows, nothing is lost).
    if (away && cg_worker_queue (self->encoder, &out->work, false, NULL) == 0) {
        cg_channel_keep (self);
        return;
    }
    out->text = cg_result_encode (message, self->budget, links);
    s_flush (self);
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
