/*  cg_scripts_search — search_scripts over the saved-script library, with a cache of the
    index and of each script's code in lower case. */
#include "artifacts/cg_scripts.h"
#include "artifacts/cg_scripts_int.h"
#include "base/cg_util.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#define S_INDEX CG_SCRIPTS_INDEX
#define S_QUERY_WORDS 16
#define S_CACHED_CODE_MAX (64 * 1024) /* larger code files are read at each search */

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
    s_cache.scripts = cg_scripts_index (dir_fd, dir);
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
    cleanup_close int name_fd = cg_scripts_open_dir_at (dir_fd, name, false, &err);
    char *text = name_fd >= 0 ? cg_scripts_read_at (name_fd, path + strlen (name) + 1, &err) : NULL;
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
    cleanup_close int dir_fd = cg_scripts_open_top (dir, false, err);
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
