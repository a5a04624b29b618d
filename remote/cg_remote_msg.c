/*  cg_remote_msg — the relay's messages: one table row per verb, decoded and encoded by it. */
#include "remote/cg_remote_msg.h"
#include "base/cg_utf8.h"
#include "base/cg_util.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

//  What a frame after the verb holds, and where it goes in the message.
typedef enum {
    S_VERSION, /* a number, 1 to 65535 */
    S_ID,      /* an exec or sandbox id */
    S_TARGET,  /* an exec id or "*" */
    S_NAME,    /* a file name in the ipc dir, into id */
    S_FILE,    /* a file name in the ipc dir, into text */
    S_NUMBER,  /* the next of number[]: 0 to 2^62 */
    S_UNKNOWN, /* the next of number[]: as S_NUMBER, or -1 */
    S_STATUS,  /* the next of number[]: 0 to 383 (128 + a signal up to 255) */
    S_SIGNAL,  /* the next of number[]: 1 to 64 */
    S_STREAM,  /* the next of number[]: 1 or 2 */
    S_TEXT,    /* a message */
    S_SPEC,    /* an EXEC's spec (parsed later, cg_remote_spec_parse) */
    S_BYTES,   /* a PUT's contents, OUT's and IN's bytes: 64 KiB at most */
    S_CHANNEL,
    S_PEER,
    S_PARTS, /* the rest: 1 to CG_REMOTE_PARTS_MAX frames */
    S_END,
} s_slot_t;

typedef struct {
    const char *name;
    cg_remote_dir_t dir;
    bool both; /* sent either way (BYE) */
    s_slot_t slots[5];
} s_row_t;

//  Indexed by cg_remote_verb_t.
static const s_row_t s_rows[] = {
    [CG_REMOTE_HELLO] = {"HELLO", CG_REMOTE_UP, false, {S_VERSION, S_ID, S_END}},
    [CG_REMOTE_STARTED] = {"STARTED", CG_REMOTE_UP, false, {S_ID, S_NUMBER, S_END}},
    [CG_REMOTE_EXITED] = {"EXITED", CG_REMOTE_UP, false, {S_ID, S_STATUS, S_END}},
    [CG_REMOTE_FAILED] = {"FAILED", CG_REMOTE_UP, false, {S_ID, S_TEXT, S_END}},
    [CG_REMOTE_OUT] = {"OUT", CG_REMOTE_UP, false, {S_ID, S_STREAM, S_BYTES, S_END}},
    [CG_REMOTE_STATS] = {"STATS", CG_REMOTE_UP, false, {S_NUMBER, S_NUMBER, S_UNKNOWN, S_END}},
    [CG_REMOTE_FROM] = {"FROM", CG_REMOTE_UP, false, {S_ID, S_CHANNEL, S_PEER, S_PARTS, S_END}},
    [CG_REMOTE_WELCOME] = {"WELCOME", CG_REMOTE_DOWN, false, {S_VERSION, S_END}},
    [CG_REMOTE_EXEC] = {"EXEC", CG_REMOTE_DOWN, false, {S_ID, S_SPEC, S_END}},
    [CG_REMOTE_IN] = {"IN", CG_REMOTE_DOWN, false, {S_ID, S_BYTES, S_END}},
    [CG_REMOTE_SIGNAL] = {"SIGNAL", CG_REMOTE_DOWN, false, {S_TARGET, S_SIGNAL, S_END}},
    [CG_REMOTE_STATS_ASK] = {"STATS?", CG_REMOTE_DOWN, false, {S_END}},
    [CG_REMOTE_PUT] = {"PUT", CG_REMOTE_DOWN, false, {S_NAME, S_BYTES, S_END}},
    [CG_REMOTE_ATTACH] = {"ATTACH", CG_REMOTE_DOWN, false, {S_ID, S_FILE, S_END}},
    [CG_REMOTE_TO] = {"TO", CG_REMOTE_DOWN, false, {S_ID, S_CHANNEL, S_PEER, S_PARTS, S_END}},
    [CG_REMOTE_BYE] = {"BYE", CG_REMOTE_UP, true, {S_TEXT, S_END}},
};
#define S_VERBS (sizeof s_rows / sizeof s_rows[0])

