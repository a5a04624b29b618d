/*  cg_egress — --egress proxy: the audited way out of a sandbox (docs/egress.md).

    The server runs one squid (the proxy: names, addresses, ports, protocol limits, the
    access log) and one relay process (egress/cg_egress_relay: a byte pipe with per-session
    connection, byte and rate limits). Each sandbox in proxy mode gets a TCP listener at
    127.0.0.1:CG_EGRESS_PORT inside its own network namespace, made here with setns and
    handed to the relay; nothing is routed out of the sandbox. The relay prefixes each
    connection with a PROXY protocol line whose source address names the session (one
    address of 127.64.0.0/10 per sandbox), which squid's rules and access log see.

    Thread safety: attach and detach run on runner threads; the rest on the server's loop.
    Every function takes the service's lock. */
#ifndef CG_EGRESS_H
#define CG_EGRESS_H

#include "base/cg_config.h"
#include "base/cg_error.h"
#include "egress/cg_egress_policy.h"

#include <jansson.h>
#include <stdbool.h>
#include <sys/types.h>

/*  The proxy's port inside every sandbox (127.0.0.1). */
#define CG_EGRESS_PORT 3128

/*  Records of one session kept between two takes (cg_egress_take); more are counted. */
#define CG_EGRESS_RECORDS_MAX 256

typedef struct cg_egress_t cg_egress_t;

/*  Test-only settings (hidden flags, never read from the environment). */
typedef struct {
    const char *hosts_file; /* squid resolves names from this file only, or NULL */
    const char *allow_net;  /* a CIDR exempt from the private-address deny, or NULL */
} cg_egress_test_t;

/*  Takes --test-egress-hosts-file PATH and --test-egress-allow-net CIDR out of ARGV (*ARGC
    entries, NULL-terminated after), into TEST (pointers into ARGV). Returns 0, or -1 with
    *err set when one lacks its value. */
int cg_egress_take_test_args (int *argc, char **argv, cg_egress_test_t *test, cg_error_t **err);

/*  Checks CONFIG's egress settings without starting anything (the allow list's syntax,
    proxy mode's needs: squid installed, a list given). Returns 0, or -1 with *err set
    saying what to change. */
int cg_egress_check (const cg_config_t *config, cg_error_t **err);

/*  Starts proxy mode for CONFIG (which must be --egress proxy): writes squid's
    configuration under STATE_DIR/egress, starts squid and the relay (EXE, this program),
    and waits until squid answers. CONFIG and TEST are borrowed. Returns the service, or
    NULL with *err set. */
cg_egress_t *cg_egress_new (const cg_config_t *config, const char *state_dir, const char *exe,
                            const cg_egress_test_t *test, cg_error_t **err);

/*  Starts the end, without waiting: squid is told to stop, the relay's control socket
    closes (it ends, every connection with it), squid's files go, and detaching does nothing
    more. The server calls it first thing when it stops, so that a server killed while its
    sandboxes are torn down leaves nothing of squid's behind. Safe on NULL and twice. */
void cg_egress_stop (cg_egress_t *self);

/*  Stops squid and the relay (every connection closes) and frees *SELF_P. Safe on NULL. */
void cg_egress_destroy (cg_egress_t **self_p);

/*  The server's allow list. Borrowed. */
const cg_egress_policy_t *cg_egress_policy (cg_egress_t *self);

/*  The environment proxy mode adds to every process of a sandbox (KEY=VALUE strings,
    NULL-terminated; borrowed): the proxy variables, pip's index, npm's registry and proxy,
    and Node's fetch through the proxy. */
const char *const *cg_egress_env (cg_egress_t *self);

/*  Parses a session's EGRESS_ALLOW (a JSON array of entries, as start_session takes it)
    into a list that must be within the server's (cg_egress_policy_narrow). Returns the new
    list the caller owns, or NULL with *err set naming the entry that is not (EINVAL). */
cg_egress_policy_t *cg_egress_narrow (cg_egress_t *self, json_t *egress_allow, cg_error_t **err);

/*  Gives sandbox SLOT (12 hex) its way out: a listener at 127.0.0.1:CG_EGRESS_PORT in the
    network namespace of INIT_PID (the sandbox's init, a host pid), served by the relay,
    with the session's own NARROW list (taken over; NULL: the server's). Returns 0, or -1
    with *err set (the sandbox then has no way out; the caller fails its start). */
int cg_egress_attach (cg_egress_t *self, const char *slot, pid_t init_pid,
                      cg_egress_policy_t *narrow, cg_error_t **err);

/*  Closes SLOT's listener and connections and forgets its policy; its records not yet
    taken are dropped. Safe for a slot never attached. */
void cg_egress_detach (cg_egress_t *self, const char *slot);

/*  The descriptors the server's loop watches: the access log's pipe and the relay's
    control socket. Either readable: call cg_egress_read. */
int cg_egress_log_fd (cg_egress_t *self);
int cg_egress_relay_fd (cg_egress_t *self);

/*  squid's process descriptor (a pidfd: readable when squid ends), or -1. When it is
    readable, call cg_egress_squid_check, which reaps squid and restarts it (at most 5 times
    a minute) and returns the descriptor to watch from then on (another one, or -1). */
int cg_egress_squid_fd (cg_egress_t *self);
int cg_egress_squid_check (cg_egress_t *self);

/*  Reads what is waiting on both descriptors: access-log lines become SLOT's records and
    count in the metrics; relay events (limits) become denied records. Never blocks. */
void cg_egress_read (cg_egress_t *self);

/*  SLOT's records since its last take (reading what is waiting first): a new array of
    {at, host, port, method, status, decision, reason, bytes_up, bytes_down, ms}, with a
    last element {"omitted": N} when more than CG_EGRESS_RECORDS_MAX came. Empty when none. */
json_t *cg_egress_take (cg_egress_t *self, const char *slot);

/*  Totals since the start, for /metrics. */
typedef struct {
    unsigned long long allowed, denied; /* requests */
    unsigned long long bytes_up, bytes_down;
} cg_egress_totals_t;
void cg_egress_totals (cg_egress_t *self, cg_egress_totals_t *out);

#endif
