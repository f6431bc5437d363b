/* In C: cc_controller_log (the log result of Swift and Python, also for a refusal) and
 * cc_controller_refresh_in_background with its completion (exactly once, then free_userdata
 * exactly once; never on an error, which frees at once). Real threads, real files. */
#include "cc_test.h"

#include <math.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

static void test_log_results(void) {
    cc_controller *c = cc_test_open_sample();
    CHECK_OK(cc_controller_refresh(NULL, c, 5));
    char *out = NULL;
    CHECK_OK(cc_controller_log(&out, c, "impression", "tile-1"));
    CHECK_CONTAINS(out, "{\"recorded\":true,\"reason\":null,\"eventId\":\"");
    CHECK_CONTAINS(out, "\"stateChanged\":true}");
    cc_string_free(out);
    CHECK_OK(cc_controller_log(&out, c, "impression", "tile-1"));
    CHECK_CONTAINS(out, "\"stateChanged\":false}");
    cc_string_free(out);

    /* A refusal: CC_E_REFUSED, and the result says why in the same fields. */
    out = NULL;
    CHECK_RC(CC_E_REFUSED, cc_controller_log(&out, c, "click", "msg-2"));
    CHECK(out && strcmp(out, "{\"recorded\":false,\"reason\":\"click not logged: card \\\"msg-2\\\" has no url\","
                             "\"eventId\":null,\"stateChanged\":false}") == 0);
    CHECK_MESSAGE("click not logged: card \"msg-2\" has no url");
    cc_string_free(out);
    CHECK_RC(CC_E_REFUSED, cc_controller_log(NULL, c, "dismissal", "msg-1")); /* out may be NULL */

    CHECK_OK(cc_controller_log(&out, c, "feed_displayed", NULL));
    CHECK_CONTAINS(out, "\"recorded\":true");
    cc_string_free(out);

    /* Errors: the output is NULL. */
    out = (char *)"untouched";
    CHECK_RC(CC_E_NOT_FOUND, cc_controller_log(&out, c, "impression", "ghost"));
    CHECK(out == NULL);
    CHECK_RC(CC_E_INVALID_ARGUMENT, cc_controller_log(&out, c, "launch", "tile-1"));
    CHECK_MESSAGE("unknown logging action \"launch\"");
    CHECK_RC(CC_E_INVALID_ARGUMENT, cc_controller_log(&out, c, NULL, "tile-1"));
    CHECK_RC(CC_E_INVALID_ARGUMENT, cc_controller_log(&out, c, "click", NULL));
    CHECK_RC(CC_E_INVALID_ARGUMENT, cc_controller_log(&out, c, "feed_displayed", "tile-1"));
    CHECK_RC(CC_E_INVALID_ARGUMENT, cc_controller_log(&out, c, "click", "\xff\xfe"));
    CHECK_RC(CC_E_INVALID_HANDLE, cc_controller_log(&out, NULL, "click", "tile-1"));

    /* The older functions keep their statuses. */
    CHECK_RC(CC_E_REFUSED, cc_controller_log_click(c, "msg-2"));
    CHECK_OK(cc_controller_log_click(c, "coupon-1"));
    int64_t pending = 0;
    CHECK_OK(cc_controller_pending_events(&pending, c));
    CHECK(pending == 4); /* two impressions, a feed display, a click: refusals record nothing */
    CHECK_OK(cc_controller_close(c));
    CHECK_RC(CC_E_INVALID_HANDLE, cc_controller_log(&out, c, "click", "tile-1"));
}

