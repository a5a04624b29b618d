/*  cg_kernels — the languages a server offers, from the kernel specs it finds. */
#include "base/cg_kernels.h"
#include "base/cg_fs.h"
#include "base/cg_limits.h"
#include "base/cg_util.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#define S_SPEC_MAX (256 * 1024) /* bytes of one kernel.json */
#define S_DIR_MAX 256           /* entries looked at in one kernelspec directory */

struct cg_kernels {
    cg_language_t languages[CG_KERNELS_MAX];
    size_t count;
};

//  --------------------------------------------------------------------------
//  Names

//  True when NAME is a language name, alias or kernel name: 1 to CG_KERNELS_NAME_MAX
//  bytes of letters, digits and ._+- , starting with a letter or digit.
static bool
s_valid_name (const char *name)
{
    return cg_valid_name (name, CG_KERNELS_NAME_MAX, "._+-");
}

static char *
s_lower (const char *name)
{
    char *copy = cg_xstrdup (name);
    for (char *c = copy; *c; c++)
        *c = (char)tolower ((unsigned char)*c);
    return copy;
}

//  True when LANGUAGE answers to NAME (its name, an alias or its kernel name; any case).
static bool
s_answers (const cg_language_t *language, const char *name)
{
    if (strcasecmp (language->name, name) == 0
        || (language->kernel_name && strcasecmp (language->kernel_name, name) == 0))
        return true;
    for (char **alias = language->aliases; alias && *alias; alias++)
        if (strcasecmp (*alias, name) == 0)
            return true;
    return false;
}

//  True when one of LANGUAGE's aliases is CANDIDATE's name.
static bool
s_answers_alias (const cg_language_t *language, const cg_language_t *candidate)
{
    for (char **alias = language->aliases; alias && *alias; alias++)
        if (strcasecmp (*alias, candidate->name) == 0)
            return true;
    return false;
}

//  bash, the command every server runs (and the sessions know by name): no kernel spec may
//  take its names, though it comes last.
static char *s_bash_names[] = {"sh", "shell", NULL};
static const cg_language_t s_bash = {.name = (char *)"bash", .aliases = s_bash_names};

//  The language that already answers to one of CANDIDATE's names, or NULL.
static const cg_language_t *
s_taken (const cg_kernels_t *self, const cg_language_t *candidate)
{
    for (size_t i = 0; i <= self->count; i++) {
        const cg_language_t *l = i < self->count ? &self->languages[i] : &s_bash;
        if (s_answers (l, candidate->name)
            || (candidate->kernel_name && s_answers (l, candidate->kernel_name)))
            return l;
        for (char **alias = candidate->aliases; alias && *alias; alias++)
            if (s_answers (l, *alias))
                return l;
    }
    return NULL;
}

static void
s_language_clear (cg_language_t *l)
{
    free (l->name);
    cg_strv_free (l->aliases);
    free (l->kernel_name);
    free (l->display_name);
    free (l->title);
    free (l->spec_language);
    free (l->spec_dir);
    free (l->extension);
    json_decref (l->language_info);
    free (l->preinstalled);
    free (l->warmup);
    memset (l, 0, sizeof *l);
}

//  --------------------------------------------------------------------------
//  One spec

