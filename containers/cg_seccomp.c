/*  cg_seccomp — the sandbox's OCI seccomp profile (Docker's default, tightened). */

#include "containers/cg_seccomp.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdnoreturn.h>

#define EPERM_RET 1
#define ENOSYS_RET 38

/*  clone() flags that create namespaces: NEWNS, NEWCGROUP, NEWUTS, NEWIPC,
    NEWUSER, NEWPID, NEWNET. */
#define CLONE_NAMESPACE_FLAGS 0x7E020000ULL

#define ARRAY_LENGTH(array) (sizeof (array) / sizeof (array)[0])

#if defined(__x86_64__)
#define ARCH_NATIVE "SCMP_ARCH_X86_64"
#elif defined(__aarch64__)
#define ARCH_NATIVE "SCMP_ARCH_AARCH64"
#else
#error "cg_seccomp: unsupported architecture (x86_64 and aarch64 only)"
#endif

/*  Allowed unconditionally: Docker's default list for a container without
    capabilities, minus io_uring, ptrace, pidfd_getfd, name_to_handle_at,
    modify_ldt, get/set_thread_area and the 32-bit-only names. Calls that need a
    capability the sandbox lacks (setuid to a foreign id, adjtimex writes,
    mknod of devices) stay here because the kernel refuses them itself. */
static const char *s_allowed_syscalls[] = {
    /* processes and threads */
    "execve", "execveat", "exit", "exit_group", "wait4", "waitid", "set_tid_address",
    "set_robust_list", "get_robust_list", "rseq", "restart_syscall", "getpid", "getppid", "gettid",
    "getpgid", "setpgid", "getsid", "setsid", "prctl", "seccomp", "capget", "capset", "uname",
    "sysinfo", "getcpu", "getrandom", "membarrier", "pidfd_open", "pidfd_send_signal",
    "process_mrelease", "landlock_create_ruleset", "landlock_add_rule", "landlock_restrict_self",

    /* credentials (the kernel allows only the sandbox's own ids) */
    "getuid", "geteuid", "getgid", "getegid", "getresuid", "getresgid", "getgroups", "setuid",
    "setgid", "setreuid", "setregid", "setresuid", "setresgid", "setfsuid", "setfsgid", "setgroups",

    /* scheduling and limits */
    "sched_yield", "sched_getaffinity", "sched_setaffinity", "sched_getparam", "sched_setparam",
    "sched_getscheduler", "sched_setscheduler", "sched_getattr", "sched_setattr",
    "sched_get_priority_max", "sched_get_priority_min", "sched_rr_get_interval", "getpriority",
    "setpriority", "ioprio_get", "ioprio_set", "getrlimit", "setrlimit", "prlimit64", "getrusage",
    "times",

    /* signals */
    "kill", "tkill", "tgkill", "rt_sigaction", "rt_sigprocmask", "rt_sigreturn", "rt_sigpending",
    "rt_sigsuspend", "rt_sigtimedwait", "rt_sigqueueinfo", "rt_tgsigqueueinfo", "sigaltstack",
    "signalfd4",

    /* time and timers */
    "clock_gettime", "clock_getres", "clock_nanosleep", "clock_adjtime", "adjtimex", "gettimeofday",
    "nanosleep", "getitimer", "setitimer", "timer_create", "timer_delete", "timer_gettime",
    "timer_settime", "timer_getoverrun", "timerfd_create", "timerfd_gettime", "timerfd_settime",

    /* memory */
    "brk", "mmap", "munmap", "mprotect", "mremap", "madvise", "mincore", "msync", "mlock", "mlock2",
    "munlock", "mlockall", "munlockall", "remap_file_pages", "memfd_create", "memfd_secret",
    "pkey_alloc", "pkey_free", "pkey_mprotect", "map_shadow_stack",

    /* futexes */
    "futex", "futex_waitv", "futex_wake", "futex_wait", "futex_requeue",

    /* file descriptors and I/O */
    "read", "write", "readv", "writev", "pread64", "pwrite64", "preadv", "pwritev", "preadv2",
    "pwritev2", "lseek", "close", "close_range", "dup", "dup3", "fcntl", "ioctl", "flock", "pipe2",
    "splice", "tee", "vmsplice", "sendfile", "copy_file_range", "fsync", "fdatasync", "sync",
    "syncfs", "sync_file_range", "readahead", "fadvise64", "fallocate", "ftruncate", "truncate",
    "eventfd2", "cachestat", "io_setup", "io_destroy", "io_submit", "io_cancel", "io_getevents",
    "io_pgetevents",

    /* waiting */
    "pselect6", "ppoll", "epoll_create1", "epoll_ctl", "epoll_pwait", "epoll_pwait2",

    /* files and directories */
    "openat", "openat2", "faccessat", "faccessat2", "newfstatat", "fstat", "statx", "statfs",
    "fstatfs", "getdents64", "getcwd", "chdir", "fchdir", "readlinkat", "mkdirat", "mknodat",
    "unlinkat", "renameat", "renameat2", "linkat", "symlinkat", "fchmod", "fchmodat", "fchmodat2",
    "fchown", "fchownat", "utimensat", "umask", "getxattr", "lgetxattr", "fgetxattr", "setxattr",
    "lsetxattr", "fsetxattr", "listxattr", "llistxattr", "flistxattr", "removexattr",
    "lremovexattr", "fremovexattr", "inotify_init1", "inotify_add_watch", "inotify_rm_watch",
    "fanotify_mark",

    /* sockets (socket() itself is filtered by domain below) */
    "socketpair", "bind", "connect", "listen", "accept", "accept4", "getsockname", "getpeername",
    "getsockopt", "setsockopt", "sendto", "recvfrom", "sendmsg", "recvmsg", "sendmmsg", "recvmmsg",
    "shutdown",

    /* System V and POSIX IPC (private to the sandbox's IPC namespace) */
    "shmget", "shmat", "shmdt", "shmctl", "semget", "semop", "semtimedop", "semctl", "msgget",
    "msgsnd", "msgrcv", "msgctl", "mq_open", "mq_unlink", "mq_timedsend", "mq_timedreceive",
    "mq_notify", "mq_getsetattr", NULL};

