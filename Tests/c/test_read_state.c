/* Read state (docs/BEHAVIOUR.md, "Read state"): mark read / unread / all read, the unread count
 * (fast path and filtered), the events, the snapshot's "read" field; then two devices of one
 * user against the reference server over HTTP (CC_SERVER_URL, started by with_server.py): what
 * one device logs reaches the other through the server's per-user state (docs/WIRE.md), and a
 * read change not yet delivered is not undone by a sync (merge rule 9). */
#include "cc_test.h"

#include <stdlib.h>
#include <unistd.h>

static const char *server;

static const char *cards_json =
    "{\"cards\":["
    "{\"id\":\"m-1\",\"tp\":\"short_news\",\"ca\":10,\"ds\":\"one\",\"e\":{\"class_type\":\"message\"}},"
    "{\"id\":\"m-2\",\"tp\":\"short_news\",\"ca\":20,\"ds\":\"two\",\"e\":{\"class_type\":\"message\"}},"
    "{\"id\":\"t-1\",\"tp\":\"short_news\",\"ca\":30,\"ds\":\"tile\",\"rd\":true,\"e\":{\"class_type\":\"tile\"}},"
    "{\"id\":\"ctl\",\"tp\":\"control\",\"ca\":40}]}";

static void test_local(void) {
    cc_controller *c = NULL;
    CHECK_OK(cc_controller_open(&c, "{\"userId\":\"u\"}"));
    CHECK_OK(cc_controller_apply(NULL, c, cards_json));
    /* The server's "rd" arrives; control cards are never unread; the unviewed badge is apart. */
    CHECK(cc_controller_unread_count(c, NULL) == 2);
    CHECK(cc_controller_unread_count(c, "[\"message\"]") == 2);
    CHECK(cc_controller_unread_count(c, "[\"tile\"]") == 0);
    CHECK(cc_controller_unviewed_count(c, NULL) == 3);
    int64_t total = -1, unviewed = -1, unread = -1;
    CHECK_OK(cc_controller_all_counts(&total, &unviewed, &unread, c, NULL));      /* the badge cell */
    CHECK(total == 4 && unviewed == 3 && unread == 2);
    CHECK_OK(cc_controller_all_counts(&total, &unviewed, &unread, c, "[\"message\",\"tile\"]"));
    CHECK(total == 3 && unviewed == 3 && unread == 2);
    CHECK_OK(cc_controller_all_counts(NULL, NULL, NULL, c, NULL));

    int changed = -1;
    CHECK_OK(cc_controller_mark_read(&changed, c, "m-1", 1));
    CHECK(changed == 1);
    CHECK(cc_controller_unread_count(c, NULL) == 1);
    CHECK(cc_controller_unviewed_count(c, NULL) == 3);   /* impressions keep their meaning */
    CHECK_OK(cc_controller_mark_read(&changed, c, "m-1", 1));
    CHECK(changed == 0);                                   /* already read: nothing recorded */
    CHECK_OK(cc_controller_mark_read(&changed, c, "t-1", 0));
    CHECK(changed == 1);
    CHECK(cc_controller_unread_count(c, "[\"tile\"]") == 1);

    /* The same through cc_controller_log: the log result of Swift and Python, event id too. */
    char *result = NULL;
    CHECK_OK(cc_controller_log(&result, c, "read", "t-1"));
    CHECK(result && strstr(result, "{\"recorded\":true,\"reason\":null,\"eventId\":\"") == result);
    CHECK(result && strstr(result, "\"stateChanged\":true}") != NULL);
    cc_string_free(result);
    result = NULL;
    CHECK_RC(CC_E_REFUSED, cc_controller_log(&result, c, "read", "t-1"));
    CHECK(result && strcmp(result, "{\"recorded\":false,\"reason\":\"already read\",\"eventId\":null,\"stateChanged\":false}") == 0);
    cc_string_free(result);
    CHECK_RC(CC_E_NOT_FOUND, cc_controller_log(NULL, c, "unread", "nope"));
    CHECK_OK(cc_controller_log(NULL, c, "unread", "t-1"));
    CHECK(cc_controller_unread_count(c, "[\"tile\"]") == 1);

    cc_snapshot *s = NULL;
    size_t n = 0;
    int read = -1;
    CHECK_OK(cc_controller_snapshot(&s, c, "[\"message\"]"));
    CHECK_OK(cc_snapshot_count(&n, s));
    CHECK(n == 2);
    CHECK_OK(cc_snapshot_bool(&read, s, 1, "read"));       /* m-1, the older one */
    CHECK(read == 1);
    CHECK_OK(cc_snapshot_bool(&read, s, 0, "read"));
    CHECK(read == 0);
    cc_snapshot_close(s);

    int64_t count = -1;
    CHECK_OK(cc_controller_mark_all_read(&count, c, "[\"message\"]"));
    CHECK(count == 1);                                     /* m-2 only */
    CHECK(cc_controller_unread_count(c, NULL) == 1);       /* t-1 is another class type */
    CHECK_OK(cc_controller_mark_all_read(&count, c, NULL));
    CHECK(count == 2);                                     /* t-1 and the control card */
    CHECK(cc_controller_unread_count(c, NULL) == 0);
    CHECK_OK(cc_controller_mark_all_read(&count, c, NULL));
    CHECK(count == 0);

    /* One event per change: read m-1, unread t-1, read t-1 and unread t-1 (through
     * cc_controller_log), read m-2, read t-1, read ctl. */
    char *events = NULL;
    CHECK_OK(cc_controller_pending_events_json(&events, c, 0));
    CHECK_CONTAINS(events, "\"pending\":7");
    CHECK_CONTAINS(events, "\"type\":\"unread\",\"cardId\":\"t-1\"");
    cc_string_free(events);

    /* Errors. */
    CHECK_RC(CC_E_NOT_FOUND, cc_controller_mark_read(NULL, c, "nope", 1));
    CHECK_RC(CC_E_INVALID_ARGUMENT, cc_controller_mark_read(NULL, c, NULL, 1));
    CHECK_RC(CC_E_PARSE, cc_controller_mark_all_read(NULL, c, "[1"));
    CHECK(cc_controller_unread_count(c, "[1") == CC_E_PARSE);
    cc_controller_close(c);
    CHECK_RC(CC_E_INVALID_HANDLE, cc_controller_mark_read(NULL, c, "m-1", 1));
    CHECK(cc_controller_unread_count(c, NULL) == CC_E_INVALID_HANDLE);
    CHECK_RC(CC_E_INVALID_HANDLE, cc_controller_all_counts(NULL, NULL, NULL, c, NULL));
    CHECK_RC(CC_E_INVALID_HANDLE, cc_controller_mark_all_read(NULL, c, NULL));
}

