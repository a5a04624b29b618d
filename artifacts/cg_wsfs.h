/*  cg_wsfs — a workspace's own file system: a sparse ext4 image of a fixed size and inode
    count, loop-mounted on the workspace directory, so that the kernel, not a scan, stops
    sandboxed code from filling the host's disk or inodes. */
#ifndef CG_WSFS_H
#define CG_WSFS_H

#include "../bridge/cg_error.h"

#include <stdint.h>
#include <sys/types.h>

/*  Under a session's directory: the mount point (the sandbox's /mnt/data) and its image. */
#define CG_WSFS_WORKSPACE "workspace"
#define CG_WSFS_IMAGE "workspace.img"

typedef struct {
    int size_mb; /* image size in MiB; 0: a plain directory, no limit */
    int inodes;  /* inodes of the file system (mkfs rounds up to whole groups) */
    uid_t uid;   /* owner of the workspace's root directory (mode 0755) */
    gid_t gid;
} cg_wsfs_limits_t;

typedef struct {
    double size_mb; /* as the file system counts it: a little under the image size */
    double used_mb;
    uint64_t inodes;
    uint64_t inodes_used;
} cg_wsfs_usage_t;

/*  Makes SESSION_DIR/workspace (SESSION_DIR must exist) owned by LIMITS->uid:gid with
    mode 0755. When LIMITS->size_mb > 0 and the workspace is not yet a mount point, it
    gets a file system of its own: SESSION_DIR/workspace.img is created sparse, formatted
    ext4 (mkfs.ext4, no shell), attached to a free loop device that frees itself on
    unmount, and mounted nosuid,nodev on the workspace. A workspace that already is a
    mount point (an earlier call made it) is left as it is. Must run in the host's mount
    namespace with CAP_SYS_ADMIN. Returns 0, or -1 with *err set naming the step that
    failed (then nothing is left mounted and the image is removed). */
int cg_wsfs_create (const char *session_dir, const cg_wsfs_limits_t *limits, cg_error_t **err);

/*  Undoes cg_wsfs_create's file system: detaches the mount on SESSION_DIR/workspace
    (MNT_DETACH: whoever still holds a file there keeps it until closed; the loop device
    and the image's blocks are freed then) and unlinks SESSION_DIR/workspace.img. Doing
    nothing is not an error (a plain directory, or already removed). Leaves the
    directories for the caller to remove. Returns 0, or -1 with *err set. */
int cg_wsfs_remove (const char *session_dir, cg_error_t **err);

/*  Detaches every mount strictly below DIR (an absolute path; links in it resolved),
    deepest first, as listed in /proc/self/mountinfo: what a killed server left mounted
    in its state. Returns how many were detached, or -1 with *err set (DIR missing is 0). */
int cg_wsfs_unmount_below (const char *dir, cg_error_t **err);

/*  Fills *USAGE with what the workspace in SESSION_DIR holds and may hold (statvfs).
    Returns 1 when it has a file system of its own, 0 when it is a plain directory (no
    limit; *USAGE untouched), or -1 with *err set. */
int cg_wsfs_usage (const char *session_dir, cg_wsfs_usage_t *usage, cg_error_t **err);

#endif