//  Fills L from SPEC (DIR/NAME/kernel.json, read). Returns 0, or -1 with *why set (static).
static int
s_from_spec (cg_language_t *l, const char *dir, const char *name, json_t *spec, bool own,
             const char **why)
{
    json_t *cellgate = json_object_get (json_object_get (spec, "metadata"), "cellgate");
    json_t *argv = json_object_get (spec, "argv");
    const char *lang = json_string_value (json_object_get (cellgate, "language"));
    const char *kernel = json_string_value (json_object_get (cellgate, "kernel_name"));
    const char *ext = json_string_value (json_object_get (cellgate, "file_extension"));
    json_t *aliases = json_object_get (cellgate, "aliases");
    json_t *info = json_object_get (cellgate, "language_info");
    if (!json_is_array (argv) || json_array_size (argv) == 0)
        return *why = "its argv is not a non-empty list", -1;
    if (!s_valid_name (lang ? lang : name) || (kernel && !s_valid_name (kernel)))
        return *why = "its name is not 1 to 32 letters, digits and ._+-", -1;
    if (aliases && (!json_is_array (aliases) || json_array_size (aliases) > CG_KERNELS_ALIASES))
        return *why = "metadata.cellgate.aliases is not a list of at most 8 names", -1;
    l->name = s_lower (lang ? lang : name);
    l->kernel_name = cg_xstrdup (kernel ? kernel : name);
    l->aliases = cg_strv_new (json_array_size (aliases));
    size_t n = 0, i;
    json_t *alias;
    json_array_foreach (aliases, i, alias)
    {
        if (!s_valid_name (json_string_value (alias)))
            return *why = "an alias is not 1 to 32 letters, digits and ._+-", -1;
        if (strcasecmp (json_string_value (alias), l->name) != 0) /* "R" for r says nothing */
            l->aliases[n++] = s_lower (json_string_value (alias));
    }
    const char *display = json_string_value (json_object_get (spec, "display_name"));
    const char *spec_language = json_string_value (json_object_get (spec, "language"));
    l->display_name = cg_xstrdup (display ? display : name);
    l->spec_language = cg_xstrdup (spec_language ? spec_language : l->name);
    const char *title = json_string_value (json_object_get (cellgate, "title"));
    l->title = cg_strdupf ("%.64s", title ? title : l->spec_language);
    l->spec_dir = cg_strdupf ("%s/%s", dir, name);
    if (ext && *ext)
        l->extension = cg_xstrdup (ext[0] == '.' ? ext + 1 : ext);
    l->language_info = json_is_object (info) ? json_deep_copy (info)
                                             : json_pack ("{s:s}", "name", l->spec_language);
    json_t *have = json_object_get (cellgate, "preinstalled");
    if (json_is_array (have) && json_array_size (have) > 0 && json_array_size (have) <= 32) {
        char *text = NULL;
        size_t size = 0;
        FILE *out = open_memstream (&text, &size);
        size_t count = json_array_size (have);
        for (i = 0; i < count; i++)
            fprintf (out, "%s%.64s",
                     i == 0          ? ""
                     : i + 1 < count ? ", "
                                     : " and ",
                     json_string_value (json_array_get (have, i)) ?: "?");
        fclose (out);
        l->preinstalled = text;
    }
    const char *warmup = json_string_value (json_object_get (cellgate, "warmup"));
    if (warmup && *warmup)
        l->warmup = cg_strdupf ("%.4096s", warmup);
    l->own = own;
    return 0;
}

//  Adds DIR/NAME/kernel.json to SELF, or a line to NOTES saying why not.
static void
s_add_spec (cg_kernels_t *self, const char *dir, const char *name, bool own, char ***notes)
{
    cleanup_free char *path = cg_strdupf ("%s/%s/kernel.json", dir, name);
    cleanup_free char *why_owned = NULL;
    const char *why = NULL;
    cg_error_t *err = NULL;
    cleanup_free char *text = cg_read_file (path, S_SPEC_MAX, NULL, &err);
    json_error_t jerr;
    json_t *spec = text ? json_loads (text, JSON_REJECT_DUPLICATES, &jerr) : NULL;
    cg_language_t l = {0};
    const cg_language_t *shadow = NULL;
    if (!text)
        why = why_owned = cg_xstrdup (cg_error_message (err));
    else if (!json_is_object (spec))
        why = why_owned = cg_strdupf ("not a JSON object (%s)", spec ? "" : jerr.text);
    else if (self->count >= CG_KERNELS_MAX - 1) /* bash keeps the last place */
        why = "the catalogue holds " CG_STR (CG_KERNELS_MAX) " languages, bash included";
    else if (s_from_spec (&l, dir, name, spec, own, &why) == 0 && (shadow = s_taken (self, &l)))
        why = why_owned = cg_strdupf ("shadowed by the language %s", shadow->name);
    cg_error_destroy (&err);
    json_decref (spec);
    if (!why) {
        self->languages[self->count++] = l;
        return;
    }
    s_language_clear (&l);
    if (notes) {
        size_t count = cg_strv_count ((const char *const *)*notes);
        *notes = cg_xrealloc (*notes, (count + 2) * sizeof (char *));
        (*notes)[count] = cg_strdupf ("kernel spec %s left out: %s", path, why);
        (*notes)[count + 1] = NULL;
    }
}

