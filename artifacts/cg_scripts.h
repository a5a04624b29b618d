/*  cg_scripts — the saved-script library on the host: one directory per script under the
    scripts directory (<name>/script.<py|js|sh> and <name>/metadata.json, earlier versions
    in <name>/versions/<n>/), and index.json at the top holding every script's metadata.
    People may read and edit these files; the index is rebuilt from the directories when
    it is missing or unreadable. Every file is written atomically (temporary + rename) and
    nothing below the scripts directory is reached through a symbolic link. */
#ifndef CG_SCRIPTS_H
#define CG_SCRIPTS_H

#include "../bridge/cg_error.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#define CG_SCRIPTS_NAME_MAX 64
#define CG_SCRIPTS_TAGS_MAX 32     /* tags, and packages, per script */
#define CG_SCRIPTS_TAG_MAX 64      /* characters in one tag or package name */
#define CG_SCRIPTS_TEXT_MAX 4096   /* characters in a description */
#define CG_SCRIPTS_VERSIONS_MAX 50 /* earlier versions kept per name; the oldest go first */

/*  What a well-formed script name is, for error messages. */
#define CG_SCRIPTS_NAME_RULE                                                                   \
    "a script name is 1 to 64 characters: letters, digits, '-', '_' and '.', starting with a " \
    "letter or digit (no '/', no '..', not index.json)"

/*  Returns true when NAME is a well-formed script name (CG_SCRIPTS_NAME_RULE). */
bool cg_scripts_valid_name (const char *name);

/*  Returns the file extension of a canonical LANGUAGE (python: "py", javascript: "js",
    bash: "sh"), or NULL for any other. */
const char *cg_scripts_extension (const char *language);

/*  Saves CODE as script NAME in DIR (created when missing). FIELDS (borrowed) holds
    description and language (strings, required; language canonical), tags and packages
    (arrays of strings, optional) and source_execution_id (string, optional). When NAME
    exists its script and metadata move to <name>/versions/<n>/ first and the new metadata
    lists them in "versions"; created_at and script_id carry over, the run counters start
    again. Returns the new metadata (name, script_id, path of the script file, created_at,
    saved_at, ...) the caller owns, or NULL with *err set: EINVAL for a bad name or field,
    ELOOP when <name> is a symbolic link, or the file system's error. */
json_t *cg_scripts_save (const char *dir, const char *name, json_t *fields, const char *code,
                         cg_error_t **err);

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
