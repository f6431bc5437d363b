/* The kept feed (docs/BEHAVIOUR.md, "The kept feed"): after a clean close, a later open serves
 * cc_controller_feed, cc_controller_feed_indexed and cc_controller_counts byte for byte as the
 * store gives them, without opening it; every other call, and a read after another
 * controller's write, reads the store; a damaged copy is never served. The same scenarios as
 * Tests/swift/ContentCardsTests/KeptFeedTests.swift and the Python binding's test_kept.py. */
#include "cc_test.h"

#include <fcntl.h>

static char dir[512], config[1024];

/* Longer than the time a store file's times must have settled for (KeptFeed.settled). */
static void settle(void) { usleep(80 * 1000); }

static cc_controller *open_store(void) {
    cc_controller *c = NULL;
    CHECK_OK(cc_controller_open(&c, config));
    return c;
}

/* The feed, its indexed form (text and offsets) and the counts, as one string to compare. */
static char *snapshot(cc_controller *c) {
    char *feed = NULL, *indexed = NULL;
    size_t length = 0, count = 0;
    const size_t *offsets = NULL;
    int64_t total = -1, unviewed = -1;
    CHECK_OK(cc_controller_counts(&total, &unviewed, c, NULL));
    CHECK_OK(cc_controller_feed(&feed, c, NULL));
    CHECK_OK(cc_controller_feed_indexed(&indexed, &length, &offsets, &count, c, NULL));
    size_t size = (feed ? strlen(feed) : 0) + 64 + 24 * (count + 1);
    char *out = malloc(size), *w = out;
    w += sprintf(w, "%lld %lld %zu %zu|", (long long)total, (long long)unviewed, length, count);
    for (size_t i = 0; offsets && i <= count; i++) w += sprintf(w, "%zu,", offsets[i]);
    CHECK(feed && indexed && strcmp(feed, indexed) == 0 && strlen(indexed) == length);
    sprintf(w, "|%s", feed ? feed : "");
    cc_string_free(feed);
    cc_string_free(indexed);
    return out;
}

static void flip_byte(const char *path, off_t at) {
    int fd = open(path, O_RDWR);
    unsigned char b = 0;
    CHECK(fd >= 0 && pread(fd, &b, 1, at) == 1);
    b ^= 0x20;
    CHECK(pwrite(fd, &b, 1, at) == 1);
    close(fd);
}

/* A controller's close sums the store file for its kept feed. Read with a descriptor of its own,
 * the sum's close() dropped every POSIX lock this process held on the store, those of the
 * controllers still open included (a process keeps its locks on a file only until it closes
 * any descriptor of it). SQLite still believed them held: another process could take the
 * store's exclusive lock, and its last close emptied the WAL into the file and cut it to
 * nothing while this process wrote to it (test_fork saw the store damaged). */
static void test_a_close_leaves_the_other_controllers_locks(void) {
    char locks_dir[512], locks_config[1024], db[600];
    cc_test_make_dir(locks_dir, sizeof locks_dir, "cc-kept-locks");
    snprintf(locks_config, sizeof locks_config,
             "{\"userId\":\"u-1\",\"refreshTokens\":0,\"storagePath\":\"%s\",\"source\":{\"file\":\"" CC_SAMPLE_FEED "\"}}", locks_dir);
    snprintf(db, sizeof db, "%s/contentcards.sqlite", locks_dir);
    cc_controller *a = NULL, *b = NULL;
    CHECK_OK(cc_controller_open(&a, locks_config));
    CHECK_OK(cc_controller_refresh(NULL, a, 10));           /* a's connection holds SHARED */
    pid_t holder = 0;
    CHECK(cc_test_sqlite_shared_lock(db, &holder) == F_RDLCK && holder == getpid());
    CHECK_OK(cc_controller_open(&b, locks_config));
    CHECK_OK(cc_controller_log_impression(b, "tile-1"));    /* a write: b's close sums the file */
    CHECK_OK(cc_controller_close(b));
    char kept_path[700];
    snprintf(kept_path, sizeof kept_path, "%s/contentcards.sqlite-feed", locks_dir);
    CHECK(access(kept_path, F_OK) == 0);
    int type = cc_test_sqlite_shared_lock(db, &holder);
    if (type != F_RDLCK || holder != getpid())
        fprintf(stderr, "after another controller's close, this process holds no lock on the store (type %d, pid %d)\n",
                type, (int)holder);
    CHECK(type == F_RDLCK && holder == getpid());
    CHECK_OK(cc_controller_close(a));
    CHECK(cc_test_remove_dir(locks_dir));
}

