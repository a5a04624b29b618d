/*  cg_egress_audit — the egress service's slots and its audit: squid's access log and the
    relay's events become each session's records and the totals. */
#define _GNU_SOURCE
#include "egress/cg_egress_int.h"
#include "egress/cg_egress_relay.h"
#include "egress/cg_egress_squid.h"
#include "base/cg_log.h"
#include "base/cg_util.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

//  How long a run's end waits at most for its session's proxy connections to close, and
//  how long after the last one closed squid's log line may take to arrive.
#define S_TAKE_WAIT_US (250 * 1000)
#define S_LOG_LAG_US (30 * 1000)

//  --------------------------------------------------------------------------
//  Slots

cg_egress_slot_t *
cg_egress_slot_new (cg_egress_t *self, const char *slot, cg_error_t **err)
{
    //  Slot 0 (127.64.0.0) is left out: a network address is no source.
    for (size_t n = 0; n < CG_EGRESS_SLOTS; n++) {
        size_t i = (self->next_slot + n) % CG_EGRESS_SLOTS;
        if (i == 0 || self->slots[i].used)
            continue;
        cg_egress_slot_t *entry = &self->slots[i];
        *entry = (cg_egress_slot_t){.used = true, .records = json_array ()};
        snprintf (entry->slot, sizeof entry->slot, "%s", slot);
        snprintf (entry->src, sizeof entry->src, "127.64.%zu.%zu", i / 256, i % 256);
        //  The next one starts past it: an address is reused as late as can be, so a late
        //  log line of an ended session is not taken for a new one's.
        self->next_slot = i + 1;
        return entry;
    }
    cg_error_set (err, ENOSPC, "egress: %d sandboxes in proxy mode at once, the most",
                  CG_EGRESS_SLOTS - 1);
    return NULL;
}

cg_egress_slot_t *
cg_egress_slot_find (cg_egress_t *self, const char *slot)
{
    for (size_t i = 1; i < CG_EGRESS_SLOTS; i++)
        if (self->slots[i].used && strcmp (self->slots[i].slot, slot) == 0)
            return &self->slots[i];
    return NULL;
}

void
cg_egress_slot_clear (cg_egress_slot_t *slot)
{
    cg_egress_policy_destroy (&slot->narrow);
    json_decref (slot->records);
    *slot = (cg_egress_slot_t){0};
}

//  The slot whose source address is SRC, or NULL.
static cg_egress_slot_t *
s_by_src (cg_egress_t *self, const char *src)
{
    unsigned a, b;
    char tail;
    if (sscanf (src, "127.64.%u.%u%c", &a, &b, &tail) != 2 || a > 255 || b > 255)
        return NULL;
    size_t i = a * 256 + b;
    return i > 0 && i < CG_EGRESS_SLOTS && self->slots[i].used ? &self->slots[i] : NULL;
}

//  Adds RECORD (taken over) to ENTRY's records, or counts it past the cap.
static void
s_keep (cg_egress_slot_t *entry, json_t *record)
{
    if (json_array_size (entry->records) < CG_EGRESS_RECORDS_MAX)
        json_array_append_new (entry->records, record);
    else {
        entry->omitted++;
        json_decref (record);
    }
}

//  --------------------------------------------------------------------------
//  Reading

//  One access-log line.
static void
s_log_line (cg_egress_t *self, const char *line, size_t len)
{
    cg_egress_record_t rec;
    if (cg_egress_log_parse (line, len, &rec) < 0) {
        cg_log (1, "egress: an access-log line that is not squid's format was dropped");
        return;
    }
    cg_egress_slot_t *entry = s_by_src (self, rec.src);
    //  Only sandboxes' requests count: a line from elsewhere (the start-up probe's
    //  connection without a PROXY line) is no one's.
    if (strncmp (rec.src, "127.64.", 7) != 0 && !entry)
        return;
    bool allowed = rec.decision == CG_EGRESS_ALLOWED;
    if (allowed)
        self->totals.allowed++;
    else
        self->totals.denied++;
    self->totals.bytes_up += rec.bytes_up;
    self->totals.bytes_down += rec.bytes_down;
    cg_log (3, "egress: %s %s %s:%d %d %s %s", entry ? entry->slot : rec.src, rec.method, rec.host,
            rec.port, rec.status, allowed ? "allowed" : "denied", rec.reason);
    if (!entry)
        return;
    char at[32];
    cg_utc_now (at, false);
    s_keep (entry, json_pack ("{s:s, s:s, s:i, s:s, s:i, s:s, s:s, s:I, s:I, s:I}", "at", at,
                              "host", rec.host, "port", rec.port, "method", rec.method, "status",
                              rec.status, "decision", allowed ? "allowed" : "denied", "reason",
                              rec.reason, "bytes_up", (json_int_t)rec.bytes_up, "bytes_down",
                              (json_int_t)rec.bytes_down, "ms", (json_int_t)rec.ms));
}

