/* The subscribers' callbacks: subscribers get the right data, free_userdata runs exactly once,
 * callbacks may call back into the library (and unsubscribe themselves), an unsubscribe waits
 * for a running callback, and subscribers that refresh or log on every update end. */
#include "cc_test.h"

#include <pthread.h>
#include <time.h>
#include <unistd.h>

typedef struct {
    int calls;
    int frees;
    char last[4096];
    cc_controller *controller;
    uint64_t subscription;
    int reentrant_ok;
} recorder;

static void record_update(void *userdata, const char *json) {
    recorder *r = userdata;
    r->calls++;
    snprintf(r->last, sizeof r->last, "%s", json);
}

static void record_free(void *userdata) { ((recorder *)userdata)->frees++; }

static void test_subscriber_data_and_free(void) {
    cc_controller *c = cc_test_open_sample();
    recorder r = {0};
    uint64_t sub = 0;
    CHECK_OK(cc_controller_subscribe(&sub, c, record_update, &r, record_free));
    CHECK(sub != 0);
    CHECK_OK(cc_controller_refresh(NULL, c, 5));
    CHECK(r.calls == 1);
    CHECK_CONTAINS(r.last, "{\"reason\":\"refresh\",\"ok\":true,\"error\":null,\"cardId\":null,\"counts\":{\"total\":10,\"unviewed\":9,\"unread\":9}");
    CHECK_OK(cc_controller_log_impression(c, "coupon-1"));
    CHECK_CONTAINS(r.last, "\"reason\":\"impression\",\"ok\":true,\"error\":null,\"cardId\":\"coupon-1\",\"counts\":{\"total\":10,\"unviewed\":8,\"unread\":9}");
    CHECK_RC(CC_E_PARSE, cc_controller_apply(NULL, c, "{"));
    CHECK_CONTAINS(r.last, "\"reason\":\"cards_applied\",\"ok\":false,\"error\":{\"code\":-4,\"name\":\"CC_E_PARSE\"");
    CHECK_OK(cc_controller_unsubscribe(c, sub));
    CHECK(r.frees == 1);
    CHECK_RC(CC_E_NOT_FOUND, cc_controller_unsubscribe(c, sub));
    CHECK(r.frees == 1);
    int calls = r.calls;
    CHECK_OK(cc_controller_log_impression(c, "coupon-1"));
    CHECK(r.calls == calls);

    /* Close frees the remaining subscribers' userdata, once. */
    recorder r2 = {0};
    CHECK_OK(cc_controller_subscribe(&sub, c, record_update, &r2, record_free));
    CHECK_OK(cc_controller_close(c));
    CHECK(r2.frees == 1);
    CHECK_RC(CC_E_INVALID_HANDLE, cc_controller_close(c));
    CHECK(r2.frees == 1);
}

static void reenter(void *userdata, const char *json) {
    recorder *r = userdata;
    r->calls++;
    if (strstr(json, "\"reason\":\"refresh\"")) {
        /* Reading, logging and diagnostics from inside the callback must not deadlock. */
        int64_t total = 0;
        char *feed = NULL;
        r->reentrant_ok = cc_controller_counts(&total, NULL, r->controller, NULL) == CC_OK && total == 10 &&
                          cc_controller_feed(&feed, r->controller, "[\"home_tile\"]") == CC_OK &&
                          cc_controller_log_impression(r->controller, "tile-2") == CC_OK;
        cc_string_free(feed);
    }
}

/* A failing call inside a callback does not leak into the status of the call that ran it. */
static void fail_inside(void *userdata, const char *json) {
    (void)json;
    char *card = NULL;
    ((recorder *)userdata)->reentrant_ok = cc_controller_card(&card, ((recorder *)userdata)->controller, "no-such-card") == CC_E_NOT_FOUND;
}

static void unsubscribe_self(void *userdata, const char *json) {
    (void)json;
    recorder *r = userdata;
    r->calls++;
    r->reentrant_ok = cc_controller_unsubscribe(r->controller, r->subscription) == CC_OK;
}

static void test_reentrancy(void) {
    cc_controller *c = cc_test_open_sample();
    recorder r = {.controller = c};
    uint64_t sub = 0;
    CHECK_OK(cc_controller_subscribe(&sub, c, reenter, &r, record_free));
    CHECK_OK(cc_controller_refresh(NULL, c, 5));
    CHECK(r.reentrant_ok);
    CHECK(r.calls == 2); /* the refresh, then the impression logged inside it */

    recorder self = {.controller = c};
    CHECK_OK(cc_controller_subscribe(&self.subscription, c, unsubscribe_self, &self, record_free));
    CHECK_OK(cc_controller_log_impression(c, "tile-1"));
    CHECK(self.calls == 1 && self.reentrant_ok && self.frees == 1);
    CHECK_OK(cc_controller_log_impression(c, "tile-3"));
    CHECK(self.calls == 1);

    recorder failing = {.controller = c};
    uint64_t fsub = 0;
    CHECK_OK(cc_controller_subscribe(&fsub, c, fail_inside, &failing, NULL));
    CHECK_OK(cc_controller_log_impression(c, "tile-3"));
    CHECK(failing.reentrant_ok);
    CHECK(cc_last_error_code() == CC_OK);
    CHECK(strcmp(cc_last_error_message(), "") == 0);
    CHECK_OK(cc_controller_unsubscribe(c, fsub));
    CHECK_OK(cc_controller_close(c));
    CHECK(r.frees == 1);
}

