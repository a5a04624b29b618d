/*  cg_run — what one execution produced: bounded output buffers, the run record, and
    the kernel messages that fill it. */
#include "bridge/cg_run.h"
#include "base/cg_util.h"

#include <stdio.h>
#include <string.h>

//  Display outputs kept per run, besides their bytes (each costs a few JSON objects).
#define S_DISPLAYS_MAX 1000

//  --------------------------------------------------------------------------
//  Output buffers

static void
s_text_init (cg_text_t *text, size_t max)
{
    *text = (cg_text_t){.data = cg_xcalloc (1, 1), .max = max};
}

static size_t
s_utf8_chars (const char *data, size_t len)
{
    size_t chars = 0;
    for (size_t i = 0; i < len; i++)
        chars += ((unsigned char)data[i] & 0xC0) != 0x80;
    return chars;
}

void
cg_text_append (cg_text_t *text, const char *data, size_t len)
{
    if (!text->tail && text->len + len <= text->max) {
        text->data = cg_xrealloc (text->data, text->len + len + 1);
        memcpy (text->data + text->len, data, len);
        text->len += len;
        text->data[text->len] = '\0';
        return;
    }
    size_t tail_max = text->max - text->max / 2;
    if (!text->tail) {
        //  Over MAX for the first time: the first MAX/2 bytes stay as the head, what
        //  follows them starts the tail.
        size_t head = text->max / 2;
        text->tail = cg_xmalloc (2 * tail_max + 1);
        text->tail_len = 0;
        if (text->len > head) {
            text->tail_len = text->len - head; /* at most TAIL_MAX: fits */
            memcpy (text->tail, text->data + head, text->tail_len);
        }
        else {
            size_t fill = head - text->len;
            text->data = cg_xrealloc (text->data, head + 1);
            memcpy (text->data + text->len, data, fill);
            data += fill;
            len -= fill;
        }
        text->len = head;
        text->data = cg_xrealloc (text->data, head + 1);
        text->data[head] = '\0';
    }
    while (len > 0) {
        size_t room = 2 * tail_max - text->tail_len;
        if (room == 0) {
            //  Keep the newest TAIL_MAX bytes; what falls out is dropped.
            size_t drop = text->tail_len - tail_max;
            text->dropped += drop;
            text->dropped_chars += s_utf8_chars (text->tail, drop);
            memmove (text->tail, text->tail + drop, tail_max);
            text->tail_len = tail_max;
            room = tail_max;
        }
        size_t take = len < room ? len : room;
        memcpy (text->tail + text->tail_len, data, take);
        text->tail_len += take;
        data += take;
        len -= take;
    }
}

void
cg_text_finish (cg_text_t *text)
{
    if (!text->tail)
        return;
    size_t tail_max = text->max - text->max / 2;
    size_t drop = text->tail_len > tail_max ? text->tail_len - tail_max : 0;
    text->dropped += drop;
    text->dropped_chars += s_utf8_chars (text->tail, drop);
    size_t keep = text->tail_len - drop;
    text->cut = text->len;
    text->data = cg_xrealloc (text->data, text->len + keep + 1);
    memcpy (text->data + text->len, text->tail + drop, keep);
    text->len += keep;
    text->data[text->len] = '\0';
    free (text->tail);
    text->tail = NULL;
    text->tail_len = 0;
}

static void
s_text_reset (cg_text_t *text)
{
    free (text->tail);
    text->tail = NULL;
    text->tail_len = 0;
    text->len = 0;
    text->dropped = text->dropped_chars = text->cut = 0;
    text->data[0] = '\0';
}

//  Appends the LEN bytes at DATA (NULs included) without ANSI escape sequences
//  (tracebacks are colored for terminals).
static void
s_text_append_plain (cg_text_t *text, const char *data, size_t len)
{
    const char *p = data, *end = data + len;
    while (p < end) {
        const char *esc = memchr (p, '\x1b', (size_t)(end - p));
        if (!esc) {
            cg_text_append (text, p, (size_t)(end - p));
            return;
        }
        cg_text_append (text, p, (size_t)(esc - p));
        p = esc + 1;
        if (p < end && *p == '[') {
            p++;
            while (p < end && !(*p >= 0x40 && *p <= 0x7e))
                p++;
            if (p < end)
                p++;
        }
    }
}

//  --------------------------------------------------------------------------
//  The run record

