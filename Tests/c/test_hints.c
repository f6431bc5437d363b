/* Hints against the reference server: the hint stream makes a card added on the server visible
 * without any refresh call; hints handed in are answered by a refresh, coalesced (a flood of
 * 1,000 is a handful of syncs); a hint for another user is ignored; hostile streams (a line
 * that never ends, a server that accepts and goes silent, one that closes after each event)
 * are dropped and reconnected, with Last-Event-ID catching up a hint missed meanwhile; a user
 * change reconnects for the new user; close ends the connection at once; an error answer
 * holding events is not read as a stream. */
#include "cc_test.h"
#include "cc_admin.h"

#include <time.h>
#include <unistd.h>

static const char *server;

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static cc_controller *open_remote(const char *user, int stream) {
    char config[1024];
    snprintf(config, sizeof config,
             "{\"userId\":\"%s\",\"refreshTokens\":0,\"timeoutSeconds\":5,\"source\":{\"url\":\"%s\"%s}}",
             user, server, stream ? ",\"hints\":{\"idleSeconds\":2,\"retryMaxSeconds\":1}" : "");
    cc_controller *c = NULL;
    if (cc_controller_open(&c, config) != CC_OK) {
        fprintf(stderr, "open: %s\n", cc_last_error_message());
        exit(2);
    }
    return c;
}

/* A number from the diagnostics' "hints" object ("connects", "refreshes"...), -1 if absent. */
static long hint_stat(cc_controller *c, const char *name) {
    char *json = NULL;
    long value = -1;
    if (cc_controller_diagnostics(&json, c) == CC_OK) {
        const char *hints = strstr(json, "\"hints\":{");
        char key[64];
        snprintf(key, sizeof key, "\"%s\":", name);
        const char *at = hints ? strstr(hints, key) : NULL;
        if (at) {
            at += strlen(key);
            value = strncmp(at, "true", 4) == 0 ? 1 : strncmp(at, "false", 5) == 0 ? 0 : strtol(at, NULL, 10);
        }
    }
    cc_string_free(json);
    return value;
}

static int wait_for_stat(cc_controller *c, const char *name, long at_least, double seconds) {
    double until = now_seconds() + seconds;
    while (now_seconds() < until) {
        if (hint_stat(c, name) >= at_least) return 1;
        usleep(10 * 1000);
    }
    return 0;
}

/* Waits (bounded) until the top-level diagnostics field `name` is `value` ("true", "false"). */
static int wait_for_diagnostic(cc_controller *c, const char *name, const char *value, double seconds) {
    char want[96];
    snprintf(want, sizeof want, "\"%s\":%s", name, value);
    double until = now_seconds() + seconds;
    while (now_seconds() < until) {
        char *json = NULL;
        int found = cc_controller_diagnostics(&json, c) == CC_OK && strstr(json, want) != NULL;
        cc_string_free(json);
        if (found) return 1;
        usleep(2 * 1000);
    }
    return 0;
}

static int wait_for_card(cc_controller *c, const char *id, double seconds) {
    double until = now_seconds() + seconds;
    while (now_seconds() < until) {
        char *card = NULL;
        if (cc_controller_card(&card, c, id) == CC_OK) {
            cc_string_free(card);
            return 1;
        }
        usleep(5 * 1000);
    }
    return 0;
}

static int sync_requests(void) {
    static char answer[1 << 20];
    admin("GET", "/_admin/requests", NULL, answer, sizeof answer);
    /* The request's own path (a fault's entry names the path too). */
    const char *sync = "\"method\":\"POST\",\"path\":\"/content_cards/sync\"";
    int n = 0;
    for (const char *at = strstr(answer, sync); at; at = strstr(at + 1, sync)) n++;
    return n;
}

static void add_card(const char *user, const char *id) {
    char body[512];
    snprintf(body, sizeof body, "{\"user_id\":\"%s\",\"cards\":[{\"id\":\"%s\",\"tp\":\"short_news\",\"ca\":1763799999,\"ds\":\"hinted\"}]}", user, id);
    admin("POST", "/_admin/cards", body, NULL, 0);
}

