/*  cg_gateway_cells — a WebSocket's cells, from execute_request to idle, each ended through
    the registry like any run. */
#include "gateway/cg_gateway_cells.h"
#include "base/cg_limits.h"
#include "base/cg_utf8.h"
#include "base/cg_util.h"

#include <string.h>

#define S_CLIENT_NAME_MAX 64 /* bytes of the header's username kept */

//  One stream's text as the kernel sent it, held up to CG_LOG_STREAM_MAX.
typedef struct {
    char *text;
    size_t len;
    bool cut; /* more came than was kept */
} s_text_t;

typedef struct {
    s_text_t code;
    char *session_id, *owner, *language, *client_name;
    bool silent;
    int64_t sent_us, started_us; /* cg_now_us when sent, when its busy status came (0: not) */
    s_text_t out, err;
    char *error; /* "ename: evalue" when it raised */
    int execution_count;
} s_cell_t;

struct cg_gateway_cells_t {
    zhashx_t *cells; /* msg_id -> s_cell_t */
    size_t bytes;    /* held by all cells' texts */
};

static void
s_cell_free (void **item)
{
    s_cell_t *cell = *item;
    if (!cell)
        return;
    free (cell->code.text);
    free (cell->out.text);
    free (cell->err.text);
    free (cell->session_id);
    free (cell->owner);
    free (cell->language);
    free (cell->client_name);
    free (cell->error);
    free (cell);
    *item = NULL;
}

cg_gateway_cells_t *
cg_gateway_cells_new (void)
{
    cg_gateway_cells_t *self = cg_xcalloc (1, sizeof *self);
    self->cells = zhashx_new ();
    zhashx_set_destructor (self->cells, s_cell_free);
    return self;
}

void
cg_gateway_cells_destroy (cg_gateway_cells_t **self_p)
{
    cg_gateway_cells_t *self = *self_p;
    if (!self)
        return;
    zhashx_destroy (&self->cells);
    free (self);
    *self_p = NULL;
}

//  Appends the LEN bytes at DATA (valid UTF-8) to TEXT, within CG_LOG_STREAM_MAX and what
//  is left of the table's byte budget; what does not fit is dropped (TEXT is then cut,
//  before a character the cap would split).
static void
s_append (cg_gateway_cells_t *self, s_text_t *text, const char *data, size_t len)
{
    size_t room = CG_LOG_STREAM_MAX - text->len;
    size_t left = CG_GATEWAY_CELLS_BYTES_MAX - self->bytes;
    if (room > left)
        room = left;
    size_t take = len;
    if (take > room) {
        take = (size_t)cg_utf8_prefix (data, room);
        text->cut = true;
    }
    if (take == 0)
        return;
    text->text = cg_xrealloc (text->text, text->len + take + 1);
    memcpy (text->text + text->len, data, take);
    text->len += take;
    text->text[text->len] = '\0';
    self->bytes += take;
}

//  The string member NAME of OBJECT, or "".
static const char *
s_member (const json_t *object, const char *name)
{
    const char *value = json_string_value (json_object_get (object, name));
    return value ? value : "";
}

bool
cg_gateway_cells_sent (cg_gateway_cells_t *self, const cg_jmsg_t *msg,
                       const cg_registry_session_t *session, const cg_registry_kernel_t *kernel)
{
    if (zhashx_size (self->cells) >= CG_GATEWAY_CELLS_MAX
        || zhashx_lookup (self->cells, msg->msg_id))
        return false;
    //  Untrusted: the front end's header and content, checked as JSON objects by cg_jmsg.
    json_t *header = json_loadb (msg->parts[0], msg->part_len[0], 0, NULL);
    json_t *content = json_loadb (msg->parts[3], msg->part_len[3], 0, NULL);
    s_cell_t *cell = cg_xcalloc (1, sizeof *cell);
    const char *code = s_member (content, "code");
    s_append (self, &cell->code, code, strlen (code));
    const char *username = s_member (header, "username");
    cell->client_name = cg_strdupf ("%.*s", cg_utf8_prefix (username, S_CLIENT_NAME_MAX), username);
    cell->silent = json_is_true (json_object_get (content, "silent"));
    cell->session_id = cg_xstrdup (session->id);
    cell->owner = cg_xstrdup (session->owner);
    cell->language = cg_xstrdup (kernel->language);
    cell->sent_us = cg_now_us ();
    zhashx_insert (self->cells, msg->msg_id, cell);
    json_decref (header);
    json_decref (content);
    return true;
}

bool
cg_gateway_cells_has (cg_gateway_cells_t *self, const char *msg_id)
{
    return msg_id && zhashx_lookup (self->cells, msg_id);
}

