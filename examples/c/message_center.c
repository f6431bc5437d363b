/* message_center.c: a message center. Shows the messages with an unread badge, logs the
 * impression of each message displayed, routes a click by class type (a full page or a web
 * view), and dismisses a message. */
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

static const char *MESSAGES = "[\"message_full_page\",\"message_webview\"]";

static void badge(cc_controller *c) {
    int64_t unread = 0;
    check(cc_controller_counts(NULL, &unread, c, MESSAGES));
    printf("  inbox badge: %lld unread\n", (long long)unread);
}

/* What the app does when a message is tapped: the class type decides the screen. */
static void open_message(cc_controller *c, cc_snapshot *snap, size_t i) {
    const char *id = NULL, *class_type = NULL, *header = NULL, *html = NULL, *url = NULL;
    check(cc_snapshot_string(&id, snap, i, "id"));
    check(cc_snapshot_string(&class_type, snap, i, "classType"));
    if (strcmp(class_type, "message_full_page") == 0) {
        check(cc_snapshot_extra(&header, snap, i, "message_header"));
        printf("  -> full page \"%s\"\n", header ? header : "");
    } else {
        check(cc_snapshot_extra(&html, snap, i, "html"));
        check(cc_snapshot_extra(&url, snap, i, "message_url"));
        printf("  -> web view %s\n", url ? url : html ? "(inline html)" : "(empty)");
    }
    if (cc_controller_log_click(c, id) != CC_OK)
        printf("     click not logged: %s\n", cc_last_error_message());
}

int main(void) {
    cc_controller *c = NULL;
    char *config = config_json("reader", CC_SAMPLE_FEED);
    int opened = cc_controller_open(&c, config);
    cc_string_free(config);
    if (opened != CC_OK || cc_controller_refresh(NULL, c, 10) != CC_OK) {
        fprintf(stderr, "cannot load messages: %s\n", cc_last_error_message());
        return 1;
    }
    check(cc_controller_log_feed_displayed(c));
    cc_snapshot *snap = NULL;
    check(cc_controller_snapshot(&snap, c, MESSAGES));
    size_t n = 0;
    check(cc_snapshot_count(&n, snap));
    printf("Messages:\n");
    badge(c);
    for (size_t i = 0; i < n; i++) {
        const char *id = NULL, *title = NULL;
        check(cc_snapshot_string(&id, snap, i, "id"));
        check(cc_snapshot_extra(&title, snap, i, "message_title"));
        printf("  * %s: %s\n", id, title ? title : "");
        check(cc_controller_log_impression(c, id)); /* displayed: counts as read */
    }
    badge(c);
    for (size_t i = 0; i < n; i++) open_message(c, snap, i);
    const char *first = NULL;
    if (n > 0 && cc_snapshot_string(&first, snap, 0, "id") == CC_OK) {
        if (cc_controller_log_dismissal(c, first) != CC_OK)
            printf("  dismiss %s: %s\n", first, cc_last_error_message());
    }
    cc_snapshot_close(snap);
    int64_t pending = 0;
    check(cc_controller_pending_events(&pending, c));
    printf("  events recorded: %lld\n", (long long)pending);
    cc_controller_close(c);
    return 0;
}
