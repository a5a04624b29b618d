/*  cg_wsfs — a session's own file systems: a sparse ext4 image of a fixed size and inode
    count, loop-mounted, that holds its workspace and its package layer, and a small tmpfs
    for its ipc directory, so that the kernel, not a scan, stops sandboxed code from
    filling the host's disk or inodes through any path it can write. */
#define _GNU_SOURCE
#include "artifacts/cg_wsfs.h"
#include "base/cg_util.h"
#include "base/cg_fs.h"
#include "base/cg_proc.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/loop.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#define S_HINT \
    "(a workspace size limit needs root and loop devices; --workspace-mb 0 turns the limit off)"
#define S_LOOP_TRIES 8
//  Formatted images kept per server (one per size and inode count in use).
#define S_TEMPLATES 4

//  True when PATH is a mount point: its device differs from its parent PARENT's.
static bool
s_is_mount_point (const char *parent, const char *path)
{
    struct stat up, st;
    return lstat (parent, &up) == 0 && lstat (path, &st) == 0 && S_ISDIR (st.st_mode)
           && st.st_dev != up.st_dev;
}

static const char *
s_mkfs_path (void)
{
    static const char *paths[] = {"/usr/sbin/mkfs.ext4", "/sbin/mkfs.ext4", NULL};
    for (int i = 0; paths[i]; i++)
        if (access (paths[i], X_OK) == 0)
            return paths[i];
    return NULL;
}

//  Formats IMAGE as ext4 with LIMITS' inode count, its root owned by root (the sandbox
//  sees only directories below it): mkfs.ext4 with a fixed argv (no shell, no journal: the
//  disk lives no longer than its session), what it printed kept for the error message.
static int
s_mkfs (const char *image, const cg_wsfs_limits_t *limits, cg_error_t **err)
{
    const char *mkfs = s_mkfs_path ();
    if (!mkfs)
        return cg_error_set (
            err, ENOENT, "mkfs.ext4 not found in /usr/sbin or /sbin (install e2fsprogs) " S_HINT);
    char inodes[24], extended[96];
    snprintf (inodes, sizeof inodes, "%d", limits->inodes);
    snprintf (extended, sizeof extended, "root_owner=0:0,lazy_itable_init=1,nodiscard");
    char *const argv[] = {CG_UNCONST (mkfs),
                          "-q",
                          "-F",
                          "-t",
                          "ext4",
                          "-N",
                          inodes,
                          "-m",
                          "0",
                          "-O",
                          "^has_journal",
                          "-E",
                          extended,
                          CG_UNCONST (image),
                          NULL};
    char *const envp[] = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL=C", NULL};
    cleanup_free char *out = NULL;
    cleanup_free char *errors = NULL;
    int status = cg_run (argv, envp, &out, &errors, err);
    if (status < 0)
        return -1;
    if (WIFEXITED (status) && WEXITSTATUS (status) == 0)
        return 0;
    char *said = *errors ? errors : out;
    size_t len = strlen (said);
    while (len && (said[len - 1] == '\n' || said[len - 1] == ' '))
        said[--len] = '\0';
    return cg_error_set (err, EIO, "%s -N %s %s failed (%s %d): %s", mkfs, inodes, image,
                         WIFEXITED (status) ? "exit" : "signal",
                         WIFEXITED (status) ? WEXITSTATUS (status) : WTERMSIG (status),
                         len ? said : "no output");
}

//  Formatted blank images, made once per size and inode count and copied for each new
//  session instead of running mkfs.ext4 again. FD is an unnamed file (O_TMPFILE) in the
//  sessions' directory, never mounted, never in a directory listing; -1 when it could not
//  be made (sessions of that size format their own).
static struct {
    bool made;
    int size_mb, inodes, fd;
} s_templates[S_TEMPLATES];
static pthread_mutex_t s_templates_lock = PTHREAD_MUTEX_INITIALIZER;