void
cg_run_init (cg_run_t *run, size_t max_output)
{
    *run = (cg_run_t){.outputs = json_array (), .display_max = SIZE_MAX};
    s_text_init (&run->out, max_output);
    s_text_init (&run->err, max_output);
}

void
cg_run_reset (cg_run_t *run)
{
    cg_run_t kept = *run;
    cg_run_clear (run);
    cg_run_init (run, kept.out.max);
    run->display_max = kept.display_max;
    run->on_output = kept.on_output;
    run->on_output_arg = kept.on_output_arg;
    run->ask = kept.ask;
    run->ask_arg = kept.ask_arg;
}

void
cg_run_clear (cg_run_t *run)
{
    free (run->out.data);
    free (run->err.data);
    free (run->out.tail);
    free (run->err.tail);
    json_decref (run->outputs);
    json_decref (run->return_value);
    free (run->reply_status);
    free (run->ename);
    free (run->evalue);
    *run = (cg_run_t){0};
}

//  --------------------------------------------------------------------------
//  Kernel messages

static void
s_clear_output (cg_run_t *run, cg_feed_t *feed)
{
    s_text_reset (&run->out);
    s_text_reset (&run->err);
    json_array_clear (run->outputs);
    feed->clear_pending = false;
}

//  The bytes of a display's data: its strings' lengths (what a PNG's base64 costs).
static size_t
s_display_bytes (json_t *data)
{
    size_t bytes = 0;
    const char *mime;
    json_t *value;
    json_object_foreach (data, mime, value) bytes +=
        json_is_string (value) ? json_string_length (value) : 256;
    return bytes;
}

static void
s_on_iopub (cg_run_t *run, cg_feed_t *feed, cg_msg_t *msg)
{
    const char *type = msg->msg_type;
    json_t *content = msg->content;
    run->started = true; /* the kernel has taken this request (status busy comes first) */
    if (strcmp (type, "status") == 0) {
        const char *state = json_string_value (json_object_get (content, "execution_state"));
        if (state && strcmp (state, "idle") == 0)
            feed->idle = true;
        return;
    }
    if (strcmp (type, "execute_input") == 0)
        return;
    if (feed->clear_pending && strcmp (type, "clear_output") != 0)
        s_clear_output (run, feed);
    if (strcmp (type, "stream") == 0) {
        const char *name = json_string_value (json_object_get (content, "name"));
        json_t *text_json = json_object_get (content, "text");
        const char *text = json_string_value (text_json);
        size_t text_len = json_string_length (text_json); /* NULs included */
        bool err = name && strcmp (name, "stderr") == 0;
        if (text)
            cg_text_append (err ? &run->err : &run->out, text, text_len);
        if (text && run->on_output)
            run->on_output (run->on_output_arg, err ? "stderr" : "stdout", text, text_len);
    }
    else if (strcmp (type, "display_data") == 0 || strcmp (type, "execute_result") == 0
             || strcmp (type, "update_display_data") == 0) {
        json_t *data = json_object_get (content, "data");
        if (!json_is_object (data))
            return;
        if (run->on_output && strcmp (type, "execute_result") != 0) {
            //  Joined in one pass: a kernel may send millions of types.
            size_t total = 0, at = 0;
            const char *mime;
            json_t *value;
            json_object_foreach (data, mime, value) total += strlen (mime) + 2;
            cleanup_free char *types = cg_xmalloc (total + 1);
            json_object_foreach (data, mime, value) at +=
                (size_t)sprintf (types + at, "%s%s", at ? ", " : "", mime);
            types[at] = '\0';
            run->on_output (run->on_output_arg, "display", types, at);
        }
        //  Display data is held until the run ends: bounded in bytes per run. Past the
        //  budget an output is counted and dropped, and the result says so.
        size_t bytes = s_display_bytes (data);
        if ((run->display_bytes + bytes > run->display_max
             || json_array_size (run->outputs) >= S_DISPLAYS_MAX)
            && strcmp (type, "execute_result") != 0) {
            run->displays_dropped++;
            run->display_bytes_dropped += bytes;
            return;
        }
        run->display_bytes += bytes;
        json_t *metadata = json_object_get (content, "metadata");
        json_t *item = json_pack ("{s:s, s:O}", "type", type, "data", data);
        json_object_set_new (item, "metadata",
                             json_is_object (metadata) ? json_incref (metadata) : json_object ());
        json_t *transient = json_object_get (content, "transient");
        const char *display_id = json_string_value (json_object_get (transient, "display_id"));
        if (display_id)
            json_object_set_new (item, "display_id", json_string (display_id));
        if (strcmp (type, "execute_result") == 0) {
            json_decref (run->return_value);
            run->return_value = json_incref (data);
            json_t *count = json_object_get (content, "execution_count");
            if (json_is_integer (count))
                run->execution_count = (int)json_integer_value (count);
        }
        json_array_append_new (run->outputs, item);
    }
    else if (strcmp (type, "error") == 0) {
        json_t *traceback = json_object_get (content, "traceback");
        size_t i;
        json_t *line;
        json_array_foreach (traceback, i, line)
        {
            if (json_is_string (line)) {
                s_text_append_plain (&run->err, json_string_value (line),
                                     json_string_length (line));
                cg_text_append (&run->err, "\n", 1);
            }
        }
        if (!json_array_size (traceback)) {
            const char *ename = json_string_value (json_object_get (content, "ename"));
            const char *evalue = json_string_value (json_object_get (content, "evalue"));
            cleanup_free char *text =
                cg_strdupf ("%s: %s\n", ename ? ename : "Error", evalue ? evalue : "");
            cg_text_append (&run->err, text, strlen (text));
        }
    }
    else if (strcmp (type, "clear_output") == 0) {
        if (json_is_true (json_object_get (content, "wait")))
            feed->clear_pending = true;
        else
            s_clear_output (run, feed);
    }
}