/* An expired card is logged like any other (docs/BEHAVIOUR.md, "Logging"). */
static void test_expired_card_is_logged(void) {
    cc_controller *c = cc_test_open_sample();
    CHECK_OK(cc_controller_apply(NULL, c, "[{\"id\":\"old\",\"tp\":\"short_news\",\"ca\":5,\"ea\":1000,"
                                          "\"db\":true,\"u\":\"https://e.test\",\"ds\":\"gone\"}]"));
    CHECK(cc_controller_total_count(c, NULL) == 0);
    char *out = NULL;
    CHECK_OK(cc_controller_log(&out, c, "impression", "old"));
    CHECK_CONTAINS(out, "\"stateChanged\":true");
    cc_string_free(out);
    CHECK_OK(cc_controller_log_click(c, "old"));
    CHECK_OK(cc_controller_log_dismissal(c, "old"));
    CHECK_OK(cc_controller_close(c));
}

typedef struct {
    pthread_mutex_t lock;
    int calls, frees, status;
    int frees_before_call; /* free_userdata ran before fn: a bug */
    char json[4096];
} completion;

static void on_done(void *userdata, int status, const char *result_json) {
    completion *d = userdata;
    pthread_mutex_lock(&d->lock);
    d->calls++;
    d->status = status;
    if (d->frees) d->frees_before_call = 1;
    snprintf(d->json, sizeof d->json, "%s", result_json ? result_json : "(null)");
    pthread_mutex_unlock(&d->lock);
}

static void on_free(void *userdata) {
    completion *d = userdata;
    pthread_mutex_lock(&d->lock);
    d->frees++;
    pthread_mutex_unlock(&d->lock);
}

static int wait_frees(completion *d, int n) {
    for (int i = 0; i < 1000; i++) {
        pthread_mutex_lock(&d->lock);
        int frees = d->frees;
        pthread_mutex_unlock(&d->lock);
        if (frees >= n) return 1;
        usleep(10 * 1000);
    }
    return 0;
}

static void test_refresh_in_background(void) {
    cc_controller *c = cc_test_open_sample();
    completion d = {.lock = PTHREAD_MUTEX_INITIALIZER};
    CHECK_OK(cc_controller_refresh_in_background(c, 5, on_done, &d, on_free));
    CHECK(wait_frees(&d, 1));
    CHECK(d.calls == 1 && d.frees == 1 && !d.frees_before_call);
    CHECK(d.status == CC_OK);
    CHECK(strncmp(d.json, "{\"added\":11,", 12) == 0);
    CHECK(cc_controller_total_count(c, NULL) == 10);

    /* Fire and forget: fn NULL frees userdata at once. */
    completion none = {.lock = PTHREAD_MUTEX_INITIALIZER};
    CHECK_OK(cc_controller_refresh_in_background(c, 0, NULL, &none, on_free));
    CHECK(none.frees == 1 && none.calls == 0);
    CHECK_OK(cc_controller_close(c));

    /* Refusals known at once: returned, fn never called, userdata freed before the return. */
    cc_controller *nosrc = NULL;
    CHECK_OK(cc_controller_open(&nosrc, "{\"userId\":\"n\"}"));
    completion refused = {.lock = PTHREAD_MUTEX_INITIALIZER};
    CHECK_RC(CC_E_NO_SOURCE, cc_controller_refresh_in_background(nosrc, 0, on_done, &refused, on_free));
    CHECK(refused.frees == 1 && refused.calls == 0);
    CHECK_RC(CC_E_INVALID_ARGUMENT, cc_controller_refresh_in_background(nosrc, NAN, on_done, &refused, on_free));
    CHECK(refused.frees == 2 && refused.calls == 0);
    CHECK_OK(cc_controller_close(nosrc));
    CHECK_RC(CC_E_INVALID_HANDLE, cc_controller_refresh_in_background(nosrc, 0, on_done, &refused, on_free));
    CHECK(refused.frees == 3 && refused.calls == 0);

    /* The former name still works (fire and forget). */
    cc_controller *old = cc_test_open_sample();
    CHECK_OK(cc_controller_refresh_async(old));
    CHECK_OK(cc_controller_close(old));
}

/* A host transport that holds the sync until the test lets it go. */
typedef struct {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int open, requests;
} gate;

