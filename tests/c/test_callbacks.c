/* Callbacks: subscribers get the right data, free_userdata runs exactly once, callbacks may call
 * back into the library (and unsubscribe themselves), and the host transport serves refreshes
 * and event delivery, including when it fails. */
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

/* --- host transport --- */

typedef struct {
    int requests;
    int fail;
    int status;
    double retry_after;
    char last_kind[16];
    char last_body[1024];
    int frees;
} transport_state;

static int host_transport(void *userdata, const cc_transport_request *req, cc_transport_response *resp) {
    transport_state *t = userdata;
    t->requests++;
    snprintf(t->last_kind, sizeof t->last_kind, "%s", req->kind);
    snprintf(t->last_body, sizeof t->last_body, "%.*s", (int)req->body_len, req->body);
    if (t->fail) {
        CC_TEST_IGNORE(cc_transport_response_fail(resp, "no network in this test"));
        return -1;
    }
    if (strcmp(req->kind, "sync") == 0) {
        const char *body = "{\"cards\":[{\"id\":\"h1\",\"tp\":\"short_news\",\"ca\":5,\"ds\":\"from the host\",\"u\":\"https://x.test\"}],\"full_sync\":true}";
        return cc_transport_response_set(resp, t->status ? t->status : 200, body, strlen(body), t->retry_after);
    }
    return cc_transport_response_set(resp, t->status ? t->status : 202, NULL, 0, -1);
}

static void transport_free(void *userdata) { ((transport_state *)userdata)->frees++; }

