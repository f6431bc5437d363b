/* Forgetting and exporting a user against the reference server, with a file store: the export
 * holds every part of the user's state; after forget_user no byte of the user's card ids or
 * titles is left in any file under the storage path (store, WAL, shared memory, stamp), another
 * user's data stays, pending events are delivered first or discarded as asked (and with no way
 * to deliver them nothing is removed), and subscribers of the current user hear of it. */
#include "cc_test.h"
#include "cc_admin.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *server;
static char dir[512];

#define SECRET_ID "forget-me-card-1"
#define SECRET_TITLE "FORGET-ME-TITLE-7f3a"
#define SECRET_ID2 "forget-me-card-2"

static cc_controller *open_store(const char *user, int with_events) {
    char config[2048];
    snprintf(config, sizeof config,
             "{\"userId\":\"%s\",\"storagePath\":\"%s\",\"refreshTokens\":0,\"timeoutSeconds\":5,"
             "\"source\":{\"url\":\"%s\"}%s%s%s,\"eventFlushIntervalSeconds\":0}",
             user, dir, server, with_events ? ",\"events\":{\"url\":\"" : "", with_events ? server : "",
             with_events ? "\"}" : "");
    cc_controller *c = NULL;
    if (cc_controller_open(&c, config) != CC_OK) {
        fprintf(stderr, "open: %s\n", cc_last_error_message());
        exit(2);
    }
    return c;
}

/* Occurrences of `needle` in every regular file under `path` (recursively). */
static int count_in_tree(const char *path, const char *needle) {
    DIR *d = opendir(path);
    if (!d) return 0;
    int found = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        char child[1024];
        snprintf(child, sizeof child, "%s/%s", path, e->d_name);
        struct stat st;
        if (lstat(child, &st) != 0) continue;
        if (S_ISDIR(st.st_mode)) { found += count_in_tree(child, needle); continue; }
        if (!S_ISREG(st.st_mode)) continue;
        FILE *f = fopen(child, "rb");
        if (!f) continue;
        size_t cap = (size_t)st.st_size + 1, n;
        char *bytes = malloc(cap);
        n = fread(bytes, 1, cap, f);
        fclose(f);
        size_t len = strlen(needle);
        for (size_t i = 0; i + len <= n; i++) if (memcmp(bytes + i, needle, len) == 0) found++;
        free(bytes);
    }
    closedir(d);
    return found;
}

struct heard { int forgotten; };

static void on_update(void *userdata, const char *update_json) {
    struct heard *h = userdata;
    if (strstr(update_json, "\"reason\":\"user_forgotten\"")) h->forgotten++;
}

static void seed_server(void) {
    admin("POST", "/_admin/reset", "{}", NULL, 0);
    admin("POST", "/_admin/cards",
          "{\"user_id\":\"erin\",\"cards\":[{\"id\":\"" SECRET_ID "\",\"tp\":\"short_news\",\"ca\":1763799999,"
          "\"tt\":\"" SECRET_TITLE "\",\"ds\":\"" SECRET_TITLE " body\"},"
          "{\"id\":\"" SECRET_ID2 "\",\"tp\":\"short_news\",\"ca\":1763799998,\"db\":true,\"tt\":\"" SECRET_TITLE "\",\"ds\":\"x\"}]}",
          NULL, 0);
    admin("POST", "/_admin/cards",
          "{\"user_id\":\"frank\",\"cards\":[{\"id\":\"keep-me-card\",\"tp\":\"short_news\",\"ca\":1763799999,"
          "\"tt\":\"KEEP-ME-TITLE\",\"ds\":\"stays\"}]}", NULL, 0);
}

