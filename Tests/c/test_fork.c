/* fork() while other threads use the library: children hung in SQLite's
 * allocator lock, taken by another thread at the moment of the fork. Now a child works with new
 * controllers and gets a clear error (CC_E_STORAGE, "fork()") from the inherited ones; it never
 * hangs. The parent forks again and again while four threads hammer the library (refreshes,
 * reads, logging, opening and closing controllers on a file store and in memory), and fails
 * the test if a child has not exited within its time. */
#include "cc_test.h"

#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CHILDREN 30
#define CHILD_SECONDS 20

static cc_controller *shared;
static cc_controller *memory;   /* an in-memory store's: its counts are served lock-free */
static char store_config[512];
static volatile int stop;

static void *hammer(void *arg) {
    long which = (long)arg;
    while (!__atomic_load_n(&stop, __ATOMIC_SEQ_CST)) {
        char *json = NULL;
        switch (which) {
        case 0:
            CC_TEST_IGNORE(cc_controller_refresh(NULL, shared, 2));
            break;
        case 1:
            if (cc_controller_feed(&json, shared, NULL) == CC_OK) cc_string_free(json);
            CC_TEST_IGNORE(cc_controller_counts(NULL, NULL, shared, "[\"home_tile\"]"));
            break;
        case 2:
            CC_TEST_IGNORE(cc_controller_log_impression(shared, "tile-1"));
            break;
        default: {
            cc_controller *c = NULL;
            if (cc_controller_open(&c, which == 3 ? store_config : NULL) == CC_OK) {
                CC_TEST_IGNORE(cc_controller_log_feed_displayed(c));
                cc_controller_close(c);
            }
        }
        }
    }
    return NULL;
}

/* In the child: a failed expectation is printed and counted. */
#define EXPECT(expected, call)                                                                 \
    do {                                                                                       \
        int rc_ = (call);                                                                      \
        if (rc_ != (expected)) {                                                               \
            fprintf(stderr, "child: %s gave %s: %s\n", #call, cc_status_name(rc_),             \
                    cc_last_error_message());                                                  \
            failed++;                                                                          \
        }                                                                                      \
    } while (0)

/* In the child: returns the number of failed checks (the exit status). */
static int child_work(void) {
    int failed = 0;
    char *json = NULL;
    int rc = cc_controller_feed(&json, shared, NULL);
    if (rc != CC_E_STORAGE || strstr(cc_last_error_message(), "fork()") == NULL) {
        fprintf(stderr, "child: inherited controller gave %s: %s\n", cc_status_name(rc), cc_last_error_message());
        failed++;
    }
    EXPECT(CC_E_STORAGE, cc_controller_log_impression(shared, "tile-1"));
    EXPECT(CC_E_STORAGE, cc_controller_refresh(NULL, shared, 1));
    /* An inherited in-memory controller is refused too, also by the badge's lock-free path. */
    EXPECT(CC_E_STORAGE, cc_controller_counts(NULL, NULL, memory, NULL));
    EXPECT(CC_E_STORAGE, (int)cc_controller_unviewed_count(memory, NULL));
    EXPECT(CC_E_STORAGE, (int)cc_controller_total_count(memory, NULL));

    cc_controller *c = NULL;
    rc = cc_controller_open(&c, "{\"userId\":\"child\",\"refreshTokens\":0,\"source\":{\"file\":\"" CC_SAMPLE_FEED "\"}}");
    if (rc != CC_OK) {
        fprintf(stderr, "child: open: %s\n", cc_last_error_message());
        return failed + 1;
    }
    EXPECT(CC_OK, cc_controller_refresh(NULL, c, 5));
    EXPECT(CC_OK, cc_controller_feed(&json, c, NULL));
    cc_string_free(json);
    EXPECT(CC_OK, cc_controller_log_impression(c, "tile-1"));
    EXPECT(CC_OK, cc_controller_close(c));

    /* A new controller on the parent's store works too (its own connection). */
    if (cc_controller_open(&c, store_config) == CC_OK) {
        EXPECT(CC_OK, cc_controller_log_feed_displayed(c));
        cc_controller_close(c);
    } else {
        fprintf(stderr, "child: open the store: %s\n", cc_last_error_message());
        failed++;
    }
    /* Closing the inherited handle releases it without touching its store. */
    EXPECT(CC_OK, cc_controller_close(shared));
    EXPECT(CC_E_INVALID_HANDLE, cc_controller_close(shared));
    return failed;
}

