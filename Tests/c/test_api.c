/* Every function of the API on its success path, and the failures a correct program meets. */
#include "cc_test.h"

#include <math.h>
#include <unistd.h>

static void test_versions(void) {
    CHECK(strcmp(cc_version(), CC_VERSION_STRING) == 0);
    CHECK(cc_abi_version() == CC_ABI_VERSION);
    /* The version macros agree with one another (Tests/repo/check_repo.py checks the rest). */
    char expected[48];
    snprintf(expected, sizeof expected, "%d.%d.%d", CC_VERSION_MAJOR, CC_VERSION_MINOR, CC_VERSION_PATCH);
    CHECK(strcmp(CC_VERSION_STRING, expected) == 0);
    CHECK(CC_VERSION_NUMBER == CC_VERSION_MAJOR * 10000 + CC_VERSION_MINOR * 100 + CC_VERSION_PATCH);
    CHECK(CC_VERSION_AT_LEAST(CC_VERSION_MAJOR, CC_VERSION_MINOR, CC_VERSION_PATCH));
    CHECK(CC_VERSION_AT_LEAST(0, 0, 0));
    CHECK(!CC_VERSION_AT_LEAST(CC_VERSION_MAJOR, CC_VERSION_MINOR, CC_VERSION_PATCH + 1));
    CHECK(!CC_VERSION_AT_LEAST(CC_VERSION_MAJOR + 1, 0, 0));
    CHECK(strcmp(cc_status_name(CC_E_NOT_FOUND), "CC_E_NOT_FOUND") == 0);
    CHECK(strcmp(cc_status_name(CC_OK), "CC_OK") == 0);
    CHECK(strcmp(cc_status_name(12345), "CC_E_UNKNOWN") == 0);
    CHECK(strcmp(cc_last_error_message(), "") == 0);
}

static void test_refresh_feed_counts(void) {
    cc_controller *c = cc_test_open_sample();
    char *summary = NULL;
    CHECK_OK(cc_controller_refresh(&summary, c, 5));
    CHECK_CONTAINS(summary, "\"added\":11");
    CHECK_CONTAINS(summary, "\"reason\":\"missing required field \\\"tt\\\" (title) for a captioned_image card\"");
    cc_string_free(summary);

    int64_t total = -1, unviewed = -1;
    CHECK_OK(cc_controller_counts(&total, &unviewed, c, NULL));
    CHECK(total == 10 && unviewed == 9);
    CHECK_OK(cc_controller_counts(&total, &unviewed, c, "[\"coupon_code\"]"));
    CHECK(total == 2 && unviewed == 1);
    CHECK_OK(cc_controller_counts(NULL, &unviewed, c, "[\"HOME_TILE\"]"));
    CHECK(unviewed == 3);

    char *feed = NULL;
    CHECK_OK(cc_controller_feed(&feed, c, "[\"message_full_page\",\"message_webview\"]"));
    CHECK(feed && strncmp(feed, "[{\"id\":\"msg-3\"", 14) == 0);
    CHECK_CONTAINS(feed, "{\"id\":\"msg-2\"");
    cc_string_free(feed);

    /* The same card gives the same bytes every time. */
    char *a = NULL, *b = NULL;
    CHECK_OK(cc_controller_card(&a, c, "coupon-1"));
    CHECK_OK(cc_controller_card(&b, c, "coupon-1"));
    CHECK(a && b && strcmp(a, b) == 0);
    CHECK_CONTAINS(a, "\"extras\":{\"class_type\":\"coupon_code\",\"coupon_code\":\"SAVE20\"");
    cc_string_free(a);
    cc_string_free(b);
    CHECK_OK(cc_controller_close(c));
}

/* cc_controller_feed_indexed: the text of cc_controller_feed, and offsets that bound each card
 * exactly (the byte after each is the ',' or the ']'), for a filter and for the empty feed. */