static void test_export_then_forget_leaves_no_bytes(void) {
    seed_server();
    cc_controller *c = open_store("erin", 0);
    CHECK_OK(cc_controller_refresh(NULL, c, 5));
    CHECK_OK(cc_controller_log_impression(c, SECRET_ID));
    CHECK_OK(cc_controller_mark_read(NULL, c, SECRET_ID, 1));
    CHECK_OK(cc_controller_log_dismissal(c, SECRET_ID2));
    CHECK_OK(cc_controller_change_user(c, "frank"));
    CHECK_OK(cc_controller_refresh(NULL, c, 5));
    CHECK_OK(cc_controller_change_user(c, "erin"));
    struct heard heard = {0};
    uint64_t sub = 0;
    CHECK_OK(cc_controller_subscribe(&sub, c, on_update, &heard, NULL));

    char *doc = NULL;
    CHECK_OK(cc_controller_export_user(&doc, c, NULL));
    CHECK_CONTAINS(doc, "\"format\":1");
    CHECK_CONTAINS(doc, "\"user_id\":\"erin\"");
    CHECK_CONTAINS(doc, SECRET_TITLE);
    CHECK_CONTAINS(doc, "\"dismissed\":[\"" SECRET_ID2 "\"]");
    CHECK_CONTAINS(doc, "\"type\":\"impression\"");
    CHECK_CONTAINS(doc, "\"type\":\"read\"");
    CHECK_CONTAINS(doc, "\"last_full_sync_at\":");
    CHECK(strstr(doc, "keep-me-card") == NULL);
    cc_string_free(doc);
    /* Another user's export, read from the store. */
    CHECK_OK(cc_controller_export_user(&doc, c, "frank"));
    CHECK_CONTAINS(doc, "keep-me-card");
    cc_string_free(doc);
    CHECK_OK(cc_controller_export_user(&doc, c, "nobody"));
    CHECK_CONTAINS(doc, "\"cards\":[]");
    cc_string_free(doc);

    CHECK(count_in_tree(dir, SECRET_TITLE) > 0);
    char *receipt = NULL;
    CHECK_OK(cc_controller_forget_user(&receipt, c, NULL, CC_PENDING_DISCARD, 0));
    CHECK_CONTAINS(receipt, "\"user_id\":\"erin\"");
    CHECK_CONTAINS(receipt, "\"cards\":2");
    CHECK_CONTAINS(receipt, "\"dismissals\":1");
    CHECK_CONTAINS(receipt, "\"events_discarded\":3");
    CHECK_CONTAINS(receipt, "\"sync_state\":true");
    CHECK_CONTAINS(receipt, "\"wal_truncated\":true");
    cc_string_free(receipt);
    CHECK(heard.forgotten == 1);
    int64_t total = -1;
    CHECK_OK(cc_controller_counts(&total, NULL, c, NULL));
    CHECK(total == 0);

    /* Not one byte of the forgotten user's ids or titles under the storage path. */
    CHECK(count_in_tree(dir, SECRET_TITLE) == 0);
    CHECK(count_in_tree(dir, SECRET_ID) == 0);
    CHECK(count_in_tree(dir, SECRET_ID2) == 0);
    CHECK(count_in_tree(dir, "keep-me-card") > 0);
    CHECK_OK(cc_controller_close(c));
    /* Also after close (the WAL emptied into the file) and a reopen. */
    CHECK(count_in_tree(dir, SECRET_TITLE) == 0);
    c = open_store("frank", 0);
    CHECK_OK(cc_controller_card(&doc, c, "keep-me-card"));
    cc_string_free(doc);
    CHECK_OK(cc_controller_close(c));
}

static void test_pending_events_flushed_first(void) {
    seed_server();
    cc_controller *c = open_store("frank", 1);
    CHECK_OK(cc_controller_refresh(NULL, c, 5));
    CHECK_OK(cc_controller_log_impression(c, "keep-me-card"));
    CHECK_OK(cc_controller_change_user(c, "erin"));
    char *receipt = NULL;
    /* Another user than the current one: its events delivered, then its data gone. */
    CHECK_OK(cc_controller_forget_user(&receipt, c, "frank", CC_PENDING_FLUSH, 5));
    CHECK_CONTAINS(receipt, "\"events_delivered\":1");
    CHECK_CONTAINS(receipt, "\"events_discarded\":0");
    CHECK_CONTAINS(receipt, "\"cards\":1");
    cc_string_free(receipt);
    char events[8192];
    admin("GET", "/_admin/events", NULL, events, sizeof events);
    CHECK_CONTAINS(events, "keep-me-card");
    CHECK_OK(cc_controller_close(c));
    CHECK(count_in_tree(dir, "KEEP-ME-TITLE") == 0);
}

