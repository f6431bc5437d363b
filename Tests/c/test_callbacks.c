/* The host transport's callback: it serves refreshes and event delivery, including when it
 * fails, answers an error or a huge Retry-After, or sends an ETag (the validator); its
 * free_userdata runs exactly once; a refresh or a close from inside it returns at once. The
 * subscribers' callbacks are test_subscribers.c's. */
#include "cc_test.h"

#include <time.h>

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

/* Refresh and close from inside the transport callback. */
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

/* A response handle kept past its callback is refused in a later callback: the handle is
 * never given out again, where a box's address could be (an answer set late, by a task the
 * host let run on, then answered another request, perhaps another user's). And a body_len
 * over the request's bound is refused before anything is copied: 2^60 ended the process. */
typedef struct {
    int calls;
    cc_transport_response *kept;
    int stale_rc;
    int huge_rc;
} stale_state;

static int transport_keeping_its_handle(void *userdata, const cc_transport_request *req, cc_transport_response *resp) {
    stale_state *t = userdata;
    (void)req;
    t->calls++;
    const char *body = "{\"cards\":[],\"full_sync\":true}";
    if (t->calls == 1) {
        t->kept = resp;
    } else if (t->calls == 2) {
        t->stale_rc = cc_transport_response_set(t->kept, 500, body, strlen(body), -1);
    } else {
        t->huge_rc = cc_transport_response_set(resp, 200, body, (size_t)1 << 60, -1);
        return 0;
    }
    return cc_transport_response_set(resp, 200, body, strlen(body), -1);
}

static void test_stale_and_huge_answers(void) {
    cc_controller *c = NULL;
    CHECK_OK(cc_controller_open(&c, "{\"userId\":\"s\",\"source\":{\"callback\":true},\"refreshTokens\":0}"));
    stale_state t = {0};
    CHECK_OK(cc_controller_set_transport(c, transport_keeping_its_handle, &t, NULL));
    CHECK_OK(cc_controller_refresh(NULL, c, 5));
    CHECK_OK(cc_controller_refresh(NULL, c, 5));     /* answered 200 by its own handle, not 500 */
    CHECK(t.stale_rc == CC_E_INVALID_ARGUMENT);
    CHECK_RC(CC_E_PARSE, cc_controller_refresh(NULL, c, 5));   /* as libcurl's transport says it */
    CHECK_MESSAGE("too large");
    CHECK_MESSAGE("over the limit");
    CHECK(t.huge_rc == CC_E_INVALID_ARGUMENT);
    CHECK_OK(cc_controller_close(c));
}

/* An error answer whose body is over the limit keeps its status and Retry-After: it failed as
 * a broken transport (CC_E_TRANSPORT) and its backoff was lost. */
static int transport_big_error(void *userdata, const cc_transport_request *req, cc_transport_response *resp) {
    (void)userdata; (void)req;
    static char page[5000];
    memset(page, 'x', sizeof page);
    memcpy(page, "busy", 4);
    return cc_transport_response_set(resp, 503, page, sizeof page, 60);
}

static void test_big_error_answer(void) {
    cc_controller *c = NULL;
    CHECK_OK(cc_controller_open(&c, "{\"userId\":\"s\",\"source\":{\"callback\":true},\"refreshTokens\":0,\"maxPayloadBytes\":1000}"));
    CHECK_OK(cc_controller_set_transport(c, transport_big_error, NULL, NULL));
    CHECK_RC(CC_E_SERVER, cc_controller_refresh(NULL, c, 5));
    CHECK_MESSAGE("503");
    CHECK(cc_last_error_retry_after() >= 59);
    CHECK_OK(cc_controller_close(c));
}

int main(void) {
    test_stale_and_huge_answers();
    test_big_error_answer();
    test_host_transport();
    test_calls_from_inside_the_transport();
    test_host_transport_validator();
    return cc_test_finish("test_callbacks");
}