/* Unsubscribing from another thread waits for a running callback to finish. */
typedef struct {
    _Atomic int inside;
    _Atomic int finished;
    _Atomic int calls_after;
    _Atomic int unsubscribed;
} slow_state;

static void slow_update(void *userdata, const char *json) {
    (void)json;
    slow_state *s = userdata;
    if (s->unsubscribed) s->calls_after++;
    s->inside = 1;
    usleep(200 * 1000);
    s->finished = 1;
}

typedef struct {
    cc_controller *c;
} thread_arg;

static void *log_in_thread(void *arg) {
    CC_TEST_IGNORE(cc_controller_log_impression(((thread_arg *)arg)->c, "tile-1"));
    return NULL;
}

static void test_unsubscribe_waits(void) {
    cc_controller *c = cc_test_open_sample();
    CHECK_OK(cc_controller_refresh(NULL, c, 5));
    slow_state s = {0};
    uint64_t sub = 0;
    CHECK_OK(cc_controller_subscribe(&sub, c, slow_update, &s, NULL));
    pthread_t th;
    thread_arg arg = {c};
    pthread_create(&th, NULL, log_in_thread, &arg);
    while (!s.inside) usleep(1000);
    CHECK_OK(cc_controller_unsubscribe(c, sub));
    CHECK(s.finished == 1); /* returned only after the running call ended */
    s.unsubscribed = 1;
    pthread_join(th, NULL);
    CHECK_OK(cc_controller_log_impression(c, "tile-2"));
    CHECK(s.calls_after == 0);
    CHECK_OK(cc_controller_close(c));
}

/* The async refresh reaches subscribers on a library thread. */
static void test_async_refresh(void) {
    cc_controller *c = cc_test_open_sample();
    recorder r = {0};
    uint64_t sub = 0;
    CHECK_OK(cc_controller_subscribe(&sub, c, record_update, &r, NULL));
    CHECK_OK(cc_controller_refresh_async(c));
    for (int i = 0; i < 500 && r.calls == 0; i++) usleep(10 * 1000);
    CHECK(r.calls == 1);
    CHECK_CONTAINS(r.last, "\"reason\":\"refresh\",\"ok\":true");
    CHECK_OK(cc_controller_close(c));
}

/* --- callbacks that call back on every update --- */

typedef struct {
    cc_controller *c;
    int calls; /* written by one thread at a time: the caller's, then the notifier queue's */
    int frees;
} looper;

static void refresh_on_every_update(void *userdata, const char *update_json) {
    (void)update_json;
    looper *l = userdata;
    __atomic_add_fetch(&l->calls, 1, __ATOMIC_SEQ_CST);
    CC_TEST_IGNORE(cc_controller_refresh(NULL, l->c, 2));
}

static void log_on_every_update(void *userdata, const char *update_json) {
    (void)update_json;
    looper *l = userdata;
    __atomic_add_fetch(&l->calls, 1, __ATOMIC_SEQ_CST);
    CC_TEST_IGNORE(cc_controller_log_impression(l->c, "tile-1"));
}

static void looper_free(void *userdata) { __atomic_add_fetch(&((looper *)userdata)->frees, 1, __ATOMIC_SEQ_CST); }

/* A subscriber that refreshes on every update: the refusals (rate limit) it causes were told to
 * it on its own stack, again and again, until the stack overflowed (SIGSEGV). Updates caused
 * inside a callback now wait until it returns; a long chain continues on a library thread. */
static void run_looper(cc_update_fn fn, const char *config) {
    cc_controller *c = NULL;
    CHECK_OK(cc_controller_open(&c, config));
    looper l = {.c = c};
    uint64_t sub = 0;
    CHECK_OK(cc_controller_subscribe(&sub, c, fn, &l, looper_free));
    CC_TEST_IGNORE(cc_controller_refresh(NULL, c, 2)); /* returns: the chain does not run on this stack for ever */
    usleep(100 * 1000);
    CHECK(__atomic_load_n(&l.calls, __ATOMIC_SEQ_CST) > 100);
    CHECK_OK(cc_controller_close(c)); /* stops the chain, waiting for a call in progress */
    CHECK(l.frees == 1);
}