static void test_undeliverable_events_remove_nothing(void) {
    seed_server();
    cc_controller *c = open_store("erin", 0);      /* no event sink */
    CHECK_OK(cc_controller_refresh(NULL, c, 5));
    CHECK_OK(cc_controller_log_impression(c, SECRET_ID));
    CHECK_RC(CC_E_NO_SOURCE, cc_controller_forget_user(NULL, c, NULL, CC_PENDING_FLUSH, 1));
    CHECK_MESSAGE("nothing was removed");
    int64_t total = -1, pending = -1;
    CHECK_OK(cc_controller_counts(&total, NULL, c, NULL));
    CHECK(total == 2);
    CHECK_OK(cc_controller_pending_events(&pending, c));
    CHECK(pending == 1);
    CHECK_OK(cc_controller_close(c));

    /* A sink that fails (the server gone): the delivery's error, nothing removed. */
    char config[1024];
    snprintf(config, sizeof config,
             "{\"userId\":\"erin\",\"storagePath\":\"%s\",\"timeoutSeconds\":1,"
             "\"events\":{\"url\":\"http://127.0.0.1:9\"},\"eventFlushIntervalSeconds\":0}", dir);
    CHECK_OK(cc_controller_open(&c, config));
    CHECK_RC(CC_E_NETWORK, cc_controller_forget_user(NULL, c, NULL, CC_PENDING_FLUSH, 1));
    CHECK_OK(cc_controller_counts(&total, NULL, c, NULL));
    CHECK(total == 2);
    CHECK_OK(cc_controller_forget_user(NULL, c, NULL, CC_PENDING_DISCARD, 1));
    CHECK_OK(cc_controller_pending_events(&pending, c));
    CHECK(pending == 0);
    CHECK_OK(cc_controller_close(c));
}

/* A second controller of the user on the same store, opened before the first forgot the user:
 * its next refresh asks from the store's cursors (none now), and the server's full sync brings
 * the user's cards back. It asked from the cursors it had loaded, and the server's delta (no
 * card changed since) left it with nothing, reported as a success, until a full sync. */
static void test_another_controllers_forget_reaches_this_one(void) {
    seed_server();
    cc_controller *a = open_store("erin", 0);
    CHECK_OK(cc_controller_refresh(NULL, a, 5));
    cc_controller *b = open_store("erin", 0);
    int64_t total = -1;
    CHECK_OK(cc_controller_counts(&total, NULL, b, NULL));
    CHECK(total == 2);
    CHECK_OK(cc_controller_forget_user(NULL, a, NULL, CC_PENDING_DISCARD, 0));
    char *summary = NULL;
    CHECK_OK(cc_controller_refresh(&summary, b, 5));
    if (summary) CHECK_CONTAINS(summary, "\"fullSync\":true");
    cc_string_free(summary);
    CHECK_OK(cc_controller_counts(&total, NULL, b, NULL));
    CHECK(total == 2);
    CHECK_OK(cc_controller_close(b));
    CHECK_OK(cc_controller_close(a));
}

static void test_misuse(void) {
    cc_controller *c = cc_test_open_sample();
    CHECK_OK(cc_controller_refresh(NULL, c, 5));
    char *out = (char *)1;
    CHECK_RC(CC_E_INVALID_ARGUMENT, cc_controller_forget_user(&out, c, NULL, 7, 0));
    CHECK(out == NULL);
    CHECK_RC(CC_E_INVALID_ARGUMENT, cc_controller_forget_user(NULL, c, NULL, CC_PENDING_DISCARD, 0.0 / 0.0));
    CHECK_RC(CC_E_INVALID_ARGUMENT, cc_controller_forget_user(NULL, c, "\xff", CC_PENDING_DISCARD, 0));
    CHECK_RC(CC_E_INVALID_ARGUMENT, cc_controller_export_user(NULL, c, NULL));
    CHECK_RC(CC_E_INVALID_HANDLE, cc_controller_export_user(&out, NULL, NULL));
    CHECK_RC(CC_E_INVALID_HANDLE, cc_controller_forget_user(NULL, NULL, NULL, CC_PENDING_DISCARD, 0));
    /* In memory: the current user's cards are forgotten too. */
    int64_t total = -1;
    CHECK_OK(cc_controller_counts(&total, NULL, c, NULL));
    CHECK(total > 0);
    char *receipt = NULL;
    CHECK_OK(cc_controller_forget_user(&receipt, c, NULL, CC_PENDING_DISCARD, 0));
    CHECK_CONTAINS(receipt, "\"wal_truncated\":true");
    cc_string_free(receipt);
    CHECK_OK(cc_controller_counts(&total, NULL, c, NULL));
    CHECK(total == 0);
    CHECK_OK(cc_controller_close(c));
    CHECK_RC(CC_E_INVALID_HANDLE, cc_controller_forget_user(NULL, c, NULL, CC_PENDING_DISCARD, 0));
}

int main(void) {
    server = getenv("CC_SERVER_URL");
    if (!server) { fprintf(stderr, "run under with_server.py\n"); return 2; }
    cc_test_make_dir(dir, sizeof dir, "forget");
    test_export_then_forget_leaves_no_bytes();
    test_pending_events_flushed_first();
    test_undeliverable_events_remove_nothing();
    test_another_controllers_forget_reaches_this_one();
    test_misuse();
    return cc_test_finish("test_forget");
}
