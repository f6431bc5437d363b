/* Threads: 8 threads mixing every call on one shared controller and on controllers of their
 * own, with subscribers coming and going; the counts stay consistent and nothing crashes. */
#include "cc_test.h"

#include <pthread.h>
#include <stdatomic.h>

#define THREADS 8
#define ROUNDS 150

static cc_controller *shared;
static atomic_int failures;
static atomic_int updates;

static const char *ids[] = {"tile-1", "tile-2", "tile-3", "msg-1", "msg-2", "msg-3", "coupon-1", "coupon-control"};

static void on_update(void *userdata, const char *json) {
    (void)userdata;
    if (!json || json[0] != '{') atomic_fetch_add(&failures, 1);
    atomic_fetch_add(&updates, 1);
}

static void expect(int ok, const char *what) {
    if (!ok) {
        atomic_fetch_add(&failures, 1);
        fprintf(stderr, "thread check failed: %s (%s)\n", what, cc_last_error_message());
    }
}

static void mix(cc_controller *c, unsigned seed, int round) {
    const char *id = ids[(seed + (unsigned)round) % 8];
    char *s = NULL;
    int64_t total = -1, unviewed = -1;
    switch ((seed * 31u + (unsigned)round) % 10) {
    case 0: {
        int rc = cc_controller_refresh(NULL, c, 5);
        expect(rc == CC_OK || rc == CC_E_RATE_LIMITED, "refresh");
        break;
    }
    case 1: expect(cc_controller_refresh_async(c) == CC_OK, "refresh_async"); break;
    case 2:
        expect(cc_controller_feed(&s, c, "[\"home_tile\",\"coupon_code\"]") == CC_OK && s && s[0] == '[', "feed");
        cc_string_free(s);
        break;
    case 3:
        expect(cc_controller_counts(&total, &unviewed, c, NULL) == CC_OK && total >= 0 && unviewed <= total, "counts");
        break;
    case 4: {
        int rc = cc_controller_log_impression(c, id);
        expect(rc == CC_OK || rc == CC_E_NOT_FOUND, "impression");
        break;
    }
    case 5: {
        int rc = cc_controller_log_click(c, id);
        expect(rc == CC_OK || rc == CC_E_REFUSED || rc == CC_E_NOT_FOUND, "click");
        break;
    }
    case 6: {
        int rc = cc_controller_log_dismissal(c, id);
        expect(rc == CC_OK || rc == CC_E_REFUSED || rc == CC_E_NOT_FOUND, "dismissal");
        break;
    }
    case 7: {
        uint64_t sub = 0;
        expect(cc_controller_subscribe(&sub, c, on_update, NULL, NULL) == CC_OK, "subscribe");
        expect(cc_controller_unsubscribe(c, sub) == CC_OK, "unsubscribe");
        break;
    }
    case 8: {
        cc_snapshot *snap = NULL;
        size_t n = 0;
        expect(cc_controller_snapshot(&snap, c, NULL) == CC_OK && cc_snapshot_count(&n, snap) == CC_OK, "snapshot");
        for (size_t i = 0; i < n; i++) {
            const char *v = NULL;
            expect(cc_snapshot_string(&v, snap, i, "id") == CC_OK && v, "snapshot id");
        }
        cc_snapshot_close(snap);
        break;
    }
    default:
        expect(cc_controller_diagnostics(&s, c) == CC_OK, "diagnostics");
        cc_string_free(s);
        expect(cc_controller_log_feed_displayed(c) == CC_OK, "feed displayed");
        break;
    }
}

static void *worker(void *arg) {
    unsigned seed = (unsigned)(uintptr_t)arg;
    cc_controller *own = NULL;
    char config[512];
    snprintf(config, sizeof config, "{\"userId\":\"t%u\",\"refreshTokens\":0,\"source\":{\"file\":\"%s\"}}", seed, CC_SAMPLE_FEED);
    expect(cc_controller_open(&own, config) == CC_OK, "open own");
    for (int round = 0; round < ROUNDS; round++) {
        mix(shared, seed, round);
        mix(own, seed + 3, round);
    }
    expect(cc_controller_close(own) == CC_OK, "close own");
    return NULL;
}

int main(void) {
    shared = cc_test_open_sample();
    uint64_t sub = 0;
    CHECK_OK(cc_controller_subscribe(&sub, shared, on_update, NULL, NULL));
    pthread_t threads[THREADS];
    for (uintptr_t i = 0; i < THREADS; i++) pthread_create(&threads[i], NULL, worker, (void *)i);
    for (int i = 0; i < THREADS; i++) pthread_join(threads[i], NULL);
    CHECK(atomic_load(&failures) == 0);
    CHECK(atomic_load(&updates) > 0);
    /* Consistency after the storm: counts match the feed. */
    int64_t total = -1, unviewed = -1;
    CHECK_OK(cc_controller_refresh(NULL, shared, 5));
    CHECK_OK(cc_controller_counts(&total, &unviewed, shared, NULL));
    char *feed = NULL;
    CHECK_OK(cc_controller_feed(&feed, shared, NULL));
    int n = 0;
    for (const char *p = feed; p && (p = strstr(p, "{\"id\":")); p++) n++;
    CHECK(n == total);
    cc_string_free(feed);
    CHECK_OK(cc_controller_close(shared));
    return cc_test_finish("test_threads");
}