static void
s_on_shell (cg_run_t *run, cg_feed_t *feed, cg_msg_t *msg)
{
    if (strcmp (msg->msg_type, "execute_reply") != 0)
        return;
    feed->replied = true;
    feed->replied_us = cg_now_us ();
    const char *status = json_string_value (json_object_get (msg->content, "status"));
    free (run->reply_status);
    run->reply_status = cg_xstrdup (status ? status : "error");
    json_t *count = json_object_get (msg->content, "execution_count");
    if (json_is_integer (count))
        run->execution_count = (int)json_integer_value (count);
    const char *ename = json_string_value (json_object_get (msg->content, "ename"));
    const char *evalue = json_string_value (json_object_get (msg->content, "evalue"));
    if (ename) {
        free (run->ename);
        run->ename = cg_xstrdup (ename);
    }
    if (evalue) {
        free (run->evalue);
        run->evalue = cg_xstrdup (evalue);
    }
}

//  The answer to an input_request: the next line of stdin, or EOF (ipykernel raises
//  EOFError for "\x04") when stdin is exhausted, so input() never hangs. Caller owns it.
static char *
s_on_stdin (cg_run_t *run, cg_feed_t *feed, cg_msg_t *msg)
{
    if (strcmp (msg->msg_type, "input_request") != 0)
        return NULL;
    if (!feed->stdin_next || !*feed->stdin_next) {
        if (run->ask && !feed->asking && json_is_object (msg->header)) {
            //  Ask the user; the answer comes later (cg_kernel_execute sends it).
            const char *prompt = json_string_value (json_object_get (msg->content, "prompt"));
            bool password = json_is_true (json_object_get (msg->content, "password"));
            feed->asking = json_deep_copy (msg->header);
            if (prompt)
                cg_text_append (&run->out, prompt, strlen (prompt));
            run->ask (run->ask_arg, prompt ? prompt : "", password);
            return NULL;
        }
        run->stdin_exhausted = true;
        return cg_xstrdup ("\x04");
    }
    const char *newline = strchr (feed->stdin_next, '\n');
    size_t len = newline ? (size_t)(newline - feed->stdin_next) : strlen (feed->stdin_next);
    char *line = cg_xstrndup (feed->stdin_next, len);
    if (len > 0 && line[len - 1] == '\r')
        line[len - 1] = '\0';
    feed->stdin_next += newline ? len + 1 : len;
    const char *prompt = json_string_value (json_object_get (msg->content, "prompt"));
    if (prompt && *line != '\x04')
        cg_text_append (&run->out, prompt, strlen (prompt));
    return line;
}

char *
cg_run_feed (cg_run_t *run, cg_feed_t *feed, const char *channel, cg_msg_t *msg)
{
    if (strcmp (channel, "iopub") == 0)
        s_on_iopub (run, feed, msg);
    else if (strcmp (channel, "shell") == 0)
        s_on_shell (run, feed, msg);
    else if (strcmp (channel, "stdin") == 0)
        return s_on_stdin (run, feed, msg);
    return NULL;
}