int main(void) {
    cc_test_make_dir(dir, sizeof dir, "cc-kept");
    snprintf(config, sizeof config,
             "{\"userId\":\"u-1\",\"refreshTokens\":0,\"storagePath\":\"%s\",\"source\":{\"file\":\"" CC_SAMPLE_FEED "\"}}", dir);
    char kept[600];
    snprintf(kept, sizeof kept, "%s/contentcards.sqlite-feed", dir);

    /* A store with the sample's cards, one of them seen. */
    cc_controller *c = open_store();
    CHECK_OK(cc_controller_refresh(NULL, c, 10));
    char *feed = NULL;
    CHECK_OK(cc_controller_feed(&feed, c, NULL));
    const char *first = feed ? strstr(feed, "\"id\":\"") : NULL;
    char id[128] = "";
    if (first) sscanf(first + 6, "%127[^\"]", id);
    cc_string_free(feed);
    CHECK_OK(cc_controller_log_impression(c, id));
    char *before = snapshot(c);
    cc_controller_close(c);
    CHECK(access(kept, F_OK) == 0);

    /* Served from the copy, as the store gave it; then, the text handed out, from the store. */
    settle();
    c = open_store();
    char *served = snapshot(c);
    CHECK(strcmp(served, before) == 0);
    char *again = snapshot(c);
    CHECK(strcmp(again, before) == 0);
    free(served);
    free(again);

    /* Another controller's write is read at the next read. */
    cc_controller *writer = open_store();
    CHECK_OK(cc_controller_log_dismissal(writer, id));
    char *written = snapshot(writer);
    cc_controller_close(writer);
    char *seen = snapshot(c);
    CHECK(strcmp(seen, written) == 0);
    CHECK(strcmp(seen, before) != 0);
    free(seen);
    cc_controller_close(c);

    /* A deferred open that is closed leaves the copy standing; a filtered count opens the store. */
    settle();
    c = open_store();
    cc_controller_close(c);
    settle();
    c = open_store();
    int64_t total = -1;
    CHECK_OK(cc_controller_counts(&total, NULL, c, "[\"no_such_class_type\"]"));
    CHECK(total == 0);
    char *after = snapshot(c);
    CHECK(strcmp(after, written) == 0);
    free(after);
    cc_controller_close(c);

    /* A copy with a byte changed anywhere is not served: the store is read. */
    struct stat st;
    CHECK(stat(kept, &st) == 0);
    off_t places[] = {3, 20, 120, st.st_size / 2, st.st_size - 2};
    for (size_t i = 0; i < sizeof places / sizeof places[0]; i++) {
        flip_byte(kept, places[i]);
        settle();
        c = open_store();
        char *read_back = snapshot(c);
        CHECK(strcmp(read_back, written) == 0);
        free(read_back);
        cc_controller_close(c);
    }

    /* Closed: every call says so, as before. */
    settle();
    c = open_store();
    cc_controller_close(c);
    char *none = NULL;
    CHECK_RC(CC_E_INVALID_HANDLE, cc_controller_feed(&none, c, NULL));

    free(before);
    free(written);
    test_a_close_leaves_the_other_controllers_locks();
    return cc_test_finish("test_kept");
}
