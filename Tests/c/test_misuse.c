/* The misuse matrix: every entry point with NULL pointers, a closed handle, a handle of another
 * kind, a never-issued or forged handle, double close, invalid UTF-8, malformed JSON and an
 * unknown card id. Each returns its documented code and a message; none crashes. */
#include "cc_test.h"

#include <math.h>
#include <stdint.h>
#include <unistd.h>

static const char BAD_UTF8[] = {'c', 'a', 'r', 'd', (char)0xC3, (char)0x28, 0};

static void noop_update(void *userdata, const char *json) { (void)userdata; (void)json; }
static int freed;
static void count_free(void *userdata) { (void)userdata; freed++; }
static int noop_transport(void *u, const cc_transport_request *r, cc_transport_response *s) {
    (void)u; (void)r; (void)s;
    return CC_OK;
}

/* Every function that takes a controller, with `h` as the controller. */
static void all_controller_calls(cc_controller *h, int expected) {
    char *s = NULL;
    int64_t n = 0;
    uint64_t sub = 0;
    cc_snapshot *snap = NULL;
    CHECK_RC(expected, cc_controller_refresh(&s, h, 1));
    CHECK(s == NULL);
    CHECK_RC(expected, cc_controller_refresh_async(h));
    CHECK_RC(expected, cc_controller_apply(&s, h, "[]"));
    CHECK_RC(expected, cc_controller_feed(&s, h, NULL));
    CHECK(s == NULL);
    size_t length = 1, count = 1;
    const size_t *offsets = NULL;
    CHECK_RC(expected, cc_controller_feed_indexed(&s, &length, &offsets, &count, h, NULL));
    CHECK(s == NULL && offsets == NULL && length == 0 && count == 0);
    CHECK_RC(expected, cc_controller_card(&s, h, "tile-1"));
    CHECK_RC(expected, cc_controller_counts(&n, &n, h, NULL));
    CHECK_RC(expected, cc_controller_log_impression(h, "tile-1"));
    CHECK_RC(expected, cc_controller_log_click(h, "tile-1"));
    CHECK_RC(expected, cc_controller_log_dismissal(h, "tile-1"));
    CHECK_RC(expected, cc_controller_log_feed_displayed(h));
    CHECK_RC(expected, cc_controller_change_user(h, "x"));
    CHECK_RC(expected, cc_controller_user(&s, h));
    CHECK_RC(expected, cc_controller_flush_events(&s, h, 1));
    CHECK_RC(expected, cc_controller_pending_events(&n, h));
    CHECK_RC(expected, cc_controller_diagnostics(&s, h));
    CHECK_RC(expected, cc_controller_current_update(&s, h));
    CHECK(s == NULL);
    int before = freed;
    CHECK_RC(expected, cc_controller_subscribe(&sub, h, noop_update, NULL, count_free));
    CHECK(freed == before + 1); /* free_userdata runs when registration fails */
    CHECK_RC(expected, cc_controller_unsubscribe(h, 1));
    CHECK_RC(expected, cc_controller_set_transport(h, noop_transport, NULL, count_free));
    CHECK(freed == before + 2);
    CHECK_RC(expected, cc_controller_snapshot(&snap, h, NULL));
    CHECK(snap == NULL);
    CHECK_RC(expected, cc_controller_close(h));
}

static void bad_handles(void) {
    /* NULL */
    all_controller_calls(NULL, CC_E_INVALID_HANDLE);
    CHECK_MESSAGE("NULL");

    /* Closed */
    cc_controller *closed = cc_test_open_sample();
    CHECK_OK(cc_controller_close(closed));
    all_controller_calls(closed, CC_E_INVALID_HANDLE);
    CHECK_RC(CC_E_INVALID_HANDLE, cc_controller_close(closed));
    CHECK_MESSAGE("already closed");

    /* Another kind of handle */
    cc_controller *c = cc_test_open_sample();
    cc_snapshot *snap = NULL;
    CHECK_OK(cc_controller_snapshot(&snap, c, NULL));
    all_controller_calls((cc_controller *)snap, CC_E_INVALID_HANDLE);
    size_t count = 0;
    CHECK_RC(CC_E_INVALID_HANDLE, cc_snapshot_count(&count, (cc_snapshot *)c));
    CHECK_RC(CC_E_INVALID_HANDLE, cc_snapshot_close((cc_snapshot *)c));
    CHECK_OK(cc_snapshot_close(snap));
    const char *str = NULL;
    CHECK_RC(CC_E_INVALID_HANDLE, cc_snapshot_string(&str, snap, 0, "id"));

    /* Never issued and forged values, including a real pointer to memory. */
    int local = 0;
    cc_controller *forged[] = {(cc_controller *)(uintptr_t)1, (cc_controller *)(uintptr_t)0xC1000000FFFFFFull,
                               (cc_controller *)(uintptr_t)0xC1ABCDEF00000001ull, (cc_controller *)&local,
                               (cc_controller *)(uintptr_t)UINT64_MAX};
    for (size_t i = 0; i < sizeof forged / sizeof forged[0]; i++) {
        all_controller_calls(forged[i], CC_E_INVALID_HANDLE);
    }
    /* The live controller still works after all that. */
    int64_t total = -1;
    CHECK_OK(cc_controller_counts(&total, NULL, c, NULL));
    CHECK_OK(cc_controller_close(c));
}

