/* A minimal test harness for the C tests: CHECK macros that count and report, and a closing
 * "N passed, N failed" line. Each test program exits non-zero when a check failed. */
#ifndef CC_TEST_H
#define CC_TEST_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "contentcards.h"

static int cc_test_passed, cc_test_failed;

#define CHECK(cond)                                                                          \
    do {                                                                                     \
        if (cond) {                                                                          \
            cc_test_passed++;                                                                \
        } else {                                                                             \
            cc_test_failed++;                                                                \
            fprintf(stderr, "%s:%d: CHECK(%s) failed (last error: %s)\n", __FILE__, __LINE__, \
                    #cond, cc_last_error_message());                                         \
        }                                                                                    \
    } while (0)

/* A call that must return `expected`; on a mismatch the message says what came back. */
#define CHECK_RC(expected, call)                                                             \
    do {                                                                                     \
        int rc_ = (call);                                                                    \
        if (rc_ == (expected)) {                                                             \
            cc_test_passed++;                                                                \
        } else {                                                                             \
            cc_test_failed++;                                                                \
            fprintf(stderr, "%s:%d: %s returned %s (%d), expected %s: %s\n", __FILE__,        \
                    __LINE__, #call, cc_status_name(rc_), rc_, #expected,                   \
                    cc_last_error_message());                                                \
        }                                                                                    \
    } while (0)

#define CHECK_OK(call) CHECK_RC(CC_OK, call)

/* A call whose status a test ignores on purpose. The header marks most calls
 * CC_WARN_UNUSED_RESULT, and GCC's warn_unused_result is not silenced by a (void) cast:
 * negating the value uses it. */
#define CC_TEST_IGNORE(call) ((void)!(call))

/* The message of the last error contains `fragment`. */
#define CHECK_MESSAGE(fragment) CHECK(strstr(cc_last_error_message(), (fragment)) != NULL)

#define CHECK_CONTAINS(haystack, needle) CHECK((haystack) != NULL && strstr((haystack), (needle)) != NULL)

static inline int cc_test_finish(const char *name) {
    printf("%s: %d passed, %d failed\n", name, cc_test_passed, cc_test_failed);
    return cc_test_failed == 0 ? 0 : 1;
}

/* Opens a controller on the sample feed with the rate limit off, in memory. */
static inline cc_controller *cc_test_open_sample(void) {
    cc_controller *c = NULL;
    int rc = cc_controller_open(&c,
        "{\"userId\":\"u-1\",\"refreshTokens\":0,\"source\":{\"file\":\"" CC_SAMPLE_FEED "\"}}");
    if (rc != CC_OK) {
        fprintf(stderr, "cannot open a controller: %s\n", cc_last_error_message());
        exit(2);
    }
    return c;
}

#endif
