/*  cg_test — the pass/fail counters and CHECK macro the unit test programs share. */
#ifndef CG_TEST_H
#define CG_TEST_H

#include <stdio.h>

static int s_failures = 0, s_passes = 0;

/*  Inside a test function with a `name` string: on a false COND, prints the message,
    counts a failure and returns from the function. */
#define CHECK(cond, ...)                         \
    do {                                         \
        if (!(cond)) {                           \
            fprintf (stderr, "FAIL %s: ", name); \
            fprintf (stderr, __VA_ARGS__);       \
            fprintf (stderr, "\n");              \
            s_failures++;                        \
            return;                              \
        }                                        \
    } while (0)

/*  Anywhere: on a false COND, prints the function, line and message and counts a failure;
    on a true one counts a pass. Goes on either way. */
#define EXPECT(cond, ...)                                         \
    do {                                                          \
        if (cond)                                                 \
            s_passes++;                                           \
        else {                                                    \
            fprintf (stderr, "FAIL %s:%d: ", __func__, __LINE__); \
            fprintf (stderr, __VA_ARGS__);                        \
            fprintf (stderr, "\n");                               \
            s_failures++;                                         \
        }                                                         \
    } while (0)

#endif