static void test_a_streamed_hint_makes_the_card_visible(void) {
    admin("POST", "/_admin/reset", "{}", NULL, 0);
    cc_controller *c = open_remote("hana", 1);
    CHECK_OK(cc_controller_refresh(NULL, c, 5));
    CHECK(wait_for_stat(c, "connected", 1, 5));
    add_card("hana", "hinted-1");
    CHECK(wait_for_card(c, "hinted-1", 3));
    CHECK(hint_stat(c, "streamHints") >= 1);
    /* A user change reconnects for the new user. */
    CHECK_OK(cc_controller_change_user(c, "ivan"));
    CHECK(wait_for_stat(c, "connects", 2, 5));
    CHECK(wait_for_stat(c, "connected", 1, 5));
    add_card("ivan", "hinted-ivan");
    CHECK(wait_for_card(c, "hinted-ivan", 3));
    double start = now_seconds();
    CHECK_OK(cc_controller_close(c));
    CHECK(now_seconds() - start < 1.0);
    /* The server sees the connection end (its stream thread notices within a poll). */
    char streams[4096] = "";
    double until = now_seconds() + 5;
    do {
        admin("GET", "/_admin/streams", NULL, streams, sizeof streams);
        if (strstr(streams, "\"open\":0")) break;
        usleep(20 * 1000);
    } while (now_seconds() < until);
    CHECK_CONTAINS(streams, "\"open\":0");
}

static void test_hints_handed_in_coalesce(void) {
    admin("POST", "/_admin/reset", "{}", NULL, 0);
    cc_controller *c = open_remote("jo", 0);
    int before = sync_requests();
    add_card("jo", "pushed-1");
    CHECK_OK(cc_controller_hint(c, NULL));
    CHECK(wait_for_card(c, "pushed-1", 3));
    CHECK_OK(cc_controller_hint(c, "someone-else"));
    CHECK(hint_stat(c, "ignored") == 1);
    CHECK(wait_for_stat(c, "refreshes", 1, 3));
    int after_one = sync_requests();
    CHECK(after_one - before >= 1);
    /* A flood while a refresh is in flight (the server holds the sync a second): one refresh
     * runs, one waits, the other 999 join the waiting one, whatever the machine's speed. */
    admin("POST", "/_admin/fault", "{\"path\":\"/content_cards/sync\",\"times\":1,\"delay\":1.0}", NULL, 0);
    CHECK_OK(cc_controller_hint(c, NULL));
    CHECK(wait_for_diagnostic(c, "refreshInFlight", "true", 5));   /* at the server, held */
    long coalesced_before = hint_stat(c, "coalesced");
    for (int i = 0; i < 1000; i++) CHECK_OK(cc_controller_hint(c, NULL));
    CHECK(hint_stat(c, "coalesced") - coalesced_before == 999);
    CHECK(wait_for_stat(c, "refreshes", 3, 5));
    int held = sync_requests() - after_one;
    if (held != 2) fprintf(stderr, "syncs after the flood: %d (refreshes %ld, failed %ld)\n", held, hint_stat(c, "refreshes"), hint_stat(c, "failed"));
    CHECK(held == 2);
    CHECK_OK(cc_controller_close(c));
    CHECK_RC(CC_E_INVALID_HANDLE, cc_controller_hint(c, NULL));
    cc_controller *none = NULL;
    CHECK_OK(cc_controller_open(&none, "{}"));
    CHECK_RC(CC_E_NO_SOURCE, cc_controller_hint(none, NULL));
    CHECK_RC(CC_E_INVALID_ARGUMENT, cc_controller_hint(none, "\xff"));
    CHECK_OK(cc_controller_close(none));
}

