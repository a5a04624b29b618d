/*  cg_stdio — MCP's stdio transport. */
#include "mcp/cg_stdio.h"
#include "mcp/cg_jsonrpc.h"
#include "base/cg_fault.h"
#include "base/cg_util.h"
#include "base/cg_worker.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#define READ_CHUNK 65536

/*  Past this much output the client has not taken, no more requests are read from it
    (what is in flight still answers): a client that stops reading holds its own calls,
    never the loop. */
#define S_OUT_PAUSE (4 * 1024 * 1024)

typedef struct s_parse_t s_parse_t;

typedef struct {
    cg_channel_t base;
    int out_fd;
    bool failed;   /* a write failed: the client is gone */
    bool blocking; /* writes wait (cg_stdio_destroy: the loop is over) */
    char *out;     /* what the client has not taken yet, from OUT_OFF on */
    size_t out_len, out_off, out_cap;
    cg_loop_watch_t *out_watch; /* OUT_FD, polled for room while OUT holds something */
} s_channel_t;

struct cg_stdio_t {
    cg_server_t *server;
    cg_client_t client;
    s_channel_t *channel;
    int in_fd;
    bool input_open;
    size_t message_max;
    char *buf; /* what was read and not yet handled */
    size_t len, cap;
    bool discarding; /* skipping the rest of an oversized line */
    cg_worker_t *parser;
    cg_loop_watch_t *parser_watch;
    s_parse_t *parsing; /* the long line being parsed: the lines after it wait */
    bool closing;       /* cg_stdio_destroy: a line back from the parser is dropped */
    int out_flags;      /* the output fd's file status flags as they were */
};

//  A long line, parsed off the loop: the worker's alone until it comes back.
struct s_parse_t {
    cg_work_t work;
    cg_stdio_t *self;
    char *buf; /* the read buffer the line is in, taken over */
    size_t start, len;
    json_t *message; /* the parsed line, or NULL with JERR */
    json_error_t jerr;
};

//  Writes what PARTS hold (after a write failed, nothing); returns how much went out, all
//  of it unless the pipe is full and the writes do not wait.
static size_t
s_write (s_channel_t *self, struct iovec *parts, int count)
{
    size_t done = 0;
    while (!self->failed && count > 0) {
        ssize_t n = writev (self->out_fd, parts, count);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            break;
        if (n < 0) {
            cg_log (0, "write to client: %s", strerror (errno));
            self->failed = true;
            break;
        }
        done += (size_t)n;
        size_t left = (size_t)n;
        for (; count > 0 && left >= parts->iov_len; parts++, count--)
            left -= parts->iov_len;
        if (count > 0) {
            parts->iov_base = (char *)parts->iov_base + left;
            parts->iov_len -= left;
        }
    }
    return done;
}

static void
s_out_add (s_channel_t *self, const char *data, size_t len)
{
    if (self->out_off > 0 && self->out_off == self->out_len)
        self->out_off = self->out_len = 0;
    if (self->out_len + len > self->out_cap) {
        if (self->out_off > 0) /* (OUT may still be NULL: never offset it) */
            memmove (self->out, self->out + self->out_off, self->out_len - self->out_off);
        self->out_len -= self->out_off;
        self->out_off = 0;
        if (self->out_len + len > self->out_cap) {
            self->out_cap = (self->out_len + len) * 2;
            self->out = cg_xrealloc (self->out, self->out_cap);
        }
    }
    memcpy (self->out + self->out_len, data, len);
    self->out_len += len;
}

//  What waits goes out as far as the pipe takes it; the pipe is polled for room while
//  something is left.
static void
s_out_flush (s_channel_t *self)
{
    struct iovec part = {self->out ? self->out + self->out_off : NULL,
                         self->out_len - self->out_off};
    self->out_off += s_write (self, &part, part.iov_len ? 1 : 0);
    if (self->failed || self->out_off == self->out_len) {
        free (self->out);
        self->out = NULL;
        self->out_len = self->out_off = self->out_cap = 0;
    }
    if (self->out_watch)
        cg_loop_watch_events (self->out_watch, self->out_len ? ZMQ_POLLOUT : 0);
}

//  The line goes out now if the pipe takes it, else (a client slow to read) waits in OUT:
//  the loop never waits on the client.
static void
s_send (cg_channel_t *base, json_t *message, const char *text, size_t len)
{
    (void)message;
    s_channel_t *self = (s_channel_t *)base;
    if (self->failed)
        return;
    if (self->out_len == self->out_off) {
        struct iovec parts[] = {{CG_UNCONST (text), len}, {CG_UNCONST ("\n"), 1}};
        size_t done = s_write (self, parts, 2);
        if (self->failed || done == len + 1)
            return;
        if (done < len) {
            s_out_add (self, text + done, len - done);
            done = len;
        }
        s_out_add (self, "\n", 1);
    }
    else {
        s_out_add (self, text, len);
        s_out_add (self, "\n", 1);
    }
    s_out_flush (self);
}

