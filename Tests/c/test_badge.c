/* The badge fast path: cc_controller_counts with no filter, cc_controller_total_count and
 * cc_controller_unviewed_count answer from counts the library republishes on every change
 * (Sources/CContentCardsFast/fast.c). They must give exactly what the full path gives (a
 * filter of "[]" selects every card and always takes it), after every kind of change, after a
 * card expires, for a closed handle, for a handle whose slot was reused, and across threads. */
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include "cc_test.h"

/* The fast answer equals the full path's. */
static void check_same(cc_controller *c) {
    int64_t t1 = -1, u1 = -1, t2 = -2, u2 = -2;
    CHECK_OK(cc_controller_counts(&t1, &u1, c, NULL));
    CHECK_OK(cc_controller_counts(&t2, &u2, c, "[]"));
    CHECK(t1 == t2 && u1 == u2);
    CHECK(cc_controller_total_count(c, NULL) == t2);
    CHECK(cc_controller_unviewed_count(c, NULL) == u2);
}

static void every_change(void) {
    cc_controller *c = cc_test_open_sample();
    check_same(c);                               /* empty */
    CHECK_OK(cc_controller_refresh(NULL, c, 5));
    check_same(c);
    CHECK(cc_controller_total_count(c, NULL) == 10 && cc_controller_unviewed_count(c, NULL) == 9);
    CHECK_OK(cc_controller_log_impression(c, "tile-1"));
    check_same(c);
    CHECK(cc_controller_unviewed_count(c, NULL) == 8);
    CHECK_OK(cc_controller_log_dismissal(c, "tile-2"));
    check_same(c);
    CHECK(cc_controller_total_count(c, NULL) == 9);
    CHECK_OK(cc_controller_apply(NULL, c, "[{\"id\":\"new\",\"tp\":\"short_news\",\"ca\":1,\"ds\":\"x\"}]"));
    check_same(c);
    CHECK(cc_controller_total_count(c, NULL) == 10);
    CHECK_OK(cc_controller_change_user(c, "someone-else"));
    check_same(c);
    CHECK(cc_controller_total_count(c, NULL) == 0);
    CHECK_OK(cc_controller_change_user(c, "u-1"));
    CHECK(cc_controller_total_count(c, NULL) == 10);
    /* a filter goes the full way, and agrees */
    CHECK(cc_controller_total_count(c, "[\"coupon_code\"]") == 2);

    /* an error left by a failed call is cleared by a fast count */
    CHECK_RC(CC_E_NOT_FOUND, cc_controller_log_impression(c, "no-such-card"));
    int64_t total = 0;
    CHECK_OK(cc_controller_counts(&total, NULL, c, NULL));
    CHECK(cc_last_error_code() == CC_OK && strcmp(cc_last_error_message(), "") == 0);

    /* errors come back as negative statuses, with the thread's error set */
    CHECK(cc_controller_total_count(c, "[1") == CC_E_PARSE);
    CHECK(cc_last_error_code() == CC_E_PARSE);
    CHECK(cc_controller_unviewed_count(NULL, NULL) == CC_E_INVALID_HANDLE);

    /* closed: the old handle is refused, also once its slot serves a new controller */
    CHECK_OK(cc_controller_close(c));
    CHECK_RC(CC_E_INVALID_HANDLE, cc_controller_counts(&total, NULL, c, NULL));
    CHECK(cc_controller_total_count(c, NULL) == CC_E_INVALID_HANDLE);
    cc_controller *next = cc_test_open_sample();
    CHECK(((uintptr_t)next & 0xFFFFFF) == ((uintptr_t)c & 0xFFFFFF));     /* the same slot */
    CHECK_RC(CC_E_INVALID_HANDLE, cc_controller_counts(&total, NULL, c, NULL));
    CHECK(cc_controller_total_count(next, NULL) == 0);
    cc_controller_close(next);
}

/* A card that expires: the published counts stop at its expiry. */
static void expiry(void) {
    cc_controller *c = NULL;
    CHECK_OK(cc_controller_open(&c, NULL));
    char payload[256];
    long soon = (long)time(NULL) + 2;
    snprintf(payload, sizeof payload,
             "[{\"id\":\"a\",\"tp\":\"short_news\",\"ca\":1,\"ds\":\"x\",\"ea\":%ld},"
             "{\"id\":\"b\",\"tp\":\"short_news\",\"ca\":2,\"ds\":\"y\"}]", soon);
    CHECK_OK(cc_controller_apply(NULL, c, payload));
    CHECK(cc_controller_total_count(c, NULL) == 2);
    while (time(NULL) <= soon) usleep(100 * 1000);
    CHECK(cc_controller_total_count(c, NULL) == 1);
    check_same(c);
    cc_controller_close(c);
}

/* Threads counting while another logs and applies: every answer is one the feed really had
 * (10 cards, 9 unviewed going down to 0), never a mix of two. */
static cc_controller *shared;
static volatile int stop;
static int bad;

static void *counter(void *arg) {
    (void)arg;
    while (!stop) {
        int64_t t = -1, u = -1;
        if (cc_controller_counts(&t, &u, shared, NULL) != CC_OK || t != 10 || u < 0 || u > 9) bad++;
    }
    return NULL;
}

static void threads(void) {
    shared = cc_test_open_sample();
    CHECK_OK(cc_controller_refresh(NULL, shared, 5));
    pthread_t th[3];
    for (int i = 0; i < 3; i++) pthread_create(&th[i], NULL, counter, NULL);
    const char *ids[] = {"tile-1", "tile-2", "tile-3", "msg-1", "msg-2", "msg-3", "coupon-1", "test-1", "banner-noclass"};
    for (int round = 0; round < 20; round++)
        for (int i = 0; i < 9; i++) CC_TEST_IGNORE(cc_controller_log_impression(shared, ids[i]));
    stop = 1;
    for (int i = 0; i < 3; i++) pthread_join(th[i], NULL);
    CHECK(bad == 0);
    CHECK(cc_controller_unviewed_count(shared, NULL) == 0);
    cc_controller_close(shared);
}

int main(void) {
    every_change();
    expiry();
    threads();
    return cc_test_finish("test_badge");
}