static void test_hostile_streams_are_dropped_and_reconnected(void) {
    admin("POST", "/_admin/reset", "{}", NULL, 0);
    /* A line that never ends: cut at 4 KiB, dropped, reconnected. */
    admin("POST", "/_admin/stream_fault", "{\"mode\":\"endless_line\",\"times\":1}", NULL, 0);
    cc_controller *c = open_remote("kim", 1);
    CHECK(wait_for_stat(c, "connects", 2, 8));
    char *diagnostics = NULL;
    CHECK_OK(cc_controller_diagnostics(&diagnostics, c));
    CHECK_CONTAINS(diagnostics, "line over 4096 bytes");
    cc_string_free(diagnostics);
    CHECK_OK(cc_controller_close(c));

    /* A server that accepts and never says a word: dropped after idleSeconds (2). */
    admin("POST", "/_admin/stream_fault", "{\"mode\":\"silent_accept\",\"times\":1}", NULL, 0);
    c = open_remote("kim", 1);
    double start = now_seconds();
    CHECK(wait_for_stat(c, "connects", 1, 8));
    CHECK(now_seconds() - start >= 1.5);
    double closing = now_seconds();
    CHECK_OK(cc_controller_close(c));
    CHECK(now_seconds() - closing < 1.0);

    /* Closed after each event: the hint missed while away comes with Last-Event-ID. */
    admin("POST", "/_admin/stream_fault", "{\"mode\":\"close_after\",\"count\":1,\"times\":1}", NULL, 0);
    c = open_remote("lee", 1);
    CHECK_OK(cc_controller_refresh(NULL, c, 5));
    CHECK(wait_for_stat(c, "connected", 1, 5));
    admin("POST", "/_admin/hint", "{\"user_id\":\"lee\"}", NULL, 0);   /* the one event: then closed */
    add_card("lee", "missed-while-away");                          /* hinted while disconnected */
    CHECK(wait_for_card(c, "missed-while-away", 5));
    CHECK(hint_stat(c, "connects") >= 2);
    CHECK_OK(cc_controller_close(c));

    /* A flood over the stream: coalesced (one refresh running and one waiting at most, so
     * the refreshes follow the time the flood lasts, not the number of hints). */
    admin("POST", "/_admin/stream_fault", "{\"mode\":\"flood\",\"count\":2000,\"times\":1}", NULL, 0);
    c = open_remote("mo", 1);
    CHECK(wait_for_stat(c, "streamHints", 2000, 10));
    /* Every hint either joined a waiting refresh or had one of its own, done or still waiting
     * (at most two): waited for, bounded. */
    long refreshes = 0, coalesced = 0;
    double settle = now_seconds() + 10;
    do {
        refreshes = hint_stat(c, "refreshes") + hint_stat(c, "failed");
        coalesced = hint_stat(c, "coalesced");
        if (refreshes >= 1 && coalesced + refreshes >= 1990) break;
        usleep(10 * 1000);
    } while (now_seconds() < settle);
    CHECK(refreshes >= 1 && refreshes * 10 <= 2000);
    CHECK(coalesced + refreshes >= 1990);
    CHECK_OK(cc_controller_close(c));
}

/* An answer that is not a 200 is not a stream, even when its body is one: a 503 holding a
 * hint neither counted as a connection nor refreshed (as HintTests and test_hints.py). */
static void test_an_error_answer_is_not_a_stream(void) {
    admin("POST", "/_admin/reset", "{}", NULL, 0);
    admin("POST", "/_admin/stream_fault", "{\"status\":503,\"events\":true,\"times\":1000}", NULL, 0);
    cc_controller *c = open_remote("eve", 1);
    int refused = 0;
    for (double until = now_seconds() + 5; !refused && now_seconds() < until; usleep(10 * 1000)) {
        char *json = NULL;
        refused = cc_controller_diagnostics(&json, c) == CC_OK && strstr(json, "HTTP 503") != NULL;
        cc_string_free(json);
    }
    CHECK(refused);
    usleep(300 * 1000);   /* a second answer or more: the backoff waits at most 1 s */
    CHECK(hint_stat(c, "connects") == 0);
    CHECK(hint_stat(c, "connected") == 0);
    CHECK(hint_stat(c, "streamHints") == 0);
    CHECK(hint_stat(c, "refreshes") == 0);
    CHECK_OK(cc_controller_close(c));
    admin("POST", "/_admin/reset", "{}", NULL, 0);
}

int main(void) {
    server = getenv("CC_SERVER_URL");
    if (!server) { fprintf(stderr, "run under with_server.py\n"); return 2; }
    test_a_streamed_hint_makes_the_card_visible();
    test_hints_handed_in_coalesce();
    test_hostile_streams_are_dropped_and_reconnected();
    test_an_error_answer_is_not_a_stream();
    return cc_test_finish("test_hints");
}
