/* Against the reference server over real HTTP (CC_SERVER_URL, started by with_server.py): full
 * then incremental sync, event delivery and server-side dedupe, and each fault keeping the
 * cached cards: 500, 429 with Retry-After, a timeout, a truncated body, invalid JSON, a response
 * for another user, an unreachable server; compressed transfers (gzip asked for and decoded, a
 * gzip bomb refused at the limit, event batches sent gzip-compressed) and the conditional sync
 * (a 304 to the stored ETag: "notModified", nothing merged); the automatic refresh policies
 * (periodic with jitter, ending at close; on open; backoff through an outage). */
#include "cc_test.h"
#include "cc_admin.h"

#include <time.h>
#include <unistd.h>

static const char *server;


static cc_controller *open_remote(const char *user, double timeout) {
    char config[1024];
    snprintf(config, sizeof config,
             "{\"userId\":\"%s\",\"refreshTokens\":0,\"timeoutSeconds\":%g,\"source\":{\"url\":\"%s\",\"apiKey\":\"k\"},"
             "\"events\":{\"url\":\"%s\"},\"eventFlushIntervalSeconds\":0}", user, timeout, server, server);
    cc_controller *c = NULL;
    if (cc_controller_open(&c, config) != CC_OK) {
        fprintf(stderr, "open: %s\n", cc_last_error_message());
        exit(2);
    }
    return c;
}

static int64_t total_of(cc_controller *c) {
    int64_t total = -1;
    CC_TEST_IGNORE(cc_controller_counts(&total, NULL, c, NULL));
    return total;
}

/* How many times `needle` occurs in `text`. */
static int occurrences(const char *text, const char *needle) {
    int n = 0;
    for (const char *at = strstr(text, needle); at; at = strstr(at + strlen(needle), needle)) n++;
    return n;
}

static void test_full_then_incremental(void) {
    cc_controller *c = open_remote("alice", 5);
    char *summary = NULL;
    CHECK_OK(cc_controller_refresh(&summary, c, 5));
    CHECK_CONTAINS(summary, "\"fullSync\":true");
    cc_string_free(summary);
    CHECK(total_of(c) == 10);

    admin("POST", "/_admin/cards", "{\"user_id\":\"alice\",\"cards\":[{\"id\":\"new-1\",\"tp\":\"short_news\",\"ca\":1763799999,\"ds\":\"fresh\"}]}", NULL, 0);
    admin("POST", "/_admin/remove", "{\"user_id\":\"alice\",\"ids\":[\"tile-3\"]}", NULL, 0);
    CHECK_OK(cc_controller_refresh(&summary, c, 5));
    CHECK_CONTAINS(summary, "\"fullSync\":false");
    CHECK_CONTAINS(summary, "\"added\":1");
    CHECK_CONTAINS(summary, "\"removed\":1");
    cc_string_free(summary);
    char *card = NULL;
    CHECK_OK(cc_controller_card(&card, c, "new-1"));
    cc_string_free(card);
    CHECK_RC(CC_E_NOT_FOUND, cc_controller_card(&card, c, "tile-3"));
    CHECK(total_of(c) == 10);
    CHECK_OK(cc_controller_close(c));
}

static void test_events_delivered_once(void) {
    admin("POST", "/_admin/reset", "{}", NULL, 0);
    cc_controller *c = open_remote("bob", 5);
    CHECK_OK(cc_controller_refresh(NULL, c, 5));
    CHECK_OK(cc_controller_log_impression(c, "coupon-1"));
    CHECK_OK(cc_controller_log_click(c, "coupon-1"));
    CHECK_OK(cc_controller_log_impression(c, "coupon-control"));
    char *result = NULL;
    CHECK_OK(cc_controller_flush_events(&result, c, 5));
    CHECK_CONTAINS(result, "{\"delivered\":3,\"dropped\":0,\"pending\":0}");
    cc_string_free(result);
    char events[65536];
    admin("GET", "/_admin/events", NULL, events, sizeof events);
    CHECK_CONTAINS(events, "\"type\":\"control_impression\"");
    CHECK_CONTAINS(events, "\"user_id\":\"bob\"");
    CHECK_CONTAINS(events, "\"duplicates\":0");

    /* A lost answer (truncated) makes the client send again: the server drops the duplicate. */
    CHECK_OK(cc_controller_log_dismissal(c, "coupon-1"));
    admin("POST", "/_admin/fault", "{\"path\":\"/events\",\"body\":\"truncated\"}", NULL, 0);
    CHECK(cc_controller_flush_events(NULL, c, 5) != CC_OK);
    int64_t pending = 0;
    CHECK_OK(cc_controller_pending_events(&pending, c));
    CHECK(pending == 1);
    CHECK_OK(cc_controller_flush_events(NULL, c, 5));
    admin("GET", "/_admin/events", NULL, events, sizeof events);
    CHECK_CONTAINS(events, "\"duplicates\":1");
    int dismissals = 0;
    for (const char *p = events; (p = strstr(p, "\"type\":\"dismissal\"")); p++) dismissals++;
    CHECK(dismissals == 1);
    CHECK_OK(cc_controller_close(c));
}