const char *
cg_remote_verb_name (cg_remote_verb_t verb)
{
    return (size_t)verb < S_VERBS ? s_rows[verb].name : "?";
}

static bool
s_is (const cg_remote_bytes_t *frame, const char *text)
{
    return frame->size == strlen (text) && memcmp (frame->data, text, frame->size) == 0;
}

//  A decimal number without sign or leading zero, at most MAX; -1 when it is not one.
static int64_t
s_number (const cg_remote_bytes_t *frame, int64_t max)
{
    const char *p = frame->data;
    if (frame->size == 0 || frame->size > 19 || (p[0] == '0' && frame->size > 1))
        return -1;
    int64_t value = 0;
    for (size_t i = 0; i < frame->size; i++) {
        if (p[i] < '0' || p[i] > '9')
            return -1;
        value = value * 10 + (p[i] - '0');
        if (value > max)
            return -1;
    }
    return value;
}

bool
cg_remote_id_ok (const void *data, size_t size)
{
    if (size == 0 || size > CG_REMOTE_ID_MAX)
        return false;
    for (size_t i = 0; i < size; i++) {
        char c = ((const char *)data)[i];
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || c == '_' || c == '-'))
            return false;
    }
    return true;
}

//  A file name: 1 to 128 of [A-Za-z0-9._-], not starting with a dot.
static bool
s_name_ok (const cg_remote_bytes_t *frame)
{
    const char *p = frame->data;
    if (frame->size == 0 || frame->size > 128 || p[0] == '.')
        return false;
    for (size_t i = 0; i < frame->size; i++)
        if (!((p[i] >= '0' && p[i] <= '9') || (p[i] >= 'a' && p[i] <= 'z')
              || (p[i] >= 'A' && p[i] <= 'Z') || p[i] == '_' || p[i] == '-' || p[i] == '.'))
            return false;
    return true;
}

//  UTF-8 without NUL.
static bool
s_text_ok (const void *data, size_t size)
{
    const unsigned char *p = data;
    for (size_t at = 0; at < size;) {
        size_t len = p[at] ? cg_utf8_char_len (p + at, size - at) : 0;
        if (len == 0)
            return false;
        at += len;
    }
    return true;
}

//  Checks FRAME for SLOT and stores it in MSG. Returns NULL, or why it is wrong (static).
static const char *
s_take (s_slot_t slot, const cg_remote_bytes_t *frame, cg_remote_msg_t *msg, size_t *numbers)
{
    int64_t value;
    switch (slot) {
        case S_VERSION:
            if ((msg->version = s_number (frame, 65535)) < 1)
                return "not a version (1 to 65535)";
            return NULL;
        case S_ID:
            msg->id = *frame;
            return cg_remote_id_ok (frame->data, frame->size) ? NULL
                                                              : "not an id (1 to 64 of [0-9a-z_-])";
        case S_TARGET:
            msg->id = *frame;
            return s_is (frame, "*") || cg_remote_id_ok (frame->data, frame->size)
                       ? NULL
                       : "neither an exec id nor *";
        case S_NAME:
        case S_FILE:
            if (slot == S_NAME)
                msg->id = *frame;
            else
                msg->text = *frame;
            return s_name_ok (frame)
                       ? NULL
                       : "not a file name (1 to 128 of [A-Za-z0-9._-], no leading dot)";
        case S_NUMBER:
        case S_UNKNOWN:
        case S_STATUS:
        case S_SIGNAL:
        case S_STREAM:
            value = slot == S_STATUS   ? s_number (frame, 383)
                    : slot == S_SIGNAL ? s_number (frame, 64)
                    : slot == S_STREAM ? s_number (frame, 2)
                                       : s_number (frame, INT64_C (1) << 62);
            if (slot == S_UNKNOWN && s_is (frame, "-1"))
                value = -1;
            else if (value < 0 || ((slot == S_SIGNAL || slot == S_STREAM) && value == 0))
                return slot == S_STATUS   ? "not an exit status (0 to 383)"
                       : slot == S_SIGNAL ? "not a signal (1 to 64)"
                       : slot == S_STREAM ? "not a stream (1 or 2)"
                                          : "not a number";
            msg->number[(*numbers)++] = value;
            return NULL;
        case S_TEXT:
            msg->text = *frame;
            return frame->size <= CG_REMOTE_TEXT_MAX && s_text_ok (frame->data, frame->size)
                       ? NULL
                       : "not a message (UTF-8 without NUL, 1,024 bytes at most)";
        case S_SPEC:
            msg->text = *frame;
            return frame->size <= CG_REMOTE_SPEC_MAX ? NULL : "a spec over 64 KiB";
        case S_BYTES:
            msg->text = *frame;
            return frame->size <= CG_REMOTE_PUT_MAX ? NULL : "over 64 KiB";
        case S_CHANNEL:
            value = s_number (frame, CG_REMOTE_CHANNELS - 1);
            msg->channel = (int)value;
            return value < 0 ? "not a channel (0 to 4)" : NULL;
        case S_PEER:
            msg->peer = *frame;
            if (frame->size > CG_REMOTE_PEER_MAX)
                return "a peer over 255 bytes";
            //  iopub has no peer; every other channel's message goes to or comes from one.
            if ((msg->channel == CG_REMOTE_IOPUB) != (frame->size == 0))
                return "a peer on iopub, or none on another channel";
            return NULL;
        case S_PARTS:
        case S_END:
            break;
    }
    return "?";
}

