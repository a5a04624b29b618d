/*  cg_runner_msg — the runner's pipe: commands sent, events decoded once. */
#include "bridge/cg_runner_msg.h"
#include "base/cg_log.h"
#include "base/cg_util.h"

#include <string.h>
#include <unistd.h>

static const char *const s_tags[] = {"RESULT", "PROGRESS", "STARTED", "RESTARTED",
                                     "INPUT",  "LOG",      "REPORT",  "KERNELS"};

//  The pointer a frame carries (zsock_send's "p"), or NULL when FRAME is not one.
static void *
s_pointer (zframe_t *frame)
{
    return frame && zframe_size (frame) == sizeof (void *) ? *(void **)zframe_data (frame) : NULL;
}

//  The rest of MSG for SELF, whose tag and key are set. Returns false when a field that
//  carries something the receiver owns, or a required one, is missing.
static bool
s_decode (cg_runner_event_t *self, zmsg_t *msg)
{
    zframe_t *frame = NULL;
    switch (self->tag) {
        case CG_RUNNER_RESULT: {
            frame = zmsg_pop (msg);
            self->result.outcome = s_pointer (frame);
            self->result.slot = zmsg_popstr (msg);
            char *pid = zmsg_popstr (msg), *kib = zmsg_popstr (msg);
            self->result.pid = pid ? atol (pid) : 0;
            self->result.kib = kib ? atol (kib) : -1;
            zstr_free (&pid);
            zstr_free (&kib);
            break;
        }
        case CG_RUNNER_PROGRESS:
            self->progress.stream = zmsg_popstr (msg);
            frame = zmsg_pop (msg);
            if (!self->progress.stream || !frame)
                break;
            self->progress.text_len = zframe_size (frame);
            self->progress.text = cg_xmalloc (self->progress.text_len + 1);
            memcpy (self->progress.text, zframe_data (frame), self->progress.text_len);
            self->progress.text[self->progress.text_len] = '\0';
            break;
        case CG_RUNNER_STARTED:
        case CG_RUNNER_RESTARTED:
            self->started.why = zmsg_popstr (msg);
            break;
        case CG_RUNNER_INPUT: {
            self->input.prompt = zmsg_popstr (msg);
            char *password = zmsg_popstr (msg);
            self->input.password = password && strcmp (password, "1") == 0;
            zstr_free (&password);
            break;
        }
        case CG_RUNNER_LOG: {
            char *level = self->key; /* LOG has no key: its first field is the level */
            self->key = NULL;
            self->log.level = level ? atoi (level) : 0;
            self->log.text = zmsg_popstr (msg);
            zstr_free (&level);
            return self->log.text != NULL;
        }
        case CG_RUNNER_REPORT: {
            char *pid = zmsg_popstr (msg), *kib = zmsg_popstr (msg);
            bool whole = pid && kib;
            self->report.pid = pid ? atol (pid) : 0;
            self->report.kib = kib ? atol (kib) : -1;
            zstr_free (&pid);
            zstr_free (&kib);
            return whole;
        }
        case CG_RUNNER_KERNELS:
            frame = zmsg_pop (msg);
            self->kernels.report = s_pointer (frame);
            zframe_destroy (&frame);
            return self->kernels.report != NULL;
    }
    zframe_destroy (&frame);
    return true;
}

cg_runner_event_t *
cg_runner_event_recv (zsock_t *results)
{
    zmsg_t *msg = zmsg_recv (results);
    if (!msg)
        return NULL;
    cleanup_free char *tag = zmsg_popstr (msg);
    size_t t = 0;
    while (tag && t < sizeof s_tags / sizeof *s_tags && strcmp (tag, s_tags[t]) != 0)
        t++;
    if (!tag || t == sizeof s_tags / sizeof *s_tags) {
        cg_log (0, "runner: an unknown message %.32s", tag ? tag : "(empty)");
        zmsg_destroy (&msg);
        return NULL;
    }
    cg_runner_event_t *self = cg_xcalloc (1, sizeof *self);
    self->tag = (cg_runner_tag_t)t;
    self->name = s_tags[t];
    self->key = zmsg_popstr (msg);
    bool whole = self->key && s_decode (self, msg);
    zmsg_destroy (&msg);
    if (!whole) {
        cg_log (0, "runner: a %s message without its fields", self->name);
        cg_runner_event_destroy (&self);
    }
    return self;
}

