/*  cg_remote_seccomp — a sandbox's seccomp profile, as the server writes it for runc
    (containers/cg_seccomp: OCI's `linux.seccomp` object), compiled with libseccomp into the
    filter the relay loads into each process it starts, just before the exec: on a remote
    node the relay does what runc does for the local backends. */
#ifndef CG_REMOTE_SECCOMP_H
#define CG_REMOTE_SECCOMP_H

#include "base/cg_error.h"

#include <jansson.h>
#include <seccomp.h>

/*  Compiles PROFILE (borrowed): defaultAction with defaultErrnoRet, the native architecture
    only, and each rule of syscalls[] (names; action SCMP_ACT_ALLOW, SCMP_ACT_ERRNO with
    errnoRet, SCMP_ACT_KILL or SCMP_ACT_KILL_PROCESS; args with index, value, valueTwo and
    an op of SCMP_CMP_*). A name this libseccomp does not know is skipped (the default
    action covers it). Returns the filter (seccomp_release it), or NULL with *err set
    (EINVAL) saying what in the profile is wrong. */
scmp_filter_ctx cg_remote_seccomp_compile (const json_t *profile, cg_error_t **err);

#endif