int
cg_remote_decode (const cg_remote_bytes_t *frames, size_t count, cg_remote_dir_t dir,
                  cg_remote_msg_t *msg, cg_error_t **err)
{
    *msg = (cg_remote_msg_t){0};
    if (count == 0)
        return cg_error_set (err, EPROTO, "relay message: no frames");
    size_t verb = 0;
    while (verb < S_VERBS && !s_is (&frames[0], s_rows[verb].name))
        verb++;
    if (verb == S_VERBS)
        return cg_error_set (err, EPROTO, "relay message: unknown verb (%zu bytes)",
                             frames[0].size);
    const s_row_t *row = &s_rows[verb];
    if (row->dir != dir && !row->both)
        return cg_error_set (err, EPROTO, "relay message: %s is not sent this way", row->name);
    msg->verb = (cg_remote_verb_t)verb;
    size_t at = 1, numbers = 0;
    for (const s_slot_t *slot = row->slots; *slot != S_END; slot++) {
        if (*slot == S_PARTS) {
            size_t parts = count - at;
            if (count <= at || parts > CG_REMOTE_PARTS_MAX)
                return cg_error_set (err, EPROTO, "relay message: %s with %zu parts (1 to %d)",
                                     row->name, count > at ? parts : 0, CG_REMOTE_PARTS_MAX);
            msg->parts = &frames[at];
            msg->part_count = parts;
            return 0;
        }
        if (at >= count)
            return cg_error_set (err, EPROTO, "relay message: %s with %zu frames, too few",
                                 row->name, count);
        const char *wrong = s_take (*slot, &frames[at], msg, &numbers);
        if (wrong)
            return cg_error_set (err, EPROTO, "relay message: %s frame %zu: %s", row->name, at,
                                 wrong);
        at++;
    }
    if (at != count)
        return cg_error_set (err, EPROTO, "relay message: %s with %zu frames, too many", row->name,
                             count);
    return 0;
}

int
cg_remote_frames_of (zmsg_t *zmsg, cg_remote_bytes_t *frames, size_t max)
{
    if (zmsg_size (zmsg) > max)
        return -1;
    int count = 0;
    for (zframe_t *frame = zmsg_first (zmsg); frame; frame = zmsg_next (zmsg))
        frames[count++] = (cg_remote_bytes_t){zframe_data (frame), zframe_size (frame)};
    return count;
}

static void
s_add_number (zmsg_t *zmsg, int64_t value)
{
    zmsg_addstrf (zmsg, "%lld", (long long)value);
}