void
cg_runner_kernels_close (json_t *report)
{
    static const char *const channels[] = {"shell", "iopub", "stdin", "control", "hb"};
    size_t i;
    json_t *item;
    json_array_foreach (report, i, item) for (int c = 0; c < 5; c++)
    {
        json_int_t fd = json_integer_value (json_object_get (item, channels[c]));
        if (fd > 0)
            close ((int)fd);
    }
}

void
cg_runner_event_destroy (cg_runner_event_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    cg_runner_event_t *self = *self_p;
    switch (self->tag) {
        case CG_RUNNER_RESULT:
            cg_outcome_destroy (&self->result.outcome);
            free (self->result.slot);
            break;
        case CG_RUNNER_PROGRESS:
            free (self->progress.stream);
            free (self->progress.text);
            break;
        case CG_RUNNER_STARTED:
        case CG_RUNNER_RESTARTED:
            free (self->started.why);
            break;
        case CG_RUNNER_INPUT:
            free (self->input.prompt);
            break;
        case CG_RUNNER_LOG:
            free (self->log.text);
            break;
        case CG_RUNNER_REPORT:
            break;
        case CG_RUNNER_KERNELS:
            cg_runner_kernels_close (self->kernels.report);
            json_decref (self->kernels.report);
            break;
    }
    free (self->key);
    free (self);
    *self_p = NULL;
}

int
cg_runner_exec (zactor_t *runner, const char *key, json_t **request_p)
{
    json_t *request = *request_p;
    *request_p = NULL;
    if (zsock_send (runner, "ssp", "EXEC", key, request) == 0)
        return 0;
    json_decref (request);
    return -1;
}

int
cg_runner_start (zactor_t *runner, const char *key, const char *language, const char *env)
{
    return env ? zsock_send (runner, "ssss", "START", key, language, env)
               : zsock_send (runner, "sss", "START", key, language);
}

int
cg_runner_cancel (zactor_t *runner)
{
    return zstr_send (runner, "CANCEL");
}

int
cg_runner_input (zactor_t *runner, const char *line)
{
    return zsock_send (runner, "ss", "INPUT", line);
}

int
cg_runner_interrupt (zactor_t *runner, const char *language)
{
    return zsock_send (runner, "ss", "INTERRUPT", language);
}

int
cg_runner_restart (zactor_t *runner, const char *key, const char *language)
{
    return zsock_send (runner, "sss", "RESTART", key, language);
}

int
cg_runner_claim (zactor_t *runner, bool oneshot)
{
    return zsock_send (runner, "ss", "CLAIM", oneshot ? "1" : "0");
}

int
cg_runner_keep (zactor_t *runner)
{
    return zstr_send (runner, "KEEP");
}

int
cg_runner_term (zactor_t *runner)
{
    return zstr_send (runner, "$TERM");
}

bool
cg_runner_warm_recv (zactor_t *runner, long *memory_kib, char **why)
{
    zmsg_t *msg = zmsg_recv (runner);
    char *word = msg ? zmsg_popstr (msg) : NULL;
    char *detail = msg ? zmsg_popstr (msg) : NULL;
    zmsg_destroy (&msg);
    bool ready = word && strcmp (word, "READY") == 0;
    zstr_free (&word);
    *memory_kib = ready && detail ? atol (detail) : -1;
    *why = ready ? NULL : detail;
    if (ready)
        zstr_free (&detail);
    return ready;
}