static void test_faults_keep_the_cache(void) {
    admin("POST", "/_admin/reset", "{}", NULL, 0);
    cc_controller *c = open_remote("carol", 1);
    CHECK_OK(cc_controller_refresh(NULL, c, 5));
    CHECK(total_of(c) == 10);

    admin("POST", "/_admin/fault", "{\"status\":500}", NULL, 0);
    CHECK_RC(CC_E_SERVER, cc_controller_refresh(NULL, c, 5));
    CHECK_MESSAGE("HTTP 500");
    CHECK(cc_last_error_retry_after() < 0); /* no Retry-After */
    CHECK(total_of(c) == 10);

    admin("POST", "/_admin/fault", "{\"delay\":3}", NULL, 0);
    CHECK_RC(CC_E_TIMEOUT, cc_controller_refresh(NULL, c, 5)); /* timeoutSeconds is 1 */
    CHECK(total_of(c) == 10);

    admin("POST", "/_admin/fault", "{\"body\":\"truncated\"}", NULL, 0);
    CHECK_RC(CC_E_NETWORK, cc_controller_refresh(NULL, c, 5));
    CHECK(total_of(c) == 10);

    admin("POST", "/_admin/fault", "{\"body\":\"invalid\"}", NULL, 0);
    CHECK_RC(CC_E_PARSE, cc_controller_refresh(NULL, c, 5));
    CHECK(total_of(c) == 10);

    admin("POST", "/_admin/fault", "{\"body\":\"wrong_user\"}", NULL, 0);
    CHECK_RC(CC_E_WRONG_USER, cc_controller_refresh(NULL, c, 5));
    CHECK_MESSAGE("someone-else");
    CHECK(total_of(c) == 10);

    char *diag = NULL;
    CHECK_OK(cc_controller_diagnostics(&diag, c));
    CHECK_CONTAINS(diag, "\"name\":\"CC_E_WRONG_USER\"");
    cc_string_free(diag);

    /* A 429 with Retry-After: reported with its delay, and the next refresh is not even sent. */
    admin("POST", "/_admin/fault", "{\"status\":429,\"retry_after\":7}", NULL, 0);
    CHECK_RC(CC_E_RATE_LIMITED, cc_controller_refresh(NULL, c, 5));
    CHECK_MESSAGE("retry after 7 s");
    CHECK(cc_last_error_retry_after() == 7.0);
    CHECK(total_of(c) == 10);
    CHECK(cc_last_error_retry_after() < 0); /* a success clears it */
    /* Counted by the server's entries, which it makes when a request arrives (their fields are
     * filled in when it is answered: the request delayed 3 s above may be answered between
     * the two reads, so their lengths may differ). */
    char requests_before[65536], requests_after[65536];
    admin("GET", "/_admin/requests", NULL, requests_before, sizeof requests_before);
    CHECK_RC(CC_E_RATE_LIMITED, cc_controller_refresh(NULL, c, 5));
    CHECK_MESSAGE("the server asked to wait");
    CHECK(cc_last_error_retry_after() > 5 && cc_last_error_retry_after() <= 7.0);
    admin("GET", "/_admin/requests", NULL, requests_after, sizeof requests_after);
    CHECK(occurrences(requests_before, "\"method\":") == occurrences(requests_after, "\"method\":"));
    CHECK(total_of(c) == 10);
    CHECK_OK(cc_controller_close(c));

    /* Nothing listening */
    cc_controller *dead = NULL;
    CHECK_OK(cc_controller_open(&dead, "{\"refreshTokens\":0,\"timeoutSeconds\":2,\"source\":{\"url\":\"http://127.0.0.1:9\"}}"));
    CHECK_RC(CC_E_NETWORK, cc_controller_refresh(NULL, dead, 2));
    CHECK_OK(cc_controller_close(dead));
}

static cc_controller *open_config(const char *config) {
    cc_controller *c = NULL;
    if (cc_controller_open(&c, config) != CC_OK) {
        fprintf(stderr, "open: %s\n", cc_last_error_message());
        exit(2);
    }
    return c;
}

