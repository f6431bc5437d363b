/* Per-user tokens against the reference server started with a secret (with_server.py --secret):
 * each request carries "Authorization: Bearer" with the provider's token for its own user; a
 * token the server refuses (another user's, a rotated secret) is asked for again once and the
 * request retried once; events stay pending through every failure and go once a token works;
 * a provider that fails, hangs, or answers garbage is an error (CC_E_AUTH), bounded by the
 * request's timeout; after a user change the provider is asked for the new user. */
#include "cc_test.h"
#include "cc_admin.h"

#include <pthread.h>
#include <time.h>
#include <unistd.h>

static const char *server;

enum mode { GOOD, OTHER_USER, FAILS, HANGS, BAD_BYTES, NO_ANSWER };

struct provider {
    pthread_mutex_t lock;
    enum mode mode;
    int calls;
    char last_user[64];
    int ttl;                        /* the token's lifetime, seconds */
    int freed;
};

/* A token for `user` minted by the server with its current secret: {"token":"v1...","exp":N}. */
static void mint(const char *user, int ttl, char *token, size_t size, double *exp) {
    char body[256], answer[2048];
    snprintf(body, sizeof body, "{\"user_id\":\"%s\",\"ttl\":%d}", user, ttl);
    admin("POST", "/_admin/token", body, answer, sizeof answer);
    const char *t = strstr(answer, "\"token\": \"");
    size_t skip = 10;
    if (!t) { t = strstr(answer, "\"token\":\""); skip = 9; }
    const char *e = strstr(answer, "\"exp\":");
    token[0] = 0;
    if (t) {
        t += skip;
        size_t n = strcspn(t, "\"");
        if (n >= size) n = size - 1;
        memcpy(token, t, n);
        token[n] = 0;
    }
    *exp = e ? strtod(e + 6, NULL) : 0;
}

static int provide(void *userdata, const char *user_id, cc_token_response *response) {
    struct provider *p = userdata;
    pthread_mutex_lock(&p->lock);
    p->calls++;
    snprintf(p->last_user, sizeof p->last_user, "%s", user_id);
    enum mode mode = p->mode;
    int ttl = p->ttl;
    pthread_mutex_unlock(&p->lock);
    char token[1024];
    double exp = 0;
    switch (mode) {
    case GOOD:
        mint(user_id, ttl, token, sizeof token, &exp);
        return cc_token_response_set(response, token, exp);
    case OTHER_USER:
        mint("mallory", ttl, token, sizeof token, &exp);
        return cc_token_response_set(response, token, exp);
    case FAILS:
        CC_TEST_IGNORE(cc_token_response_fail(response, "the identity service is down"));
        return CC_E_AUTH;
    case HANGS:
        sleep(3);
        return cc_token_response_set(response, "late", 0);
    case BAD_BYTES: {
        int rc = cc_token_response_set(response, "abc\r\nX-Evil: 1", 0);
        CHECK(rc == CC_E_INVALID_ARGUMENT);
        CHECK_MESSAGE("byte 0xD at offset 3");
        return rc;
    }
    case NO_ANSWER:
        return CC_OK;
    }
    return CC_E_INTERNAL;
}

static void free_provider(void *userdata) {
    struct provider *p = userdata;
    pthread_mutex_lock(&p->lock);
    p->freed++;
    pthread_mutex_unlock(&p->lock);
}

static int calls_of(struct provider *p) {
    pthread_mutex_lock(&p->lock);
    int n = p->calls;
    pthread_mutex_unlock(&p->lock);
    return n;
}

static cc_controller *open_remote(const char *user, double timeout) {
    char config[1024];
    snprintf(config, sizeof config,
             "{\"userId\":\"%s\",\"refreshTokens\":0,\"timeoutSeconds\":%g,\"source\":{\"url\":\"%s\"},"
             "\"events\":{\"url\":\"%s\"},\"eventFlushIntervalSeconds\":0}", user, timeout, server, server);
    cc_controller *c = NULL;
    if (cc_controller_open(&c, config) != CC_OK) {
        fprintf(stderr, "open: %s\n", cc_last_error_message());
        exit(2);
    }
    return c;
}

