/*  cg_remote_seccomp — an OCI seccomp profile compiled with libseccomp. */
#include "remote/cg_remote_seccomp.h"

#include <errno.h>
#include <string.h>

//  An OCI action name, with ERRNO's errno, as libseccomp's action; 0 when unknown.
static uint32_t
s_action (const char *name, json_int_t errno_ret)
{
    if (!name)
        return 0;
    if (strcmp (name, "SCMP_ACT_ALLOW") == 0)
        return SCMP_ACT_ALLOW;
    if (strcmp (name, "SCMP_ACT_ERRNO") == 0)
        return SCMP_ACT_ERRNO ((uint16_t)(errno_ret > 0 && errno_ret < 4096 ? errno_ret : EPERM));
    if (strcmp (name, "SCMP_ACT_KILL") == 0 || strcmp (name, "SCMP_ACT_KILL_THREAD") == 0)
        return SCMP_ACT_KILL;
    if (strcmp (name, "SCMP_ACT_KILL_PROCESS") == 0)
        return SCMP_ACT_KILL_PROCESS;
    return 0;
}

//  An OCI comparison's name as libseccomp's; 0 when unknown.
static enum scmp_compare
s_op (const char *name)
{
    static const struct {
        const char *name;
        enum scmp_compare op;
    } ops[] = {{"SCMP_CMP_NE", SCMP_CMP_NE},
               {"SCMP_CMP_LT", SCMP_CMP_LT},
               {"SCMP_CMP_LE", SCMP_CMP_LE},
               {"SCMP_CMP_EQ", SCMP_CMP_EQ},
               {"SCMP_CMP_GE", SCMP_CMP_GE},
               {"SCMP_CMP_GT", SCMP_CMP_GT},
               {"SCMP_CMP_MASKED_EQ", SCMP_CMP_MASKED_EQ}};
    for (size_t i = 0; name && i < sizeof ops / sizeof ops[0]; i++)
        if (strcmp (name, ops[i].name) == 0)
            return ops[i].op;
    return (enum scmp_compare)0;
}

//  Adds RULE (one of syscalls[]) to CTX. Returns NULL, or what is wrong with it (static).
static const char *
s_add_rule (scmp_filter_ctx ctx, uint32_t default_action, const json_t *rule)
{
    uint32_t action = s_action (json_string_value (json_object_get (rule, "action")),
                                json_integer_value (json_object_get (rule, "errnoRet")));
    const json_t *names = json_object_get (rule, "names");
    const json_t *args = json_object_get (rule, "args");
    if (!action || !json_is_array (names) || (args && !json_is_array (args))
        || json_array_size (args) > 6)
        return "a rule without a known action, a names list or at most 6 args";
    struct scmp_arg_cmp cmps[6];
    size_t count = json_array_size (args);
    for (size_t i = 0; i < count; i++) {
        const json_t *arg = json_array_get (args, i);
        json_int_t index = json_integer_value (json_object_get (arg, "index"));
        enum scmp_compare op = s_op (json_string_value (json_object_get (arg, "op")));
        if (index < 0 || index > 5 || !op)
            return "an arg without an index of 0 to 5 or a known op";
        cmps[i] = (struct scmp_arg_cmp){
            (unsigned)index, op, (scmp_datum_t)json_integer_value (json_object_get (arg, "value")),
            (scmp_datum_t)json_integer_value (json_object_get (arg, "valueTwo"))};
    }
    if (action == default_action)
        return NULL; /* libseccomp refuses a rule that repeats the default */
    size_t at;
    const json_t *name;
    json_array_foreach (names, at, name)
    {
        if (!json_is_string (name))
            return "a syscall name that is not a string";
        int nr = seccomp_syscall_resolve_name (json_string_value (name));
        if (nr == __NR_SCMP_ERROR)
            continue; /* unknown here: the default action covers it */
        if (seccomp_rule_add_array (ctx, action, nr, (unsigned)count, cmps) < 0)
            return "a rule libseccomp refused";
    }
    return NULL;
}

scmp_filter_ctx
cg_remote_seccomp_compile (const json_t *profile, cg_error_t **err)
{
    uint32_t default_action =
        s_action (json_string_value (json_object_get (profile, "defaultAction")),
                  json_integer_value (json_object_get (profile, "defaultErrnoRet")));
    const json_t *rules = json_object_get (profile, "syscalls");
    if (!default_action || !json_is_array (rules)) {
        cg_error_set (err, EINVAL, "seccomp profile: no known defaultAction or no syscalls list");
        return NULL;
    }
    scmp_filter_ctx ctx = seccomp_init (default_action);
    if (!ctx) {
        cg_error_set (err, EINVAL, "seccomp profile: libseccomp refused its default action");
        return NULL;
    }
    //  Only the native ABI (seccomp_init's): x32 and i386 calls meet the default action.
    size_t at;
    const json_t *rule;
    json_array_foreach (rules, at, rule)
    {
        const char *wrong = s_add_rule (ctx, default_action, rule);
        if (wrong) {
            cg_error_set (err, EINVAL, "seccomp profile: rule %zu: %s", at, wrong);
            seccomp_release (ctx);
            return NULL;
        }
    }
    return ctx;
}