static void check_indexed(cc_controller *c, const char *filter, size_t expected_cards) {
    char *plain = NULL, *text = NULL;
    size_t length = 0, count = 99;
    const size_t *offsets = NULL;
    CHECK_OK(cc_controller_feed(&plain, c, filter));
    CHECK_OK(cc_controller_feed_indexed(&text, &length, &offsets, &count, c, filter));
    CHECK(plain && text && offsets && strcmp(plain, text) == 0 && length == strlen(text));
    CHECK(count == expected_cards && offsets[count] == length);
    for (size_t i = 0; text && offsets && i < count; i++) {
        CHECK(offsets[i] < offsets[i + 1]);
        CHECK(strncmp(text + offsets[i], "{\"id\":", 6) == 0);
        CHECK(text[offsets[i] - 1] == (i == 0 ? '[' : ','));
        CHECK(text[offsets[i + 1] - 1] == (i + 1 == count ? ']' : ','));
        CHECK(text[offsets[i + 1] - 2] == '}');
    }
    if (count == 0) CHECK(offsets && offsets[0] == 2 && strcmp(text, "[]") == 0);
    cc_string_free(plain);
    cc_string_free(text);
}

static void test_feed_indexed(void) {
    cc_controller *c = cc_test_open_sample();
    check_indexed(c, NULL, 0);
    CHECK_OK(cc_controller_refresh(NULL, c, 5));
    check_indexed(c, NULL, 10);
    check_indexed(c, "[\"coupon_code\"]", 2);
    check_indexed(c, "[\"nothing\"]", 0);
    /* Every output is required; on failure each one given is cleared. */
    char *text = (char *)"stale";
    size_t length = 7, count = 7;
    const size_t *offsets = &length;
    CHECK_RC(CC_E_INVALID_ARGUMENT, cc_controller_feed_indexed(&text, &length, NULL, &count, c, NULL));
    CHECK(text == NULL && length == 0 && count == 0);
    CHECK_RC(CC_E_INVALID_ARGUMENT, cc_controller_feed_indexed(NULL, &length, &offsets, &count, c, NULL));
    CHECK(offsets == NULL);
    CHECK_RC(CC_E_INVALID_ARGUMENT, cc_controller_feed_indexed(&text, NULL, &offsets, &count, c, NULL));
    CHECK_RC(CC_E_INVALID_ARGUMENT, cc_controller_feed_indexed(&text, &length, &offsets, NULL, c, NULL));
    CHECK(text == NULL && offsets == NULL);
    CHECK_RC(CC_E_PARSE, cc_controller_feed_indexed(&text, &length, &offsets, &count, c, "[1]"));
    CHECK(text == NULL && offsets == NULL && length == 0 && count == 0);
    CHECK_OK(cc_controller_close(c));
    CHECK_RC(CC_E_INVALID_HANDLE, cc_controller_feed_indexed(&text, &length, &offsets, &count, c, NULL));
    CHECK(text == NULL && offsets == NULL);
}

static void test_logging(void) {
    cc_controller *c = cc_test_open_sample();
    CHECK_OK(cc_controller_refresh(NULL, c, 0));
    int64_t unviewed = 0, pending = 0;
    CHECK_OK(cc_controller_log_impression(c, "tile-1"));
    CHECK_OK(cc_controller_log_impression(c, "tile-1"));
    CHECK_OK(cc_controller_counts(NULL, &unviewed, c, NULL));
    CHECK(unviewed == 8);
    CHECK_OK(cc_controller_log_click(c, "tile-1"));
    CHECK_RC(CC_E_REFUSED, cc_controller_log_click(c, "msg-2"));
    CHECK_MESSAGE("has no url");
    CHECK_OK(cc_controller_log_dismissal(c, "tile-1"));
    CHECK_RC(CC_E_REFUSED, cc_controller_log_dismissal(c, "tile-1"));
    CHECK_MESSAGE("already dismissed");
    CHECK_RC(CC_E_REFUSED, cc_controller_log_dismissal(c, "msg-1"));
    CHECK_MESSAGE("not dismissible");
    CHECK_RC(CC_E_NOT_FOUND, cc_controller_log_impression(c, "no-such-card"));
    CHECK_MESSAGE("no-such-card");
    CHECK(cc_last_error_code() == CC_E_NOT_FOUND);
    CHECK_OK(cc_controller_log_feed_displayed(c));
    CHECK(cc_last_error_code() == CC_OK);
    CHECK_OK(cc_controller_pending_events(&pending, c));
    CHECK(pending == 5);
    int64_t total = 0;
    CHECK_OK(cc_controller_counts(&total, NULL, c, NULL));
    CHECK(total == 9);
    /* No sink configured: events stay. */
    CHECK_RC(CC_E_NO_SOURCE, cc_controller_flush_events(NULL, c, 1));
    CHECK_OK(cc_controller_close(c));
}