static int64_t pending_of(cc_controller *c) {
    char *json = NULL;
    int64_t n = -1;
    if (cc_controller_diagnostics(&json, c) == CC_OK) {
        const char *at = strstr(json, "\"pendingEvents\":");
        if (at) n = strtoll(at + 16, NULL, 10);
    }
    cc_string_free(json);
    return n;
}

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void reset(void) { admin("POST", "/_admin/reset", "{}", NULL, 0); }

static void test_without_a_token_the_server_refuses(void) {
    reset();
    cc_controller *c = open_remote("alice", 5);
    CHECK_RC(CC_E_SERVER, cc_controller_refresh(NULL, c, 5));
    CHECK_MESSAGE("401");
    CHECK_OK(cc_controller_close(c));
}

static void test_good_tokens_sync_and_deliver(void) {
    reset();
    struct provider p = {PTHREAD_MUTEX_INITIALIZER, GOOD, 0, "", 3600, 0};
    cc_controller *c = open_remote("alice", 5);
    CHECK_OK(cc_controller_set_token_provider(c, provide, &p, free_provider));
    CHECK_OK(cc_controller_refresh(NULL, c, 5));
    CHECK_OK(cc_controller_log_impression(c, "tile-1"));
    CHECK_OK(cc_controller_flush_events(NULL, c, 5));
    CHECK(pending_of(c) == 0);
    /* One ask: the token is reused until 30 s before its expiry. */
    CHECK(calls_of(&p) == 1);
    char auth[4096];
    admin("GET", "/_admin/auth", NULL, auth, sizeof auth);
    CHECK_CONTAINS(auth, "\"accepted\":2");
    CHECK_OK(cc_controller_close(c));
    CHECK(p.freed == 1);
}

static void test_another_users_token_is_retried_once_then_refused(void) {
    reset();
    struct provider good = {PTHREAD_MUTEX_INITIALIZER, GOOD, 0, "", 3600, 0};
    struct provider other = {PTHREAD_MUTEX_INITIALIZER, OTHER_USER, 0, "", 3600, 0};
    cc_controller *c = open_remote("alice", 5);
    CHECK_OK(cc_controller_set_token_provider(c, provide, &other, free_provider));
    CHECK_RC(CC_E_AUTH, cc_controller_refresh(NULL, c, 5));
    CHECK_MESSAGE("401");
    CHECK(calls_of(&other) == 2);                   /* asked, refused, asked again, refused */
    /* Events stay pending through it, and go exactly once when a token works. */
    CHECK_OK(cc_controller_set_token_provider(c, provide, &good, free_provider));
    CHECK_OK(cc_controller_refresh(NULL, c, 5));
    CHECK_OK(cc_controller_log_impression(c, "tile-1"));
    CHECK_OK(cc_controller_set_token_provider(c, provide, &other, free_provider));
    CHECK_RC(CC_E_AUTH, cc_controller_flush_events(NULL, c, 5));
    CHECK(pending_of(c) == 1);
    CHECK_OK(cc_controller_set_token_provider(c, provide, &good, free_provider));
    CHECK_OK(cc_controller_flush_events(NULL, c, 5));
    CHECK(pending_of(c) == 0);
    char events[8192];
    admin("GET", "/_admin/events", NULL, events, sizeof events);
    CHECK_CONTAINS(events, "\"accepted_batches\":1");
    CHECK_CONTAINS(events, "\"duplicates\":0");
    CHECK_OK(cc_controller_close(c));
    CHECK(good.freed == 2 && other.freed == 2);
}