//  What is waiting in squid's log pipe, line by line.
static void
s_read_log (cg_egress_t *self)
{
    char buf[16384];
    for (;;) {
        ssize_t n = read (self->log_fd, buf, sizeof buf);
        if (n <= 0)
            return;
        for (ssize_t i = 0; i < n; i++) {
            if (buf[i] == '\n') {
                if (!self->line_overlong)
                    s_log_line (self, self->line, self->line_len);
                self->line_len = 0;
                self->line_overlong = false;
            }
            else if (self->line_len < sizeof self->line - 1)
                self->line[self->line_len++] = buf[i];
            else
                self->line_overlong = true;
        }
    }
}

//  What the relay says: a refusal is a denied record of its session.
static void
s_read_relay (cg_egress_t *self)
{
    json_t *event;
    while ((event = cg_egress_relay_read (self->relay_fd))) {
        const char *kind = json_string_value (json_object_get (event, "event"));
        const char *slot = json_string_value (json_object_get (event, "session"));
        cg_egress_slot_t *entry = slot ? cg_egress_slot_find (self, slot) : NULL;
        bool closed = kind && strcmp (kind, "closed") == 0;
        if (kind && strcmp (kind, "denied") == 0) {
            self->totals.denied++;
            const char *reason = json_string_value (json_object_get (event, "reason"));
            char at[32];
            cg_utc_now (at, false);
            if (entry)
                s_keep (entry, json_pack ("{s:s, s:n, s:n, s:n, s:i, s:s, s:s, s:i, s:i, s:i}",
                                          "at", at, "host", "port", "method", "status", 403,
                                          "decision", "denied", "reason", reason ? reason : "limit",
                                          "bytes_up", 0, "bytes_down", 0, "ms", 0));
        }
        else if (entry && kind && strcmp (kind, "busy") == 0)
            entry->busy = true;
        else if (entry && kind && strcmp (kind, "idle") == 0) {
            entry->busy = false;
            entry->idle_us = cg_now_us ();
        }
        else if (kind && strcmp (kind, "error") == 0)
            cg_log (1, "egress relay: %s",
                    json_string_value (json_object_get (event, "message")) ?: "error");
        json_decref (event);
        if (closed) {
            cg_log (0, "egress: the relay ended: sandboxes have no way out until a restart");
            close (self->relay_fd);
            self->relay_fd = -1;
            return;
        }
    }
}

int
cg_egress_log_fd (cg_egress_t *self)
{
    return self->log_fd;
}

int
cg_egress_relay_fd (cg_egress_t *self)
{
    return self->relay_fd;
}

void
cg_egress_read (cg_egress_t *self)
{
    pthread_mutex_lock (&self->lock);
    s_read_log (self);
    if (self->relay_fd >= 0)
        s_read_relay (self);
    pthread_mutex_unlock (&self->lock);
}

//  Whether SLOT's records may still be coming: a connection of it is open (squid logs a
//  request at its end), or its last one closed under S_LOG_LAG_US ago (squid's line follows).
//  Called with the lock held.
static bool
s_pending (cg_egress_t *self, const char *slot)
{
    cg_egress_slot_t *entry = cg_egress_slot_find (self, slot);
    return entry
           && (entry->busy || (entry->idle_us && cg_now_us () - entry->idle_us < S_LOG_LAG_US));
}

json_t *
cg_egress_take (cg_egress_t *self, const char *slot)
{
    //  A run that ends waits a little for its session's requests to end and be logged, so that
    //  they are in its own execution-log entry; a connection left open (a keep-alive pool) is
    //  not waited for past S_TAKE_WAIT_US: its requests go to the next run's entry.
    int64_t deadline = cg_now_us () + S_TAKE_WAIT_US;
    for (;;) {
        pthread_mutex_lock (&self->lock);
        s_read_log (self);
        if (self->relay_fd >= 0)
            s_read_relay (self);
        bool pending = s_pending (self, slot);
        int relay_fd = self->relay_fd;
        pthread_mutex_unlock (&self->lock);
        if (!pending || cg_now_us () >= deadline)
            break;
        struct pollfd fds[2] = {{.fd = self->log_fd, .events = POLLIN},
                                {.fd = relay_fd, .events = POLLIN}};
        poll (fds, relay_fd >= 0 ? 2 : 1, 10);
    }
    pthread_mutex_lock (&self->lock);
    cg_egress_slot_t *entry = cg_egress_slot_find (self, slot);
    json_t *out = json_array ();
    if (entry) {
        json_decref (out);
        out = entry->records;
        entry->records = json_array ();
        if (entry->omitted)
            json_array_append_new (out, json_pack ("{s:I}", "omitted", (json_int_t)entry->omitted));
        entry->omitted = 0;
        entry->idle_us = 0;
    }
    pthread_mutex_unlock (&self->lock);
    return out;
}

void
cg_egress_totals (cg_egress_t *self, cg_egress_totals_t *out)
{
    pthread_mutex_lock (&self->lock);
    *out = self->totals;
    pthread_mutex_unlock (&self->lock);
}