static void test_apply_user_diagnostics(void) {
    cc_controller *c = NULL;
    CHECK_OK(cc_controller_open(&c, NULL));
    char *summary = NULL;
    CHECK_OK(cc_controller_apply(&summary, c, "[{\"id\":\"a\",\"tp\":\"short_news\",\"ca\":1,\"ds\":\"hello\"}]"));
    CHECK_CONTAINS(summary, "\"added\":1");
    cc_string_free(summary);
    CHECK_RC(CC_E_PARSE, cc_controller_apply(&summary, c, "{\"cards\":[{\"id\":"));
    CHECK(summary == NULL);
    CHECK_MESSAGE("truncated");
    CHECK_RC(CC_E_WRONG_USER, cc_controller_apply(NULL, c, "{\"cards\":[],\"user_id\":\"mallory\"}"));
    CHECK_RC(CC_E_NO_SOURCE, cc_controller_refresh(NULL, c, 1));

    char *user = NULL;
    CHECK_OK(cc_controller_user(&user, c));
    CHECK(user && strcmp(user, "") == 0);
    cc_string_free(user);
    CHECK_OK(cc_controller_change_user(c, "bob"));
    CHECK_OK(cc_controller_user(&user, c));
    CHECK(user && strcmp(user, "bob") == 0);
    cc_string_free(user);
    int64_t total = -1;
    CHECK_OK(cc_controller_counts(&total, NULL, c, NULL));
    CHECK(total == 0);

    char *diag = NULL;
    CHECK_OK(cc_controller_diagnostics(&diag, c));
    CHECK_CONTAINS(diag, "\"userId\":\"bob\"");
    CHECK_CONTAINS(diag, "\"rateLimit\":{\"enabled\":true,\"capacity\":5");
    cc_string_free(diag);
    CHECK_OK(cc_controller_close(c));
}

static void test_rate_limit_and_config(void) {
    cc_controller *c = NULL;
    CHECK_RC(CC_E_CONFIG, cc_controller_open(&c, "{\"refreshToken\":1}"));
    CHECK(c == NULL);
    CHECK_MESSAGE("did you mean \"refreshTokens\"");
    CHECK_RC(CC_E_CONFIG, cc_controller_open(&c, "{\"userId\":"));
    CHECK_OK(cc_controller_open(&c, "{\"refreshTokens\":1,\"source\":{\"file\":\"" CC_SAMPLE_FEED "\"}}"));
    CHECK_OK(cc_controller_refresh(NULL, c, 5));
    CHECK_RC(CC_E_RATE_LIMITED, cc_controller_refresh(NULL, c, 5));
    CHECK_MESSAGE("next token in 180 s");
    CHECK_RC(CC_E_RATE_LIMITED, cc_controller_refresh_async(c));
    int64_t total = 0;
    CHECK_OK(cc_controller_counts(&total, NULL, c, NULL));
    CHECK(total == 10);
    CHECK_OK(cc_controller_close(c));
}

