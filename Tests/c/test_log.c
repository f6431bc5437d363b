/* The log handler (cc_set_log_handler): what it receives for a refresh from a file, a refusal
 * (rate limited), a delivery failure and its retry; nothing below min_level; free_userdata
 * exactly once; a handler that calls back into the library (even cc_set_log_handler) neither
 * deadlocks nor recurses. Also the outbox listing (cc_controller_pending_events_json). */
#include "cc_test.h"

#include <pthread.h>

static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
static char collected[65536];
static int messages, below_warning, frees;
static cc_controller *reentrant_target;
static int depth, max_depth;

static void collect(void *userdata, int level, const char *message) {
    pthread_mutex_lock(&mutex);
    messages++;
    if (level < CC_LOG_WARNING) below_warning++;
    size_t used = strlen(collected);
    snprintf(collected + used, sizeof collected - used, "%d %s\n", level, message);
    pthread_mutex_unlock(&mutex);
    (void)userdata;
}

static void reset(void) {
    pthread_mutex_lock(&mutex);
    collected[0] = 0;
    messages = below_warning = 0;
    pthread_mutex_unlock(&mutex);
}

static int saw(const char *fragment) {
    pthread_mutex_lock(&mutex);
    int found = strstr(collected, fragment) != NULL;
    pthread_mutex_unlock(&mutex);
    return found;
}

static void count_free(void *userdata) {
    (void)userdata;
    frees++;
}

/* A free_userdata that calls back into the library, as the handler's replacement runs it. */
static int reentrant_frees;
static void free_and_call_back(void *userdata) {
    (void)userdata;
    reentrant_frees++;
    (void)cc_set_log_handler(NULL, CC_LOG_DEBUG, NULL, NULL);
    CC_TEST_IGNORE(cc_controller_pending_events_json(NULL, NULL, 0));
}

/* Calls back into the library: reads, a refused click, a refresh, and sets the handler again. */
static void reentrant(void *userdata, int level, const char *message) {
    depth++;
    if (depth > max_depth) max_depth = depth;
    collect(userdata, level, message);
    int64_t total = 0;
    (void)CC_TEST_IGNORE(cc_controller_counts(&total, NULL, reentrant_target, NULL));
    (void)CC_TEST_IGNORE(cc_controller_log_click(reentrant_target, "msg-2"));          /* refused: would log */
    (void)CC_TEST_IGNORE(cc_controller_refresh(NULL, reentrant_target, 5));            /* would log */
    (void)cc_set_log_handler(reentrant, CC_LOG_DEBUG, NULL, NULL);
    depth--;
}

static int failing_transport(void *userdata, const cc_transport_request *request, cc_transport_response *response) {
    (void)userdata; (void)request;
    (void)CC_TEST_IGNORE(cc_transport_response_fail(response, "connection refused (test)"));
    return -1;
}