static int
s_compare_names (const void *a, const void *b)
{
    const char *x = *(const char *const *)a, *y = *(const char *const *)b;
    //  Python first (execute_code's default), then by name.
    if ((strcmp (x, "python") == 0) != (strcmp (y, "python") == 0))
        return strcmp (x, "python") == 0 ? -1 : 1;
    return strcmp (x, y);
}

//  Adds every <DIR>/<name>/kernel.json, in name order (python first).
static void
s_add_dir (cg_kernels_t *self, const char *dir, bool own, char ***notes)
{
    DIR *d = opendir (dir);
    if (!d)
        return;
    char *names[S_DIR_MAX];
    size_t count = 0;
    struct dirent *entry;
    while ((entry = readdir (d)) && count < S_DIR_MAX)
        if (entry->d_name[0] != '.'
            && (entry->d_type == DT_DIR || entry->d_type == DT_UNKNOWN
                || entry->d_type == DT_LNK)) {
            cleanup_free char *spec = cg_strdupf ("%s/%s/kernel.json", dir, entry->d_name);
            if (access (spec, F_OK) == 0)
                names[count++] = cg_xstrdup (entry->d_name);
        }
    closedir (d);
    qsort (names, count, sizeof *names, s_compare_names);
    for (size_t i = 0; i < count; i++) {
        s_add_spec (self, dir, names[i], own, notes);
        free (names[i]);
    }
}

//  --------------------------------------------------------------------------
//  The catalogue

static void
s_add_bash (cg_kernels_t *self)
{
    cg_language_t *l = &self->languages[self->count++];
    l->name = cg_xstrdup ("bash");
    l->aliases = cg_strv_new (2);
    l->aliases[0] = cg_xstrdup ("sh");
    l->aliases[1] = cg_xstrdup ("shell");
    l->display_name = cg_xstrdup ("bash");
    l->title = cg_xstrdup ("bash");
    l->spec_language = cg_xstrdup ("bash");
    l->extension = cg_xstrdup ("sh");
    l->language_info = json_pack ("{s:s}", "name", "bash");
    l->command = true;
    l->own = true;
}

//  Keeps only the languages ONLY names. Returns 0, or -1 with *err for a name none offers.
static int
s_keep_only (cg_kernels_t *self, const char *only, cg_error_t **err)
{
    bool keep[CG_KERNELS_MAX] = {false};
    cleanup_free char *list = cg_xstrdup (only);
    char *save = NULL;
    for (char *name = strtok_r (list, ", ", &save); name; name = strtok_r (NULL, ", ", &save)) {
        const cg_language_t *l = cg_kernels_find (self, name);
        if (!l) {
            cleanup_free char *have = cg_kernels_describe (self);
            return cg_error_set (err, EINVAL, "--languages: no kernel spec offers '%s' (found: %s)",
                                 name, have);
        }
        keep[l - self->languages] = true;
    }
    size_t kept = 0;
    for (size_t i = 0; i < self->count; i++)
        if (keep[i])
            self->languages[kept++] = self->languages[i];
        else
            s_language_clear (&self->languages[i]);
    self->count = kept;
    return 0;
}

cg_kernels_t *
cg_kernels_load (const char *own_dir, const char *const *more, const char *only, char ***notes,
                 cg_error_t **err)
{
    if (notes)
        *notes = NULL;
    cg_kernels_t *self = cg_xcalloc (1, sizeof *self);
    s_add_dir (self, own_dir, true, notes);
    if (self->count == 0) {
        cg_kernels_destroy (&self);
        cg_error_set (err, ENOENT, "no kernel spec in %s (--kernels-dir)", own_dir);
        return NULL;
    }
    for (size_t i = 0; more && more[i]; i++)
        s_add_dir (self, more[i], false, notes);
    s_add_bash (self);
    if (only && *only && strcmp (only, "all") != 0 && s_keep_only (self, only, err) < 0) {
        cg_kernels_destroy (&self);
        return NULL;
    }
    return self;
}