static void test_snapshot(void) {
    cc_controller *c = cc_test_open_sample();
    CHECK_OK(cc_controller_refresh(NULL, c, 5));
    cc_snapshot *s = NULL;
    CHECK_OK(cc_controller_snapshot(&s, c, "[\"coupon_code\"]"));
    size_t n = 0;
    CHECK_OK(cc_snapshot_count(&n, s));
    CHECK(n == 2);
    const char *id = NULL, *url = NULL, *title = (const char *)1;
    CHECK_OK(cc_snapshot_string(&id, s, 0, "id"));
    CHECK(id && strcmp(id, "coupon-control") == 0);
    CHECK_OK(cc_snapshot_string(&url, s, 1, "url"));
    CHECK(url && strncmp(url, "https://", 8) == 0);
    CHECK_OK(cc_snapshot_string(&title, s, 1, "title"));
    CHECK(title == NULL);
    int is_control = -1;
    CHECK_OK(cc_snapshot_bool(&is_control, s, 0, "isControl"));
    CHECK(is_control == 1);
    int64_t created = 0;
    CHECK_OK(cc_snapshot_int(&created, s, 1, "created"));
    CHECK(created == 1763760000);
    double ratio = -1;
    int present = -1;
    CHECK_OK(cc_snapshot_double(&ratio, &present, s, 0, "imageAspectRatio"));
    CHECK(present == 0);
    const char *discount = NULL;
    CHECK_OK(cc_snapshot_extra(&discount, s, 0, "discount_percentage"));
    CHECK(discount && strcmp(discount, "20") == 0);
    CHECK_OK(cc_snapshot_extra(&discount, s, 0, "nope"));
    CHECK(discount == NULL);
    size_t extras = 0;
    CHECK_OK(cc_snapshot_extras_count(&extras, s, 1));
    CHECK(extras == 4);
    const char *key = NULL, *value = NULL;
    CHECK_OK(cc_snapshot_extra_at(&key, &value, s, 1, 0));
    CHECK(key && strcmp(key, "class_type") == 0 && value && strcmp(value, "coupon_code") == 0);
    CHECK_RC(CC_E_INVALID_ARGUMENT, cc_snapshot_extra_at(&key, &value, s, 1, 4));
    CHECK_RC(CC_E_INVALID_ARGUMENT, cc_snapshot_extra_at(NULL, &value, s, 1, 0));   /* an output NULL */
    CHECK_RC(CC_E_INVALID_ARGUMENT, cc_snapshot_extra_at(&key, NULL, s, 1, 0));
    CHECK_RC(CC_E_INVALID_ARGUMENT, cc_snapshot_string(&id, s, 2, "id"));
    CHECK_MESSAGE("out of range");
    CHECK_RC(CC_E_INVALID_ARGUMENT, cc_snapshot_string(&id, s, 0, "created"));
    CHECK_MESSAGE("is an integer");
    CHECK_RC(CC_E_INVALID_ARGUMENT, cc_snapshot_int(&created, s, 0, "colour"));
    CHECK_MESSAGE("unknown card field");
    /* The snapshot does not change with the controller, and outlives it. */
    CHECK_OK(cc_controller_log_dismissal(c, "coupon-1"));
    CHECK_OK(cc_controller_close(c));
    CHECK_OK(cc_snapshot_count(&n, s));
    CHECK(n == 2);
    CHECK_OK(cc_snapshot_close(s));
    CHECK_RC(CC_E_INVALID_HANDLE, cc_snapshot_close(s));
}

/* A text holding a NUL character (an escaped \u0000 in the payload) is refused by the
 * snapshot's getters, with a message that says where to read it: a C string cannot carry it,
 * and the getters handed out the part before the NUL ("a"), silently. */
static void test_snapshot_texts_with_nul(void) {
    cc_controller *c = NULL;
    CHECK_OK(cc_controller_open(&c, "{\"userId\":\"n\",\"source\":{\"callback\":true}}"));
    CHECK_OK(cc_controller_apply(NULL, c, "[{\"id\":\"n1\",\"tp\":\"short_news\",\"ca\":1,"
                                          "\"ds\":\"a\\u0000b\",\"e\":{\"k\":\"v\\u0000w\"}}]"));
    cc_snapshot *s = NULL;
    CHECK_OK(cc_controller_snapshot(&s, c, NULL));
    const char *text = NULL;
    CHECK_RC(CC_E_INVALID_ARGUMENT, cc_snapshot_string(&text, s, 0, "cardDescription"));
    CHECK_MESSAGE("NUL");
    CHECK_RC(CC_E_INVALID_ARGUMENT, cc_snapshot_extra(&text, s, 0, "k"));
    CHECK_MESSAGE("NUL");
    const char *key = NULL;
    CHECK_RC(CC_E_INVALID_ARGUMENT, cc_snapshot_extra_at(&key, &text, s, 0, 0));
    CHECK_OK(cc_snapshot_string(&text, s, 0, "id"));
    CHECK(text && strcmp(text, "n1") == 0);
    CHECK_OK(cc_snapshot_close(s));
    CHECK_OK(cc_controller_close(c));
}