static void test_host_transport(void) {
    cc_controller *c = NULL;
    CHECK_OK(cc_controller_open(&c, "{\"userId\":\"h\",\"source\":{\"callback\":true},\"events\":{\"callback\":true},"
                                    "\"eventFlushIntervalSeconds\":0,\"refreshTokens\":0}"));
    /* No transport set yet */
    CHECK_RC(CC_E_TRANSPORT, cc_controller_refresh(NULL, c, 2));
    CHECK_MESSAGE("none is set");

    transport_state t = {.retry_after = -1};
    CHECK_OK(cc_controller_set_transport(c, host_transport, &t, transport_free));
    CHECK_OK(cc_controller_refresh(NULL, c, 2));
    CHECK(t.requests == 1 && strcmp(t.last_kind, "sync") == 0);
    CHECK_CONTAINS(t.last_body, "\"user_id\":\"h\"");
    int64_t total = 0, pending = 0;
    CHECK_OK(cc_controller_counts(&total, NULL, c, NULL));
    CHECK(total == 1);

    CHECK_OK(cc_controller_log_click(c, "h1"));
    char *result = NULL;
    CHECK_OK(cc_controller_flush_events(&result, c, 2));
    CHECK_CONTAINS(result, "\"delivered\":1");
    cc_string_free(result);
    CHECK(strcmp(t.last_kind, "events") == 0);
    CHECK_CONTAINS(t.last_body, "\"type\":\"click\",\"card_id\":\"h1\"");

    /* A failing transport keeps the cache and the events. */
    t.fail = 1;
    CHECK_RC(CC_E_TRANSPORT, cc_controller_refresh(NULL, c, 2));
    CHECK_MESSAGE("no network in this test");
    CHECK_OK(cc_controller_log_impression(c, "h1"));
    CHECK_RC(CC_E_TRANSPORT, cc_controller_flush_events(NULL, c, 2));
    CHECK_OK(cc_controller_pending_events(&pending, c));
    CHECK(pending == 1);
    CHECK_OK(cc_controller_counts(&total, NULL, c, NULL));
    CHECK(total == 1);

    /* A server error through the host transport */
    t.fail = 0;
    t.status = 503;
    CHECK_RC(CC_E_SERVER, cc_controller_refresh(NULL, c, 2));
    CHECK_MESSAGE("HTTP 503");

    /* A huge Retry-After from the host is bounded, never a crash; the wait reported is the
     * one enforced (3600 s), in the message and through cc_last_error_retry_after. */
    t.status = 429;
    t.retry_after = 1e300;
    CHECK_RC(CC_E_RATE_LIMITED, cc_controller_refresh(NULL, c, 2));
    CHECK_MESSAGE("retry after 3600 s");
    CHECK(cc_last_error_retry_after() == 3600.0);
    t.retry_after = -1;

    /* A permanent 4xx drops the batch and says so. */
    t.status = 400;
    CHECK_OK(cc_controller_flush_events(&result, c, 2));
    CHECK_CONTAINS(result, "\"dropped\":1");
    cc_string_free(result);
    char *diag = NULL;
    CHECK_OK(cc_controller_diagnostics(&diag, c));
    CHECK_CONTAINS(diag, "\"droppedEvents\":1");
    cc_string_free(diag);

    /* Replacing frees the old userdata once; close frees the new one once. */
    transport_state t2 = {0};
    CHECK_OK(cc_controller_set_transport(c, host_transport, &t2, transport_free));
    CHECK(t.frees == 1);
    CHECK_OK(cc_controller_set_transport(c, NULL, NULL, NULL));
    CHECK(t2.frees == 1);
    transport_state t3 = {0};
    CHECK_OK(cc_controller_set_transport(c, host_transport, &t3, transport_free));
    CHECK_OK(cc_controller_close(c));
    CHECK(t3.frees == 1 && t.frees == 1 && t2.frees == 1);
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

/* --- refresh and close from inside the transport callback --- */

typedef struct {
    cc_controller *c;
    int inner_rc;
    double inner_seconds;
    int close_inside;
} calling_transport;

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int transport_calling_back(void *userdata, const cc_transport_request *req, cc_transport_response *resp) {
    (void)req;
    calling_transport *t = userdata;
    if (t->close_inside) {
        t->inner_rc = cc_controller_close(t->c);
    } else {
        double start = now_seconds();
        t->inner_rc = cc_controller_refresh(NULL, t->c, 5);
        t->inner_seconds = now_seconds() - start;
    }
    const char *body = "{\"cards\":[],\"full_sync\":true}";
    return cc_transport_response_set(resp, 200, body, strlen(body), -1);
}

static void test_calls_from_inside_the_transport(void) {
    const char *config = "{\"userId\":\"u\",\"refreshTokens\":0,\"source\":{\"callback\":true}}";
    cc_controller *c = NULL;
    CHECK_OK(cc_controller_open(&c, config));
    calling_transport t = {.c = c};
    CHECK_OK(cc_controller_set_transport(c, transport_calling_back, &t, NULL));
    CHECK_OK(cc_controller_refresh(NULL, c, 10));
    CHECK(t.inner_rc == CC_E_REFUSED); /* at once, not after its 5 s timeout */
    CHECK(t.inner_seconds < 1);
    CHECK_OK(cc_controller_close(c));

    CHECK_OK(cc_controller_open(&c, config));
    calling_transport closing = {.c = c, .close_inside = 1};
    CHECK_OK(cc_controller_set_transport(c, transport_calling_back, &closing, NULL));
    CHECK_RC(CC_E_CLOSED, cc_controller_refresh(NULL, c, 10));
    CHECK_MESSAGE("closed");
    CHECK(closing.inner_rc == CC_OK);
    CHECK_RC(CC_E_INVALID_HANDLE, cc_controller_close(c));
}

/* The validator through the host transport: the first sync answers with an ETag
 * (cc_transport_response_set_etag), the next request carries it as If-None-Match, and a 304
 * keeps the cards ("notModified"). */
typedef struct {
    int calls;
    int saw_validator;
} etag_transport;

static int transport_with_etag(void *userdata, const cc_transport_request *req, cc_transport_response *resp) {
    etag_transport *t = userdata;
    t->calls++;
    for (size_t i = 0; i < req->header_count; i++)
        if (strcmp(req->headers[i], "If-None-Match: \"v1\"") == 0) t->saw_validator = 1;
    if (t->saw_validator) return cc_transport_response_set(resp, 304, NULL, 0, -1);
    const char *body = "{\"cards\":[{\"id\":\"a\",\"tp\":\"short_news\",\"ca\":1763700000,\"ds\":\"x\"}],"
                       "\"full_sync\":true,\"last_full_sync_at\":1763700000,\"last_card_updated_at\":1763700000}";
    int rc = cc_transport_response_set_etag(resp, "\"v1\"");
    if (rc != CC_OK) return rc;
    return cc_transport_response_set(resp, 200, body, strlen(body), -1);
}

static int etag_misuse_rc = CC_OK;
static int transport_etag_misuse(void *userdata, const cc_transport_request *req, cc_transport_response *resp) {
    (void)userdata; (void)req;
    etag_misuse_rc = cc_transport_response_set_etag(resp, NULL);
    return cc_transport_response_set(resp, 200, "{\"cards\":[]}", 12, -1);
}

static void test_host_transport_validator(void) {
    cc_controller *c = NULL;
    CHECK_OK(cc_controller_open(&c, "{\"userId\":\"u\",\"refreshTokens\":0,\"source\":{\"callback\":true}}"));
    etag_transport t = {0};
    CHECK_OK(cc_controller_set_transport(c, transport_with_etag, &t, NULL));
    char *summary = NULL;
    CHECK_OK(cc_controller_refresh(&summary, c, 5));
    CHECK_CONTAINS(summary, "\"notModified\":false");
    cc_string_free(summary);
    CHECK(!t.saw_validator);
    CHECK_OK(cc_controller_refresh(&summary, c, 5));
    CHECK(t.saw_validator);
    CHECK_CONTAINS(summary, "\"notModified\":true");
    CHECK_CONTAINS(summary, "\"total\":1");
    cc_string_free(summary);
    CHECK(t.calls == 2);
    /* Outside a callback, and with a NULL etag: refused, nothing else happens. */
    CHECK_RC(CC_E_INVALID_ARGUMENT, cc_transport_response_set_etag(NULL, "\"x\""));
    CHECK_OK(cc_controller_set_transport(c, transport_etag_misuse, NULL, NULL));
    CHECK_OK(cc_controller_refresh(NULL, c, 5));
    CHECK(etag_misuse_rc == CC_E_INVALID_ARGUMENT);
    CHECK_OK(cc_controller_close(c));
}

int main(void) {
    test_subscriber_data_and_free();
    test_reentrancy();
    test_host_transport();
    test_unsubscribe_waits();
    test_async_refresh();
    test_callbacks_that_call_back_on_every_update();
    test_calls_from_inside_the_transport();
    test_host_transport_validator();
    return cc_test_finish("test_callbacks");
}