static void null_and_bad_arguments(void) {
    cc_controller *c = cc_test_open_sample();
    CHECK_OK(cc_controller_refresh(NULL, c, 5));
    char *s = NULL;
    int64_t n = 0;
    CHECK_RC(CC_E_INVALID_ARGUMENT, cc_controller_open(NULL, "{}"));
    CHECK_RC(CC_E_INVALID_ARGUMENT, cc_controller_feed(NULL, c, NULL));
    CHECK_RC(CC_E_INVALID_ARGUMENT, cc_controller_card(NULL, c, "tile-1"));
    CHECK_RC(CC_E_INVALID_ARGUMENT, cc_controller_card(&s, c, NULL));
    CHECK_RC(CC_E_INVALID_ARGUMENT, cc_controller_apply(NULL, c, NULL));
    CHECK_RC(CC_E_INVALID_ARGUMENT, cc_controller_log_impression(c, NULL));
    CHECK_RC(CC_E_INVALID_ARGUMENT, cc_controller_log_click(c, NULL));
    CHECK_RC(CC_E_INVALID_ARGUMENT, cc_controller_log_dismissal(c, NULL));
    CHECK_RC(CC_E_INVALID_ARGUMENT, cc_controller_change_user(c, NULL));
    CHECK_RC(CC_E_INVALID_ARGUMENT, cc_controller_user(NULL, c));
    CHECK_RC(CC_E_INVALID_ARGUMENT, cc_controller_pending_events(NULL, c));
    CHECK_RC(CC_E_INVALID_ARGUMENT, cc_controller_diagnostics(NULL, c));
    CHECK_RC(CC_E_INVALID_ARGUMENT, cc_controller_current_update(NULL, c));
    CHECK_RC(CC_E_INVALID_ARGUMENT, cc_controller_snapshot(NULL, c, NULL));
    CHECK_RC(CC_E_INVALID_ARGUMENT, cc_controller_refresh(NULL, c, NAN));
    CHECK_RC(CC_E_INVALID_ARGUMENT, cc_controller_flush_events(NULL, c, NAN));
    uint64_t sub = 0;
    int before = freed;
    CHECK_RC(CC_E_INVALID_ARGUMENT, cc_controller_subscribe(&sub, c, NULL, NULL, count_free));
    CHECK_RC(CC_E_INVALID_ARGUMENT, cc_controller_subscribe(NULL, c, noop_update, NULL, count_free));
    CHECK(freed == before + 2);
    CHECK_RC(CC_E_NOT_FOUND, cc_controller_unsubscribe(c, 0));
    CHECK_RC(CC_E_NOT_FOUND, cc_controller_unsubscribe(c, 424242));
    CHECK_RC(CC_E_INVALID_ARGUMENT, cc_transport_response_set(NULL, 200, "", 0, -1));
    CHECK_RC(CC_E_INVALID_ARGUMENT, cc_transport_response_set((cc_transport_response *)&n, 200, "", 0, -1));
    CHECK_MESSAGE("not a response being answered");
    CHECK_RC(CC_E_INVALID_ARGUMENT, cc_transport_response_fail(NULL, "x"));
    cc_string_free(NULL);

    /* Invalid UTF-8 wherever a string goes in. */
    CHECK_RC(CC_E_INVALID_ARGUMENT, cc_controller_log_impression(c, BAD_UTF8));
    CHECK_MESSAGE("UTF-8");
    CHECK_RC(CC_E_INVALID_ARGUMENT, cc_controller_card(&s, c, BAD_UTF8));
    CHECK_RC(CC_E_INVALID_ARGUMENT, cc_controller_change_user(c, BAD_UTF8));
    CHECK_RC(CC_E_INVALID_ARGUMENT, cc_controller_apply(NULL, c, BAD_UTF8));
    CHECK_RC(CC_E_INVALID_ARGUMENT, cc_controller_feed(&s, c, BAD_UTF8));
    {
        size_t length = 1, count = 1;
        const size_t *offsets = NULL;
        CHECK_RC(CC_E_INVALID_ARGUMENT, cc_controller_feed_indexed(&s, &length, &offsets, &count, c, BAD_UTF8));
        CHECK(s == NULL && offsets == NULL && count == 0);
    }
    cc_controller *other = NULL;
    CHECK_RC(CC_E_INVALID_ARGUMENT, cc_controller_open(&other, BAD_UTF8));
    CHECK(other == NULL);

    /* Malformed JSON */
    CHECK_RC(CC_E_PARSE, cc_controller_feed(&s, c, "[\"home_tile\""));
    CHECK(s == NULL);
    CHECK_RC(CC_E_PARSE, cc_controller_feed(&s, c, "{\"class\":1}"));
    CHECK_RC(CC_E_PARSE, cc_controller_counts(&n, &n, c, "[1]"));
    CHECK_RC(CC_E_PARSE, cc_controller_apply(NULL, c, "{\"cards\":"));
    CHECK_RC(CC_E_PARSE, cc_controller_apply(NULL, c, "nonsense"));
    CHECK_RC(CC_E_CONFIG, cc_controller_open(&other, "{\"source\":{\"file\":1}}"));
    CHECK_RC(CC_E_CONFIG, cc_controller_open(&other, "[1,2"));

    /* Unknown card id */
    CHECK_RC(CC_E_NOT_FOUND, cc_controller_card(&s, c, "ghost"));
    CHECK_MESSAGE("\"ghost\"");
    CHECK_RC(CC_E_NOT_FOUND, cc_controller_log_click(c, "ghost"));
    CHECK_RC(CC_E_NOT_FOUND, cc_controller_log_dismissal(c, "ghost"));

    /* Nothing of the above was recorded. */
    CHECK_OK(cc_controller_pending_events(&n, c));
    CHECK(n == 0);
    int64_t total = 0;
    CHECK_OK(cc_controller_counts(&total, NULL, c, NULL));
    CHECK(total == 10);
    CHECK_OK(cc_controller_close(c));
}