/* The id of the newest pending event of `c` (the last "id" in the outbox's JSON). */
static void newest_event_id(cc_controller *c, char *out, size_t size) {
    char *json = NULL;
    out[0] = 0;
    if (cc_controller_pending_events_json(&json, c, 0) != CC_OK) return;
    const char *last = NULL;
    for (const char *at = strstr(json, "\"id\":\""); at; at = strstr(at + 1, "\"id\":\"")) last = at;
    if (last) snprintf(out, size, "%.36s", last + 6);
    cc_string_free(json);
}

/* Event ids come from a pool of random bytes: a child must not hand out the bytes its parent
 * will (the server drops an event whose id it has seen: the second would be lost). */
static void test_event_ids_differ_across_fork(void) {
    cc_controller *c = cc_test_open_sample();
    CHECK_OK(cc_controller_refresh(NULL, c, 5));
    CHECK_OK(cc_controller_log_impression(c, "tile-1"));      /* the pool is filled */
    int fds[2];
    CHECK(pipe(fds) == 0);
    pid_t pid = fork();
    if (pid == 0) {
        cc_controller *mine = cc_test_open_sample();
        char id[64] = "";
        if (cc_controller_refresh(NULL, mine, 5) == CC_OK && cc_controller_log_impression(mine, "tile-1") == CC_OK)
            newest_event_id(mine, id, sizeof id);
        ssize_t w = write(fds[1], id, strlen(id) + 1);
        _exit(w > 0 ? 0 : 1);
    }
    CHECK_OK(cc_controller_log_impression(c, "tile-1"));
    char parent_id[64], child_id[64] = "";
    newest_event_id(c, parent_id, sizeof parent_id);
    ssize_t n = read(fds[0], child_id, sizeof child_id - 1);
    if (n > 0) child_id[n] = 0;
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK(strlen(parent_id) == 36 && strlen(child_id) == 36);
    CHECK(strcmp(parent_id, child_id) != 0);
    close(fds[0]);
    close(fds[1]);
    CHECK_OK(cc_controller_close(c));
}

/* A child's own connection to a store its parent has open takes the store's locks for real.
 * SQLite records the locks of each open file once per process; a child inherits the parent's
 * record (every WAL store's SHARED lock) but not the kernel's locks, which belong to the
 * process that took them. Before the child handler closed the inherited connections, the
 * child's new connection found SHARED "held" and asked the kernel for nothing: it read while
 * the parent's checkpoints restarted the WAL under it (the loop in main, one run in twenty:
 * "disk I/O error", a store reported damaged). The parent, its own controller closed, looks
 * for the child's lock on the store (cc_test_sqlite_shared_lock). */
