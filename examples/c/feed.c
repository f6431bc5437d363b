/* feed.c: open a controller, refresh, list the cards by class type, show the badge counts.
 *
 *   feed [FEED_FILE]     a sync response or an array of cards; default: the bundled sample
 *                        feed. The store is in memory.
 *
 * Reads cards through a snapshot, so no JSON parser is needed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "contentcards.h"

/* Stops the example with the library's message when a call fails (the header marks the calls
 * whose status must be looked at: CC_WARN_UNUSED_RESULT). */
static void check(int status) {
    if (status != CC_OK) {
        fprintf(stderr, "%s: %s\n", cc_status_name(status), cc_last_error_message());
        exit(1);
    }
}

#ifndef CC_SAMPLE_FEED
#define CC_SAMPLE_FEED "examples/data/sample_feed.json"
#endif

/* The configuration: its JSON written by the library from the values (docs/C-API.md, "Building
 * a configuration"), so a path holding a quote or a backslash stays one value. Free it with
 * cc_string_free. */
static char *config_json(const char *user_id, const char *feed_file) {
    cc_config *config = NULL;
    char *json = NULL;
    check(cc_config_new(&config));
    check(cc_config_set_string(config, "userId", user_id));
    check(cc_config_set_string(config, "source.file", feed_file));
    check(cc_config_json(&json, config));
    cc_config_close(config);
    return json;
}

static int fail(const char *what) {
    fprintf(stderr, "%s failed: %s\n", what, cc_last_error_message());
    return 1;
}

static void print_class(cc_controller *c, const char *title, const char *filter) {
    cc_snapshot *snap = NULL;
    size_t n = 0;
    if (cc_controller_snapshot(&snap, c, filter) != CC_OK) return;
    check(cc_snapshot_count(&n, snap));
    int64_t total = 0, unviewed = 0;
    check(cc_controller_counts(&total, &unviewed, c, filter));
    printf("%s (%lld cards, %lld unread)\n", title, (long long)total, (long long)unviewed);
    size_t controls = 0;
    for (size_t i = 0; i < n; i++) {
        const char *id = NULL, *type = NULL, *text = NULL;
        int pinned = 0, control = 0;
        check(cc_snapshot_string(&id, snap, i, "id"));
        check(cc_snapshot_bool(&control, snap, i, "isControl"));
        if (control) { /* an A/B test's control card: never drawn, but its impression is logged */
            check(cc_controller_log_impression(c, id));
            controls++;
            continue;
        }
        check(cc_snapshot_string(&type, snap, i, "type"));
        check(cc_snapshot_string(&text, snap, i, "title"));
        if (!text) check(cc_snapshot_string(&text, snap, i, "cardDescription"));
        check(cc_snapshot_bool(&pinned, snap, i, "pinned"));
        printf("  %-16s %-16s %s%s\n", id, type, text ? text : "", pinned ? "  [pinned]" : "");
    }
    if (controls) printf("  (%zu control card%s: not drawn, impression logged)\n", controls, controls == 1 ? "" : "s");
    cc_snapshot_close(snap);
}

int main(int argc, char **argv) {
    char *config = config_json("demo", argc > 1 ? argv[1] : CC_SAMPLE_FEED);
    cc_controller *c = NULL;
    int opened = cc_controller_open(&c, config);
    cc_string_free(config);
    if (opened != CC_OK) return fail("open");
    char *summary = NULL;
    if (cc_controller_refresh(&summary, c, 10) != CC_OK) {
        fail("refresh");
        cc_controller_close(c);
        return 1;
    }
    printf("refreshed: %s\n\n", summary);
    cc_string_free(summary);

    print_class(c, "Home tiles", "[\"home_tile\"]");
    print_class(c, "Message center", "[\"message_full_page\",\"message_webview\"]");
    print_class(c, "Checkout coupons", "[\"coupon_code\"]");
    print_class(c, "Without a class type", "[\"\"]");

    int64_t total = 0, unviewed = 0;
    check(cc_controller_counts(&total, &unviewed, c, NULL));
    printf("\nbadge: %lld unread of %lld\n", (long long)unviewed, (long long)total);
    cc_controller_close(c);
    return 0;
}
