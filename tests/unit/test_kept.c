/*  Unit tests: cg_kept_copy copies a one-shot run's artifact files out of its workspace
    (never through a symbolic link, within its byte cap) and marks the rest "kept": false;
    cg_kept_add keeps a copy under a new id and token that the download lookup finds, drops
    the oldest past its byte cap, and forgets copies past their time. */
#define _GNU_SOURCE
#include "bridge/cg_kept.h"
#include "base/cg_util.h"
#include "base/cg_fs.h"
#include "cg_test.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char s_root[] = "/tmp/cg-test-kept-XXXXXX";

//  Writes LEN bytes of 'x' to DIR/REL.
static void
s_write (const char *dir, const char *rel, size_t len)
{
    cleanup_free char *path = cg_strdupf ("%s/%s", dir, rel);
    FILE *f = fopen (path, "w");
    for (size_t i = 0; f && i < len; i++)
        fputc ('x', f);
    if (f)
        fclose (f);
}

//  An outcome whose artifacts are the workspace paths NAMES (NULL-terminated).
static cg_outcome_t *
s_outcome (const char *const *names)
{
    cg_outcome_t *outcome = cg_outcome_new ("python", "exec_000000000000", NULL);
    outcome->artifacts = json_array ();
    for (size_t i = 0; names[i]; i++)
        json_array_append_new (outcome->artifacts,
                               json_pack ("{s:s+}", "path", "/mnt/data/", names[i]));
    return outcome;
}

static void
s_copy (void)
{
    const char *name = "copy";
    cleanup_free char *ws_dir = cg_strdupf ("%s/ws", s_root);
    cleanup_free char *outputs = cg_strdupf ("%s/outputs", ws_dir);
    mkdir (ws_dir, 0700);
    mkdir (outputs, 0700);
    s_write (ws_dir, "outputs/large-1-1.png", 3000);
    s_write (ws_dir, "big.bin", 9000);
    cleanup_free char *target = cg_strdupf ("%s/secret", s_root);
    s_write (s_root, "secret", 10);
    cleanup_free char *link = cg_strdupf ("%s/link.txt", ws_dir);
    CHECK (symlink (target, link) == 0, "symlink");
    cg_error_t *err = NULL;
    cg_workspace_t *ws = cg_workspace_open (ws_dir, &err);
    CHECK (ws, "open: %s", cg_error_message (err));
    const char *names[] = {"outputs/large-1-1.png", "link.txt", "big.bin", NULL};
    cg_outcome_t *outcome = s_outcome (names);
    cleanup_free char *root = cg_strdupf ("%s/kept", s_root);
    cg_kept_copy (ws, outcome, root, 8000);
    CHECK (outcome->kept_dir && outcome->kept_bytes == 3000, "kept %zu bytes in %s",
           outcome->kept_bytes, outcome->kept_dir ? outcome->kept_dir : "(none)");
    cleanup_free char *copied = cg_strdupf ("%s/outputs/large-1-1.png", outcome->kept_dir);
    struct stat st;
    CHECK (stat (copied, &st) == 0 && st.st_size == 3000, "the figure is copied");
    json_t *items = outcome->artifacts;
    CHECK (!json_object_get (json_array_get (items, 0), "kept"), "the figure is kept");
    CHECK (json_is_false (json_object_get (json_array_get (items, 1), "kept")),
           "the symbolic link is not followed");
    CHECK (json_is_false (json_object_get (json_array_get (items, 2), "kept")),
           "9000 bytes are over the 8000 left");

    //  The table: found by id and token only.
    cg_kept_t *kept = cg_kept_new (900, 5000);
    const char *id = NULL, *token = NULL;
    size_t bytes = outcome->kept_bytes;
    CHECK (cg_kept_add (kept, &outcome->kept_dir, bytes, &id, &token) == 0
               && outcome->kept_dir == NULL,
           "added");
    cleanup_free char *first_id = cg_xstrdup (id);
    cleanup_free char *first_token = cg_xstrdup (token);
    CHECK (strncmp (id, "oneshot_", 8) == 0 && strlen (token) == 32, "id %s", id);
    CHECK (cg_kept_download (kept, id, token, strlen (token)) != NULL, "found");
    CHECK (cg_kept_download (kept, id, "0000", 4) == NULL, "a wrong token finds nothing");
    //  A second copy of 3000 bytes: the first goes (5000 in all), its files too.
    cg_outcome_t *second = s_outcome (names);
    cg_kept_copy (ws, second, root, 8000);
    cleanup_free char *second_dir = cg_xstrdup (second->kept_dir);
    CHECK (cg_kept_add (kept, &second->kept_dir, second->kept_bytes, &id, &token) == 0,
           "second added");
    size_t all = 0;
    CHECK (cg_kept_count (kept, &all) == 1 && all == 3000, "the oldest went: %zu bytes", all);
    CHECK (cg_kept_download (kept, first_id, first_token, 32) == NULL, "the first is gone");
    cg_kept_destroy (&kept);
    CHECK (kept == NULL && stat (second_dir, &st) < 0, "destroy removes the copies");

    //  A time of 0: gone at the next look.
    kept = cg_kept_new (0, 1 << 20);
    cg_outcome_t *third = s_outcome (names);
    cg_kept_copy (ws, third, root, 8000);
    CHECK (cg_kept_add (kept, &third->kept_dir, third->kept_bytes, &id, &token) == 0, "added");
    CHECK (cg_kept_download (kept, id, token, strlen (token)) == NULL, "expired");
    cg_kept_destroy (&kept);
    cg_outcome_destroy (&third);
    cg_outcome_destroy (&second);
    cg_outcome_destroy (&outcome);
    cg_workspace_destroy (&ws);
    s_passes++;
}

int
main (void)
{
    if (!mkdtemp (s_root)) {
        perror ("mkdtemp");
        return 1;
    }
    s_copy ();
    cg_rm_rf (s_root, NULL);
    printf ("%d passed, %d failed\n", s_passes, s_failures);
    return s_failures ? 1 : 0;
}
