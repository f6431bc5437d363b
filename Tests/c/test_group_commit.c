/* Group commit: 8 threads logging at once on one controller with a file store. Calls made at
 * the same time share transactions (docs/PERFORMANCE.md, "Durable logging"); each call that
 * returned CC_OK has its event stored exactly once, and each card's state is what its calls
 * say, also for a new controller reading the file afterwards. The same scenario as Swift's
 * GroupCommitTests and Python's test_group_commit.py. */
#include "cc_test.h"

#include <pthread.h>
#include <stdatomic.h>

#define THREADS 8
#define ROUNDS 60
#define CARDS 16

static cc_controller *shared;
static atomic_int recorded;
static atomic_int unexpected;

static void *worker(void *arg) {
    int w = (int)(uintptr_t)arg;
    char id[16];
    for (int round = 0; round < ROUNDS; round++) {
        snprintf(id, sizeof id, "g%d", (w * 5 + round) % CARDS);
        int rc;
        switch (round % 5) {
        case 0: case 1: rc = cc_controller_log_impression(shared, id); break;
        case 2: rc = cc_controller_log_click(shared, id); break;
        case 3: rc = cc_controller_log_dismissal(shared, id); break;
        default: rc = cc_controller_log_feed_displayed(shared); break;
        }
        if (rc == CC_OK) atomic_fetch_add(&recorded, 1);
        else if (rc != CC_E_REFUSED) {   /* a second dismissal of a card is refused; nothing else may fail */
            atomic_fetch_add(&unexpected, 1);
            fprintf(stderr, "log: %d %s\n", rc, cc_last_error_message());
        }
    }
    return NULL;
}

static cc_controller *open_store(const char *dir) {
    char config[1024];
    snprintf(config, sizeof config, "{\"userId\":\"u-1\",\"refreshTokens\":0,\"storagePath\":\"%s\"}", dir);
    cc_controller *c = NULL;
    if (cc_controller_open(&c, config) != CC_OK) {
        fprintf(stderr, "cannot open: %s\n", cc_last_error_message());
        exit(2);
    }
    return c;
}

int main(void) {
    char dir[512];
    cc_test_make_dir(dir, sizeof dir, "group-commit");
    shared = open_store(dir);
    char payload[8192];
    size_t off = (size_t)snprintf(payload, sizeof payload, "[");
    for (int i = 0; i < CARDS; i++)
        off += (size_t)snprintf(payload + off, sizeof payload - off,
                                "%s{\"id\":\"g%d\",\"tp\":\"short_news\",\"ca\":1763700000,\"ds\":\"d\",\"db\":true,\"u\":\"https://example.com/%d\"}",
                                i ? "," : "", i, i);
    snprintf(payload + off, sizeof payload - off, "]");
    CHECK_OK(cc_controller_apply(NULL, shared, payload));

    pthread_t threads[THREADS];
    for (uintptr_t i = 0; i < THREADS; i++) pthread_create(&threads[i], NULL, worker, (void *)i);
    for (int i = 0; i < THREADS; i++) pthread_join(threads[i], NULL);
    CHECK(atomic_load(&unexpected) == 0);

    int64_t pending = -1;
    CHECK_OK(cc_controller_pending_events(&pending, shared));
    CHECK(pending == atomic_load(&recorded));
    CHECK_OK(cc_controller_close(shared));

    /* What is in the file: the same events, and every card viewed, clicked and dismissed. */
    cc_controller *again = open_store(dir);
    CHECK_OK(cc_controller_pending_events(&pending, again));
    CHECK(pending == atomic_load(&recorded));
    char *json = NULL;
    CHECK_OK(cc_controller_pending_events_json(&json, again, 0));
    /* Each event once: every id in the outbox differs from every other. */
    static char seen[THREADS * ROUNDS][64];
    int ids = 0, repeated = 0;
    for (const char *p = json; p && (p = strstr(p, "{\"id\":\"")) && ids < THREADS * ROUNDS; p++) {
        const char *start = p + 7, *end = strchr(start, '"');
        if (!end || end - start >= 64) break;
        memcpy(seen[ids], start, (size_t)(end - start));
        seen[ids][end - start] = '\0';
        for (int j = 0; j < ids; j++) repeated += strcmp(seen[j], seen[ids]) == 0;
        ids++;
    }
    CHECK(ids == atomic_load(&recorded));
    CHECK(repeated == 0);
    cc_string_free(json);
    for (int i = 0; i < CARDS; i++) {
        char id[16], *card = NULL;
        snprintf(id, sizeof id, "g%d", i);
        CHECK_OK(cc_controller_card(&card, again, id));
        CHECK_CONTAINS(card, "\"viewed\":true");
        CHECK_CONTAINS(card, "\"clicked\":true");
        CHECK_CONTAINS(card, "\"dismissed\":true");
        cc_string_free(card);
    }
    CHECK_OK(cc_controller_close(again));
    return cc_test_finish("test_group_commit");
}
