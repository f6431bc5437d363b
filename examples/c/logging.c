/* logging.c: logging with a subscription that prints every update, and events written to a
 * JSON-lines file sink, flushed on demand. */
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

static void print_update(void *userdata, const char *update_json) {
    int *n = userdata;
    printf("  update %d: %s\n", ++*n, update_json);
}

int main(int argc, char **argv) {
    const char *events_file = argc > 1 ? argv[1] : "/tmp/contentcards-events.jsonl";
    /* The configuration's JSON is written by the library from the values (docs/C-API.md,
     * "Building a configuration"): an events file named by the user may hold any character. */
    cc_config *built = NULL;
    char *config = NULL;
    check(cc_config_new(&built));
    check(cc_config_set_string(built, "userId", "logger"));
    check(cc_config_set_string(built, "source.file", CC_SAMPLE_FEED));
    check(cc_config_set_string(built, "events.file", events_file));
    check(cc_config_set_number(built, "eventFlushIntervalSeconds", 0));
    check(cc_config_json(&config, built));
    cc_config_close(built);
    cc_controller *c = NULL;
    int opened = cc_controller_open(&c, config);
    cc_string_free(config);
    if (opened != CC_OK) {
        fprintf(stderr, "open: %s\n", cc_last_error_message());
        return 1;
    }
    int updates = 0;
    uint64_t sub = 0;
    check(cc_controller_subscribe(&sub, c, print_update, &updates, NULL));
    check(cc_controller_refresh(NULL, c, 10));
    check(cc_controller_log_impression(c, "tile-2"));
    check(cc_controller_log_click(c, "tile-2"));
    check(cc_controller_log_dismissal(c, "tile-2"));
    if (cc_controller_log_click(c, "msg-2") != CC_OK)
        printf("  refused as expected: %s (%s)\n", cc_status_name(cc_last_error_code()), cc_last_error_message());
    char *result = NULL;
    if (cc_controller_flush_events(&result, c, 5) == CC_OK) printf("  flushed to %s: %s\n", events_file, result);
    cc_string_free(result);
    cc_controller_unsubscribe(c, sub);
    cc_controller_close(c);
    return updates == 4 ? 0 : 1;
}
