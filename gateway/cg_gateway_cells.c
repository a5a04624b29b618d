/*  cg_gateway_cells — a WebSocket's cells, from execute_request to its reply and idle
    status, each ended through the registry like any run. */
#include "gateway/cg_gateway_cells.h"
#include "base/cg_limits.h"
#include "base/cg_utf8.h"
#include "base/cg_util.h"

#include <string.h>

#define S_CLIENT_NAME_MAX 64 /* bytes of the header's username kept */
#define S_OUTPUTS_MAX 1000   /* display outputs kept per cell (as a run keeps) */
#define S_OUTPUT_COST 256    /* what one kept output costs of the byte budget besides its text */

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
    json_t *outputs;      /* the text/plain of its execute_result and display_data: [{type,
                              data: {text/plain}, metadata}] (cg_outcome_t's outputs) */
    size_t outputs_bytes; /* what they hold of the budget */
    bool outputs_cut;     /* an output was left out (the caps) */
    bool result;          /* OUTPUTS holds its execute_result */
    char *error;          /* "ename: evalue" when it raised */
    char *reply_status;   /* the execute_reply's status ("ok", "error", "aborted"), or NULL */
    char *reply_error;    /* the execute_reply's "ename: evalue", or NULL */
    bool idle;            /* its idle status came */
    int64_t last_us;      /* cg_now_us of the last message for it */
    int execution_count;
} s_cell_t;

