/*  cg_scripts — the saved-script library: files under the scripts directory, saves within
    the library's caps, the index. */
#include "artifacts/cg_scripts.h"
#include "base/cg_kernels.h"
#include "artifacts/cg_scripts_int.h"
#include "base/cg_util.h"
#include "base/cg_fs.h"

#include <assert.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#define S_INDEX CG_SCRIPTS_INDEX
#define S_METADATA "metadata.json"
#define S_FILE_MAX (16 * 1024 * 1024) /* largest metadata, script or index read */

bool
cg_scripts_valid_name (const char *name)
{
    return cg_valid_name (name, CG_SCRIPTS_NAME_MAX, "-_.") && strstr (name, "..") == NULL
           && strcmp (name, S_INDEX) != 0;
}

const char *
cg_scripts_extension (const char *language)
{
    //  The catalogue's (base/cg_kernels.h): "py", "js", "R", "sh"; "txt" for a kernel whose
    //  spec names none.
    const cg_language_t *l = language ? cg_kernels_find (cg_kernels (), language) : NULL;
    return !l ? NULL : l->extension ? l->extension : "txt";
}

//  --------------------------------------------------------------------------
//  Files, relative to directory fds, never through a link

//  Opens the scripts directory DIR, creating it when CREATE. Returns an fd or -1 with *err.
int
cg_scripts_open_top (const char *dir, bool create, cg_error_t **err)
{
    if (create && cg_mkdir_p (dir, 0755, err) < 0)
        return cg_error_wrap (err, "scripts directory");
    int fd = open (dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return cg_error_set (err, errno, "scripts directory %s: %s", dir, strerror (errno));
    return fd;
}

//  Opens directory NAME in DIR_FD without following a link, creating it when CREATE.
//  Returns an fd, or -1 with *err set (ELOOP: NAME is a link; ENOENT: missing).
int
cg_scripts_open_dir_at (int dir_fd, const char *name, bool create, cg_error_t **err)
{
    if (create && mkdirat (dir_fd, name, 0755) < 0 && errno != EEXIST)
        return cg_error_set (err, errno, "create %s: %s", name, strerror (errno));
    int fd = openat (dir_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd >= 0)
        return fd;
    int saved = errno;
    struct stat st;
    if (fstatat (dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK (st.st_mode))
        saved = ELOOP;
    return cg_error_set (err, saved, "%s: %s", name,
                         saved == ELOOP ? "is a symbolic link, not followed" : strerror (saved));
}

//  Reads the regular file NAME in DIR_FD (no link, no FIFO). Caller frees; NULL with *err.
char *
cg_scripts_read_at (int dir_fd, const char *name, cg_error_t **err)
{
    cleanup_close int fd =
        openat (dir_fd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat (fd, &st) < 0) {
        cg_error_set (err, errno == ELOOP ? ELOOP : errno, "read %s: %s", name,
                      errno == ELOOP ? "a symbolic link, not followed" : strerror (errno));
        return NULL;
    }
    if (!S_ISREG (st.st_mode) || st.st_size > S_FILE_MAX) {
        cg_error_set (err, EINVAL, "read %s: not a regular file of at most %d bytes", name,
                      S_FILE_MAX);
        return NULL;
    }
    char *buf = cg_xmalloc ((size_t)st.st_size + 1);
    size_t len = 0;
    while (len < (size_t)st.st_size) {
        ssize_t n = read (fd, buf + len, (size_t)st.st_size - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        len += (size_t)n;
    }
    buf[len] = '\0';
    return buf;
}

//  Reads NAME in DIR_FD as a JSON object. Caller owns it; NULL with *err.
static json_t *
s_read_json_at (int dir_fd, const char *name, cg_error_t **err)
{
    cleanup_free char *text = cg_scripts_read_at (dir_fd, name, err);
    if (!text)
        return NULL;
    json_error_t jerr;
    json_t *value = json_loads (text, JSON_REJECT_DUPLICATES, &jerr);
    if (!json_is_object (value)) {
        json_decref (value);
        cg_error_set (err, EINVAL, "%s: not a JSON object (%s)", name, jerr.text);
        return NULL;
    }
    return value;
}

//  Writes VALUE (borrowed) as indented JSON to NAME in DIR_FD, atomically.
static int
s_write_json_at (int dir_fd, const char *name, json_t *value, cg_error_t **err)
{
    cleanup_free char *text = json_dumps (value, JSON_INDENT (2));
    cleanup_free char *line = cg_strdupf ("%s\n", text);
    return cg_write_file_at (dir_fd, name, line, strlen (line), 0644, (uid_t)-1, (gid_t)-1, err);
}

//  Adds "name" and "path" (of the script file, from DIR) to METADATA, and the fields a
//  hand-edited file may lack, empty.
static void
s_complete (json_t *metadata, const char *dir, const char *name)
{
    const char *texts[] = {"description", "language", NULL}, *lists[] = {"tags", "packages", NULL};
    for (int i = 0; texts[i]; i++)
        if (!json_is_string (json_object_get (metadata, texts[i])))
            json_object_set_new (metadata, texts[i], json_string (""));
    for (int i = 0; lists[i]; i++)
        if (!json_is_array (json_object_get (metadata, lists[i])))
            json_object_set_new (metadata, lists[i], json_array ());
    const char *ext =
        cg_scripts_extension (json_string_value (json_object_get (metadata, "language")));
    json_object_set_new (metadata, "name", json_string (name));
    if (ext)
        json_object_set_new (metadata, "path", json_sprintf ("%s/%s/script.%s", dir, name, ext));
}

//  --------------------------------------------------------------------------
//  The index

static int
s_by_name (const void *a, const void *b)
{
    const json_t *x = *(json_t *const *)a, *y = *(json_t *const *)b;
    return strcmp (json_string_value (json_object_get (x, "name")),
                   json_string_value (json_object_get (y, "name")));
}

//  Returns a new array of the metadata of every script directory in DIR_FD, by name.
static json_t *
s_scan (int dir_fd, const char *dir)
{
    json_t *scripts = json_array ();
    int fd = dup (dir_fd);
    DIR *listing = fd >= 0 ? fdopendir (fd) : NULL;
    if (!listing && fd >= 0)
        close (fd);
    for (struct dirent *entry; listing && (entry = readdir (listing));) {
        if (!cg_scripts_valid_name (entry->d_name)
            || (entry->d_type != DT_DIR && entry->d_type != DT_LNK && entry->d_type != DT_UNKNOWN))
            continue;
        cg_error_t *err = NULL;
        cleanup_close int name_fd = cg_scripts_open_dir_at (dir_fd, entry->d_name, false, &err);
        json_t *metadata = name_fd >= 0 ? s_read_json_at (name_fd, S_METADATA, &err) : NULL;
        if (!metadata) {
            cg_log (1, "scripts: %s skipped: %s", entry->d_name, cg_error_message (err));
            cg_error_destroy (&err);
            continue;
        }
        s_complete (metadata, dir, entry->d_name);
        json_array_append_new (scripts, metadata);
    }
    if (listing)
        closedir (listing);
    size_t n = json_array_size (scripts);
    json_t **items = cg_xcalloc (n ? n : 1, sizeof (json_t *));
    for (size_t i = 0; i < n; i++)
        items[i] = json_incref (json_array_get (scripts, i));
    qsort (items, n, sizeof (json_t *), s_by_name);
    json_array_clear (scripts);
    for (size_t i = 0; i < n; i++)
        json_array_append_new (scripts, items[i]);
    free (items);
    return scripts;
}

//  Writes SCRIPTS (borrowed) as DIR_FD's index.
static int
s_write_index (int dir_fd, json_t *scripts, cg_error_t **err)
{
    json_t *index = json_pack ("{s:i, s:O}", "version", 1, "scripts", scripts);
    int rc = s_write_json_at (dir_fd, S_INDEX, index, err);
    json_decref (index);
    return rc;
}

//  Returns DIR_FD's index's scripts (a new array), rebuilt when missing or malformed.
json_t *
cg_scripts_index (int dir_fd, const char *dir)
{
    cg_error_t *err = NULL;
    json_t *index = s_read_json_at (dir_fd, S_INDEX, &err);
    json_t *scripts = json_incref (json_object_get (index, "scripts"));
    json_decref (index);
    bool valid = json_is_array (scripts);
    for (size_t i = 0; valid && i < json_array_size (scripts); i++)
        valid = json_is_object (json_array_get (scripts, i))
                && cg_scripts_valid_name (
                    json_string_value (json_object_get (json_array_get (scripts, i), "name")));
    if (valid) {
        cg_error_destroy (&err);
        return scripts;
    }
    if (err && err->code != ENOENT)
        cg_log (1, "scripts: index rebuilt: %s", cg_error_message (err));
    cg_error_destroy (&err);
    json_decref (scripts);
    scripts = s_scan (dir_fd, dir);
    if (s_write_index (dir_fd, scripts, &err) < 0) {
        cg_log (1, "scripts: %s", cg_error_message (err));
        cg_error_destroy (&err);
    }
    return scripts;
}

//  Puts METADATA (borrowed, with its name) into DIR_FD's index in place of its name's entry.
static int
s_index_put (int dir_fd, const char *dir, json_t *metadata, cg_error_t **err)
{
    json_t *scripts = cg_scripts_index (dir_fd, dir);
    const char *name = json_string_value (json_object_get (metadata, "name"));
    size_t at = json_array_size (scripts);
    for (size_t i = 0; i < json_array_size (scripts); i++) {
        const char *other =
            json_string_value (json_object_get (json_array_get (scripts, i), "name"));
        if (strcmp (other, name) >= 0) {
            at = i;
            break;
        }
    }
    json_t *here = json_array_get (scripts, at);
    if (here && strcmp (json_string_value (json_object_get (here, "name")), name) == 0)
        json_array_set (scripts, at, metadata);
    else
        json_array_insert (scripts, at, metadata);
    int rc = s_write_index (dir_fd, scripts, err);
    json_decref (scripts);
    return rc;
}

int
cg_scripts_rebuild_index (const char *dir, cg_error_t **err)
{
    cleanup_close int dir_fd = cg_scripts_open_top (dir, true, err);
    if (dir_fd < 0)
        return -1;
    json_t *scripts = s_scan (dir_fd, dir);
    int rc = s_write_index (dir_fd, scripts, err);
    json_decref (scripts);
    return rc;
}

json_t *
cg_scripts_list (const char *dir, cg_error_t **err)
{
    struct stat st;
    if (stat (dir, &st) < 0 && errno == ENOENT)
        return json_array ();
    cleanup_close int dir_fd = cg_scripts_open_top (dir, false, err);
    return dir_fd < 0 ? NULL : cg_scripts_index (dir_fd, dir);
}

//  --------------------------------------------------------------------------
//  Saving, reading, runs

//  Checks FIELDS' optional list KEY: strings of 1 to CG_SCRIPTS_TAG_MAX characters.
static int
s_check_list (json_t *fields, const char *key, cg_error_t **err)
{
    json_t *list = json_object_get (fields, key);
    size_t i;
    json_t *item;
    if (list && (!json_is_array (list) || json_array_size (list) > CG_SCRIPTS_TAGS_MAX))
        return cg_error_set (err, EINVAL, "'%s' must be a list of at most %d strings", key,
                             CG_SCRIPTS_TAGS_MAX);
    json_array_foreach (list, i, item)
    {
        const char *text = json_string_value (item);
        if (!text || !*text || strlen (text) > CG_SCRIPTS_TAG_MAX
            || strpbrk (text, "\n\r\t") != NULL)
            return cg_error_set (err, EINVAL,
                                 "'%s' items must be strings of 1 to %d characters on one line",
                                 key, CG_SCRIPTS_TAG_MAX);
    }
    return 0;
}

//  Moves NAME_FD's current script files into versions/<n>/, N the first free from FIRST,
//  with OLD (the current metadata, may be NULL) there without its own list of versions.
//  Returns N, 0 when there was nothing to keep, or -1 with *err set.
static int
s_keep_version (int name_fd, json_t *old, int first, cg_error_t **err)
{
    cleanup_close int versions_fd = cg_scripts_open_dir_at (name_fd, "versions", true, err);
    if (versions_fd < 0)
        return -1;
    char number[16];
    int n = first - 1;
    do
        snprintf (number, sizeof number, "%d", ++n);
    while (mkdirat (versions_fd, number, 0755) < 0 && errno == EEXIST);
    cleanup_close int version_fd = cg_scripts_open_dir_at (versions_fd, number, false, err);
    if (version_fd < 0)
        return -1;
    const char *files[] = {"script.py", "script.js", "script.sh", NULL};
    int moved = 0;
    for (int f = 0; files[f]; f++) {
        if (renameat (name_fd, files[f], version_fd, files[f]) == 0)
            moved++;
        else if (errno != ENOENT)
            return cg_error_set (err, errno, "keep version %d of %s: %s", n, files[f],
                                 strerror (errno));
    }
    if (old && moved > 0) {
        //  Each version's metadata without the list: the library grows linearly.
        json_t *kept = json_deep_copy (old);
        json_object_del (kept, "versions");
        int rc = s_write_json_at (version_fd, S_METADATA, kept, err);
        json_decref (kept);
        if (rc < 0)
            return -1;
        unlinkat (name_fd, S_METADATA, 0);
    }
    if (moved == 0) {
        unlinkat (versions_fd, number, AT_REMOVEDIR);
        unlinkat (name_fd, "versions", AT_REMOVEDIR); /* only when empty: a first save */
        return 0;
    }
    return n;
}

//  --------------------------------------------------------------------------
//  The caps: versions kept, scripts, bytes

#define S_TREE_DEPTH 8     /* the library/<name>/versions/<n>/<file> and a little more */
#define S_RECOUNT_SAVES 64 /* saves between two counts of the whole library */

//  The bytes of the regular files at DIR_FD's entry NAME (a file, or a directory walked
//  DEPTH levels down at most), never through a link.
static uint64_t
s_tree_bytes (int dir_fd, const char *name, int depth)
{
    struct stat st;
    if (fstatat (dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
        return 0;
    if (S_ISREG (st.st_mode))
        return (uint64_t)st.st_size;
    int fd = S_ISDIR (st.st_mode) && depth > 0
                 ? openat (dir_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
                 : -1;
    DIR *listing = fd >= 0 ? fdopendir (fd) : NULL;
    if (!listing) {
        if (fd >= 0)
            close (fd);
        return 0;
    }
    uint64_t total = 0;
    for (struct dirent *entry; (entry = readdir (listing));)
        if (strcmp (entry->d_name, ".") && strcmp (entry->d_name, ".."))
            total += s_tree_bytes (dirfd (listing), entry->d_name, depth - 1);
    closedir (listing);
    return total;
}

//  The library's size as last counted, for one directory at a time (the server has one).
static struct {
    char *dir;
    uint64_t bytes;
    unsigned saves; /* since the count */
} s_size;
static pthread_mutex_t s_size_lock = PTHREAD_MUTEX_INITIALIZER;

size_t
cg_scripts_bytes (const char *dir)
{
    pthread_mutex_lock (&s_size_lock);
    if (!s_size.dir || strcmp (s_size.dir, dir) != 0 || s_size.saves >= S_RECOUNT_SAVES) {
        cleanup_close int fd = open (dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        free (s_size.dir);
        s_size.dir = cg_xstrdup (dir);
        s_size.bytes = fd >= 0 ? s_tree_bytes (fd, ".", S_TREE_DEPTH) : 0;
        s_size.saves = 0;
    }
    size_t bytes = (size_t)s_size.bytes;
    pthread_mutex_unlock (&s_size_lock);
    return bytes;
}

//  Adds what a save changed (AFTER - BEFORE bytes) to DIR's count.
static void
s_size_changed (const char *dir, uint64_t before, uint64_t after)
{
    pthread_mutex_lock (&s_size_lock);
    if (s_size.dir && strcmp (s_size.dir, dir) == 0) {
        s_size.bytes = s_size.bytes + after > before ? s_size.bytes + after - before : 0;
        s_size.saves++;
    }
    pthread_mutex_unlock (&s_size_lock);
}

//  The bytes of script NAME's directory and of the index, in DIR_FD.
static uint64_t
s_script_bytes (int dir_fd, const char *name)
{
    return s_tree_bytes (dir_fd, name, S_TREE_DEPTH) + s_tree_bytes (dir_fd, S_INDEX, 0);
}

//  Removes version directory NUMBER of VERSIONS_FD and the files in it.
static void
s_remove_version (int versions_fd, const char *number)
{
    int fd = openat (versions_fd, number, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    DIR *listing = fd >= 0 ? fdopendir (fd) : NULL;
    if (!listing && fd >= 0)
        close (fd);
    for (struct dirent *entry; listing && (entry = readdir (listing));)
        if (strcmp (entry->d_name, ".") && strcmp (entry->d_name, ".."))
            unlinkat (dirfd (listing), entry->d_name, 0);
    if (listing)
        closedir (listing);
    if (unlinkat (versions_fd, number, AT_REMOVEDIR) < 0 && errno != ENOENT)
        cg_log (1, "scripts: old version %s not removed: %s", number, strerror (errno));
}

//  Removes the oldest of VERSIONS (in NAME_FD's versions/) past the newest KEEP, from the
//  list and the disk. Returns how many went.
static int
s_prune (int name_fd, json_t *versions, size_t keep)
{
    int removed = 0;
    cleanup_close int versions_fd =
        json_array_size (versions) > keep
            ? openat (name_fd, "versions", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            : -1;
    while (json_array_size (versions) > keep) {
        char number[24];
        snprintf (number, sizeof number, "%" JSON_INTEGER_FORMAT,
                  json_integer_value (json_object_get (json_array_get (versions, 0), "version")));
        if (versions_fd >= 0)
            s_remove_version (versions_fd, number);
        json_array_remove (versions, 0);
        removed++;
    }
    return removed;
}

//  The bytes of OLD's versions (in NAME_FD) that a save keeping KEEP would remove.
static uint64_t
s_pruned_bytes (int name_fd, json_t *old, size_t keep)
{
    json_t *versions = json_object_get (old, "versions");
    size_t count = json_array_size (versions) + 1; /* the one this save keeps */
    cleanup_close int versions_fd =
        count > keep ? openat (name_fd, "versions", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
                     : -1;
    uint64_t bytes = 0;
    for (size_t i = 0; versions_fd >= 0 && i + keep < count && i < json_array_size (versions);
         i++) {
        char number[24];
        snprintf (number, sizeof number, "%" JSON_INTEGER_FORMAT,
                  json_integer_value (json_object_get (json_array_get (versions, i), "version")));
        bytes += s_tree_bytes (versions_fd, number, S_TREE_DEPTH);
    }
    return bytes;
}

//  Refuses (EDQUOT) a save of NAME to DIR_FD (DIR) past LIMITS: a new NAME when the library
//  holds its scripts, or ADDED bytes (less what it prunes) past its bytes. Returns 0 or -1.
static int
s_check_limits (int dir_fd, const char *dir, const char *name, json_t *old, uint64_t added,
                const cg_scripts_limits_t *limits, cg_error_t **err)
{
    struct stat st;
    if (fstatat (dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
        json_t *scripts = cg_scripts_index (dir_fd, dir);
        size_t count = json_array_size (scripts);
        json_decref (scripts);
        if (count >= limits->scripts)
            return cg_error_set (err, EDQUOT,
                                 "the script library holds %zu scripts, its limit "
                                 "(--max-scripts %zu): save under an existing name, remove a "
                                 "script's directory from %s, or raise the limit",
                                 count, limits->scripts, dir);
    }
    cleanup_close int name_fd =
        openat (dir_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    uint64_t pruned = name_fd >= 0 && old ? s_pruned_bytes (name_fd, old, limits->versions) : 0;
    uint64_t now = cg_scripts_bytes (dir);
    if (now + added > pruned && now + added - pruned > limits->bytes)
        return cg_error_set (err, EDQUOT,
                             "the script library would pass its limit of %zu bytes "
                             "(--max-scripts-mb): it holds %" PRIu64 " bytes and this save adds "
                             "%" PRIu64 "; remove scripts from %s, or raise the limit",
                             limits->bytes, now, added - (pruned < added ? pruned : added), dir);
    return 0;
}

int
cg_scripts_version_of (json_t *metadata)
{
    json_t *version = json_object_get (metadata, "version");
    if (json_is_integer (version) && json_integer_value (version) > 0
        && json_integer_value (version) < INT32_MAX)
        return (int)json_integer_value (version);
    int last = 0;
    size_t i;
    json_t *entry;
    json_array_foreach (json_object_get (metadata, "versions"), i, entry)
    {
        json_int_t n = json_integer_value (json_object_get (entry, "version"));
        last = n > last && n < INT32_MAX ? (int)n : last;
    }
    return last + 1;
}

//  The metadata of a new save of NAME from FIELDS, carrying OLD's identity and versions.
static json_t *
s_new_metadata (json_t *fields, json_t *old, const char *now)
{
    json_t *id = json_object_get (old, "script_id");
    char fresh[24] = "script_";
    cg_random_hex (fresh + 7, 6);
    json_t *created = json_object_get (old, "created_at");
    json_t *tags = json_object_get (fields, "tags");
    json_t *packages = json_object_get (fields, "packages");
    json_t *source = json_object_get (fields, "source_execution_id");
    json_t *metadata = json_pack (
        "{s:s, s:O, s:O, s:o, s:o, s:o, s:s, s:s, s:n, s:i, s:n, s:[]}", "script_id",
        json_is_string (id) ? json_string_value (id) : fresh, "description",
        json_object_get (fields, "description"), "language", json_object_get (fields, "language"),
        "tags", tags ? json_incref (tags) : json_array (), "packages",
        packages ? json_incref (packages) : json_array (), "source_execution_id",
        json_is_string (source) ? json_incref (source) : json_null (), "created_at",
        json_is_string (created) ? json_string_value (created) : now, "saved_at", now,
        "last_run_at", "run_count", 0, "last_run_success", "versions");
    assert (metadata);
    json_object_set_new (metadata, "version",
                         json_integer (old ? cg_scripts_version_of (old) + 1 : 1));
    return metadata;
}

//  Gives each of VERSIONS of script NAME in DIR its path.
static void
s_version_paths (json_t *versions, const char *dir, const char *name)
{
    size_t i;
    json_t *entry;
    json_array_foreach (versions, i, entry)
    {
        const char *old_ext =
            cg_scripts_extension (json_string_value (json_object_get (entry, "language")));
        json_object_set_new (
            entry, "path",
            json_sprintf ("%s/%s/versions/%d/script.%s", dir, name,
                          (int)json_integer_value (json_object_get (entry, "version")),
                          old_ext ? old_ext : "txt"));
    }
}

//  Checks save's NAME and FIELDS. Returns 0, or -1 with *err set (EINVAL).
static int
s_check_save (const char *name, json_t *fields, cg_error_t **err)
{
    if (!cg_scripts_valid_name (name))
        return cg_error_set (err, EINVAL, "%s", CG_SCRIPTS_NAME_RULE);
    const char *ext =
        cg_scripts_extension (json_string_value (json_object_get (fields, "language")));
    json_t *description = json_object_get (fields, "description");
    if (s_check_list (fields, "tags", err) < 0 || s_check_list (fields, "packages", err) < 0)
        return -1;
    if (!ext || !json_is_string (description)
        || json_string_length (description) > CG_SCRIPTS_TEXT_MAX)
        return cg_error_set (err, EINVAL,
                             "'description' (at most %d characters) and 'language' (python, "
                             "javascript or bash) are required",
                             CG_SCRIPTS_TEXT_MAX);
    return 0;
}

json_t *
cg_scripts_save (const char *dir, const char *name, json_t *fields, const char *code,
                 const cg_scripts_limits_t *limits, cg_error_t **err)
{
    if (s_check_save (name, fields, err) < 0)
        return NULL;
    const char *ext =
        cg_scripts_extension (json_string_value (json_object_get (fields, "language")));
    cleanup_close int dir_fd = cg_scripts_open_top (dir, true, err);
    if (dir_fd < 0)
        return NULL;
    cg_error_t *old_err = NULL;
    cleanup_close int old_fd =
        openat (dir_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    json_t *old = old_fd >= 0 ? s_read_json_at (old_fd, S_METADATA, &old_err) : NULL;
    cg_error_destroy (&old_err);
    char now[32];
    cg_utc_now (now, false);
    json_t *metadata = s_new_metadata (fields, old, now);
    cleanup_free char *text = json_dumps (metadata, JSON_INDENT (2));
    uint64_t added = strlen (code) + 2 * strlen (text)
                     + 64 * json_array_size (json_object_get (old, "versions"));
    uint64_t before = s_script_bytes (dir_fd, name);
    cleanup_close int name_fd = -1;
    int version = 0;
    if (s_check_limits (dir_fd, dir, name, old, added, limits, err) < 0
        || (name_fd = cg_scripts_open_dir_at (dir_fd, name, true, err)) < 0
        || (version = s_keep_version (name_fd, old, cg_scripts_version_of (old), err)) < 0) {
        json_decref (old);
        json_decref (metadata);
        return NULL;
    }
    json_t *versions = json_object_get (metadata, "versions");
    json_array_extend (versions, json_object_get (old, "versions"));
    if (version > 0)
        json_array_append_new (versions, json_pack ("{s:i, s:O?, s:O?}", "version", version,
                                                    "saved_at", json_object_get (old, "saved_at"),
                                                    "language", json_object_get (old, "language")));
    json_decref (old);
    int pruned = s_prune (name_fd, versions, limits->versions);
    s_version_paths (versions, dir, name);
    cleanup_free char *file = cg_strdupf ("script.%s", ext);
    if (cg_write_file_at (name_fd, file, code, strlen (code), 0644, (uid_t)-1, (gid_t)-1, err) < 0
        || s_write_json_at (name_fd, S_METADATA, metadata, err) < 0) {
        json_decref (metadata);
        return NULL;
    }
    s_complete (metadata, dir, name);
    cg_error_t *index_err = NULL;
    if (s_index_put (dir_fd, dir, metadata, &index_err) < 0) {
        cg_log (1, "scripts: index: %s", cg_error_message (index_err));
        cg_error_destroy (&index_err);
    }
    s_size_changed (dir, before, s_script_bytes (dir_fd, name));
    json_object_set_new (metadata, "versions_pruned", json_integer (pruned));
    return metadata;
}

//  Opens script NAME's directory in DIR. Returns an fd or -1 with *err (ENOENT: none).
static int
s_open_script (const char *dir, const char *name, cg_error_t **err)
{
    if (!cg_scripts_valid_name (name))
        return cg_error_set (err, EINVAL, "%s", CG_SCRIPTS_NAME_RULE);
    cleanup_close int dir_fd = open (dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir_fd < 0 && errno == ENOENT)
        return cg_error_set (err, ENOENT, "no script named '%s'", name);
    if (dir_fd < 0)
        return cg_error_set (err, errno, "scripts directory %s: %s", dir, strerror (errno));
    int fd = cg_scripts_open_dir_at (dir_fd, name, false, err);
    if (fd < 0 && (*err)->code == ENOENT) {
        cg_error_destroy (err);
        return cg_error_set (err, ENOENT, "no script named '%s'", name);
    }
    return fd;
}

json_t *
cg_scripts_get (const char *dir, const char *name, char **code, cg_error_t **err)
{
    *code = NULL;
    cleanup_close int name_fd = s_open_script (dir, name, err);
    if (name_fd < 0)
        return NULL;
    json_t *metadata = s_read_json_at (name_fd, S_METADATA, err);
    const char *ext =
        cg_scripts_extension (json_string_value (json_object_get (metadata, "language")));
    if (metadata && !ext) {
        cg_error_set (err, EINVAL, "%s/%s: 'language' is not python, javascript or bash", name,
                      S_METADATA);
        json_decref (metadata);
        return NULL;
    }
    cleanup_free char *file = ext ? cg_strdupf ("script.%s", ext) : NULL;
    if (metadata && !(*code = cg_scripts_read_at (name_fd, file, err))) {
        json_decref (metadata);
        return NULL;
    }
    if (!metadata) {
        cg_error_wrap (err, "script '%s'", name);
        return NULL;
    }
    s_complete (metadata, dir, name);
    return metadata;
}

int
cg_scripts_record_run (const char *dir, const char *name, bool success, cg_error_t **err)
{
    cleanup_close int name_fd = s_open_script (dir, name, err);
    json_t *metadata = name_fd < 0 ? NULL : s_read_json_at (name_fd, S_METADATA, err);
    if (!metadata)
        return -1;
    char now[32];
    cg_utc_now (now, false);
    json_int_t count = json_integer_value (json_object_get (metadata, "run_count"));
    json_object_set_new (metadata, "run_count", json_integer (count + 1));
    json_object_set_new (metadata, "last_run_at", json_string (now));
    json_object_set_new (metadata, "last_run_success", json_boolean (success));
    json_object_del (metadata, "name");
    json_object_del (metadata, "path");
    int rc = s_write_json_at (name_fd, S_METADATA, metadata, err);
    cleanup_close int dir_fd = rc < 0 ? -1 : open (dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir_fd >= 0) {
        s_complete (metadata, dir, name);
        rc = s_index_put (dir_fd, dir, metadata, err);
    }
    json_decref (metadata);
    return rc;
}