static void test_gzip_and_304(void) {
    admin("POST", "/_admin/reset", "{}", NULL, 0);
    cc_controller *c = open_remote("gzip-c", 5);
    char *summary = NULL;
    CHECK_OK(cc_controller_refresh(&summary, c, 5));
    CHECK_CONTAINS(summary, "\"notModified\":false");
    cc_string_free(summary);
    CHECK_OK(cc_controller_refresh(&summary, c, 5));
    CHECK_CONTAINS(summary, "\"notModified\":true");
    CHECK_CONTAINS(summary, "\"added\":0");
    CHECK_CONTAINS(summary, "\"counts\":{\"total\":10");
    cc_string_free(summary);
    static char log[65536];
    admin("GET", "/_admin/requests", NULL, log, sizeof log);
    CHECK_CONTAINS(log, "\"response_encoding\":\"gzip\"");
    CHECK_CONTAINS(log, "\"status\":304");
    /* A change on the server: a 200 with it. */
    admin("POST", "/_admin/cards", "{\"user_id\":\"gzip-c\",\"cards\":[{\"id\":\"n-2\",\"tp\":\"short_news\",\"ca\":1763799999,\"ds\":\"x\"}]}", NULL, 0);
    CHECK_OK(cc_controller_refresh(&summary, c, 5));
    CHECK_CONTAINS(summary, "\"notModified\":false");
    CHECK_CONTAINS(summary, "\"added\":1");
    cc_string_free(summary);

    /* Event batches go gzip-compressed. */
    for (int i = 0; i < 15; i++) CHECK_OK(cc_controller_log_feed_displayed(c));   /* over 512 bytes */
    CHECK_OK(cc_controller_flush_events(NULL, c, 5));
    admin("GET", "/_admin/requests", NULL, log, sizeof log);
    CHECK_CONTAINS(log, "\"content_encoding\":\"gzip\"");
    CHECK_OK(cc_controller_close(c));
}

static void test_gzip_bomb(void) {
    char config[1024];
    snprintf(config, sizeof config,
             "{\"userId\":\"bomb-c\",\"refreshTokens\":0,\"maxPayloadBytes\":1048576,\"timeoutSeconds\":60,"
             "\"source\":{\"url\":\"%s\"}}", server);
    cc_controller *c = open_config(config);
    CHECK_OK(cc_controller_refresh(NULL, c, 5));
    admin("POST", "/_admin/fault", "{\"body\":\"gzip_bomb\"}", NULL, 0);
    /* The server makes the bomb on first use (256 MiB through zlib: seconds on a busy machine). */
    CHECK_RC(CC_E_PARSE, cc_controller_refresh(NULL, c, 60));
    CHECK_CONTAINS(cc_last_error_message(), "too large");
    CHECK(total_of(c) == 10);
    CHECK_OK(cc_controller_close(c));
}

/* Sync requests the server received (its wire counters). */
static long sync_count(void) {
    static char out[4096];
    admin("GET", "/_admin/transfer", NULL, out, sizeof out);
    const char *at = strstr(out, "\"/content_cards/sync\":{\"requests\":");
    return at ? strtol(at + strlen("\"/content_cards/sync\":{\"requests\":"), NULL, 10) : 0;
}

static void sleep_seconds(double s) { usleep((useconds_t)(s * 1e6)); }

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void test_automatic_refresh(void) {
    admin("POST", "/_admin/reset", "{}", NULL, 0);
    char config[1024];
    /* Periodic, every 0.25 s +- 20 %: 6 to 10 in 2 s; nothing after close. */
    snprintf(config, sizeof config,
             "{\"userId\":\"auto-c\",\"refreshTokens\":0,\"refreshPeriodSeconds\":0.25,"
             "\"refreshPeriodJitter\":0.2,\"source\":{\"url\":\"%s\"}}", server);
    double opened = now_seconds();
    cc_controller *c = open_config(config);
    sleep_seconds(2.0);
    CHECK_OK(cc_controller_close(c));
    double open_for = now_seconds() - opened;
    long at_close = sync_count();
    /* One per 0.25 s +- 20 %: a loaded machine may run late (fewer), never early. */
    CHECK(at_close >= 3 && at_close <= open_for / 0.2 + 1);
    sleep_seconds(0.8);
    CHECK(sync_count() <= at_close + 1);

    /* On open, through an outage: retried with backoff (windows 0.05 .. 0.4 s), then cards. */
    admin("POST", "/_admin/reset", "{}", NULL, 0);
    admin("POST", "/_admin/transfer", "{\"outage\":true}", NULL, 0);
    snprintf(config, sizeof config,
             "{\"userId\":\"auto-c2\",\"refreshTokens\":0,\"refreshOnOpenAfterSeconds\":0,"
             "\"refreshPeriodSeconds\":60,\"retryBaseSeconds\":0.05,\"retryMaxSeconds\":0.4,"
             "\"source\":{\"url\":\"%s\"}}", server);
    c = open_config(config);
    sleep_seconds(2.0);
    long during = sync_count();
    CHECK(during >= 3 && during <= 30);
    admin("POST", "/_admin/transfer", "{\"outage\":false}", NULL, 0);
    for (int i = 0; i < 50 && total_of(c) == 0; i++) sleep_seconds(0.1);
    CHECK(total_of(c) == 10);
    long recovered = sync_count();
    sleep_seconds(0.7);
    CHECK(sync_count() == recovered);   /* the 60 s period took over */
    CHECK_OK(cc_controller_close(c));
}

int main(void) {
    server = getenv("CC_SERVER_URL");
    if (!server || !getenv("CC_ADMIN")) {
        fprintf(stderr, "run through with_server.py\n");
        return 2;
    }
    test_full_then_incremental();
    test_events_delivered_once();
    test_faults_keep_the_cache();
    test_gzip_and_304();
    test_gzip_bomb();
    test_automatic_refresh();
    return cc_test_finish("test_http");
}