static void test_storage(void) {
    char dir[256];
    cc_test_make_dir(dir, sizeof dir, "cc-c-test");
    char config[512];
    snprintf(config, sizeof config,
             "{\"userId\":\"u\",\"storagePath\":\"%s/store\",\"refreshTokens\":0,\"source\":{\"file\":\"%s\"}}",
             dir, CC_SAMPLE_FEED);
    cc_controller *c = NULL;
    CHECK_OK(cc_controller_open(&c, config));
    CHECK_OK(cc_controller_refresh(NULL, c, 5));
    CHECK_OK(cc_controller_log_impression(c, "tile-2"));
    CHECK_OK(cc_controller_close(c));
    CHECK_OK(cc_controller_open(&c, config));
    int64_t total = 0, unviewed = 0, pending = 0;
    CHECK_OK(cc_controller_counts(&total, &unviewed, c, NULL));
    CHECK(total == 10 && unviewed == 8);
    CHECK_OK(cc_controller_pending_events(&pending, c));
    CHECK(pending == 1);
    CHECK_OK(cc_controller_close(c));
    CHECK(cc_test_remove_dir(dir));
}

/* User ids are compared byte for byte: "café" with U+00E9 and with "e" + U+0301 are two users
 * (Swift's string equality took them for one: the change stayed on the first user). */
static void test_user_ids_compared_by_bytes(void) {
    cc_controller *c = NULL;
    CHECK_OK(cc_controller_open(&c, "{\"userId\":\"caf\xc3\xa9\",\"refreshTokens\":0}"));
    CHECK_OK(cc_controller_apply(NULL, c, "[{\"id\":\"first\",\"tp\":\"short_news\",\"ca\":5,\"ds\":\"x\"}]"));
    CHECK(cc_controller_total_count(c, NULL) == 1);
    CHECK_OK(cc_controller_change_user(c, "cafe\xcc\x81"));
    CHECK(cc_controller_total_count(c, NULL) == 0);
    CHECK_OK(cc_controller_change_user(c, "caf\xc3\xa9"));
    CHECK(cc_controller_total_count(c, NULL) == 1);
    CHECK_OK(cc_controller_close(c));
}

/* A configuration key of megabytes, or with control characters, is quoted escaped and cut in
 * the message: it went whole into cc_last_error_message (and a newline in it into a log). */
static void test_messages_quote_caller_text(void) {
    cc_config *config = NULL;
    CHECK_OK(cc_config_new(&config));
    size_t big = 1 << 20;
    char *key = malloc(big + 8);
    CHECK(key != NULL);
    if (key) {
        memset(key, 'k', big);
        memcpy(key + big, "\n.\033", 4);
        key[3] = '\n';
        key[big + 4] = '\0';
        CHECK(cc_config_set_string(config, key, "x") != CC_OK);
        CHECK(strlen(cc_last_error_message()) < 600);
        CHECK(strchr(cc_last_error_message(), '\n') == NULL && strchr(cc_last_error_message(), '\033') == NULL);
        CHECK_MESSAGE("kkk\\u000akkk");
        memcpy(key + big, "..", 3);
        CHECK_RC(CC_E_INVALID_ARGUMENT, cc_config_set_string(config, key, "x"));
        CHECK_MESSAGE("has an empty part");
        CHECK(strlen(cc_last_error_message()) < 600);
        free(key);
    }
    cc_config_close(config);
}

int main(void) {
    test_versions();
    test_refresh_feed_counts();
    test_feed_indexed();
    test_logging();
    test_apply_user_diagnostics();
    test_rate_limit_and_config();
    test_snapshot();
    test_snapshot_texts_with_nul();
    test_storage();
    test_user_ids_compared_by_bytes();
    test_messages_quote_caller_text();
    return cc_test_finish("test_api");
}
