/*  cg_notebook_command — the command that opens Jupyter Notebook on the gateway. */
#include "bridge/cg_notebook_command.h"
#include "base/cg_util.h"

#include <string.h>
#include <unistd.h>

//  WORD as one shell word: as it is when it has only safe bytes, else in single quotes.
//  Caller frees.
static char *
s_shell_word (const char *word)
{
    if (*word
        && strspn (word, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789/._-+=:@%,")
               == strlen (word))
        return cg_xstrdup (word);
    size_t len = strlen (word), quotes = 0;
    for (const char *c = word; *c; c++)
        quotes += *c == '\'';
    char *out = cg_xmalloc (len + quotes * 3 + 3), *o = out;
    *o++ = '\'';
    for (const char *c = word; *c; c++) {
        if (*c == '\'') {
            memcpy (o, "'\\''", 4);
            o += 4;
        }
        else
            *o++ = *c;
    }
    *o++ = '\'';
    *o = '\0';
    return out;
}

char *
cg_notebook_command (const char *url, const char *token_file, const char *kernel_id)
{
    cleanup_free char *file = token_file ? s_shell_word (token_file) : NULL;
    cleanup_free char *token =
        file ? cg_strdupf ("\"$(cat %s)\"", file) : cg_xstrdup ("'<the --gateway-token>'");
    cleanup_free char *kernel = kernel_id ? s_shell_word (kernel_id) : NULL;
    cleanup_free char *gateway = s_shell_word (url);
    return cg_strdupf ("%s%s%sjupyter notebook --gateway-url=%s --GatewayClient.auth_token=%s%s",
                       kernel ? "KERNEL_ID=" : "", kernel ? kernel : "", kernel ? " " : "", gateway,
                       token, geteuid () == 0 ? " --allow-root" : "");
}