static void test_child_connections_take_real_locks(void) {
    char dir[256], config[512], db_path[300];
    cc_test_make_dir(dir, sizeof dir, "cc-fork-locks");
    snprintf(config, sizeof config,
             "{\"userId\":\"u-1\",\"refreshTokens\":0,\"storagePath\":\"%s\",\"source\":{\"file\":\"" CC_SAMPLE_FEED "\"}}", dir);
    snprintf(db_path, sizeof db_path, "%s/contentcards.sqlite", dir);
    cc_controller *parent = NULL;
    CHECK_OK(cc_controller_open(&parent, config));
    CHECK_OK(cc_controller_refresh(NULL, parent, 5));
    CHECK_OK(cc_controller_log_impression(parent, "tile-1"));   /* the connection is open and has read */
    int ready[2], done[2];
    CHECK(pipe(ready) == 0 && pipe(done) == 0);
    pid_t pid = fork();
    if (pid == 0) {
        cc_controller *mine = NULL;
        char c = 'x';
        if (cc_controller_open(&mine, config) == CC_OK && cc_controller_log_impression(mine, "tile-1") == CC_OK) c = 'r';
        if (write(ready[1], &c, 1) != 1) _exit(2);
        if (read(done[0], &c, 1) != 1) _exit(3);
        _exit(cc_controller_close(mine) == CC_OK ? 0 : 1);
    }
    CHECK(pid > 0);
    char c = 0;
    CHECK(read(ready[0], &c, 1) == 1 && c == 'r');
    /* The parent's own lock closed first: the probe is to find the child's, if any. */
    CHECK_OK(cc_controller_close(parent));
    pid_t holder = 0;
    int type = cc_test_sqlite_shared_lock(db_path, &holder);
    if (type != F_RDLCK || holder != pid)
        fprintf(stderr, "the child's connection holds no SHARED lock of its own (found type %d, pid %d; child %d)\n",
                type, (int)holder, (int)pid);
    CHECK(type == F_RDLCK && holder == pid);
    CHECK(write(done[1], "d", 1) == 1);
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    close(ready[0]); close(ready[1]); close(done[0]); close(done[1]);
    CHECK(cc_test_remove_dir(dir));
}

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(void) {
    char dir[256];
    cc_test_make_dir(dir, sizeof dir, "cc-fork");
    snprintf(store_config, sizeof store_config,
             "{\"userId\":\"u-1\",\"refreshTokens\":0,\"storagePath\":\"%s\",\"source\":{\"file\":\"" CC_SAMPLE_FEED "\"}}", dir);
    CHECK_OK(cc_controller_open(&shared, store_config));
    memory = cc_test_open_sample();
    CHECK_OK(cc_controller_refresh(NULL, memory, 5));
    CHECK(cc_controller_total_count(memory, NULL) == 10);
    CHECK_OK(cc_controller_refresh(NULL, shared, 5));

    pthread_t threads[5];
    for (long i = 0; i < 5; i++) pthread_create(&threads[i], NULL, hammer, (void *)i);
    usleep(50 * 1000);

    int hung = 0, failed_children = 0;
    for (int i = 0; i < CHILDREN; i++) {
        usleep((i % 5) * 3000);
        pid_t pid = fork();
        if (pid == 0) _exit(child_work() == 0 ? 0 : 1);
        CHECK(pid > 0);
        if (pid < 0) continue;
        double deadline = now_seconds() + CHILD_SECONDS;
        int status = 0;
        pid_t done = 0;
        while ((done = waitpid(pid, &status, WNOHANG)) == 0 && now_seconds() < deadline) usleep(5000);
        if (done == 0) {
            fprintf(stderr, "child %d hung (killed after %d s)\n", i, CHILD_SECONDS);
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            hung++;
        } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            fprintf(stderr, "child %d failed (status %d)\n", i, status);
            failed_children++;
        }
    }
    CHECK(hung == 0);
    CHECK(failed_children == 0);

    __atomic_store_n(&stop, 1, __ATOMIC_SEQ_CST);
    for (int i = 0; i < 5; i++) pthread_join(threads[i], NULL);
    CHECK_OK(cc_controller_close(shared));
    CHECK_OK(cc_controller_close(memory));
    /* The store is whole after it all: with the stamp and the kept feed gone, the open checks
     * every page (quick_check) and reads the store. Children whose locks were not real once left
     * it damaged here (pages unreadable), which no call of the parent's had reported. */
    char path[600];
    snprintf(path, sizeof path, "%s/contentcards.sqlite-checked", dir);
    unlink(path);
    snprintf(path, sizeof path, "%s/contentcards.sqlite-feed", dir);
    unlink(path);
    cc_controller *check = NULL;
    CHECK_OK(cc_controller_open(&check, store_config));
    CHECK(cc_controller_total_count(check, NULL) == 10);
    CHECK_OK(cc_controller_close(check));
    CHECK(cc_test_remove_dir(dir));
    test_event_ids_differ_across_fork();
    test_child_connections_take_real_locks();
    return cc_test_finish("test_fork");
}