//  The client's pipe has room.
static void
s_out_cb (cg_loop_t *loop, short revents, void *arg)
{
    (void)loop;
    (void)revents;
    s_out_flush (arg);
}

static void
s_free (cg_channel_t *base)
{
    free (((s_channel_t *)base)->out);
    free (base);
}

static const cg_channel_ops_t s_ops = {.send = s_send, .free = s_free};

//  The parser thread gave a line back.
static void
s_parser_cb (cg_loop_t *loop, short revents, void *arg)
{
    (void)loop;
    (void)revents;
    cg_worker_collect (((cg_stdio_t *)arg)->parser);
}

cg_stdio_t *
cg_stdio_new (cg_server_t *server, int in_fd, int out_fd, size_t message_max)
{
    cg_stdio_t *self = cg_xcalloc (1, sizeof *self);
    self->server = server;
    self->client = (cg_client_t){.id = "stdio", .log_level = -1};
    self->channel = cg_xcalloc (1, sizeof *self->channel);
    self->channel->base = (cg_channel_t){.ops = &s_ops,
                                         .client = &self->client,
                                         .budget = cg_server_config (server)->max_result_bytes,
                                         .refs = 1,
                                         .standing = true,
                                         .encoder = cg_server_encoder (server)};
    self->channel->out_fd = out_fd;
    //  The client's pipe: written without waiting (cg_stdio_destroy puts the flags back).
    //  A terminal keeps blocking writes: its file description is shared with the shell and
    //  whatever else writes to it, and a person reads it.
    self->out_flags = isatty (out_fd) ? -1 : fcntl (out_fd, F_GETFL);
    if (self->out_flags >= 0 && fcntl (out_fd, F_SETFL, self->out_flags | O_NONBLOCK) == 0)
        self->channel->out_watch =
            cg_loop_watch_fd (cg_server_loop (server), out_fd, 0, s_out_cb, self->channel);
    else
        self->channel->blocking = true;
    self->in_fd = in_fd;
    self->input_open = true;
    self->message_max = message_max;
    self->parser = cg_worker_new_nice ("request parser", 1, CG_WORKER_NICE);
    self->parser_watch = cg_worker_watch (self->parser, cg_server_loop (server), s_parser_cb, self);
    self->cap = READ_CHUNK;
    self->buf = cg_xmalloc (self->cap);
    return self;
}

void
cg_stdio_destroy (cg_stdio_t **self_p)
{
    cg_stdio_t *self = *self_p;
    if (!self)
        return;
    cg_loop_unwatch (cg_server_loop (self->server), &self->parser_watch);
    //  A line still being parsed comes back unhandled: the client's input is over.
    cg_worker_cancel_waiting (self->parser);
    self->closing = true;
    cg_worker_destroy (&self->parser);
    //  The loop is over: what the client has not taken yet goes out, waiting for it.
    s_channel_t *out = self->channel;
    cg_loop_unwatch (cg_server_loop (self->server), &out->out_watch);
    if (!out->blocking) {
        fcntl (out->out_fd, F_SETFL, self->out_flags);
        out->blocking = true;
        s_out_flush (out);
    }
    cg_channel_t *channel = &self->channel->base;
    cg_channel_release (&channel);
    free (self->buf);
    free (self);
    *self_p = NULL;
}

int
cg_stdio_fd (cg_stdio_t *self)
{
    //  Not while a long line is parsed (what follows it waits in the pipe), nor while the
    //  client leaves much of what was sent to it unread.
    s_channel_t *out = self->channel;
    return self->input_open && !self->parsing && out->out_len - out->out_off <= S_OUT_PAUSE
               ? self->in_fd
               : -1;
}

bool
cg_stdio_open (cg_stdio_t *self)
{
    return (self->input_open || self->parsing) && !self->channel->failed;
}

bool
cg_stdio_writable (cg_stdio_t *self)
{
    return !self->channel->failed;
}

cg_channel_t *
cg_stdio_channel (cg_stdio_t *self)
{
    return &self->channel->base;
}

static void s_handle_message (cg_stdio_t *self, const char *line, size_t len, json_t *message,
                              json_error_t *jerr);

//  Untrusted: one line from the client.
static void
s_handle_line (cg_stdio_t *self, const char *line, size_t len)
{
    while (len > 0 && (line[len - 1] == '\r' || line[len - 1] == ' ' || line[len - 1] == '\t'))
        len--;
    if (len == 0)
        return;
    json_error_t jerr;
    json_t *message = json_loadb (line, len, JSON_REJECT_DUPLICATES, &jerr);
    s_handle_message (self, line, len, message, &jerr);
}