static int held_transport(void *userdata, const cc_transport_request *req, cc_transport_response *resp) {
    gate *g = userdata;
    pthread_mutex_lock(&g->lock);
    g->requests++;
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 10;
    while (!g->open) {
        if (pthread_cond_timedwait(&g->cond, &g->lock, &until) != 0) break;
    }
    pthread_mutex_unlock(&g->lock);
    (void)req;
    const char *body = "{\"cards\":[{\"id\":\"h1\",\"tp\":\"short_news\",\"ca\":5,\"ds\":\"x\"}],\"full_sync\":true}";
    return cc_transport_response_set(resp, 200, body, strlen(body), -1);
}

/* A refresh that joins one already running gets that refresh's outcome, once each. */
static void test_joined_refresh_gets_the_same_outcome(void) {
    cc_controller *c = NULL;
    CHECK_OK(cc_controller_open(&c, "{\"userId\":\"j\",\"refreshTokens\":0,\"source\":{\"callback\":true},\"timeoutSeconds\":20}"));
    gate g = {.lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};
    CHECK_OK(cc_controller_set_transport(c, held_transport, &g, NULL));
    completion a = {.lock = PTHREAD_MUTEX_INITIALIZER}, b = {.lock = PTHREAD_MUTEX_INITIALIZER};
    CHECK_OK(cc_controller_refresh_in_background(c, 0, on_done, &a, on_free));
    CHECK_OK(cc_controller_refresh_in_background(c, 0, on_done, &b, on_free));
    usleep(100 * 1000);
    CHECK(a.calls == 0 && b.calls == 0); /* nothing waits for them: the callers went on */
    pthread_mutex_lock(&g.lock);
    g.open = 1;
    pthread_cond_broadcast(&g.cond);
    pthread_mutex_unlock(&g.lock);
    CHECK(wait_frees(&a, 1) && wait_frees(&b, 1));
    CHECK(a.calls == 1 && b.calls == 1 && a.status == CC_OK && b.status == CC_OK);
    CHECK(strcmp(a.json, b.json) == 0);
    CHECK(g.requests == 1); /* one refresh, joined */

    /* Closed while the refresh waits for the source: the completion says CC_E_CLOSED. */
    g.open = 0;
    completion closed = {.lock = PTHREAD_MUTEX_INITIALIZER};
    CHECK_OK(cc_controller_refresh_in_background(c, 0, on_done, &closed, on_free));
    usleep(50 * 1000);
    CHECK_OK(cc_controller_close(c));
    CHECK(wait_frees(&closed, 1));
    CHECK(closed.calls == 1 && closed.status == CC_E_CLOSED);
    CHECK_CONTAINS(closed.json, "\"name\":\"CC_E_CLOSED\"");
    pthread_mutex_lock(&g.lock);
    g.open = 1;
    pthread_cond_broadcast(&g.cond);
    pthread_mutex_unlock(&g.lock);
    usleep(100 * 1000); /* the abandoned fetch returns before the gate goes out of scope */
}

/* Subscribers are told when a visible card expires. */
typedef struct {
    pthread_mutex_t lock;
    char last[1024];
    int updates;
} update_log;

static void on_update(void *userdata, const char *json) {
    update_log *u = userdata;
    pthread_mutex_lock(&u->lock);
    u->updates++;
    snprintf(u->last, sizeof u->last, "%s", json);
    pthread_mutex_unlock(&u->lock);
}

