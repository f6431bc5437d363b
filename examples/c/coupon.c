/* coupon.c: a coupon at checkout. The coupon_code card with its discount_percentage is shown;
 * a control card (the A/B test's holdout) is never shown, but its impression is logged so the
 * experiment can be measured. */
#include <stdio.h>
#include <stdlib.h>

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

int main(void) {
    cc_controller *c = NULL;
    char *config = config_json("shopper", CC_SAMPLE_FEED);
    int opened = cc_controller_open(&c, config);
    cc_string_free(config);
    if (opened != CC_OK || cc_controller_refresh(NULL, c, 10) != CC_OK) {
        fprintf(stderr, "cannot load coupons: %s\n", cc_last_error_message());
        return 1;
    }
    cc_snapshot *snap = NULL;
    check(cc_controller_snapshot(&snap, c, "[\"coupon_code\"]"));
    size_t n = 0;
    check(cc_snapshot_count(&n, snap));
    double price = 80.0;
    printf("Checkout: cart total %.2f\n", price);
    for (size_t i = 0; i < n; i++) {
        const char *id = NULL, *discount = NULL, *code = NULL;
        int control = 0;
        check(cc_snapshot_string(&id, snap, i, "id"));
        check(cc_snapshot_bool(&control, snap, i, "isControl"));
        check(cc_controller_log_impression(c, id)); /* shown, or would have been: both are logged */
        if (control) {                              /* the holdout: nothing is drawn */
            printf("  (a control variant: nothing shown, impression logged)\n");
            continue;
        }
        check(cc_snapshot_extra(&discount, snap, i, "discount_percentage"));
        check(cc_snapshot_extra(&code, snap, i, "coupon_code"));
        double pct = discount ? atof(discount) : 0;
        printf("  coupon %s: %s%% off with code %s -> %.2f\n", id, discount ? discount : "0", code ? code : "-",
               price * (1 - pct / 100));
        check(cc_controller_log_click(c, id)); /* the shopper applied it */
    }
    cc_snapshot_close(snap);
    char *diag = NULL;
    check(cc_controller_diagnostics(&diag, c));
    int64_t pending = 0;
    check(cc_controller_pending_events(&pending, c));
    printf("  events recorded: %lld\n", (long long)pending);
    cc_string_free(diag);
    cc_controller_close(c);
    return 0;
}