//  The blank image for LIMITS in DIR (an fd the table keeps), or -1.
static int
s_template (const char *dir, const cg_wsfs_limits_t *limits)
{
    pthread_mutex_lock (&s_templates_lock);
    int slot = -1, fd = -1;
    for (int i = 0; i < S_TEMPLATES && slot < 0; i++)
        if (!s_templates[i].made
            || (s_templates[i].size_mb == limits->size_mb
                && s_templates[i].inodes == limits->inodes))
            slot = i;
    if (slot >= 0 && s_templates[slot].made)
        fd = s_templates[slot].fd;
    else if (slot >= 0) {
        fd = open (dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
        char path[64];
        snprintf (path, sizeof path, "/proc/%d/fd/%d", (int)getpid (), fd);
        if (fd >= 0
            && (ftruncate (fd, (off_t)limits->size_mb * 1024 * 1024) < 0
                || s_mkfs (path, limits, NULL) < 0)) {
            close (fd);
            fd = -1;
        }
        s_templates[slot].made = true;
        s_templates[slot].size_mb = limits->size_mb;
        s_templates[slot].inodes = limits->inodes;
        s_templates[slot].fd = fd;
    }
    pthread_mutex_unlock (&s_templates_lock);
    return fd;
}

//  Copies the data of FROM (SIZE bytes, sparse) into TO, an empty file of that size, at the
//  same offsets, leaving its holes as holes. Offsets are passed explicitly, so threads may
//  copy from one FROM at once. Returns 0, or -1 with errno set.
static int
s_copy_sparse (int from, int to, off_t size)
{
    off_t pos = 0;
    while (pos < size) {
        off_t data = lseek (from, pos, SEEK_DATA);
        if (data < 0)
            return errno == ENXIO ? 0 : -1; /* ENXIO: no data past POS */
        off_t hole = lseek (from, data, SEEK_HOLE);
        if (hole < 0)
            return -1;
        off_t in = data, out = data;
        bool plain = false; /* copy_file_range refused (another file system): read, write */
        while (in < hole) {
            char buf[65536];
            size_t want = (size_t)(hole - in) < sizeof buf ? (size_t)(hole - in) : sizeof buf;
            ssize_t n = plain ? pread (from, buf, want, in)
                              : copy_file_range (from, &in, to, &out, (size_t)(hole - in), 0);
            if (n < 0 && !plain && (errno == EXDEV || errno == EINVAL || errno == ENOSYS)) {
                plain = true;
                continue;
            }
            if (n > 0 && plain && pwrite (to, buf, (size_t)n, in) != n)
                n = -1;
            if (n <= 0) {
                if (n == 0)
                    errno = EIO;
                return -1;
            }
            if (plain)
                in += n;
        }
        pos = hole;
    }
    return 0;
}

//  Attaches IMAGE_FD to a free loop device that detaches itself when its last user (the
//  mount) is gone. Returns the open loop device (its path in PATH), or -1 with *err set.
static int
s_loop_attach (int image_fd, const char *image, char path[32], cg_error_t **err)
{
    cleanup_close int control = open ("/dev/loop-control", O_RDWR | O_CLOEXEC);
    if (control < 0)
        return cg_error_set (err, errno, "open /dev/loop-control: %s " S_HINT, strerror (errno));
    int code = 0;
    for (int attempt = 0; attempt < S_LOOP_TRIES; attempt++) {
        int number = ioctl (control, LOOP_CTL_GET_FREE);
        if (number < 0)
            return cg_error_set (err, errno, "find a free loop device: %s " S_HINT,
                                 strerror (errno));
        snprintf (path, 32, "/dev/loop%d", number);
        int loop_fd = open (path, O_RDWR | O_CLOEXEC);
        if (loop_fd < 0)
            return cg_error_set (err, errno, "open %s: %s " S_HINT, path, strerror (errno));
        struct loop_config config = {.fd = (unsigned)image_fd,
                                     .info = {.lo_flags = LO_FLAGS_AUTOCLEAR}};
        snprintf ((char *)config.info.lo_file_name, sizeof config.info.lo_file_name, "%s", image);
        if (ioctl (loop_fd, LOOP_CONFIGURE, &config) == 0)
            return loop_fd;
        code = errno;
        close (loop_fd);
        if (code != EBUSY) /* EBUSY: another process took it between the two calls */
            break;
    }
    return cg_error_set (err, code, "attach %s to %s: %s " S_HINT, image, path, strerror (code));
}

//  Mounts the formatted IMAGE on DISK through a loop device. Returns 0, or -1 with
//  *err set (nothing stays attached then).
static int
s_mount (const char *image, const char *disk, cg_error_t **err)
{
    cleanup_close int image_fd = open (image, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
    if (image_fd < 0)
        return cg_error_set (err, errno, "open %s: %s", image, strerror (errno));
    char loop[32] = "";
    cleanup_close int loop_fd = s_loop_attach (image_fd, image, loop, err);
    if (loop_fd < 0)
        return -1;
    //  Executables stay allowed (a model runs what it builds); set-id bits and device
    //  nodes mean nothing here. Closing loop_fd after the mount leaves the mount its only
    //  user, so unmounting frees the device; a failed mount frees it on close.
    if (mount (loop, disk, "ext4", MS_NOSUID | MS_NODEV, "") < 0)
        return cg_error_set (err, errno, "mount %s (%s) on %s: %s " S_HINT, loop, image, disk,
                             strerror (errno));
    return 0;
}

//  Gives SESSION_DIR/disk its file system (an image of LIMITS' size, made, formatted and
//  mounted) unless it already is a mount point.
static int
s_disk_create (const char *session_dir, const cg_wsfs_limits_t *limits, cg_error_t **err)
{
    cleanup_free char *disk = cg_strdupf ("%s/%s", session_dir, CG_WSFS_DISK);
    if (s_is_mount_point (session_dir, disk))
        return 0;
    cleanup_free char *image = cg_strdupf ("%s/%s", session_dir, CG_WSFS_IMAGE);
    cleanup_free char *session_dir_parent = cg_strdupf ("%s/..", session_dir);
    cleanup_close int fd = open (image, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0)
        return cg_error_set (err, errno, "workspace file system: create %s: %s", image,
                             strerror (errno));
    if (ftruncate (fd, (off_t)limits->size_mb * 1024 * 1024) < 0) {
        cg_error_set (err, errno, "workspace file system: size %s: %s", image, strerror (errno));
        unlink (image);
        return -1;
    }
    //  A copy of the blank image when there is one (what mkfs.ext4 would write, without
    //  running it), else mkfs.ext4 itself.
    int blank = s_template (session_dir_parent, limits);
    bool copied =
        blank >= 0 && s_copy_sparse (blank, fd, (off_t)limits->size_mb * 1024 * 1024) == 0;
    if (blank >= 0 && !copied)
        cg_log (1, "workspace file system: copy the blank image into %s: %s (formatting it)", image,
                strerror (errno));
    if ((!copied && s_mkfs (image, limits, err) < 0) || s_mount (image, disk, err) < 0) {
        unlink (image);
        return cg_error_wrap (err, "workspace file system (--workspace-mb %d)", limits->size_mb);
    }
    //  Nothing but what the session puts there.
    cleanup_free char *lost = cg_strdupf ("%s/lost+found", disk);
    if (rmdir (lost) < 0 && errno != ENOENT)
        cg_log (1, "rmdir %s: %s", lost, strerror (errno));
    return 0;
}

//  Makes NAME in DIR_FD (if missing) a directory owned by LIMITS' uid:gid with MODE; never
//  follows a link there.
static int
s_owned_dir (int dir_fd, const char *path, const char *name, int mode,
             const cg_wsfs_limits_t *limits, cg_error_t **err)
{
    if (mkdirat (dir_fd, name, (mode_t)mode) < 0 && errno != EEXIST)
        return cg_error_set (err, errno, "mkdir %s: %s", path, strerror (errno));
    cleanup_close int fd = openat (dir_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 || fchown (fd, limits->uid, limits->gid) < 0 || fchmod (fd, (mode_t)mode) < 0)
        return cg_error_set (err, errno, "%s: set owner and mode: %s", path, strerror (errno));
    return 0;
}

//  Mounts the ipc directory's tmpfs on SESSION_DIR/ipc unless it already is a mount point:
//  owned by the sandbox user, mode 0700, as small as the kernels' connection files and
//  sockets need (the sandbox can write there, so it gets a limit of its own).
static int
s_ipc_mount (const char *session_dir, const cg_wsfs_limits_t *limits, cg_error_t **err)
{
    cleanup_free char *ipc = cg_strdupf ("%s/%s", session_dir, CG_WSFS_IPC);
    if (s_is_mount_point (session_dir, ipc))
        return 0;
    char options[128];
    snprintf (options, sizeof options, "size=%dk,nr_inodes=%d,mode=0700,uid=%u,gid=%u",
              CG_IPC_TMPFS_KB, CG_IPC_TMPFS_INODES, (unsigned)limits->uid, (unsigned)limits->gid);
    if (mount ("cellgate-ipc", ipc, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, options) < 0)
        return cg_error_set (err, errno, "mount a tmpfs (%s) on %s: %s " S_HINT, options, ipc,
                             strerror (errno));
    return 0;
}

int
cg_wsfs_create (const char *session_dir, const cg_wsfs_limits_t *limits, cg_error_t **err)
{
    cleanup_free char *disk = cg_strdupf ("%s/%s", session_dir, CG_WSFS_DISK);
    cleanup_free char *ipc = cg_strdupf ("%s/%s", session_dir, CG_WSFS_IPC);
    if (cg_mkdir_p (disk, 0755, err) < 0 || cg_mkdir_p (ipc, 0700, err) < 0)
        return cg_error_wrap (err, "workspace");
    if (limits->size_mb > 0
        && (s_disk_create (session_dir, limits, err) < 0
            || s_ipc_mount (session_dir, limits, err) < 0)) {
        cg_wsfs_remove (session_dir, NULL);
        return -1;
    }
    cleanup_free char *workspace = cg_strdupf ("%s/%s", session_dir, CG_WSFS_WORKSPACE);
    cleanup_close int disk_fd = open (disk, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    cleanup_close int session_fd =
        open (session_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (disk_fd < 0 || session_fd < 0)
        cg_error_set (err, errno, "open %s: %s", disk, strerror (errno));
    if (disk_fd < 0 || session_fd < 0
        || s_owned_dir (disk_fd, workspace, strrchr (CG_WSFS_WORKSPACE, '/') + 1, 0755, limits, err)
               < 0
        || s_owned_dir (session_fd, ipc, CG_WSFS_IPC, 0700, limits, err) < 0) {
        if (limits->size_mb > 0)
            cg_wsfs_remove (session_dir, NULL);
        return -1;
    }
    return 0;
}

int
cg_wsfs_remove (const char *session_dir, cg_error_t **err)
{
    static const char *const mounts[] = {CG_WSFS_DISK, CG_WSFS_IPC, NULL};
    int rc = 0;
    for (int i = 0; mounts[i]; i++) {
        cleanup_free char *path = cg_strdupf ("%s/%s", session_dir, mounts[i]);
        //  A normal user made no mount (and may not unmount): EPERM says nothing is there.
        if (umount2 (path, MNT_DETACH | UMOUNT_NOFOLLOW) < 0 && errno != EINVAL && errno != ENOENT
            && !(errno == EPERM && geteuid () != 0))
            rc = cg_error_set (err, errno, "unmount %s: %s", path, strerror (errno));
    }
    cleanup_free char *image = cg_strdupf ("%s/%s", session_dir, CG_WSFS_IMAGE);
    if (unlink (image) < 0 && errno != ENOENT)
        rc = cg_error_set (err, errno, "remove %s: %s", image, strerror (errno));
    return rc;
}

//  Decodes mountinfo's octal escapes (\040 for a space, ...) in place.
static void
s_unescape (char *text)
{
    char *out = text;
    for (char *in = text; *in; in++) {
        if (in[0] == '\\' && in[1] >= '0' && in[1] <= '3' && in[2] >= '0' && in[2] <= '7'
            && in[3] >= '0' && in[3] <= '7') {
            *out++ = (char)((in[1] - '0') * 64 + (in[2] - '0') * 8 + (in[3] - '0'));
            in += 3;
        }
        else
            *out++ = *in;
    }
    *out = '\0';
}

static int
s_by_length_desc (const void *a, const void *b)
{
    size_t la = strlen (*(char *const *)a), lb = strlen (*(char *const *)b);
    return la < lb ? 1 : la > lb ? -1 : 0;
}

int
cg_wsfs_unmount_below (const char *dir, cg_error_t **err)
{
    cleanup_free char *real = realpath (dir, NULL);
    if (!real)
        return errno == ENOENT ? 0
                               : cg_error_set (err, errno, "resolve %s: %s", dir, strerror (errno));
    if (real[0] != '/' || real[1] == '\0')
        return cg_error_set (err, EINVAL, "refusing to unmount everything below %s", real);
    FILE *file = fopen ("/proc/self/mountinfo", "re");
    if (!file)
        return cg_error_set (err, errno, "open /proc/self/mountinfo: %s", strerror (errno));
    size_t prefix_len = strlen (real);
    char **found = NULL;
    size_t count = 0;
    char *line = NULL;
    size_t line_size = 0;
    while (getline (&line, &line_size, file) > 0) {
        //  "<id> <parent> <major:minor> <root> <mount point> ...": the fifth field.
        char *saveptr = NULL, *field = strtok_r (line, " ", &saveptr);
        for (int i = 0; field && i < 4; i++)
            field = strtok_r (NULL, " ", &saveptr);
        if (!field)
            continue;
        s_unescape (field);
        if (strncmp (field, real, prefix_len) == 0 && field[prefix_len] == '/') {
            found = cg_xrealloc (found, (count + 1) * sizeof *found);
            found[count++] = cg_xstrdup (field);
        }
    }
    free (line);
    fclose (file);
    if (count > 1)
        qsort (found, count, sizeof *found, s_by_length_desc);
    int detached = 0;
    bool failed = false;
    for (size_t i = 0; i < count; i++) {
        if (umount2 (found[i], MNT_DETACH | UMOUNT_NOFOLLOW) == 0)
            detached++;
        else if (errno != EINVAL && errno != ENOENT) { /* EINVAL: gone with one above it */
            cg_error_set (err, errno, "unmount %s: %s", found[i], strerror (errno));
            failed = true;
        }
        free (found[i]);
    }
    free (found);
    return failed ? -1 : detached;
}

int
cg_wsfs_usage (const char *session_dir, cg_wsfs_usage_t *usage, cg_error_t **err)
{
    cleanup_free char *disk = cg_strdupf ("%s/%s", session_dir, CG_WSFS_DISK);
    if (!s_is_mount_point (session_dir, disk))
        return 0;
    struct statvfs st;
    if (statvfs (disk, &st) < 0)
        return cg_error_set (err, errno, "statvfs %s: %s", disk, strerror (errno));
    double mb = (double)st.f_frsize / (1024 * 1024);
    *usage = (cg_wsfs_usage_t){.size_mb = round ((double)st.f_blocks * mb * 10) / 10,
                               .used_mb = round ((double)(st.f_blocks - st.f_bfree) * mb * 10) / 10,
                               .inodes = st.f_files,
                               .inodes_used = st.f_files - st.f_ffree};
    return 1;
}
