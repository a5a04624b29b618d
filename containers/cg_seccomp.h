/*  cg_seccomp — the sandbox's OCI seccomp profile (Docker's default, tightened). */

#ifndef CG_SECCOMP_H_INCLUDED
#define CG_SECCOMP_H_INCLUDED

#include <jansson.h>

/*  Returns a new OCI runtime-spec `linux.seccomp` object for the sandbox: every
    syscall not allowed below fails with EPERM; only the native 64-bit ABI is
    accepted; socket() is limited to AF_UNIX, AF_INET, AF_INET6 and AF_NETLINK;
    clone() may not create namespaces; clone3() fails with ENOSYS so that libc
    falls back to clone(); io_uring, bpf, userfaultfd, keyrings, perf, mount and
    namespace syscalls are denied. Caller owns the result (json_decref). Never
    returns NULL: out of memory aborts. */
json_t *cg_seccomp_profile (void);

#endif