#if defined(__x86_64__)
/*  x86_64's older entry points, which aarch64 never had. */
static const char *s_allowed_syscalls_arch[] = {
    "arch_prctl", "fork",     "vfork",    "open",         "creat",  "stat",   "lstat",
    "access",     "readlink", "mkdir",    "rmdir",        "mknod",  "unlink", "rename",
    "link",       "symlink",  "chmod",    "chown",        "lchown", "utime",  "utimes",
    "futimesat",  "getdents", "dup2",     "pipe",         "select", "poll",   "epoll_create",
    "epoll_wait", "eventfd",  "signalfd", "inotify_init", "alarm",  "pause",  "time",
    "getpgrp",    NULL};
#else
static const char *s_allowed_syscalls_arch[] = {NULL};
#endif

/*  Address families socket() may create; AF_ALG, AF_VSOCK and the rest get
    EPERM. */
static const unsigned long long s_socket_domains[] = {
    1,  /* AF_UNIX */
    2,  /* AF_INET */
    10, /* AF_INET6 */
    16, /* AF_NETLINK */
};

/*  personality() values Docker allows: PER_LINUX, PER_LINUX32, each with
    UNAME26, and 0xffffffff (query the current persona). */
static const unsigned long long s_personality_values[] = {
    0x0, 0x8, 0x20000, 0x20008, 0xffffffff,
};

static noreturn void
s_out_of_memory (void)
{
    fputs ("cg_seccomp: out of memory\n", stderr);
    abort ();
}

static json_t *
s_checked (json_t *value)
{
    if (!value)
        s_out_of_memory ();
    return value;
}

static void
s_set (json_t *object, const char *key, json_t *value)
{
    if (json_object_set_new (object, key, s_checked (value)) != 0)
        s_out_of_memory ();
}

static void
s_append (json_t *array, json_t *value)
{
    if (json_array_append_new (array, s_checked (value)) != 0)
        s_out_of_memory ();
}

/*  Appends the NULL-terminated list `names` to `array`. */
static void
s_append_names (json_t *array, const char **names)
{
    for (; *names; names++)
        s_append (array, json_string (*names));
}

/*  One rule: `name` gets `action` when every condition in `args` holds (args
    may be NULL: unconditional). Takes ownership of `args`. */
static json_t *
s_rule (const char *name, const char *action, json_t *args)
{
    json_t *rule = s_checked (json_object ());
    json_t *names = s_checked (json_array ());
    s_append (names, json_string (name));
    s_set (rule, "names", names);
    s_set (rule, "action", json_string (action));
    if (args)
        s_set (rule, "args", args);
    return rule;
}

/*  A one-condition argument list: arg `index` compared with `op`. */
static json_t *
s_arg (unsigned index, const char *op, unsigned long long value, unsigned long long value_two)
{
    json_t *arg = s_checked (json_object ());
    s_set (arg, "index", json_integer (index));
    s_set (arg, "value", json_integer ((json_int_t)value));
    s_set (arg, "valueTwo", json_integer ((json_int_t)value_two));
    s_set (arg, "op", json_string (op));
    json_t *args = s_checked (json_array ());
    s_append (args, arg);
    return args;
}

json_t *
cg_seccomp_profile (void)
{
    json_t *syscalls = s_checked (json_array ());

    json_t *allowed = s_checked (json_object ());
    json_t *names = s_checked (json_array ());
    s_append_names (names, s_allowed_syscalls);
    s_append_names (names, s_allowed_syscalls_arch);
    s_set (allowed, "names", names);
    s_set (allowed, "action", json_string ("SCMP_ACT_ALLOW"));
    s_append (syscalls, allowed);

    for (size_t i = 0; i < ARRAY_LENGTH (s_socket_domains); i++) {
        json_t *args = s_arg (0, "SCMP_CMP_EQ", s_socket_domains[i], 0);
        s_append (syscalls, s_rule ("socket", "SCMP_ACT_ALLOW", args));
    }
    for (size_t i = 0; i < ARRAY_LENGTH (s_personality_values); i++) {
        json_t *args = s_arg (0, "SCMP_CMP_EQ", s_personality_values[i], 0);
        s_append (syscalls, s_rule ("personality", "SCMP_ACT_ALLOW", args));
    }

    /*  OCI's masked compare: (arg0 & value) == valueTwo. */
    json_t *clone_args = s_arg (0, "SCMP_CMP_MASKED_EQ", CLONE_NAMESPACE_FLAGS, 0);
    s_append (syscalls, s_rule ("clone", "SCMP_ACT_ALLOW", clone_args));

    json_t *clone3 = s_rule ("clone3", "SCMP_ACT_ERRNO", NULL);
    s_set (clone3, "errnoRet", json_integer (ENOSYS_RET));
    s_append (syscalls, clone3);

    json_t *profile = s_checked (json_object ());
    s_set (profile, "defaultAction", json_string ("SCMP_ACT_ERRNO"));
    s_set (profile, "defaultErrnoRet", json_integer (EPERM_RET));
    json_t *architectures = s_checked (json_array ());
    s_append (architectures, json_string (ARCH_NATIVE));
    s_set (profile, "architectures", architectures);
    s_set (profile, "syscalls", syscalls);
    return profile;
}