int main(void) {
    /* Silent by default: nothing to observe but that the calls work without a handler. */
    cc_controller *c = cc_test_open_sample();
    CHECK_OK(cc_controller_refresh(NULL, c, 5));
    CHECK_OK(cc_controller_close(c));

    /* A refresh from a file: start, bytes, outcome with the merge counts, left-out cards. */
    CHECK_OK(cc_set_log_handler(collect, CC_LOG_DEBUG, NULL, count_free));
    c = cc_test_open_sample();
    reset();
    CHECK_OK(cc_controller_refresh(NULL, c, 5));
    CHECK(saw("10 refresh started for user \"u-1\" (file " CC_SAMPLE_FEED ")"));
    CHECK(saw("bytes from the source"));
    CHECK(saw("20 refresh for user \"u-1\": added 11, updated 0, removed 0, kept newer 0 (full sync), 3 left out"));
    CHECK(saw("30 card left out of the payload (index 13, id \"bad-type\"): unknown type \"hologram\""));
    /* A refused click: info, with its reason. */
    CHECK_RC(CC_E_REFUSED, cc_controller_log_click(c, "msg-2"));
    CHECK(saw("20 click refused (CC_E_REFUSED): click not logged: card \"msg-2\" has no url"));
    CHECK_OK(cc_controller_close(c));

    /* min_level: nothing below it; replacing the handler frees the old userdata once. */
    CHECK_OK(cc_set_log_handler(collect, CC_LOG_WARNING, NULL, count_free));
    CHECK(frees == 1);
    reset();
    cc_controller *limited = NULL;
    CHECK_OK(cc_controller_open(&limited, "{\"userId\":\"u-1\",\"refreshTokens\":1,\"source\":{\"file\":\"" CC_SAMPLE_FEED "\"}}"));
    CHECK_OK(cc_controller_refresh(NULL, limited, 5));
    CHECK_RC(CC_E_RATE_LIMITED, cc_controller_refresh(NULL, limited, 5));
    CHECK(saw("30 refresh refused (CC_E_RATE_LIMITED): refresh refused by the rate limit (1 per 180 s): next token in"));
    CHECK(below_warning == 0);
    CHECK_OK(cc_controller_close(limited));

    /* A delivery failure and its retry (through a host transport that cannot reach anyone). */
    CHECK_OK(cc_set_log_handler(collect, CC_LOG_INFO, NULL, count_free));
    CHECK(frees == 2);
    reset();
    cc_controller *events = NULL;
    CHECK_OK(cc_controller_open(&events, "{\"userId\":\"u-1\",\"refreshTokens\":0,\"source\":{\"file\":\"" CC_SAMPLE_FEED "\"},"
                                        "\"events\":{\"callback\":true},\"eventFlushIntervalSeconds\":0}"));
    CHECK_OK(cc_controller_set_transport(events, failing_transport, NULL, NULL));
    CHECK_OK(cc_controller_refresh(NULL, events, 5));
    CHECK_OK(cc_controller_log_impression(events, "tile-1"));
    CHECK_OK(cc_controller_log_feed_displayed(events));
    char *result = NULL;
    CHECK_RC(CC_E_TRANSPORT, cc_controller_flush_events(&result, events, 5));
    CHECK(result == NULL);
    CHECK(saw("30 event delivery failed (CC_E_TRANSPORT): events request failed in the host transport: connection refused (test); 2 events stay pending"));
    CHECK(saw("20 event delivery retry in "));
    CHECK(saw("(failed attempt 1)"));

    /* The outbox, listed. */
    char *json = NULL;
    CHECK_OK(cc_controller_pending_events_json(&json, events, 0));
    CHECK_CONTAINS(json, "{\"pending\":2,\"failedAttempts\":1,\"events\":[{\"id\":\"");
    CHECK_CONTAINS(json, "\"type\":\"impression\",\"cardId\":\"tile-1\",\"classType\":\"home_tile\",\"userId\":\"u-1\",\"time\":");
    CHECK_CONTAINS(json, "\"type\":\"feed_displayed\",\"cardId\":null,\"classType\":null,\"userId\":\"u-1\"");
    cc_string_free(json);
    json = NULL;
    CHECK_OK(cc_controller_pending_events_json(&json, events, 1));
    CHECK_CONTAINS(json, "{\"pending\":2,");
    CHECK(json && strstr(json, "feed_displayed") == NULL);
    cc_string_free(json);
    json = (char *)"untouched";
    CHECK_RC(CC_E_INVALID_HANDLE, cc_controller_pending_events_json(&json, NULL, 0));
    CHECK(json == NULL);
    CHECK_RC(CC_E_INVALID_ARGUMENT, cc_controller_pending_events_json(NULL, events, 0));
    CHECK_OK(cc_controller_close(events));

    /* A class type holding a NUL reaches the stored event whole: texts were handed to SQLite
     * as C strings, and the event of such a card kept only "tile". */
    char dir[512], config[1024];
    cc_test_make_dir(dir, sizeof dir, "log-nul");
    snprintf(config, sizeof config, "{\"userId\":\"u-1\",\"storagePath\":\"%s\"}", dir);
    cc_controller *nul = NULL;
    CHECK_OK(cc_controller_open(&nul, config));
    CHECK_OK(cc_controller_apply(NULL, nul, "[{\"id\":\"a\",\"tp\":\"short_news\",\"ca\":1,\"ds\":\"x\","
                                             "\"e\":{\"class_type\":\"tile\\u0000x\"}}]"));
    CHECK_OK(cc_controller_log_impression(nul, "a"));
    CHECK_OK(cc_controller_close(nul));
    nul = NULL;
    CHECK_OK(cc_controller_open(&nul, config));
    json = NULL;
    CHECK_OK(cc_controller_pending_events_json(&json, nul, 0));
    CHECK_CONTAINS(json, "\"classType\":\"tile\\u0000x\"");
    cc_string_free(json);
    CHECK_OK(cc_controller_close(nul));

    /* A handler that calls back into the library: no deadlock, no recursion. */
    reentrant_target = cc_test_open_sample();
    CHECK_OK(cc_set_log_handler(reentrant, CC_LOG_DEBUG, NULL, NULL));
    CHECK(frees == 3);
    reset();
    CHECK_OK(cc_controller_refresh(NULL, reentrant_target, 5));
    CHECK(saw("refresh for user \"u-1\""));
    CHECK(!saw("click refused"));
    CHECK(max_depth == 1);
    CHECK_OK(cc_controller_close(reentrant_target));

    /* A free_userdata that calls the library, run by a replacement: no deadlock. */
    CHECK_OK(cc_set_log_handler(collect, CC_LOG_DEBUG, NULL, free_and_call_back));
    CHECK_OK(cc_set_log_handler(collect, CC_LOG_DEBUG, NULL, NULL));
    CHECK(reentrant_frees == 1);

    /* NULL: silence again; this call's free_userdata runs at once. */
    CHECK_OK(cc_set_log_handler(NULL, CC_LOG_DEBUG, NULL, count_free));
    CHECK(frees == 4);
    reset();
    c = cc_test_open_sample();
    CHECK_OK(cc_controller_refresh(NULL, c, 5));
    CHECK(messages == 0);
    CHECK_OK(cc_controller_close(c));
    return cc_test_finish("test_log");
}