zmsg_t *
cg_remote_encode (const cg_remote_msg_t *msg)
{
    if ((size_t)msg->verb >= S_VERBS)
        abort ();
    const s_row_t *row = &s_rows[msg->verb];
    zmsg_t *zmsg = zmsg_new ();
    zmsg_addstr (zmsg, row->name);
    size_t numbers = 0;
    for (const s_slot_t *slot = row->slots; *slot != S_END; slot++)
        switch (*slot) {
            case S_VERSION:
                s_add_number (zmsg, msg->version);
                break;
            case S_ID:
            case S_TARGET:
            case S_NAME:
                zmsg_addmem (zmsg, msg->id.data, msg->id.size);
                break;
            case S_NUMBER:
            case S_UNKNOWN:
            case S_STATUS:
            case S_SIGNAL:
            case S_STREAM:
                s_add_number (zmsg, msg->number[numbers++]);
                break;
            case S_TEXT:
            case S_SPEC:
            case S_BYTES:
            case S_FILE:
                zmsg_addmem (zmsg, msg->text.data, msg->text.size);
                break;
            case S_CHANNEL:
                s_add_number (zmsg, msg->channel);
                break;
            case S_PEER:
                zmsg_addmem (zmsg, msg->peer.data, msg->peer.size);
                break;
            case S_PARTS:
                for (size_t i = 0; i < msg->part_count; i++)
                    zmsg_addmem (zmsg, msg->parts[i].data, msg->parts[i].size);
                break;
            case S_END:
                break;
        }
    return zmsg;
}

//  A JSON array of 1 (or 0 when EMPTY_OK) to CG_REMOTE_ARGS_MAX strings, copied into a new
//  NULL-terminated list. Returns NULL when it is not one.
static char **
s_strings (json_t *array, bool empty_ok)
{
    size_t count = json_array_size (array);
    if (!json_is_array (array) || (count == 0 && !empty_ok) || count > CG_REMOTE_ARGS_MAX)
        return NULL;
    char **list = cg_xcalloc (count + 1, sizeof *list);
    for (size_t i = 0; i < count; i++) {
        json_t *item = json_array_get (array, i);
        size_t len = json_string_length (item);
        const char *text = json_string_value (item);
        //  jansson allows NUL inside a string (\u0000); a process's argument cannot hold one.
        if (!text || len > CG_REMOTE_ARG_MAX || strlen (text) != len) {
            for (size_t j = 0; j < i; j++)
                free (list[j]);
            free (list);
            return NULL;
        }
        list[i] = cg_xstrdup (text);
    }
    return list;
}

int
cg_remote_spec_parse (const void *spec, size_t size, cg_remote_spec_t *out, cg_error_t **err)
{
    *out = (cg_remote_spec_t){0};
    if (size > CG_REMOTE_SPEC_MAX)
        return cg_error_set (err, EPROTO, "exec spec: over 64 KiB");
    json_error_t jerr;
    json_t *root = json_loadb (spec, size, JSON_REJECT_DUPLICATES, &jerr);
    if (!json_is_object (root)) {
        json_decref (root);
        return cg_error_set (err, EPROTO, "exec spec: not a JSON object");
    }
    const char *key;
    json_t *value;
    json_object_foreach (root, key, value)
    {
        bool flag = strcmp (key, "stdin") == 0 || strcmp (key, "output") == 0;
        bool object = strcmp (key, "seccomp") == 0;
        if ((flag && !json_is_boolean (value)) || (object && !json_is_object (value))
            || (!flag && !object && strcmp (key, "argv") != 0 && strcmp (key, "env") != 0
                && strcmp (key, "cwd") != 0)) {
            json_decref (root);
            return cg_error_set (err, EPROTO, "exec spec: unknown member");
        }
    }
    const char *cwd = json_string_value (json_object_get (root, "cwd"));
    out->argv = s_strings (json_object_get (root, "argv"), false);
    out->env = s_strings (json_object_get (root, "env"), true);
    bool cwd_ok = cwd && cwd[0] == '/' && strlen (cwd) < CG_REMOTE_ARG_MAX
                  && strlen (cwd) == json_string_length (json_object_get (root, "cwd"));
    bool env_ok = out->env != NULL;
    for (size_t i = 0; env_ok && out->env[i]; i++)
        env_ok = strchr (out->env[i], '=') && out->env[i][0] != '=';
    if (cwd_ok)
        out->cwd = cg_xstrdup (cwd);
    out->stdin = json_is_true (json_object_get (root, "stdin"));
    out->output = json_is_true (json_object_get (root, "output"));
    out->seccomp = json_incref (json_object_get (root, "seccomp"));
    json_decref (root);
    if (!out->argv || !env_ok || !cwd_ok) {
        const char *what = !out->argv ? "argv (1 to 256 strings)"
                           : !env_ok  ? "env (0 to 256 KEY=VALUE strings)"
                                      : "cwd (an absolute path)";
        cg_remote_spec_free (out);
        return cg_error_set (err, EPROTO, "exec spec: a bad %s", what);
    }
    return 0;
}

