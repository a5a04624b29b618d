/*  cg_scripts — the saved-script library on the host: one directory per script under the
    scripts directory (<name>/script.<py|js|sh> and <name>/metadata.json, earlier versions
    in <name>/versions/<n>/), and index.json at the top holding every script's metadata.
    People may read and edit these files; the index is rebuilt from the directories when
    it is missing or unreadable. Every file is written atomically (temporary + rename) and
    nothing below the scripts directory is reached through a symbolic link. */
#ifndef CG_SCRIPTS_H
#define CG_SCRIPTS_H

#include "base/cg_error.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#define CG_SCRIPTS_NAME_MAX 64
#define CG_SCRIPTS_TAGS_MAX 32   /* tags, and packages, per script */
#define CG_SCRIPTS_TAG_MAX 64    /* characters in one tag or package name */
#define CG_SCRIPTS_TEXT_MAX 4096 /* characters in a description */

/*  The library's caps (settings --script-versions, --max-scripts, --max-scripts-mb). */
typedef struct {
    size_t versions; /* earlier versions kept per script: past it the oldest are removed */
    size_t scripts;  /* scripts in the library: a new name past it is refused */
    size_t bytes;    /* bytes of every file below the library: a save past it is refused */
} cg_scripts_limits_t;

/*  What a well-formed script name is, for error messages. */
#define CG_SCRIPTS_NAME_RULE                                                                   \
    "a script name is 1 to 64 characters: letters, digits, '-', '_' and '.', starting with a " \
    "letter or digit (no '/', no '..', not index.json)"

/*  Returns true when NAME is a well-formed script name (CG_SCRIPTS_NAME_RULE). */
bool cg_scripts_valid_name (const char *name);

/*  Returns the file extension of LANGUAGE, as its kernel spec names it (python: "py",
    javascript: "js", r: "R", bash: "sh"; "txt" when the spec names none), or NULL for a
    language the catalogue does not offer. */
const char *cg_scripts_extension (const char *language);

/*  Saves CODE as script NAME in DIR (created when missing) within LIMITS. FIELDS (borrowed)
    holds description and language (strings, required; language canonical), tags and
    packages (arrays of strings, optional) and source_execution_id (string, optional). When
    NAME exists its script and metadata (without their own list of versions) move to
    <name>/versions/<n>/ first and the new metadata lists them in "versions", the newest
    LIMITS->versions of them: older ones are removed. created_at and script_id carry over,
    "version" counts up, the run counters start again. Returns the new metadata (name,
    script_id, version, path of the script file, created_at, saved_at, ...; and
    "versions_pruned", how many old versions this save removed) the caller owns, or NULL
    with *err set: EINVAL for a bad name or field, ELOOP when <name> is a symbolic link,
    EDQUOT when the library holds LIMITS->scripts scripts already (for a new name) or the
    save would take it past LIMITS->bytes (nothing is changed then), or the file system's
    error. */
json_t *cg_scripts_save (const char *dir, const char *name, json_t *fields, const char *code,
                         const cg_scripts_limits_t *limits, cg_error_t **err);

/*  Returns the version number of a script's METADATA (borrowed): its "version", or for a
    library written before versions were numbered, one past its last kept version. */
int cg_scripts_version_of (json_t *metadata);

/*  Returns the bytes of every regular file below DIR (never through a link), as last
    counted: counted again at the first call for DIR and now and then, kept up to date by
    cg_scripts_save in between. 0 when DIR does not exist. */
size_t cg_scripts_bytes (const char *dir);

/*  Reads script NAME from DIR: returns its metadata (with "name" and "path") the caller
    owns and sets *code to its code (caller frees), or returns NULL with *err set: ENOENT
    when there is no such script, EINVAL for a bad name, ELOOP for a symbolic link. */
json_t *cg_scripts_get (const char *dir, const char *name, char **code, cg_error_t **err);

/*  Returns the metadata of every script in DIR, sorted by name, as a new array the caller
    owns (empty when DIR does not exist). Reads index.json; rebuilds it first when it is
    missing or not a valid index. Returns NULL with *err set only when DIR cannot be read. */
json_t *cg_scripts_list (const char *dir, cg_error_t **err);

/*  Rewrites DIR's index.json from the script directories (a directory without readable
    metadata is skipped with a warning). Returns 0, or -1 with *err set. */
int cg_scripts_rebuild_index (const char *dir, cg_error_t **err);

/*  Searches DIR's scripts for the words of QUERY (case-insensitive, with a light stemming
    of English endings) in their names, tags, descriptions and code. Returns a new array
    [{name, description, language, relevance, score}], best first (a name match outranks a
    tag match, then the description, then the code), relevance naming the best field that
    matched: "name_match", "tag_match", "description_match" or "code_match". LANGUAGE
    (may be NULL) keeps that language's scripts only. At most LIMIT results. Caller owns
    the result; NULL with *err set when DIR cannot be read. */
json_t *cg_scripts_search (const char *dir, const char *query, const char *language, size_t limit,
                           cg_error_t **err);

/*  Records a finished run of script NAME in DIR: run_count + 1, last_run_at now,
    last_run_success SUCCESS, in its metadata and the index. Returns 0, or -1 with *err
    set (ENOENT when the script is gone). */
int cg_scripts_record_run (const char *dir, const char *name, bool success, cg_error_t **err);

#endif
