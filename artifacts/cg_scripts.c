/*  cg_scripts — the saved-script library: files under the scripts directory. */
#include "cg_scripts.h"
#include "../bridge/cg_util.h"

#include <assert.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#define S_INDEX "index.json"
#define S_METADATA "metadata.json"
#define S_FILE_MAX (16 * 1024 * 1024) /* largest metadata, script or index read */
#define S_QUERY_WORDS 16
#define S_CACHED_CODE_MAX (64 * 1024) /* larger code files are read at each search */

static const char *s_extensions[][2] = {
    {"python", "py"}, {"javascript", "js"}, {"bash", "sh"}, {NULL, NULL}};

bool
cg_scripts_valid_name (const char *name)
{
    size_t len = name ? strlen (name) : 0;
    if (len == 0 || len > CG_SCRIPTS_NAME_MAX || !isalnum ((unsigned char)name[0]))
        return false;
    for (size_t i = 0; i < len; i++)
        if (!isalnum ((unsigned char)name[i]) && !strchr ("-_.", name[i]))
            return false;
    return strstr (name, "..") == NULL && strcmp (name, S_INDEX) != 0;
}

const char *
cg_scripts_extension (const char *language)
{
    for (int i = 0; language && s_extensions[i][0]; i++)
        if (strcmp (language, s_extensions[i][0]) == 0)
            return s_extensions[i][1];
    return NULL;
}

//  --------------------------------------------------------------------------
//  Files, relative to directory fds, never through a link

//  Opens the scripts directory DIR, creating it when CREATE. Returns an fd or -1 with *err.
static int
s_open_top (const char *dir, bool create, cg_error_t **err)
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
static int
s_open_dir_at (int dir_fd, const char *name, bool create, cg_error_t **err)
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
static char *
s_read_at (int dir_fd, const char *name, cg_error_t **err)
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
    cleanup_free char *text = s_read_at (dir_fd, name, err);
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
        cleanup_close int name_fd = s_open_dir_at (dir_fd, entry->d_name, false, &err);
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
static json_t *
s_index (int dir_fd, const char *dir)
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
    json_t *scripts = s_index (dir_fd, dir);
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
    cleanup_close int dir_fd = s_open_top (dir, true, err);
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
    cleanup_close int dir_fd = s_open_top (dir, false, err);
    return dir_fd < 0 ? NULL : s_index (dir_fd, dir);
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

//  Moves NAME_FD's current script files and metadata into versions/<n>/, N one past the
//  last. Returns N, 0 when there was nothing to keep, or -1 with *err set.
static int
s_keep_version (int name_fd, json_t *old, cg_error_t **err)
{
    int last = 0;
    size_t i;
    json_t *entry;
    json_array_foreach (json_object_get (old, "versions"), i, entry)
    {
        int n = (int)json_integer_value (json_object_get (entry, "version"));
        last = n > last ? n : last;
    }
    cleanup_close int versions_fd = s_open_dir_at (name_fd, "versions", true, err);
    if (versions_fd < 0)
        return -1;
    char number[16];
    int n = last;
    do
        snprintf (number, sizeof number, "%d", ++n);
    while (mkdirat (versions_fd, number, 0755) < 0 && errno == EEXIST);
    cleanup_close int version_fd = s_open_dir_at (versions_fd, number, false, err);
    if (version_fd < 0)
        return -1;
    const char *files[] = {S_METADATA, "script.py", "script.js", "script.sh", NULL};
    int moved = 0;
    for (int f = 0; files[f]; f++) {
        if (renameat (name_fd, files[f], version_fd, files[f]) == 0)
            moved++;
        else if (errno != ENOENT)
            return cg_error_set (err, errno, "keep version %d of %s: %s", n, files[f],
                                 strerror (errno));
    }
    if (moved == 0) {
        unlinkat (versions_fd, number, AT_REMOVEDIR);
        unlinkat (name_fd, "versions", AT_REMOVEDIR); /* only when empty: a first save */
        return 0;
    }
    return n;
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
    return metadata;
}