static void test_a_rotated_secret_is_one_retry(void) {
    reset();
    struct provider p = {PTHREAD_MUTEX_INITIALIZER, GOOD, 0, "", 3600, 0};
    cc_controller *c = open_remote("alice", 5);
    CHECK_OK(cc_controller_set_token_provider(c, provide, &p, free_provider));
    CHECK_OK(cc_controller_refresh(NULL, c, 5));
    CHECK(calls_of(&p) == 1);
    admin("POST", "/_admin/secret", "{\"secret\":\"rotated-secret\"}", NULL, 0);
    CHECK_OK(cc_controller_refresh(NULL, c, 5));    /* 401 to the cached token, asked again, sent again */
    CHECK(calls_of(&p) == 2);
    CHECK_OK(cc_controller_log_click(c, "tile-1"));
    CHECK_OK(cc_controller_flush_events(NULL, c, 5));
    CHECK(calls_of(&p) == 2);
    char *diagnostics = NULL;
    CHECK_OK(cc_controller_diagnostics(&diagnostics, c));
    CHECK_CONTAINS(diagnostics, "\"retriedAfter401\":1");
    cc_string_free(diagnostics);
    CHECK_OK(cc_controller_close(c));
    admin("POST", "/_admin/secret", "{\"secret\":\"" CC_TEST_SECRET "\"}", NULL, 0);
}

static void test_a_token_near_its_expiry_is_asked_for_again(void) {
    reset();
    struct provider p = {PTHREAD_MUTEX_INITIALIZER, GOOD, 0, "", 2, 0};
    cc_controller *c = open_remote("alice", 5);
    CHECK_OK(cc_controller_set_token_provider(c, provide, &p, free_provider));
    CHECK_OK(cc_controller_refresh(NULL, c, 5));
    CHECK(calls_of(&p) == 1);
    usleep(1300 * 1000);                           /* within half its lifetime of the expiry */
    CHECK_OK(cc_controller_refresh(NULL, c, 5));
    CHECK(calls_of(&p) == 2);
    CHECK_OK(cc_controller_close(c));
}

static void test_a_provider_that_fails_hangs_or_answers_garbage(void) {
    reset();
    struct provider p = {PTHREAD_MUTEX_INITIALIZER, FAILS, 0, "", 3600, 0};
    cc_controller *c = open_remote("alice", 1);
    CHECK_OK(cc_controller_set_token_provider(c, provide, &p, free_provider));
    CHECK_RC(CC_E_AUTH, cc_controller_refresh(NULL, c, 1));
    CHECK_MESSAGE("the identity service is down");

    pthread_mutex_lock(&p.lock);
    p.mode = BAD_BYTES;
    pthread_mutex_unlock(&p.lock);
    CHECK_RC(CC_E_AUTH, cc_controller_refresh(NULL, c, 1));

    pthread_mutex_lock(&p.lock);
    p.mode = NO_ANSWER;
    pthread_mutex_unlock(&p.lock);
    CHECK_RC(CC_E_AUTH, cc_controller_refresh(NULL, c, 1));
    CHECK_MESSAGE("without cc_token_response_set");

    /* A card to log: refreshed with a working provider first. */
    struct provider good = {PTHREAD_MUTEX_INITIALIZER, GOOD, 0, "", 3600, 0};
    CHECK_OK(cc_controller_set_token_provider(c, provide, &good, free_provider));
    CHECK_OK(cc_controller_refresh(NULL, c, 1));
    CHECK_OK(cc_controller_set_token_provider(c, provide, &p, free_provider));
    pthread_mutex_lock(&p.lock);
    p.mode = HANGS;
    pthread_mutex_unlock(&p.lock);
    double start = now_seconds();
    int rc = cc_controller_refresh(NULL, c, 1);
    double took = now_seconds() - start;
    CHECK(rc == CC_E_AUTH);
    CHECK(took < 2.5);
    CHECK_OK(cc_controller_log_impression(c, "tile-1"));
    start = now_seconds();
    rc = cc_controller_flush_events(NULL, c, 1);
    CHECK(rc == CC_E_AUTH);
    CHECK(now_seconds() - start < 2.5);
    CHECK(pending_of(c) == 1);
    /* No request ever went out with a bad header. */
    char requests[65536];
    admin("GET", "/_admin/requests", NULL, requests, sizeof requests);
    CHECK(strstr(requests, "X-Evil") == NULL);
    CHECK_OK(cc_controller_close(c));
    /* The hung provider returns (after its 3 s): its userdata is freed after it, waited for. */
    int freed = 0;
    double until = now_seconds() + 15;
    do {
        pthread_mutex_lock(&p.lock);
        freed = p.freed;
        pthread_mutex_unlock(&p.lock);
        if (freed == 2) break;
        usleep(20 * 1000);
    } while (now_seconds() < until);
    CHECK(freed == 2);                          /* replaced once, closed once */
}