static void test_expiry_reaches_subscribers(void) {
    cc_controller *c = NULL;
    CHECK_OK(cc_controller_open(&c, "{\"userId\":\"x\"}"));
    char payload[512];
    long long soon = (long long)time(NULL) + 2;
    snprintf(payload, sizeof payload,
             "[{\"id\":\"soon\",\"tp\":\"short_news\",\"ca\":5,\"ea\":%lld,\"ds\":\"a\"},"
             "{\"id\":\"stays\",\"tp\":\"short_news\",\"ca\":6,\"ds\":\"b\"}]", soon);
    CHECK_OK(cc_controller_apply(NULL, c, payload));
    CHECK(cc_controller_total_count(c, NULL) == 2);
    update_log u = {.lock = PTHREAD_MUTEX_INITIALIZER};
    uint64_t sub = 0;
    CHECK_OK(cc_controller_subscribe(&sub, c, on_update, &u, NULL));
    for (int i = 0; i < 600; i++) {
        pthread_mutex_lock(&u.lock);
        int n = u.updates;
        pthread_mutex_unlock(&u.lock);
        if (n > 0) break;
        usleep(10 * 1000);
    }
    CHECK(u.updates == 1);
    const char *expired = "{\"reason\":\"expired\",\"ok\":true,\"error\":null,\"cardId\":null,"
                          "\"counts\":{\"total\":1,\"unviewed\":1,\"unread\":1},\"sync\":null,\"origin\":\"store\",\"sequence\":";
    CHECK(strncmp(u.last, expired, strlen(expired)) == 0 && atoll(u.last + strlen(expired)) >= 1);
    /* Not time(): glibc answers it from a coarse clock, a few ms behind the one the library
     * reads. */
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    CHECK((long long)now.tv_sec >= soon);
    CHECK_OK(cc_controller_close(c));
}

/* The outbox lists each event's failed delivery attempts. */
static int fail_events;

static int events_transport(void *userdata, const cc_transport_request *req, cc_transport_response *resp) {
    (void)userdata;
    (void)req;
    if (fail_events) return -1;
    return cc_transport_response_set(resp, 202, NULL, 0, -1);
}

static void test_outbox_attempts(void) {
    cc_controller *c = NULL;
    CHECK_OK(cc_controller_open(&c, "{\"userId\":\"u\",\"events\":{\"callback\":true},\"eventFlushIntervalSeconds\":0}"));
    CHECK_OK(cc_controller_set_transport(c, events_transport, NULL, NULL));
    CHECK_OK(cc_controller_apply(NULL, c, "[{\"id\":\"a\",\"tp\":\"short_news\",\"ca\":5,\"ds\":\"x\"},"
                                          "{\"id\":\"b\",\"tp\":\"short_news\",\"ca\":6,\"ds\":\"y\"}]"));
    CHECK_OK(cc_controller_log_impression(c, "a"));
    fail_events = 1;
    CHECK_RC(CC_E_TRANSPORT, cc_controller_flush_events(NULL, c, 5));
    CHECK_RC(CC_E_TRANSPORT, cc_controller_flush_events(NULL, c, 5));
    CHECK_OK(cc_controller_log_impression(c, "b"));
    char *json = NULL;
    CHECK_OK(cc_controller_pending_events_json(&json, c, 0));
    CHECK_CONTAINS(json, "\"cardId\":\"a\",\"classType\":\"\",\"userId\":\"u\",\"time\":");
    const char *a = json ? strstr(json, "\"cardId\":\"a\"") : NULL;
    const char *b = json ? strstr(json, "\"cardId\":\"b\"") : NULL;
    CHECK(a && b && a < b);
    CHECK(a && strstr(a, "\"attempts\":2}") && strstr(a, "\"attempts\":2}") < b);
    CHECK(b && strstr(b, "\"attempts\":0}"));
    cc_string_free(json);
    fail_events = 0;
    CHECK_OK(cc_controller_flush_events(NULL, c, 5));
    CHECK_OK(cc_controller_close(c));
}

/* A missing source file is a local problem, not the network. */
static void test_missing_source_file(void) {
    cc_controller *c = NULL;
    CHECK_OK(cc_controller_open(&c, "{\"userId\":\"u\",\"refreshTokens\":0,\"source\":{\"file\":\"/nonexistent/feed.json\"}}"));
    CHECK_RC(CC_E_SOURCE_FILE, cc_controller_refresh(NULL, c, 5));
    CHECK_MESSAGE("/nonexistent/feed.json");
    CHECK(strcmp(cc_status_name(CC_E_SOURCE_FILE), "CC_E_SOURCE_FILE") == 0);
    CHECK_OK(cc_controller_close(c));
}