json_t *
cg_scripts_save (const char *dir, const char *name, json_t *fields, const char *code,
                 cg_error_t **err)
{
    if (!cg_scripts_valid_name (name)) {
        cg_error_set (err, EINVAL, "%s", CG_SCRIPTS_NAME_RULE);
        return NULL;
    }
    const char *ext =
        cg_scripts_extension (json_string_value (json_object_get (fields, "language")));
    json_t *description = json_object_get (fields, "description");
    if (!ext || !json_is_string (description)
        || json_string_length (description) > CG_SCRIPTS_TEXT_MAX
        || s_check_list (fields, "tags", err) < 0 || s_check_list (fields, "packages", err) < 0) {
        if (!*err)
            cg_error_set (err, EINVAL,
                          "'description' (at most %d characters) and 'language' (python, "
                          "javascript or bash) are required",
                          CG_SCRIPTS_TEXT_MAX);
        return NULL;
    }
    cleanup_close int dir_fd = s_open_top (dir, true, err);
    cleanup_close int name_fd = dir_fd < 0 ? -1 : s_open_dir_at (dir_fd, name, true, err);
    if (name_fd < 0)
        return NULL;
    cg_error_t *old_err = NULL;
    json_t *old = s_read_json_at (name_fd, S_METADATA, &old_err);
    cg_error_destroy (&old_err);
    char now[32];
    cg_utc_now (now, false);
    int version = s_keep_version (name_fd, old, err);
    if (version < 0) {
        json_decref (old);
        return NULL;
    }
    json_t *metadata = s_new_metadata (fields, old, now);
    json_t *versions = json_object_get (metadata, "versions");
    json_array_extend (versions, json_object_get (old, "versions"));
    if (version > 0)
        json_array_append_new (versions, json_pack ("{s:i, s:O?, s:O?}", "version", version,
                                                    "saved_at", json_object_get (old, "saved_at"),
                                                    "language", json_object_get (old, "language")));
    json_decref (old);
    size_t i;
    json_t *entry;
    json_array_foreach (versions, i, entry)
    {
        const char *language = json_string_value (json_object_get (entry, "language"));
        const char *old_ext = cg_scripts_extension (language);
        json_object_set_new (
            entry, "path",
            json_sprintf ("%s/%s/versions/%d/script.%s", dir, name,
                          (int)json_integer_value (json_object_get (entry, "version")),
                          old_ext ? old_ext : "txt"));
    }
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
    int fd = s_open_dir_at (dir_fd, name, false, err);
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
    if (metadata && !(*code = s_read_at (name_fd, file, err))) {
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

//  --------------------------------------------------------------------------
//  Search

//  Returns true when TEXT contains WORD (lower case), ignoring case.
static bool
s_contains (const char *text, const char *word)
{
    size_t len = strlen (word);
    for (const char *p = text; p && *p; p++)
        if (strncasecmp (p, word, len) == 0)
            return true;
    return false;
}

//  Splits QUERY into at most S_QUERY_WORDS lower-case stems in WORDS (freed by the caller).
static size_t
s_words (const char *query, char **words)
{
    size_t count = 0;
    for (const char *p = query; *p && count < S_QUERY_WORDS;) {
        while (*p && !isalnum ((unsigned char)*p))
            p++;
        const char *start = p;
        while (*p && isalnum ((unsigned char)*p))
            p++;
        size_t len = (size_t)(p - start);
        if (len == 0)
            continue;
        char *word = cg_xstrndup (start, len);
        for (size_t i = 0; i < len; i++)
            word[i] = (char)tolower ((unsigned char)word[i]);
        //  A light stemming: "parsing", "parses", "parsed" and "parse" all find "pars".
        const char *endings[] = {"ing", "es", "ed", "s", NULL};
        for (int e = 0; endings[e]; e++) {
            size_t elen = strlen (endings[e]);
            if (len > elen + 2 && strcmp (word + len - elen, endings[e]) == 0) {
                word[len - elen] = '\0';
                break;
            }
        }
        words[count++] = word;
    }
    return count;
}

//  The search's memory of the last scripts directory searched: its index as read and each
//  script's code in lower case, used while index.json and each code file are unchanged
//  (same inode, size and mtime), so that a search neither parses the index nor reads
//  every code file again. Guarded by s_cache_lock.
typedef struct {
    char *text;     /* the code in lower case, or NULL: not read yet */
    struct stat st; /* the code file when read */
} s_code_t;

static struct {
    char *dir;            /* the scripts directory, or NULL: empty */
    struct stat index_st; /* index.json when read (st_ino 0: do not trust) */
    json_t *scripts;      /* the index's scripts (owned, never handed out) */
    s_code_t *code;       /* one per script, in the index's order */
} s_cache;
static pthread_mutex_t s_cache_lock = PTHREAD_MUTEX_INITIALIZER;

//  True when A and B are the same version of one file.
static bool
s_same_file (const struct stat *a, const struct stat *b)
{
    return a->st_ino != 0 && a->st_dev == b->st_dev && a->st_ino == b->st_ino
           && a->st_size == b->st_size && a->st_mtim.tv_sec == b->st_mtim.tv_sec
           && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

static void
s_cache_clear (void)
{
    for (size_t i = 0; i < json_array_size (s_cache.scripts); i++)
        free (s_cache.code[i].text);
    free (s_cache.code);
    json_decref (s_cache.scripts);
    free (s_cache.dir);
    memset (&s_cache, 0, sizeof s_cache);
}

//  Makes the cache hold DIR_FD's index (DIR names it), reading it again when index.json
//  changed. Call with s_cache_lock held.
static void
s_cache_load (int dir_fd, const char *dir)
{
    struct stat before, after;
    if (fstatat (dir_fd, S_INDEX, &before, AT_SYMLINK_NOFOLLOW) < 0)
        memset (&before, 0, sizeof before);
    if (s_cache.dir && strcmp (s_cache.dir, dir) == 0 && s_same_file (&s_cache.index_st, &before))
        return;
    s_cache_clear ();
    s_cache.scripts = s_index (dir_fd, dir);
    s_cache.dir = cg_xstrdup (dir);
    s_cache.code = cg_xcalloc (json_array_size (s_cache.scripts) + 1, sizeof (s_code_t));
    //  Changed while read (or rebuilt just now): not trusted, read again next time.
    if (fstatat (dir_fd, S_INDEX, &after, AT_SYMLINK_NOFOLLOW) == 0
        && s_same_file (&before, &after))
        s_cache.index_st = after;
}

//  Returns the code of the cache's script AT (in DIR_FD), lower case, read again when its
//  file changed; *SPARE holds a copy too large to keep (caller frees). Never NULL.
static const char *
s_cache_code (int dir_fd, size_t at, char **spare)
{
    json_t *script = json_array_get (s_cache.scripts, at);
    const char *name = json_string_value (json_object_get (script, "name"));
    const char *ext =
        cg_scripts_extension (json_string_value (json_object_get (script, "language")));
    cleanup_free char *path = cg_strdupf ("%s/script.%s", name, ext ? ext : "txt");
    s_code_t *code = &s_cache.code[at];
    struct stat st;
    if (fstatat (dir_fd, path, &st, AT_SYMLINK_NOFOLLOW) < 0)
        memset (&st, 0, sizeof st);
    if (code->text && s_same_file (&code->st, &st))
        return code->text;
    free (code->text);
    code->text = NULL;
    //  Read as before, relative to the directory fds and never through a link.
    cg_error_t *err = NULL;
    cleanup_close int name_fd = s_open_dir_at (dir_fd, name, false, &err);
    char *text = name_fd >= 0 ? s_read_at (name_fd, path + strlen (name) + 1, &err) : NULL;
    cg_error_destroy (&err);
    if (!text)
        text = cg_xstrdup ("");
    for (char *c = text; *c; c++)
        *c = (char)tolower ((unsigned char)*c);
    if (strlen (text) > S_CACHED_CODE_MAX || st.st_ino == 0)
        return *spare = text;
    code->text = text;
    code->st = st;
    return text;
}

enum { S_CODE = 1, S_DESCRIPTION = 2, S_TAG = 4, S_NAME = 8 };

//  The weight of the best field of the cache's script AT (in DIR_FD) that holds WORD; 0
//  when none does. *CODE is its code once read, *SPARE as s_cache_code's.
static int
s_word_weight (int dir_fd, size_t at, const char *word, const char **code, char **spare)
{
    json_t *script = json_array_get (s_cache.scripts, at);
    if (s_contains (json_string_value (json_object_get (script, "name")), word))
        return S_NAME;
    size_t i;
    json_t *tag;
    json_array_foreach (json_object_get (script, "tags"), i,
                        tag) if (s_contains (json_string_value (tag), word)) return S_TAG;
    if (s_contains (json_string_value (json_object_get (script, "description")), word))
        return S_DESCRIPTION;
    if (!*code)
        *code = s_cache_code (dir_fd, at, spare);
    return strstr (*code, word) ? S_CODE : 0;
}

static int
s_by_score (const void *a, const void *b)
{
    const json_t *x = *(json_t *const *)a, *y = *(json_t *const *)b;
    json_int_t sx = json_integer_value (json_object_get (x, "score"));
    json_int_t sy = json_integer_value (json_object_get (y, "score"));
    if (sx != sy)
        return sx > sy ? -1 : 1;
    return strcmp (json_string_value (json_object_get (x, "name")),
                   json_string_value (json_object_get (y, "name")));
}

json_t *
cg_scripts_search (const char *dir, const char *query, const char *language, size_t limit,
                   cg_error_t **err)
{
    struct stat st;
    if (stat (dir, &st) < 0 && errno == ENOENT)
        return json_array ();
    cleanup_close int dir_fd = s_open_top (dir, false, err);
    if (dir_fd < 0)
        return NULL;
    char *words[S_QUERY_WORDS];
    size_t nwords = s_words (query, words);
    pthread_mutex_lock (&s_cache_lock);
    s_cache_load (dir_fd, dir);
    size_t n = json_array_size (s_cache.scripts), found = 0;
    json_t **hits = cg_xcalloc (n ? n : 1, sizeof (json_t *));
    for (size_t i = 0; i < n; i++) {
        json_t *script = json_array_get (s_cache.scripts, i);
        const char *lang = json_string_value (json_object_get (script, "language"));
        if (language && (!lang || strcmp (language, lang) != 0))
            continue;
        const char *code = NULL;
        cleanup_free char *spare = NULL;
        int score = 0, best = 0;
        for (size_t w = 0; w < nwords; w++) {
            int weight = s_word_weight (dir_fd, i, words[w], &code, &spare);
            score += weight;
            best = weight > best ? weight : best;
        }
        if (best == 0)
            continue;
        const char *relevance = best == S_NAME          ? "name_match"
                                : best == S_TAG         ? "tag_match"
                                : best == S_DESCRIPTION ? "description_match"
                                                        : "code_match";
        //  Copies: the cache's values are never shared with the caller.
        const char *description = json_string_value (json_object_get (script, "description"));
        hits[found++] =
            json_pack ("{s:s, s:s?, s:s?, s:s, s:i}", "name",
                       json_string_value (json_object_get (script, "name")), "description",
                       description, "language", lang, "relevance", relevance, "score", score);
    }
    pthread_mutex_unlock (&s_cache_lock);
    qsort (hits, found, sizeof (json_t *), s_by_score);
    json_t *results = json_array ();
    for (size_t i = 0; i < found; i++)
        if (i < limit)
            json_array_append_new (results, hits[i]);
        else
            json_decref (hits[i]);
    free (hits);
    for (size_t w = 0; w < nwords; w++)
        free (words[w]);
    return results;
}