//  The line (LEN bytes) parsed: MESSAGE (taken), or NULL with JERR.
static void
s_handle_message (cg_stdio_t *self, const char *line, size_t len, json_t *message,
                  json_error_t *jerr_in)
{
    cg_channel_t *channel = &self->channel->base;
    json_error_t jerr = *jerr_in;
    if (!message && json_error_code (&jerr) == json_error_null_character) {
        //  Valid JSON, but no string here may hold a NUL (it would cut C strings short):
        //  the request is refused, answered with its own id so the client is not left
        //  waiting.
        message = json_loadb (line, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr);
        json_t *id = json_object_get (message, "id");
        if (message && (json_is_string (id) || json_is_integer (id)))
            cg_channel_send (
                channel, cg_jsonrpc_error (
                             id, CG_JSONRPC_INVALID_PARAMS,
                             "invalid params: strings must not contain NUL characters (\\u0000)"));
        if (message) {
            json_decref (message);
            return;
        }
        //  Not JSON after all (an error after the NUL): a parse error, as below.
    }
    if (!message) {
        cleanup_free char *text = cg_strdupf ("Parse error: %s", jerr.text);
        cg_channel_send (channel, cg_jsonrpc_error (NULL, CG_JSONRPC_PARSE_ERROR, text));
        return;
    }
    cg_server_handle (self->server, channel, message);
    json_decref (message);
}

//  On the parser thread.
static void
s_parse_work (cg_work_t *work)
{
    s_parse_t *parse = (s_parse_t *)work;
    cg_fault_hold ("request_parse");
    parse->message =
        json_loadb (parse->buf + parse->start, parse->len, JSON_REJECT_DUPLICATES, &parse->jerr);
}

static void s_lines (cg_stdio_t *self);

//  Back on the loop: the long line is handled, then the lines that waited behind it.
static void
s_parse_after (cg_work_t *work, bool ran)
{
    s_parse_t *parse = (s_parse_t *)work;
    cg_stdio_t *self = parse->self;
    self->parsing = NULL;
    bool handle = ran && !self->closing;
    if (handle)
        s_handle_message (self, parse->buf + parse->start, parse->len, parse->message,
                          &parse->jerr);
    else
        json_decref (parse->message);
    free (parse->buf);
    free (parse);
    if (handle)
        s_lines (self);
}

//  Hands the line at START (LEN bytes) to the parser thread with the read buffer it is
//  in; the bytes after it stay in a new one. Returns false (nothing changed) when the
//  parser cannot take it.
static bool
s_parse_later (cg_stdio_t *self, size_t start, size_t len)
{
    s_parse_t *parse = cg_xcalloc (1, sizeof *parse);
    *parse = (s_parse_t){.work = {.work_cb = s_parse_work, .after_cb = s_parse_after},
                         .self = self,
                         .buf = self->buf,
                         .start = start,
                         .len = len};
    cg_error_t *err = NULL;
    if (cg_worker_queue (self->parser, &parse->work, true, &err) < 0) {
        cg_error_destroy (&err);
        free (parse);
        return false;
    }
    self->parsing = parse;
    size_t rest = self->len - (start + len + 1);
    self->cap = rest + READ_CHUNK;
    self->buf = cg_xmalloc (self->cap);
    memcpy (self->buf, parse->buf + start + len + 1, rest);
    self->len = rest;
    return true;
}

//  Handles the complete lines in the buffer, in order, until a long one goes to the
//  parser (the rest wait for it).
static void
s_lines (cg_stdio_t *self)
{
    size_t start = 0;
    for (char *nl; !self->parsing && (nl = memchr (self->buf + start, '\n', self->len - start));) {
        size_t line_len = (size_t)(nl - (self->buf + start));
        bool discarding = self->discarding;
        self->discarding = false;
        if (!discarding && line_len > CG_JSONRPC_PARSE_ON_LOOP_MAX
            && s_parse_later (self, start, line_len))
            return; /* the buffer is a new one, holding what followed the line */
        if (!discarding)
            s_handle_line (self, self->buf + start, line_len);
        start += line_len + 1;
    }
    memmove (self->buf, self->buf + start, self->len - start);
    self->len -= start;
}

void
cg_stdio_read (cg_stdio_t *self)
{
    if (self->cap - self->len < READ_CHUNK) {
        self->cap *= 2;
        self->buf = cg_xrealloc (self->buf, self->cap);
    }
    ssize_t n = read (self->in_fd, self->buf + self->len, self->cap - self->len);
    if (n < 0 && (errno == EINTR || errno == EAGAIN))
        return;
    if (n <= 0) {
        self->input_open = false;
        if (self->len > 0 && !self->discarding)
            s_handle_line (self, self->buf, self->len);
        return;
    }
    self->len += (size_t)n;
    s_lines (self);
    if (self->len > self->message_max) {
        if (!self->discarding) {
            cleanup_free char *message =
                cg_strdupf ("message larger than %zu bytes", self->message_max);
            cg_channel_send (&self->channel->base,
                             cg_jsonrpc_error (NULL, CG_JSONRPC_INVALID_REQUEST, message));
        }
        self->discarding = true;
        self->len = 0;
    }
    if (self->cap > 4 * READ_CHUNK && self->len < self->cap / 4) {
        self->cap = self->len + READ_CHUNK;
        self->buf = cg_xrealloc (self->buf, self->cap);
    }
}