static void storage_errors(void) {
    cc_controller *c = NULL;
    CHECK_RC(CC_E_STORAGE, cc_controller_open(&c, "{\"storagePath\":\"/proc/contentcards-cannot-be-here\"}"));
    CHECK(c == NULL);
    CHECK(strlen(cc_last_error_message()) > 0);
}

/* A clean close stamps the store as checked (contentcards.sqlite-checked); a page damaged
 * after it is still found at the next open: the stamp no longer matches the file. */
static void damaged_after_a_clean_close(void) {
    char dir[256];
    cc_test_make_dir(dir, sizeof dir, "cc-misuse");
    char config[512], path[600], stamp[600];
    snprintf(config, sizeof config,
             "{\"userId\":\"u-1\",\"refreshTokens\":0,\"storagePath\":\"%s\",\"source\":{\"file\":\"" CC_SAMPLE_FEED "\"}}", dir);
    snprintf(path, sizeof path, "%s/contentcards.sqlite", dir);
    snprintf(stamp, sizeof stamp, "%s/contentcards.sqlite-checked", dir);
    cc_controller *c = NULL;
    CHECK_OK(cc_controller_open(&c, config));
    CHECK_OK(cc_controller_refresh(NULL, c, 10));
    CHECK_OK(cc_controller_close(c));
    CHECK(access(stamp, F_OK) == 0);
    c = NULL;
    CHECK_OK(cc_controller_open(&c, config));       /* stamped: opens as before */
    int64_t total = 0;
    CHECK_OK(cc_controller_counts(&total, NULL, c, NULL));
    CHECK(total == 10);
    CHECK_OK(cc_controller_close(c));
    FILE *f = fopen(path, "r+b");                   /* the last page, overwritten */
    CHECK(f != NULL);
    if (f) {
        CHECK(fseek(f, -4096, SEEK_END) == 0);
        char junk[4096];
        memset(junk, 0xFF, sizeof junk);
        CHECK(fwrite(junk, 1, sizeof junk, f) == sizeof junk);
        fclose(f);
    }
    c = NULL;
    CHECK_RC(CC_E_STORAGE, cc_controller_open(&c, config));
    CHECK(c == NULL);
    CHECK(strstr(cc_last_error_message(), "damaged") != NULL);
    CHECK(cc_test_remove_dir(dir));
}

int main(void) {
    bad_handles();
    null_and_bad_arguments();
    storage_errors();
    damaged_after_a_clean_close();
    return cc_test_finish("test_misuse");
}
