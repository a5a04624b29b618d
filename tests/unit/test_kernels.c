/*  Unit tests: cg_kernels, the catalogue of languages made from kernel spec directories —
    names and aliases from metadata.cellgate or the directory, the order, shadowing, specs
    left out with a note, --languages, and the lookups every front end uses. */
#include "base/cg_kernels.h"
#include "base/cg_fs.h"
#include "base/cg_util.h"
#include "cg_test.h"

#include <stdlib.h>
#include <string.h>

static char s_root[] = "/tmp/cg-kernels-test.XXXXXX";

//  Writes DIR/NAME/kernel.json with TEXT.
static void
s_spec (const char *dir, const char *name, const char *text)
{
    cleanup_free char *path = cg_strdupf ("%s/%s/%s", s_root, dir, name);
    cleanup_free char *file = cg_strdupf ("%s/kernel.json", path);
    cg_mkdir_p (path, 0755, NULL);
    cg_write_file (file, text, strlen (text), 0644, NULL);
}

static bool
s_noted (char **notes, const char *part)
{
    for (char **line = notes; line && *line; line++)
        if (strstr (*line, part))
            return true;
    return false;
}

static void
s_catalogue (void)
{
    s_spec ("own", "javascript",
            "{\"argv\": [\"node\"], \"display_name\": \"JS\", \"language\": \"javascript\", "
            "\"metadata\": {\"cellgate\": {\"aliases\": [\"js\", \"Node\"], \"file_extension\": "
            "\".js\"}}}");
    s_spec ("own", "python",
            "{\"argv\": [\"python3\"], \"display_name\": \"Python 3\", \"language\": \"python\", "
            "\"metadata\": {\"cellgate\": {\"aliases\": [\"py\"], \"kernel_name\": \"python3\", "
            "\"file_extension\": \".py\", \"title\": \"Python\", \"preinstalled\": [\"numpy\", "
            "\"pandas\"]}}}");
    s_spec ("own", "r",
            "{\"argv\": [\"R\"], \"display_name\": \"R\", \"language\": \"R\", \"metadata\": "
            "{\"cellgate\": {\"kernel_name\": \"ir\", \"file_extension\": \".R\", "
            "\"language_info\": {\"name\": \"R\", \"file_extension\": \".r\"}}}}");
    //  The image's: the stock python3 and ir are shadowed by cellgate's own; xpython is new,
    //  named by its directory; a broken one and one with a bad name are left out.
    s_spec ("image", "python3", "{\"argv\": [\"python3\"], \"language\": \"python\"}");
    s_spec ("image", "ir", "{\"argv\": [\"R\"], \"language\": \"R\"}");
    s_spec ("image", "xpython",
            "{\"argv\": [\"/usr/bin/xpython\", \"-f\", \"{connection_file}\"], "
            "\"display_name\": \"XPython\", \"language\": \"python\"}");
    s_spec ("image", "broken", "{\"argv\": [\"x\"],");
    //  bash_kernel: bash is the command every server runs, whatever the image has.
    s_spec ("image", "bash",
            "{\"argv\": [\"python3\", \"-m\", \"bash_kernel\"], \"language\": \"bash\"}");
    s_spec ("image", "noargv", "{\"argv\": []}");
    s_spec ("image", "evil",
            "{\"argv\": [\"x\"], \"metadata\": {\"cellgate\": {\"language\": \"a/b\"}}}");
    //  An operator's: python-xeus, with an alias that makes the image's xpython a repeat.
    s_spec ("more", "python-xeus",
            "{\"argv\": [\"/usr/bin/xpython\", \"-f\", \"{connection_file}\"], \"language\": "
            "\"python\", \"metadata\": {\"cellgate\": {\"aliases\": [\"xpython\", \"xeus\"]}}}");

    cleanup_free char *own = cg_strdupf ("%s/own", s_root);
    cleanup_free char *more = cg_strdupf ("%s/more", s_root);
    cleanup_free char *image = cg_strdupf ("%s/image", s_root);
    cleanup_free char *missing = cg_strdupf ("%s/missing", s_root);
    const char *dirs[] = {more, missing, image, NULL};
    char **notes = NULL;
    cg_error_t *err = NULL;
    cg_kernels_t *k = cg_kernels_load (own, dirs, NULL, &notes, &err);
    EXPECT (k, "loaded: %s", err ? cg_error_message (err) : "");
    if (!k)
        return;
    cleanup_free char *names = cg_kernels_names (k, ",");
    EXPECT (strcmp (names, "python,javascript,r,python-xeus,bash") == 0, "order: %s", names);
    EXPECT (s_noted (notes, "image/python3/kernel.json left out: shadowed by the language python"),
            "python3 shadowed");
    EXPECT (s_noted (notes, "image/ir/kernel.json left out: shadowed by the language r"),
            "ir shadowed");
    EXPECT (s_noted (notes, "image/xpython/kernel.json left out: shadowed by the language "
                            "python-xeus"),
            "xpython shadowed by an alias");
    EXPECT (s_noted (notes, "image/broken/kernel.json left out: not a JSON object"), "broken");
    EXPECT (s_noted (notes, "image/bash/kernel.json left out: shadowed by the language bash"),
            "bash_kernel shadowed by the command");
    EXPECT (s_noted (notes, "image/noargv/kernel.json left out: its argv"), "empty argv");
    EXPECT (s_noted (notes, "image/evil/kernel.json left out: its name"), "bad name");

    const cg_language_t *py = cg_kernels_find (k, "PY");
    EXPECT (py && strcmp (py->name, "python") == 0 && py->own, "py is python");
    EXPECT (cg_kernels_find (k, "python3") == py, "a kernel name is an alias");
    EXPECT (cg_kernels_by_kernel_name (k, "python3") == py, "python3 is python's kernel");
    EXPECT (py && strcmp (py->extension, "py") == 0, "extension without the dot");
    EXPECT (cg_kernels_find (k, "node") == cg_kernels_find (k, "javascript"), "aliases any case");
    const cg_language_t *r = cg_kernels_find (k, "R");
    EXPECT (r && strcmp (r->kernel_name, "ir") == 0 && strcmp (r->spec_language, "R") == 0,
            "r: kernel ir, spec language R");
    EXPECT (r
                && strcmp (json_string_value (json_object_get (r->language_info, "file_extension")),
                           ".r")
                       == 0,
            "r's language_info as its spec gives it");
    const cg_language_t *xeus = cg_kernels_find (k, "xeus");
    EXPECT (xeus && strcmp (xeus->name, "python-xeus") == 0 && !xeus->own
                && strcmp (xeus->kernel_name, "python-xeus") == 0 && !xeus->extension,
            "python-xeus by configuration");
    const cg_language_t *bash = cg_kernels_find (k, "sh");
    EXPECT (bash && bash->command && !bash->spec_dir && !cg_kernels_by_kernel_name (k, "bash"),
            "bash is a command, not a kernel");
    EXPECT (!cg_kernels_find (k, "ruby"), "ruby is not offered");
    cleanup_free char *describe = cg_kernels_describe (k);
    EXPECT (strstr (describe, "python (py, python3), javascript (js, node), r (ir), python-xeus "
                              "(xpython, xeus), bash (sh, shell)"),
            "describe: %s", describe);
    cleanup_free char *note = cg_kernels_preinstalled (k);
    EXPECT (strcmp (note, "Python has numpy and pandas.") == 0, "preinstalled: %s", note);
    json_t *kernels_only = cg_kernels_enum (k, true);
    EXPECT (json_array_size (kernels_only) == 4, "enum without bash");
    json_decref (kernels_only);
    cg_kernels_destroy (&k);
    cg_strv_free (notes);

    //  --languages: names or aliases; bash only when named; an unknown name is refused.
    k = cg_kernels_load (own, dirs, "py,R", NULL, &err);
    cleanup_free char *only = k ? cg_kernels_names (k, ",") : NULL;
    EXPECT (only && strcmp (only, "python,r") == 0, "only: %s", only ? only : "(none)");
    cg_kernels_destroy (&k);
    k = cg_kernels_load (own, dirs, "python,ruby", NULL, &err);
    EXPECT (!k && err && strstr (cg_error_message (err), "'ruby'"), "ruby refused");
    cg_error_destroy (&err);
    //  No spec in cellgate's own directory: refused.
    k = cg_kernels_load (missing, NULL, NULL, NULL, &err);
    EXPECT (!k && err && strstr (cg_error_message (err), "no kernel spec"), "empty own dir");
    cg_error_destroy (&err);
}

//  The process's default catalogue (no cg_kernels_install): the compiled-in kernels/.
static void
s_default (void)
{
    const cg_kernels_t *k = cg_kernels ();
    EXPECT (cg_kernels_find (k, "python") && cg_kernels_find (k, "javascript")
                && cg_kernels_find (k, "bash"),
            "default catalogue");
    EXPECT (cg_kernels_index (k, cg_kernels_find (k, "python")) == 0, "python first");
}

int
main (void)
{
    if (!mkdtemp (s_root))
        return 1;
    s_catalogue ();
    s_default ();
    cg_rm_rf (s_root, NULL);
    printf ("%d passed, %d failed\n", s_passes, s_failures);
    return s_failures ? 1 : 0;
}