static void test_the_new_user_gets_its_own_token(void) {
    reset();
    struct provider p = {PTHREAD_MUTEX_INITIALIZER, GOOD, 0, "", 3600, 0};
    cc_controller *c = open_remote("alice", 5);
    CHECK_OK(cc_controller_set_token_provider(c, provide, &p, free_provider));
    CHECK_OK(cc_controller_refresh(NULL, c, 5));
    CHECK(strcmp(p.last_user, "alice") == 0);
    CHECK_OK(cc_controller_log_impression(c, "tile-1"));      /* alice's, pending */
    CHECK_OK(cc_controller_change_user(c, "bob"));
    CHECK_OK(cc_controller_refresh(NULL, c, 5));
    CHECK(strcmp(p.last_user, "bob") == 0);
    CHECK_OK(cc_controller_log_impression(c, "tile-2"));      /* bob's */
    /* Two batches, each with its own user's token: the server checks every event's user. */
    CHECK_OK(cc_controller_flush_events(NULL, c, 5));
    CHECK(pending_of(c) == 0);
    char auth[8192];
    admin("GET", "/_admin/auth", NULL, auth, sizeof auth);
    CHECK_CONTAINS(auth, "\"rejected\":[]");
    CHECK_OK(cc_controller_close(c));
}

static void test_misuse(void) {
    CHECK_RC(CC_E_INVALID_ARGUMENT, cc_token_response_set(NULL, "t", 0));
    CHECK_RC(CC_E_INVALID_ARGUMENT, cc_token_response_set((cc_token_response *)&server, "t", 0));
    CHECK_RC(CC_E_INVALID_ARGUMENT, cc_token_response_fail(NULL, "x"));
    CHECK_RC(CC_E_INVALID_HANDLE, cc_controller_set_token_provider(NULL, provide, NULL, NULL));
    struct provider p = {PTHREAD_MUTEX_INITIALIZER, GOOD, 0, "", 3600, 0};
    CHECK_RC(CC_E_INVALID_HANDLE, cc_controller_set_token_provider(NULL, provide, &p, free_provider));
    CHECK(p.freed == 1);                         /* free_userdata runs at once on failure */
    cc_controller *c = open_remote("alice", 5);
    CHECK_OK(cc_controller_set_token_provider(c, provide, &p, free_provider));
    CHECK_OK(cc_controller_set_token_provider(c, NULL, NULL, NULL));
    CHECK(p.freed == 2);                         /* replaced: freed */
    CHECK_RC(CC_E_SERVER, cc_controller_refresh(NULL, c, 5));   /* no provider: no header */
    CHECK_OK(cc_controller_close(c));
    CHECK(strcmp(cc_status_name(CC_E_AUTH), "CC_E_AUTH") == 0);
}

int main(void) {
    server = getenv("CC_SERVER_URL");
    if (!server) { fprintf(stderr, "run under with_server.py --secret %s\n", CC_TEST_SECRET); return 2; }
    test_without_a_token_the_server_refuses();
    test_good_tokens_sync_and_deliver();
    test_another_users_token_is_retried_once_then_refused();
    test_a_rotated_secret_is_one_retry();
    test_a_token_near_its_expiry_is_asked_for_again();
    test_a_provider_that_fails_hangs_or_answers_garbage();
    test_the_new_user_gets_its_own_token();
    test_misuse();
    return cc_test_finish("test_tokens");
}