/* Item 6: the time of the last successful refresh survives a reopen (null before any). */
static double last_refresh_at(cc_controller *c) {
    char *d = NULL;
    double at = -1;
    CHECK_OK(cc_controller_diagnostics(&d, c));
    const char *p = d ? strstr(d, "\"lastSuccessfulRefreshAt\":") : NULL;
    CHECK(p != NULL);
    if (p) {
        p += strlen("\"lastSuccessfulRefreshAt\":");
        at = strncmp(p, "null", 4) == 0 ? 0 : strtod(p, NULL);
    }
    cc_string_free(d);
    return at;
}

static void test_last_refresh_time_survives_reopen(void) {
    char dir[256];
    cc_test_make_dir(dir, sizeof dir, "cc-one-api");
    char config[1024];
    snprintf(config, sizeof config, "{\"userId\":\"u\",\"refreshTokens\":0,\"storagePath\":\"%s\","
             "\"source\":{\"file\":\"%s\"}}", dir, CC_SAMPLE_FEED);
    cc_controller *c = NULL;
    CHECK_OK(cc_controller_open(&c, config));
    CHECK(last_refresh_at(c) == 0);
    CHECK_OK(cc_controller_refresh(NULL, c, 5));
    double at = last_refresh_at(c);
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    CHECK(at > 0 && fabs(at - (double)now.tv_sec) < 60);
    CHECK_OK(cc_controller_close(c));
    c = NULL;
    CHECK_OK(cc_controller_open(&c, config));
    double again = last_refresh_at(c);
    if (again != at) fprintf(stderr, "last refresh %.6f after a reopen %.6f\n", at, again);
    CHECK(again == at);
    CHECK_OK(cc_controller_close(c));
    CHECK(cc_test_remove_dir(dir));
}

/* A completion (run on the controller's refresh thread) that starts another background refresh
 * and then refreshes blocking: the blocking call joins the second refresh, whose run was queued
 * behind the completion itself. It waited its whole timeout (5 s) and failed with
 * CC_E_TIMEOUT, the request never sent; now it sends it. */
typedef struct {
    cc_controller *c;
    completion *d;
    int inner_status;
} nested;

static void on_done_refreshing(void *userdata, int status, const char *result_json) {
    nested *n = userdata;
    (void)status; (void)result_json;
    CHECK_OK(cc_controller_refresh_in_background(n->c, 0, NULL, NULL, NULL));
    n->inner_status = cc_controller_refresh(NULL, n->c, 5);
    on_done(n->d, status, result_json);
}

static void on_free_nested(void *userdata) { on_free(((nested *)userdata)->d); }

static void test_blocking_refresh_joining_a_queued_one_runs_it(void) {
    cc_controller *c = cc_test_open_sample();
    completion d = {.lock = PTHREAD_MUTEX_INITIALIZER};
    nested n = {.c = c, .d = &d, .inner_status = 1};
    CHECK_OK(cc_controller_refresh_in_background(c, 5, on_done_refreshing, &n, on_free_nested));
    CHECK(wait_frees(&d, 1));
    CHECK(n.inner_status == CC_OK);
    CHECK_OK(cc_controller_close(c));
}

int main(void) {
    test_log_results();
    test_expired_card_is_logged();
    test_refresh_in_background();
    test_joined_refresh_gets_the_same_outcome();
    test_blocking_refresh_joining_a_queued_one_runs_it();
    test_expiry_reaches_subscribers();
    test_outbox_attempts();
    test_missing_source_file();
    test_last_refresh_time_survives_reopen();
    return cc_test_finish("test_one_api");
}