void
cg_kernels_destroy (cg_kernels_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    for (size_t i = 0; i < (*self_p)->count; i++)
        s_language_clear (&(*self_p)->languages[i]);
    free (*self_p);
    *self_p = NULL;
}

static cg_kernels_t *s_installed;
static pthread_once_t s_default_once = PTHREAD_ONCE_INIT;

void
cg_kernels_install (cg_kernels_t *self)
{
    cg_kernels_destroy (&s_installed);
    s_installed = self;
}

static void
s_load_default (void)
{
    if (!s_installed)
        s_installed = cg_kernels_load (CG_KERNELS_DIR, NULL, NULL, NULL, NULL);
    if (!s_installed) {
        s_installed = cg_xcalloc (1, sizeof *s_installed);
        s_add_bash (s_installed);
    }
}

const cg_kernels_t *
cg_kernels (void)
{
    if (!s_installed)
        pthread_once (&s_default_once, s_load_default);
    return s_installed;
}

size_t
cg_kernels_count (const cg_kernels_t *self)
{
    return self->count;
}

const cg_language_t *
cg_kernels_at (const cg_kernels_t *self, size_t index)
{
    return index < self->count ? &self->languages[index] : NULL;
}

const cg_language_t *
cg_kernels_find (const cg_kernels_t *self, const char *name)
{
    for (size_t i = 0; name && i < self->count; i++)
        if (s_answers (&self->languages[i], name))
            return &self->languages[i];
    return NULL;
}

const cg_language_t *
cg_kernels_by_kernel_name (const cg_kernels_t *self, const char *kernel_name)
{
    for (size_t i = 0; kernel_name && i < self->count; i++)
        if (self->languages[i].kernel_name
            && strcmp (self->languages[i].kernel_name, kernel_name) == 0)
            return &self->languages[i];
    return NULL;
}

int
cg_kernels_index (const cg_kernels_t *self, const cg_language_t *language)
{
    return language >= self->languages && language < self->languages + self->count
               ? (int)(language - self->languages)
               : -1;
}

char *
cg_kernels_describe (const cg_kernels_t *self)
{
    char *text = NULL;
    size_t size = 0;
    FILE *out = open_memstream (&text, &size);
    for (size_t i = 0; i < self->count; i++) {
        const cg_language_t *l = &self->languages[i];
        fprintf (out, "%s%s", i ? ", " : "", l->name);
        size_t said = 0;
        for (size_t a = 0; l->aliases && l->aliases[a]; a++)
            if (strcmp (l->aliases[a], l->name) != 0)
                fprintf (out, "%s%s", said++ ? ", " : " (", l->aliases[a]);
        //  The kernel name answers too (python3, ir).
        cg_language_t kernel = {.name = l->kernel_name};
        if (l->kernel_name && strcmp (l->kernel_name, l->name) != 0
            && !s_answers_alias (l, &kernel))
            fprintf (out, "%s%s", said++ ? ", " : " (", l->kernel_name);
        if (said)
            fputc (')', out);
    }
    fclose (out);
    return text;
}

char *
cg_kernels_names (const cg_kernels_t *self, const char *sep)
{
    char *text = NULL;
    size_t size = 0;
    FILE *out = open_memstream (&text, &size);
    for (size_t i = 0; i < self->count; i++)
        fprintf (out, "%s%s", i ? sep : "", self->languages[i].name);
    fclose (out);
    return text;
}

char *
cg_kernels_preinstalled (const cg_kernels_t *self)
{
    char *text = NULL;
    size_t size = 0;
    FILE *out = open_memstream (&text, &size);
    for (size_t i = 0; i < self->count; i++) {
        const cg_language_t *l = &self->languages[i];
        if (l->preinstalled)
            fprintf (out, "%s%s has %s.", size ? " " : "", l->title, l->preinstalled);
        fflush (out);
    }
    fclose (out);
    return text;
}

json_t *
cg_kernels_enum (const cg_kernels_t *self, bool kernels_only)
{
    json_t *names = json_array ();
    for (size_t i = 0; i < self->count; i++)
        if (!kernels_only || !self->languages[i].command)
            json_array_append_new (names, json_string (self->languages[i].name));
    return names;
}
