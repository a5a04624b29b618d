/*  cg_fault — failure injection for tests (--test-fail-at, --test-hold-at), off unless
    asked for. */
#include "base/cg_fault.h"
#include "base/cg_util.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char *const s_steps[] = {CG_FAULT_STEPS, NULL};
#define S_STEP_COUNT (sizeof s_steps / sizeof s_steps[0] - 1)

static atomic_bool s_armed_any;
static atomic_int s_armed[S_STEP_COUNT]; /* failures still to inject at each step */

static const char *const s_holds[] = {CG_FAULT_HOLDS, NULL};
#define S_HOLD_COUNT (sizeof s_holds / sizeof s_holds[0] - 1)
static char *s_hold_path[S_HOLD_COUNT]; /* set before any thread starts, then read only */
static atomic_bool s_hold_armed[S_HOLD_COUNT];

static int
s_step_index (const char *step, size_t len)
{
    for (size_t i = 0; i < S_STEP_COUNT; i++)
        if (strlen (s_steps[i]) == len && strncmp (s_steps[i], step, len) == 0)
            return (int)i;
    return -1;
}

//  Arms each step of the comma-separated LIST. Returns how many, or -1 with *err set.
static int
s_arm (const char *list, cg_error_t **err)
{
    int count = 0;
    for (const char *item = list; *item;) {
        size_t len = strcspn (item, ",");
        int index = s_step_index (item, len);
        if (index < 0)
            return cg_error_set (err, EINVAL, "--test-fail-at: unknown step '%.*s'", (int)len,
                                 item);
        atomic_fetch_add (&s_armed[index], 1);
        count++;
        item += len + (item[len] == ',');
    }
    if (count > 0)
        atomic_store (&s_armed_any, true);
    return count;
}

//  Arms the hold ITEM, POINT:PATH. Returns 1, or -1 with *err set.
static int
s_arm_hold (const char *item, cg_error_t **err)
{
    const char *colon = strchr (item, ':');
    for (size_t i = 0; colon && colon[1] && i < S_HOLD_COUNT; i++)
        if (strlen (s_holds[i]) == (size_t)(colon - item)
            && strncmp (s_holds[i], item, (size_t)(colon - item)) == 0) {
            free (s_hold_path[i]);
            s_hold_path[i] = cg_xstrdup (colon + 1);
            atomic_store (&s_hold_armed[i], true);
            atomic_store (&s_armed_any, true);
            return 1;
        }
    return cg_error_set (err, EINVAL, "--test-hold-at: '%s' is not POINT:PATH with a known point",
                         item);
}

int
cg_fault_take_args (int *argc, char **argv, cg_error_t **err)
{
    int armed = 0, kept = 0;
    for (int i = 0; i < *argc; i++) {
        bool fail = strcmp (argv[i], "--test-fail-at") == 0;
        if (!fail && strcmp (argv[i], "--test-hold-at") != 0) {
            argv[kept++] = argv[i];
            continue;
        }
        if (i + 1 >= *argc)
            return cg_error_set (err, EINVAL, "%s needs a value", argv[i]);
        int count = fail ? s_arm (argv[++i], err) : s_arm_hold (argv[++i], err);
        if (count < 0)
            return -1;
        armed += count;
    }
    *argc = kept;
    argv[kept] = NULL;
    if (armed > 0)
        cg_log (1, "test failure injection armed (--test-fail-at, --test-hold-at): %d", armed);
    return armed;
}

int
cg_fault_at (const char *step, cg_error_t **err)
{
    if (!atomic_load_explicit (&s_armed_any, memory_order_relaxed))
        return 0;
    int index = s_step_index (step, strlen (step));
    if (index < 0)
        return 0;
    int left = atomic_load (&s_armed[index]);
    while (left > 0 && !atomic_compare_exchange_weak (&s_armed[index], &left, left - 1))
        ;
    if (left <= 0)
        return 0;
    cg_log (1, "injected failure at %s (--test-fail-at)", step);
    return cg_error_set (err, EIO, "injected failure at %s", step);
}

void
cg_fault_hold (const char *point)
{
    if (!atomic_load_explicit (&s_armed_any, memory_order_relaxed))
        return;
    for (size_t i = 0; i < S_HOLD_COUNT; i++)
        if (strcmp (s_holds[i], point) == 0 && atomic_exchange (&s_hold_armed[i], false)) {
            cg_log (1, "held at %s until %s exists (--test-hold-at)", point, s_hold_path[i]);
            while (access (s_hold_path[i], F_OK) != 0)
                nanosleep (&(struct timespec){0, 5 * 1000 * 1000}, NULL);
            cg_log (1, "released at %s (--test-hold-at)", point);
        }
}