/* Read state survives a restart of a file store. */
static void test_durable(void) {
    char dir[256];
    cc_test_make_dir(dir, sizeof dir, "cc-read");
    char config[512];
    snprintf(config, sizeof config, "{\"userId\":\"u\",\"storagePath\":\"%s/store\"}", dir);
    cc_controller *c = NULL;
    CHECK_OK(cc_controller_open(&c, config));
    CHECK_OK(cc_controller_apply(NULL, c, cards_json));
    CHECK_OK(cc_controller_mark_read(NULL, c, "m-2", 1));
    cc_controller_close(c);
    CHECK_OK(cc_controller_open(&c, config));
    CHECK(cc_controller_unread_count(c, NULL) == 1);
    char *card = NULL;
    CHECK_OK(cc_controller_card(&card, c, "m-2"));
    CHECK_CONTAINS(card, "\"read\":true");
    cc_string_free(card);
    cc_controller_close(c);
    CHECK(cc_test_remove_dir(dir));
}

static cc_controller *open_device(const char *dir, const char *device) {
    char config[1024];
    snprintf(config, sizeof config,
             "{\"userId\":\"dana\",\"deviceId\":\"%s\",\"storagePath\":\"%s/%s\",\"refreshTokens\":0,"
             "\"source\":{\"url\":\"%s\"},\"events\":{\"url\":\"%s\"},\"eventFlushIntervalSeconds\":0}",
             device, dir, device, server, server);
    cc_controller *c = NULL;
    if (cc_controller_open(&c, config) != CC_OK) {
        fprintf(stderr, "open: %s\n", cc_last_error_message());
        exit(2);
    }
    return c;
}

