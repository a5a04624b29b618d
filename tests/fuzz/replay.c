/*  replay — a main for the fuzz targets in the normal (gcc) build: runs
    LLVMFuzzerTestOneInput once over every regular file in the directories (or files)
    given, so that ctest replays the committed corpora on every run. Exits 0 when every
    input ran (a broken invariant aborts), 1 when an argument cannot be read or there was
    no input at all, 2 without arguments. */
#define _GNU_SOURCE
#include "cg_fuzz.h"

#include "base/cg_util.h"
#include "base/cg_fs.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int
s_compare (const void *a, const void *b)
{
    return strcmp (*(char *const *)a, *(char *const *)b);
}

//  Runs the target over the file PATH. Returns 0, or -1 when it cannot be read.
static int
s_replay_file (const char *path)
{
    cg_error_t *err = NULL;
    size_t len = 0;
    //  Corpus files are small; 16 MiB bounds a stray big one.
    char *data = cg_read_file (path, 16 * 1024 * 1024, &len, &err);
    if (!data) {
        fprintf (stderr, "replay: %s\n", cg_error_message (err));
        cg_error_destroy (&err);
        return -1;
    }
    //  An exact-size copy, so ASan sees a read past the end of the input.
    uint8_t *copy = cg_xmalloc (len ? len : 1);
    memcpy (copy, data, len);
    free (data);
    //  Named first, so that an input that aborts is known.
    printf ("%s\n", path);
    fflush (stdout);
    LLVMFuzzerTestOneInput (copy, len);
    free (copy);
    return 0;
}

//  Runs the target over every regular file in DIR, in name order. Returns the number of
//  files run, or -1.
static long
s_replay_dir (const char *dir)
{
    DIR *d = opendir (dir);
    if (!d) {
        perror (dir);
        return -1;
    }
    char **names = NULL;
    size_t count = 0;
    for (struct dirent *e; (e = readdir (d));) {
        if (e->d_name[0] == '.')
            continue;
        names = cg_xrealloc (names, (count + 1) * sizeof *names);
        names[count++] = cg_strdupf ("%s/%s", dir, e->d_name);
    }
    closedir (d);
    qsort (names, count, sizeof *names, s_compare);
    long run = 0;
    for (size_t i = 0; i < count; i++) {
        struct stat st;
        if (stat (names[i], &st) == 0 && S_ISREG (st.st_mode)) {
            if (s_replay_file (names[i]) < 0)
                run = -1;
            else if (run >= 0)
                run++;
        }
        free (names[i]);
    }
    free (names);
    return run;
}

int
main (int argc, char **argv)
{
    if (argc < 2) {
        fprintf (stderr, "usage: %s CORPUS_DIR_OR_FILE...\n", argv[0]);
        return 2;
    }
    long total = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        long run = stat (argv[i], &st) == 0 && S_ISDIR (st.st_mode) ? s_replay_dir (argv[i])
                   : s_replay_file (argv[i]) == 0                   ? 1
                                                                    : -1;
        if (run < 0)
            return 1;
        total += run;
    }
    printf ("replayed %ld inputs\n", total);
    return total > 0 ? 0 : 1; /* an empty corpus is a mistake, not a pass */
}