struct cg_gateway_cells_t {
    zhashx_t *cells; /* msg_id -> s_cell_t */
    size_t bytes;    /* held by all cells' texts and outputs */
    size_t halves;   /* cells that had their reply or their idle status, not both */
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
    json_decref (cell->outputs);
    free (cell->error);
    free (cell->reply_status);
    free (cell->reply_error);
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

//  "ename: evalue" of CONTENT (an error, or an execute_reply that is one). Caller frees.
static char *
s_error_text (const json_t *content)
{
    const char *name = s_member (content, "ename");
    const char *value = s_member (content, "evalue");
    return cg_strdupf ("%.*s: %.*s", cg_utf8_prefix (name, 256), name, cg_utf8_prefix (value, 4096),
                       value);
}

//  CELL's execution count from CONTENT's (an execute_input's or execute_reply's), when sane.
static void
s_count (s_cell_t *cell, const json_t *content)
{
    json_t *count = json_object_get (content, "execution_count");
    if (json_is_integer (count) && json_integer_value (count) > 0
        && json_integer_value (count) < 1000000000)
        cell->execution_count = (int)json_integer_value (count);
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
    cell->sent_us = cell->last_us = cg_now_us ();
    cell->outputs = json_array ();
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
    self->bytes -= cell->code.len + cell->out.len + cell->err.len + cell->outputs_bytes;
}

//  True when CELL had one of its execute_reply and its idle status, not both.
static bool
s_half (const s_cell_t *cell)
{
    return (cell->reply_status != NULL) != cell->idle;
}

//  Counts CELL, which just had its reply or its idle status: one more half, or one less.
static void
s_count_half (cg_gateway_cells_t *self, const s_cell_t *cell)
{
    if (s_half (cell))
        self->halves++;
    else
        self->halves--;
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

//  How CELL ended, into OUTCOME (run, its streams and outputs set): failed with WHY when not
//  NULL (no one will see it end); not run when the kernel aborted it (an earlier cell
//  failed: stop_on_error), as a run whose code never ran; failed when it raised (its iopub
//  error, else its reply's).
static void
s_ending (cg_outcome_t *outcome, const s_cell_t *cell, const char *why)
{
    const char *status = cell->reply_status;
    if (why)
        cg_outcome_fail (outcome, CG_OUTCOME_RUNTIME_ERROR, 1, CG_OUTCOME_ERROR_RUNTIME, why);
    else if (status && strcmp (status, "aborted") == 0) {
        outcome->ran = false;
        cg_outcome_fail (outcome, CG_OUTCOME_SETUP_FAILURE, -1, CG_OUTCOME_ERROR_RUNTIME,
                         "The kernel aborted this cell without running it: a cell before it "
                         "failed and its front end asked to stop on error (stop_on_error).");
    }
    else if (cell->error || cell->reply_error || (status && strcmp (status, "ok") != 0)) {
        cleanup_free char *message =
            cell->error || cell->reply_error ? NULL : cg_strdupf ("execution %.32s", status);
        const char *text = cell->error ? cell->error : cell->reply_error;
        cg_outcome_fail (outcome, CG_OUTCOME_RUNTIME_ERROR, 1, CG_OUTCOME_ERROR_RUNTIME,
                         text ? text : message);
    }
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
    json_decref (outcome->outputs);
    outcome->outputs = json_incref (cell->outputs);
    if (cell->result) {
        size_t i;
        json_t *item;
        json_array_foreach (cell->outputs, i, item)
        {
            if (strcmp (s_member (item, "type"), "execute_result") == 0)
                outcome->return_value = json_incref (json_object_get (item, "data"));
        }
    }
    if (cell->outputs_cut)
        cg_outcome_add_notice (outcome, "Display outputs were cut or left out of the record (the "
                                        "text/plain of each is kept, within caps).");
    outcome->execution_count = cell->execution_count;
    outcome->duration_us = cg_now_us () - (cell->started_us ? cell->started_us : cell->sent_us);
    s_ending (outcome, cell, why);
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

//  Keeps the text/plain of the display output MSG (an execute_result or display_data) in
//  CELL, within CG_LOG_STREAM_MAX, S_OUTPUTS_MAX and the table's byte budget. Its other
//  types (images, HTML: untrusted media) are never kept nor decoded.
static void
s_display (cg_gateway_cells_t *self, s_cell_t *cell, const cg_msg_t *msg)
{
    bool result = strcmp (msg->msg_type, "execute_result") == 0;
    json_t *plain = json_object_get (json_object_get (msg->content, "data"), "text/plain");
    const char *text = json_string_value (plain);
    size_t left = CG_GATEWAY_CELLS_BYTES_MAX - self->bytes;
    if (!text || (result && cell->result) || json_array_size (cell->outputs) >= S_OUTPUTS_MAX
        || left < S_OUTPUT_COST) {
        cell->outputs_cut = cell->outputs_cut || text;
        return;
    }
    size_t room =
        left - S_OUTPUT_COST < CG_LOG_STREAM_MAX ? left - S_OUTPUT_COST : CG_LOG_STREAM_MAX;
    size_t len = strlen (text);
    if (len > room) {
        len = (size_t)cg_utf8_prefix (text, room);
        cell->outputs_cut = true;
    }
    json_t *item = json_pack ("{s:s, s:{s:s%}, s:{}}", "type", msg->msg_type, "data", "text/plain",
                              text, len, "metadata");
    json_array_append_new (cell->outputs, item);
    cell->outputs_bytes += len + S_OUTPUT_COST;
    self->bytes += len + S_OUTPUT_COST;
    cell->result = cell->result || result;
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
    else if (strcmp (type, "error") == 0 && !cell->error)
        cell->error = s_error_text (msg->content);
    else if (strcmp (type, "execute_result") == 0 || strcmp (type, "display_data") == 0)
        s_display (self, cell, msg);
    else if (strcmp (type, "execute_input") == 0)
        s_count (cell, msg->content);
}

bool
cg_gateway_cells_iopub (cg_gateway_cells_t *self, const cg_msg_t *msg)
{
    s_cell_t *cell = msg->parent_msg_id ? zhashx_lookup (self->cells, msg->parent_msg_id) : NULL;
    if (!cell)
        return false;
    cell->last_us = cg_now_us ();
    if (strcmp (msg->msg_type, "status") != 0) {
        s_feed (self, cell, msg);
        return false;
    }
    const char *state = s_member (msg->content, "execution_state");
    if (strcmp (state, "busy") == 0 && !cell->started_us)
        cell->started_us = cell->last_us;
    if (strcmp (state, "idle") != 0 || cell->idle)
        return false;
    cell->idle = true;
    s_count_half (self, cell);
    return true;
}

bool
cg_gateway_cells_shell (cg_gateway_cells_t *self, const cg_msg_t *msg)
{
    s_cell_t *cell = msg->parent_msg_id ? zhashx_lookup (self->cells, msg->parent_msg_id) : NULL;
    if (!cell || strcmp (msg->msg_type, "execute_reply") != 0 || cell->reply_status)
        return false;
    cell->last_us = cg_now_us ();
    const char *status = s_member (msg->content, "status");
    cell->reply_status =
        cg_strdupf ("%.*s", cg_utf8_prefix (status, 32), *status ? status : "error");
    if (json_is_string (json_object_get (msg->content, "ename")))
        cell->reply_error = s_error_text (msg->content);
    if (!cell->execution_count)
        s_count (cell, msg->content);
    s_count_half (self, cell);
    return true;
}

//  Ends CELL, followed as MSG_ID, and forgets it.
static void
s_finish (cg_gateway_cells_t *self, cg_registry_t *registry, cg_registry_session_t *session,
          s_cell_t *cell, const char *msg_id)
{
    if (s_half (cell))
        self->halves--;
    s_end (registry, session, cell, NULL);
    s_unhold (self, cell);
    zhashx_delete (self->cells, msg_id);
}

bool
cg_gateway_cells_end (cg_gateway_cells_t *self, cg_registry_t *registry,
                      cg_registry_session_t *session, const char *msg_id)
{
    s_cell_t *cell = msg_id ? zhashx_lookup (self->cells, msg_id) : NULL;
    if (!cell || !cell->idle || !cell->reply_status)
        return false;
    s_finish (self, registry, session, cell, msg_id);
    return true;
}

size_t
cg_gateway_cells_count (cg_gateway_cells_t *self)
{
    return zhashx_size (self->cells);
}

int64_t
cg_gateway_cells_due (cg_gateway_cells_t *self)
{
    int64_t due = 0;
    if (self->halves == 0)
        return 0;
    for (s_cell_t *cell = zhashx_first (self->cells); cell; cell = zhashx_next (self->cells))
        if (s_half (cell) && (due == 0 || cell->last_us + CG_GATEWAY_CELLS_WAIT_US < due))
            due = cell->last_us + CG_GATEWAY_CELLS_WAIT_US;
    return due;
}

bool
cg_gateway_cells_expire (cg_gateway_cells_t *self, cg_registry_t *registry,
                         cg_registry_session_t *session, int64_t now_us)
{
    bool no_idle = false;
    while (self->halves > 0) {
        s_cell_t *cell = zhashx_first (self->cells);
        while (cell && !(s_half (cell) && now_us - cell->last_us >= CG_GATEWAY_CELLS_WAIT_US))
            cell = zhashx_next (self->cells);
        if (!cell)
            break;
        no_idle = no_idle || !cell->idle;
        s_finish (self, registry, session, cell, zhashx_cursor (self->cells));
    }
    return no_idle;
}

void
cg_gateway_cells_end_all (cg_gateway_cells_t *self, cg_registry_t *registry,
                          cg_registry_session_t *session, const char *why)
{
    for (s_cell_t *cell = zhashx_first (self->cells); cell; cell = zhashx_next (self->cells))
        s_end (registry, session, cell, why);
    zhashx_purge (self->cells);
    self->bytes = 0;
    self->halves = 0;
}
