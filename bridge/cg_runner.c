/*  cg_runner — an actor that owns one session and runs its cells one at a time, so a
    long cell never blocks the server or other sessions. */
#include "cg_runner.h"
#include "cg_session.h"
#include "cg_utf8.h"
#include "cg_util.h"

#include <string.h>

typedef struct {
    cg_runner_args_t args;
    zsock_t *pipe;
    zsock_t *results;
    cg_session_t *session;
    bool terminated;
    const char *key;            /* the request being handled */
} s_runner_t;

//  Live output of a request that asked for progress: PROGRESS <key> {"stream", "text"}.
static void
s_on_output (void *arg, const char *stream, const char *text, size_t len)
{
    s_runner_t *self = arg;
    if (!self->key)
        return;
    //  Live notes carry what JSON can: a character a read split shows as U+FFFD here only.
    size_t clean_len;
    cleanup_free char *clean = cg_utf8_clean (text, len, &clean_len);
    json_t *chunk = json_stringn (clean, clean_len);
    json_t *note = json_pack ("{s:s, s:o}", "stream", stream, "text", chunk);
    char *note_text = json_dumps (note, JSON_COMPACT);
    json_decref (note);
    zstr_sendx (self->results, "PROGRESS", self->key, note_text, NULL);
    free (note_text);
}

static cg_control_t
s_control_cb (zsock_t *control, void *arg)
{
    s_runner_t *self = arg;
    char *command = zstr_recv (control);
    cg_control_t action = CG_CONTROL_NONE;
    if (!command || strcmp (command, "$TERM") == 0) {
        self->terminated = true;
        action = CG_CONTROL_ABORT;
    }
    else if (strcmp (command, "CANCEL") == 0)
        action = CG_CONTROL_CANCEL;
    //  Anything else (an EXEC while busy) is the server's mistake; it is dropped.
    zstr_free (&command);
    return action;
}

//  Creates the session on first use. Returns 0, or -1 with *err set.
static int
s_ensure_session (s_runner_t *self, cg_error_t **err)
{
    if (!self->session)
        self->session = cg_session_new (self->args.backend, self->args.config, self->args.sessions_dir,
                                        self->args.container_prefix,
                                        self->args.slot[0] ? self->args.slot : NULL, err);
    return self->session ? 0 : -1;
}

static json_t *
s_start (s_runner_t *self, json_t *request_json)
{
    const char *language = json_string_value (json_object_get (request_json, "language"));
    cg_error_t *err = NULL;
    json_t *result;
    if (s_ensure_session (self, &err) == 0 && cg_session_kernel (self->session, language, &err))
        result = json_pack ("{s:b}", "ok", 1);
    else
        result = json_pack ("{s:b, s:s}", "ok", 0, "error", cg_error_message (err));
    cg_error_destroy (&err);
    return result;
}

static cg_outcome_t *
s_run (s_runner_t *self, json_t *request_json)
{
    cg_exec_request_t request = {
        .language = json_string_value (json_object_get (request_json, "language")),
        .code = json_string_value (json_object_get (request_json, "code")),
        .stdin_text = json_string_value (json_object_get (request_json, "stdin")),
        .timeout_s = json_number_value (json_object_get (request_json, "timeout")),
        .execution_id = json_string_value (json_object_get (request_json, "execution_id")),
        .session_id = json_string_value (json_object_get (request_json, "session_id")),
        .files = json_object_get (request_json, "files"),
        .on_output = json_is_true (json_object_get (request_json, "progress")) ? s_on_output : NULL,
        .on_output_arg = self,
    };
    if (!self->session) {
        cg_error_t *err = NULL;
        if (s_ensure_session (self, &err) < 0) {
            cg_outcome_t *outcome = cg_outcome_setup_failure (request.language, request.execution_id, request.session_id,
                                                              CG_OUTCOME_ERROR_SANDBOX, cg_error_message (err));
            cg_error_destroy (&err);
            return outcome;
        }
    }
    cg_outcome_t *outcome = cg_session_execute (self->session, &request, self->pipe, s_control_cb, self);
    if (self->args.oneshot)
        cg_session_destroy (&self->session);
    return outcome;
}

//  Hands the outcome over (*OUTCOME_P is taken): OUTCOME <key> <pointer>. A runner told
//  to stop while it ran sends nothing: the server forgot the call before it said so.
static void
s_send_outcome (s_runner_t *self, const char *key, cg_outcome_t **outcome_p)
{
    if (!self->terminated && zsock_send (self->results, "ssp", "OUTCOME", key, *outcome_p) == 0)
        *outcome_p = NULL;
    cg_outcome_destroy (outcome_p);
}

static void
s_handle (s_runner_t *self, zmsg_t *msg, bool start)
{
    char *key = zmsg_popstr (msg);
    char *text = zmsg_popstr (msg);
    json_t *request = text ? json_loads (text, 0, NULL) : NULL;
    if (key && request && !start) {
        self->key = key;
        cg_outcome_t *outcome = s_run (self, request);
        self->key = NULL;
        s_send_outcome (self, key, &outcome);
    }
    else if (key && request) {
        self->key = key;
        json_t *result = s_start (self, request);
        self->key = NULL;
        char *result_text = json_dumps (result, JSON_COMPACT);
        if (!result_text)
            abort ();
        zmsg_t *out = zmsg_new ();
        zmsg_addstr (out, "RESULT");
        zmsg_addstr (out, key);
        zmsg_addstr (out, result_text);
        zmsg_send (&out, self->results);
        free (result_text);
        json_decref (result);
    }
    json_decref (request);
    zstr_free (&key);
    zstr_free (&text);
}

void
cg_runner_actor (zsock_t *pipe, void *args)
{
    s_runner_t self = {.args = *(cg_runner_args_t *) args, .pipe = pipe};
    free (args);
    self.results = zsock_new_push (NULL);
    zsock_set_linger (self.results, -1);
    zsock_connect (self.results, "%s", self.args.results_endpoint);
    zsock_signal (pipe, 0);

    while (!self.terminated) {
        //  Idle: wait for a command, draining the kernels' own output meanwhile and
        //  dropping whatever they send between cells (nothing of it is held).
        zmq_pollitem_t items[1 + 4 * 12] = {{zsock_resolve (pipe), 0, ZMQ_POLLIN, 0}};
        int count = self.session ? cg_session_idle_items (self.session, items + 1, 4 * 12) : 0;
        if (zmq_poll (items, count + 1, -1) < 0)
            continue;
        if (count && self.session)
            cg_session_drain (self.session);
        if (!items[0].revents)
            continue;
        zmsg_t *msg = zmsg_recv (pipe);
        if (!msg)
            break;
        char *command = zmsg_popstr (msg);
        if (command && (strcmp (command, "EXEC") == 0 || strcmp (command, "START") == 0))
            s_handle (&self, msg, strcmp (command, "START") == 0);
        else if (!command || strcmp (command, "$TERM") == 0)
            self.terminated = true;
        //  CANCEL while idle: nothing runs, nothing to do.
        zstr_free (&command);
        zmsg_destroy (&msg);
    }
    cg_session_destroy (&self.session);
    zsock_destroy (&self.results);
}
