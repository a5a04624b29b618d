/*  cg_state — the state dir's format (cg_state.h). */
#define _GNU_SOURCE
#include "bridge/cg_state.h"
#include "base/cg_fs.h"
#include "base/cg_util.h"
#include "base/cg_version.h"

#include <dirent.h>
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#define S_FILE "format"
//  A format file is a small JSON object; anything larger is not one.
#define S_FILE_MAX 4096

//  A migration from format FROM to FROM + 1: what it does, and the step (NULL: the layout
//  is the same, only the file is new).
typedef struct {
    int from;
    const char *what;
    int (*step) (const char *state_dir, cg_error_t **err);
} s_migration_t;

static const s_migration_t s_migrations[] = {
    {0,
     "a state dir of cellgate 0.1.0 or before, which had no format file: the layout is format 1's",
     NULL},
};

_Static_assert(sizeof s_migrations / sizeof s_migrations[0] == CG_STATE_FORMAT,
               "one migration to each format after 0");

//  True when DIR has entries (a state dir in use), false when it is empty or missing.
static bool
s_in_use (const char *dir)
{
    DIR *d = opendir (dir);
    if (!d)
        return false;
    bool used = false;
    struct dirent *entry;
    while (!used && (entry = readdir (d)))
        used = strcmp (entry->d_name, ".") != 0 && strcmp (entry->d_name, "..") != 0;
    closedir (d);
    return used;
}

//  Reads the format of STATE_DIR into *FORMAT (0: in use with no file; -1: new), and the
//  version that wrote it into *BY (new, or NULL). Returns 0, or -1 with *err set.
static int
s_read (const char *state_dir, int *format, char **by, cg_error_t **err)
{
    cleanup_free char *path = cg_strdupf ("%s/" S_FILE, state_dir);
    struct stat st;
    *by = NULL;
    if (lstat (path, &st) < 0) {
        if (errno != ENOENT) {
            cg_error_set (err, errno, "state dir %s: %s: %s", state_dir, path, strerror (errno));
            return -1;
        }
        *format = s_in_use (state_dir) ? 0 : -1;
        return 0;
    }
    json_t *json = S_ISREG (st.st_mode) ? cg_read_json_object (path, S_FILE_MAX) : NULL;
    json_t *value = json_object_get (json, "format");
    if (!json_is_integer (value) || json_integer_value (value) < 1
        || json_integer_value (value) > 1000000) {
        json_decref (json);
        cg_error_set (err, EINVAL,
                      "state dir %s: %s is not a cellgate format file (a regular file of JSON "
                      "{\"format\": N}, at most %d bytes); this cellgate writes format %d",
                      state_dir, path, S_FILE_MAX, CG_STATE_FORMAT);
        return -1;
    }
    *format = (int)json_integer_value (value);
    const char *writer = json_string_value (json_object_get (json, "written_by"));
    *by = cg_xstrdup (writer ? writer : "an unknown version");
    json_decref (json);
    return 0;
}

static int
s_write (const char *state_dir, cg_error_t **err)
{
    return cg_write_json (
        state_dir, S_FILE,
        json_pack ("{s:i, s:s}", "format", CG_STATE_FORMAT, "written_by", CG_VERSION), 0600, err);
}

int
cg_state_open (const char *state_dir, int *format_p, cg_error_t **err)
{
    //  0755, as the backends made it before there was a format (what is private in it is 0600
    //  or in 0700 directories).
    if (cg_mkdir_p (state_dir, 0755, err) < 0)
        return -1;
    int format = 0;
    cleanup_free char *by = NULL;
    if (s_read (state_dir, &format, &by, err) < 0)
        return -1;
    if (format_p)
        *format_p = format;
    if (format > CG_STATE_FORMAT) {
        cg_error_set (err, EPROTO,
                      "state dir %s has format %d, written by cellgate %s; this cellgate (%s) "
                      "reads formats up to %d and leaves it alone: run that release or a later "
                      "one, or give this one another --state-dir",
                      state_dir, format, by, CG_VERSION, CG_STATE_FORMAT);
        return -1;
    }
    if (format == CG_STATE_FORMAT)
        return 0;
    for (int from = format < 0 ? CG_STATE_FORMAT : format; from < CG_STATE_FORMAT; from++) {
        const s_migration_t *migration = &s_migrations[from];
        cg_log (2, "state dir %s: format %d to %d: %s", state_dir, from, from + 1, migration->what);
        if (migration->step && migration->step (state_dir, err) < 0)
            return -1;
    }
    return s_write (state_dir, err);
}