char *
cg_remote_spec_text (const char *const *argv, const char *const *env, const char *cwd, bool stdin,
                     bool output, const json_t *seccomp)
{
    json_t *args = json_array (), *vars = json_array ();
    for (size_t i = 0; argv[i]; i++)
        json_array_append_new (args, json_string (argv[i]));
    for (size_t i = 0; env && env[i]; i++)
        json_array_append_new (vars, json_string (env[i]));
    json_t *root = json_pack ("{s:o, s:o, s:s, s:b, s:b}", "argv", args, "env", vars, "cwd", cwd,
                              "stdin", stdin, "output", output);
    if (seccomp)
        json_object_set_new (root, "seccomp", json_deep_copy (seccomp));
    char *text = json_dumps (root, JSON_COMPACT);
    json_decref (root);
    if (!text)
        abort ();
    return text;
}

static void
s_free_list (char ***list_p)
{
    for (size_t i = 0; *list_p && (*list_p)[i]; i++)
        free ((*list_p)[i]);
    free (*list_p);
    *list_p = NULL;
}

void
cg_remote_spec_free (cg_remote_spec_t *spec)
{
    s_free_list (&spec->argv);
    s_free_list (&spec->env);
    free (spec->cwd);
    spec->cwd = NULL;
    json_decref (spec->seccomp);
    spec->seccomp = NULL;
}

char *
cg_remote_connection_read (int dir_fd, const char *name, int ports[CG_REMOTE_CHANNELS])
{
    enum { S_CONNECTION_FILE_MAX = 65536 };
    int fd = openat (dir_fd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    struct stat st;
    if (fd < 0)
        return NULL;
    if (fstat (fd, &st) < 0 || !S_ISREG (st.st_mode)) {
        close (fd);
        return NULL;
    }
    char *text = cg_xmalloc (S_CONNECTION_FILE_MAX);
    ssize_t len = read (fd, text, S_CONNECTION_FILE_MAX);
    close (fd);
    json_t *root = len > 0 ? json_loadb (text, (size_t)len, 0, NULL) : NULL;
    free (text);
    static const char *const keys[CG_REMOTE_CHANNELS] = {"shell_port", "iopub_port", "stdin_port",
                                                         "control_port", "hb_port"};
    const char *transport = json_string_value (json_object_get (root, "transport"));
    const char *ip = json_string_value (json_object_get (root, "ip"));
    const char *base = ip ? strrchr (ip, '/') : NULL;
    base = base ? base + 1 : ip;
    bool ok = transport && strcmp (transport, "ipc") == 0 && cg_valid_name (base, 64, "._-");
    for (int c = 0; ok && c < CG_REMOTE_CHANNELS; c++) {
        json_int_t port = json_integer_value (json_object_get (root, keys[c]));
        ok = port >= 1 && port <= 65535;
        ports[c] = (int)port;
    }
    char *result = ok ? cg_xstrdup (base) : NULL;
    json_decref (root);
    return result;
}
