/*  cg_outcome — what one run came to, in C values: how it ended, what it printed and
    displayed, and what it did to the workspace. */
#include "bridge/cg_outcome.h"
#include "base/cg_utf8.h"
#include "base/cg_util.h"
#include "base/cg_fs.h"

#include <stdlib.h>
#include <string.h>

static void
s_stream_init (cg_outcome_stream_t *stream)
{
    *stream = (cg_outcome_stream_t){.text = cg_xstrdup ("")};
}

static void
s_stream_clear (cg_outcome_stream_t *stream)
{
    free (stream->text);
    free (stream->file);
    free (stream->full);
    *stream = (cg_outcome_stream_t){0};
}

cg_outcome_t *
cg_outcome_new (const char *language, const char *execution_id, const char *session_id)
{
    cg_outcome_t *self = cg_xcalloc (1, sizeof *self);
    self->language = cg_xstrdup (language);
    self->execution_id = cg_xstrdup (execution_id);
    self->session_id = session_id ? cg_xstrdup (session_id) : NULL;
    self->end = CG_OUTCOME_OK;
    self->error = CG_OUTCOME_ERROR_NONE;
    s_stream_init (&self->out);
    s_stream_init (&self->err);
    self->outputs = json_array ();
    return self;
}

cg_outcome_t *
cg_outcome_setup_failure (const char *language, const char *execution_id, const char *session_id,
                          cg_outcome_error_t error, const char *message)
{
    cg_outcome_t *self = cg_outcome_new (language, execution_id, session_id);
    cg_outcome_fail (self, CG_OUTCOME_SETUP_FAILURE, -1, error, message);
    return self;
}

void
cg_outcome_destroy (cg_outcome_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    cg_outcome_t *self = *self_p;
    free (self->language);
    free (self->execution_id);
    free (self->session_id);
    free (self->message);
    free (self->notice);
    s_stream_clear (&self->out);
    s_stream_clear (&self->err);
    json_decref (self->outputs);
    json_decref (self->egress);
    json_decref (self->return_value);
    json_decref (self->created);
    json_decref (self->modified);
    json_decref (self->deleted);
    json_decref (self->artifacts);
    json_decref (self->files);
    json_decref (self->previews);
    //  A one-shot run's kept files nobody took over (the call was gone) go with it.
    if (self->kept_dir)
        cg_rm_rf (self->kept_dir, NULL);
    free (self->kept_dir);
    free (self);
    *self_p = NULL;
}

void
cg_outcome_fail (cg_outcome_t *self, cg_outcome_end_t end, int exit_code, cg_outcome_error_t error,
                 const char *message)
{
    self->end = end;
    self->exit_code = exit_code;
    self->error = error;
    free (self->message);
    self->message = message ? cg_xstrdup (message) : NULL;
}

void
cg_outcome_add_notice (cg_outcome_t *self, const char *text)
{
    char *joined = self->notice ? cg_strdupf ("%s %s", self->notice, text) : cg_xstrdup (text);
    free (self->notice);
    self->notice = joined;
}

void
cg_outcome_stream_set (cg_outcome_stream_t *stream, const char *data, size_t len)
{
    free (stream->text);
    stream->text = cg_utf8_clean (data, len, &stream->len);
}

void
cg_outcome_stream_set_full (cg_outcome_stream_t *stream, const char *data, size_t len, size_t cap,
                            bool cut)
{
    size_t take = len;
    if (len > cap) {
        //  Back up to the start of the character at CAP (at most 3 continuation bytes).
        take = cap;
        while (take > 0 && cap - take < 3 && ((unsigned char)data[take] & 0xC0) == 0x80)
            take--;
        if (((unsigned char)data[take] & 0xC0) == 0x80)
            take = cap; /* not UTF-8 there: cleaning replaces what is cut */
    }
    free (stream->full);
    stream->full = cg_utf8_clean (data, take, &stream->full_len);
    stream->full_cut = cut || take < len;
}

void
cg_outcome_stream_append_line (cg_outcome_stream_t *stream, const char *text)
{
    bool newline = stream->len && stream->text[stream->len - 1] != '\n';
    char *joined = cg_strdupf ("%s%s%s", stream->text, newline ? "\n" : "", text);
    free (stream->text);
    stream->text = joined;
    stream->len = strlen (joined);
    if (stream->full) {
        newline = stream->full_len && stream->full[stream->full_len - 1] != '\n';
        joined = cg_strdupf ("%s%s%s", stream->full, newline ? "\n" : "", text);
        free (stream->full);
        stream->full = joined;
        stream->full_len = strlen (joined);
    }
}
