/*  cg_wsfs — a session's own file systems: a sparse ext4 image of a fixed size and inode
    count, loop-mounted, that holds its workspace and its package layer, and a small tmpfs
    for its ipc directory, so that the kernel, not a scan, stops sandboxed code from
    filling the host's disk or inodes through any path it can write. */
#ifndef CG_WSFS_H
#define CG_WSFS_H

#include "base/cg_error.h"
#include "base/cg_limits.h"

#include <stdint.h>
#include <sys/types.h>

/*  Under a session's directory: the session's disk (the mount point of its image) and the
    two sandbox-writable directories on it, the image, and the ipc directory (its own tmpfs).
    The sandbox sees the workspace at /mnt/data, the site at /opt/cellgate/site and the ipc
    directory at /run/cellgate/ipc; never the disk's root. */
#define CG_WSFS_DISK "disk"
#define CG_WSFS_WORKSPACE CG_WSFS_DISK "/workspace"
#define CG_WSFS_SITE CG_WSFS_DISK "/site"
#define CG_WSFS_IMAGE "disk.img"
#define CG_WSFS_IPC "ipc"
typedef struct {
    int size_mb; /* image size in MiB; 0: plain directories, no limit */
    int inodes;  /* inodes of the file system (mkfs rounds up to whole groups) */
    uid_t uid;   /* owner of the workspace (mode 0755) and the ipc directory (0700) */
    gid_t gid;
} cg_wsfs_limits_t;

typedef struct {
    double size_mb; /* as the file system counts it: a little under the image size */
    double used_mb;
    uint64_t inodes;
    uint64_t inodes_used;
} cg_wsfs_usage_t;

/*  Makes SESSION_DIR/disk (SESSION_DIR must exist), the workspace on it owned by
    LIMITS->uid:gid with mode 0755, and SESSION_DIR/ipc owned by them with mode 0700. When
    LIMITS->size_mb > 0 and the disk is not yet a mount point, it gets a file system of its
    own: SESSION_DIR/disk.img is created sparse, formatted ext4 (mkfs.ext4, no shell; its
    root owned by root), attached to a free loop device that frees itself on unmount, and
    mounted nosuid,nodev on the disk; and the ipc directory becomes a tmpfs of
    CG_IPC_TMPFS_KB and CG_IPC_TMPFS_INODES (nosuid,nodev,noexec). What already is a mount
    point (an earlier call made it) is left as it is. Must run in the host's mount
    namespace with CAP_SYS_ADMIN. Returns 0, or -1 with *err set naming the step that
    failed (then nothing is left mounted and the image is removed). */
int cg_wsfs_create (const char *session_dir, const cg_wsfs_limits_t *limits, cg_error_t **err);

/*  Undoes cg_wsfs_create's file systems: detaches the mounts on SESSION_DIR/disk and
    SESSION_DIR/ipc (MNT_DETACH: whoever still holds a file there keeps it until closed; the
    loop device and the image's blocks are freed then) and unlinks SESSION_DIR/disk.img. Doing
    nothing is not an error (a plain directory, or already removed). Leaves the
    directories for the caller to remove. Returns 0, or -1 with *err set. */
int cg_wsfs_remove (const char *session_dir, cg_error_t **err);

/*  Detaches every mount strictly below DIR (an absolute path; links in it resolved),
    deepest first, as listed in /proc/self/mountinfo: what a killed server left mounted
    in its state. Returns how many were detached, or -1 with *err set (DIR missing is 0). */
int cg_wsfs_unmount_below (const char *dir, cg_error_t **err);

/*  Fills *USAGE with what the disk in SESSION_DIR (the workspace and the package layer)
    holds and may hold (statvfs).
    Returns 1 when it has a file system of its own, 0 when it is a plain directory (no
    limit; *USAGE untouched), or -1 with *err set. */
int cg_wsfs_usage (const char *session_dir, cg_wsfs_usage_t *usage, cg_error_t **err);

#endif