static void test_callbacks_that_call_back_on_every_update(void) {
    run_looper(refresh_on_every_update,
               "{\"userId\":\"u-1\",\"source\":{\"file\":\"" CC_SAMPLE_FEED "\"}}");
    run_looper(log_on_every_update,
               "{\"userId\":\"u-1\",\"refreshTokens\":0,\"source\":{\"file\":\"" CC_SAMPLE_FEED "\"}}");
}

/* Updates made on several threads: each carries its state's number ("sequence") with the
 * counts. The numbers are unique, by number the unread count falls one card at a time, and the
 * largest holds the final counts, whatever order the updates reached the subscriber in; the
 * current update is numbered after them all. */
enum { ORDER_THREADS = 4, ORDER_CARDS = 8 };

typedef struct {
    pthread_mutex_t lock;
    int n;
    long long sequence[ORDER_THREADS * ORDER_CARDS], unread[ORDER_THREADS * ORDER_CARDS];
} order_log;

static void record_order(void *userdata, const char *json) {
    order_log *o = userdata;
    const char *s = strstr(json, "\"sequence\":"), *u = strstr(json, "\"unread\":");
    pthread_mutex_lock(&o->lock);
    if (o->n < ORDER_THREADS * ORDER_CARDS) {
        o->sequence[o->n] = s ? atoll(s + strlen("\"sequence\":")) : -1;
        o->unread[o->n] = u ? atoll(u + strlen("\"unread\":")) : -1;
        o->n++;
    }
    pthread_mutex_unlock(&o->lock);
}

typedef struct { cc_controller *c; int first, failures; } order_marker;   /* CHECK counts on one thread */

static void *mark_own_cards(void *arg) {
    order_marker *m = arg;
    char id[16];
    for (int i = 0; i < ORDER_CARDS; i++) {
        snprintf(id, sizeof id, "c%d", m->first + i);
        if (cc_controller_mark_read(NULL, m->c, id, 1) != CC_OK) m->failures++;
    }
    return NULL;
}

static void test_updates_are_numbered_in_the_order_of_their_states(void) {
    cc_controller *c = NULL;
    CHECK_OK(cc_controller_open(&c, "{\"userId\":\"u\",\"refreshTokens\":0}"));
    char payload[8192] = "{\"full_sync\":true,\"cards\":[";
    for (int i = 0; i < ORDER_THREADS * ORDER_CARDS; i++) {
        size_t at = strlen(payload);
        snprintf(payload + at, sizeof payload - at, "%s{\"id\":\"c%d\",\"tp\":\"short_news\",\"ca\":1763700000,\"ds\":\"D\"}",
                 i ? "," : "", i);
    }
    strcat(payload, "]}");
    CHECK_OK(cc_controller_apply(NULL, c, payload));
    order_log o = {.lock = PTHREAD_MUTEX_INITIALIZER};
    uint64_t sub = 0;
    CHECK_OK(cc_controller_subscribe(&sub, c, record_order, &o, NULL));
    pthread_t threads[ORDER_THREADS];
    order_marker markers[ORDER_THREADS];
    for (int t = 0; t < ORDER_THREADS; t++) {
        markers[t] = (order_marker){c, t * ORDER_CARDS, 0};
        CHECK(pthread_create(&threads[t], NULL, mark_own_cards, &markers[t]) == 0);
    }
    for (int t = 0; t < ORDER_THREADS; t++) {
        pthread_join(threads[t], NULL);
        CHECK(markers[t].failures == 0);
    }
    CHECK_OK(cc_controller_unsubscribe(c, sub));
    CHECK(o.n == ORDER_THREADS * ORDER_CARDS);
    long long largest = 0;
    for (int i = 0; i < o.n; i++) {
        CHECK(o.sequence[i] >= 1);
        int earlier = 0;   /* updates of earlier states: as many as cards read before this one */
        for (int j = 0; j < o.n; j++) {
            if (j != i) CHECK(o.sequence[j] != o.sequence[i]);
            if (o.sequence[j] < o.sequence[i]) earlier++;
        }
        CHECK(o.unread[i] == ORDER_THREADS * ORDER_CARDS - 1 - earlier);
        if (o.sequence[i] > largest) largest = o.sequence[i];
    }
    char *current = NULL;
    CHECK_OK(cc_controller_current_update(&current, c));
    CHECK_CONTAINS(current, "{\"reason\":\"current\",\"ok\":true,\"error\":null,\"cardId\":null,"
                            "\"counts\":{\"total\":32,\"unviewed\":32,\"unread\":0},\"sync\":null,\"origin\":\"store\",");
    const char *s = current ? strstr(current, "\"sequence\":") : NULL;
    CHECK(s && atoll(s + strlen("\"sequence\":")) > largest);
    cc_string_free(current);
    CHECK_OK(cc_controller_close(c));
}

int main(void) {
    test_subscriber_data_and_free();
    test_reentrancy();
    test_unsubscribe_waits();
    test_async_refresh();
    test_callbacks_that_call_back_on_every_update();
    test_updates_are_numbered_in_the_order_of_their_states();
    return cc_test_finish("test_subscribers");
}