static int flag(cc_controller *c, const char *id, const char *key) {
    char *card = NULL;
    if (cc_controller_card(&card, c, id) != CC_OK) return -1;
    char needle[64];
    snprintf(needle, sizeof needle, "\"%s\":true", key);
    int on = strstr(card, needle) != NULL;
    cc_string_free(card);
    return on;
}

static void test_two_devices(void) {
    char dir[256];
    cc_test_make_dir(dir, sizeof dir, "cc-devices");
    cc_controller *phone = open_device(dir, "phone");
    cc_controller *tablet = open_device(dir, "tablet");
    CHECK_OK(cc_controller_refresh(NULL, phone, 5));
    CHECK_OK(cc_controller_refresh(NULL, tablet, 5));
    int64_t unread_before = cc_controller_unread_count(tablet, NULL);
    int64_t unviewed_before = cc_controller_unviewed_count(tablet, NULL);

    /* The phone views, clicks, dismisses and reads; its events reach the server. */
    CHECK_OK(cc_controller_log_impression(phone, "msg-1"));
    CHECK_OK(cc_controller_log_click(phone, "msg-1"));
    CHECK_OK(cc_controller_log_dismissal(phone, "tile-2"));
    CHECK_OK(cc_controller_mark_read(NULL, phone, "msg-3", 1));
    CHECK_OK(cc_controller_flush_events(NULL, phone, 5));

    /* The tablet's next (incremental) sync carries all of it. */
    char *summary = NULL;
    CHECK_OK(cc_controller_refresh(&summary, tablet, 5));
    CHECK_CONTAINS(summary, "\"fullSync\":false");
    cc_string_free(summary);
    CHECK(flag(tablet, "msg-1", "viewed") == 1);
    CHECK(flag(tablet, "msg-1", "clicked") == 1);
    CHECK(flag(tablet, "tile-2", "dismissed") == 1);
    CHECK(flag(tablet, "msg-3", "read") == 1);
    CHECK(cc_controller_unread_count(tablet, NULL) == unread_before - 2);   /* msg-3 read, tile-2 gone */
    CHECK(cc_controller_unviewed_count(tablet, NULL) == unviewed_before - 2); /* msg-1 viewed, tile-2 gone */

    /* Unread travels too: the tablet marks msg-3 unread, the phone follows. */
    CHECK_OK(cc_controller_mark_read(NULL, tablet, "msg-3", 0));
    CHECK_OK(cc_controller_flush_events(NULL, tablet, 5));
    CHECK_OK(cc_controller_refresh(NULL, phone, 5));
    CHECK(flag(phone, "msg-3", "read") == 0);

    /* A change not yet delivered wins over the server's older state (merge rule 9): the phone
     * reads msg-1 and keeps it read through a sync that says unread, until it delivers. */
    CHECK_OK(cc_controller_mark_read(NULL, tablet, "msg-1", 1));
    CHECK_OK(cc_controller_mark_read(NULL, tablet, "msg-1", 0));
    CHECK_OK(cc_controller_flush_events(NULL, tablet, 5));  /* the server now has rd:false */
    CHECK_OK(cc_controller_mark_read(NULL, phone, "msg-1", 1));
    CHECK_OK(cc_controller_refresh(NULL, phone, 5));
    CHECK(flag(phone, "msg-1", "read") == 1);
    CHECK_OK(cc_controller_flush_events(NULL, phone, 5));
    CHECK_OK(cc_controller_refresh(NULL, tablet, 5));
    CHECK(flag(tablet, "msg-1", "read") == 1);

    cc_controller_close(phone);
    cc_controller_close(tablet);
    CHECK(cc_test_remove_dir(dir));
}

int main(void) {
    test_local();
    test_durable();
    server = getenv("CC_SERVER_URL");
    if (server) {
        test_two_devices();
    } else {
        fprintf(stderr, "CC_SERVER_URL not set: the two-device test needs Tests/c/with_server.py\n");
        cc_test_failed++;
    }
    return cc_test_finish("test_read_state");
}