//  Gives back what CELL's texts held of the table's budget.
static void
s_unhold (cg_gateway_cells_t *self, const s_cell_t *cell)
{
    self->bytes -= cell->code.len + cell->out.len + cell->err.len;
}

//  Sets STREAM to TEXT, marking it cut for the log when it was.
static void
s_stream (cg_outcome_stream_t *stream, const s_text_t *text)
{
    const char *data = text->text ? text->text : "";
    cg_outcome_stream_set (stream, data, text->len);
    if (text->cut)
        cg_outcome_stream_set_full (stream, data, text->len, CG_LOG_STREAM_MAX, true);
}

//  Ends CELL (failed with WHY when not NULL) through REGISTRY, in SESSION (NULL: gone).
static void
s_end (cg_registry_t *registry, cg_registry_session_t *session, const s_cell_t *cell,
       const char *why)
{
    char execution_id[18] = "exec_";
    cg_random_hex (execution_id + 5, 6);
    cg_outcome_t *outcome = cg_outcome_new (cell->language, execution_id, cell->session_id);
    outcome->ran = true;
    s_stream (&outcome->out, &cell->out);
    s_stream (&outcome->err, &cell->err);
    outcome->execution_count = cell->execution_count;
    outcome->duration_us = cg_now_us () - (cell->started_us ? cell->started_us : cell->sent_us);
    if (why || cell->error)
        cg_outcome_fail (outcome, CG_OUTCOME_RUNTIME_ERROR, 1, CG_OUTCOME_ERROR_RUNTIME,
                         why ? why : cell->error);
    json_t *request = json_pack ("{s:s%, s:s}", "code", cell->code.text ? cell->code.text : "",
                                 cell->code.len, "language", cell->language);
    cg_run_report_t run = {.front_end = "gateway",
                           .tool = "gateway",
                           .client_id = cell->owner,
                           .client_name = cell->client_name,
                           .request = request,
                           .silent = cell->silent,
                           .outcome = outcome};
    cg_registry_run_ended (registry, session, &run);
    json_decref (request);
    cg_outcome_destroy (&outcome);
}

//  What the iopub message MSG (not a status) adds to CELL.
static void
s_feed (cg_gateway_cells_t *self, s_cell_t *cell, const cg_msg_t *msg)
{
    const char *type = msg->msg_type;
    if (strcmp (type, "stream") == 0) {
        const char *text = s_member (msg->content, "text");
        bool err = strcmp (s_member (msg->content, "name"), "stderr") == 0;
        s_append (self, err ? &cell->err : &cell->out, text, strlen (text));
    }
    else if (strcmp (type, "error") == 0 && !cell->error) {
        const char *name = s_member (msg->content, "ename");
        const char *value = s_member (msg->content, "evalue");
        cell->error = cg_strdupf ("%.*s: %.*s", cg_utf8_prefix (name, 256), name,
                                  cg_utf8_prefix (value, 4096), value);
    }
    else if (strcmp (type, "execute_input") == 0) {
        json_t *count = json_object_get (msg->content, "execution_count");
        if (json_is_integer (count) && json_integer_value (count) > 0
            && json_integer_value (count) < 1000000000)
            cell->execution_count = (int)json_integer_value (count);
    }
}

bool
cg_gateway_cells_iopub (cg_gateway_cells_t *self, const cg_msg_t *msg)
{
    s_cell_t *cell = msg->parent_msg_id ? zhashx_lookup (self->cells, msg->parent_msg_id) : NULL;
    if (!cell)
        return false;
    if (strcmp (msg->msg_type, "status") != 0) {
        s_feed (self, cell, msg);
        return false;
    }
    const char *state = s_member (msg->content, "execution_state");
    if (strcmp (state, "busy") == 0 && !cell->started_us)
        cell->started_us = cg_now_us ();
    return strcmp (state, "idle") == 0;
}

void
cg_gateway_cells_end (cg_gateway_cells_t *self, cg_registry_t *registry,
                      cg_registry_session_t *session, const char *msg_id)
{
    s_cell_t *cell = msg_id ? zhashx_lookup (self->cells, msg_id) : NULL;
    if (!cell)
        return;
    s_end (registry, session, cell, NULL);
    s_unhold (self, cell);
    zhashx_delete (self->cells, msg_id);
}

void
cg_gateway_cells_end_all (cg_gateway_cells_t *self, cg_registry_t *registry,
                          cg_registry_session_t *session, const char *why)
{
    for (s_cell_t *cell = zhashx_first (self->cells); cell; cell = zhashx_next (self->cells))
        s_end (registry, session, cell, why);
    zhashx_purge (self->cells);
    self->bytes = 0;
}
