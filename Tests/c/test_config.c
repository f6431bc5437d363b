/* Building a configuration with cc_config_* (docs/C-API.md, "Building a configuration"): values
 * from outside the program, however hostile, stay one value. Quotes, backslashes, control
 * characters, would-be keys and very long values go through unchanged (the user id comes back
 * byte for byte; a feed at such a path is read); bytes that are not UTF-8 are a clear error; the
 * keys, numbers and handles behave as the header says; relative paths are resolved at open. */
#include <fcntl.h>
#include <math.h>

#include "cc_test.h"

/* The JSON of a configuration, or NULL (the failure counted). Free with cc_string_free. */
static char *json_of(const cc_config *config) {
    char *json = NULL;
    CHECK_OK(cc_config_json(&json, config));
    return json;
}

static int json_is(const cc_config *config, const char *expected) {
    char *json = json_of(config);
    int same = json != NULL && strcmp(json, expected) == 0;
    if (!same) fprintf(stderr, "json: %s\nexpected: %s\n", json ? json : "(null)", expected);
    cc_string_free(json);
    return same;
}

/* Opens a controller from a builder's JSON; NULL when it fails (the status left in *rc). */
static cc_controller *open_built(cc_config *config, int *rc) {
    char *json = NULL;
    cc_controller *c = NULL;
    *rc = cc_config_json(&json, config);
    if (*rc == CC_OK) *rc = cc_controller_open(&c, json);
    cc_string_free(json);
    return c;
}

static char *read_file(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *data = malloc((1 << 20) + 1);
    *size = data ? fread(data, 1, 1 << 20, f) : 0;
    if (data) data[*size] = 0;   /* also a C string */
    fclose(f);
    return data;
}

static int write_file(const char *path, const char *data, size_t size) {
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0) return 0;
    int ok = write(fd, data, size) == (ssize_t)size;
    return close(fd) == 0 && ok;
}

/* The user id a builder's configuration opens with is exactly `value`. */
static void check_user_round_trip(const char *value, const char *what) {
    cc_config *config = NULL;
    CHECK_OK(cc_config_new(&config));
    CHECK_OK(cc_config_set_string(config, "userId", value));
    CHECK_OK(cc_config_set_number(config, "refreshTokens", 0));
    int rc = CC_OK;
    cc_controller *c = open_built(config, &rc);
    CHECK_OK(rc);
    char *user = NULL;
    if (c) CHECK_OK(cc_controller_user(&user, c));
    if (user == NULL || strcmp(user, value) != 0) {
        cc_test_failed++;
        fprintf(stderr, "user id %s did not come back unchanged\n", what);
    } else {
        cc_test_passed++;
    }
    cc_string_free(user);
    cc_controller_close(c);
    cc_config_close(config);
}

/* A feed at `path` (the sample feed's bytes) is read through a builder's configuration: 10
 * visible cards for user u-1, whatever the path holds. */
static void check_feed_at(const char *path, const char *feed, size_t feed_size, const char *what) {
    if (!write_file(path, feed, feed_size)) {
        cc_test_failed++;
        fprintf(stderr, "cannot write the feed at the %s path: %s\n", what, strerror(errno));
        return;
    }
    cc_config *config = NULL;
    CHECK_OK(cc_config_new(&config));
    CHECK_OK(cc_config_set_string(config, "userId", "u-1"));
    CHECK_OK(cc_config_set_string(config, "source.file", path));
    CHECK_OK(cc_config_set_number(config, "refreshTokens", 0));
    int rc = CC_OK;
    cc_controller *c = open_built(config, &rc);
    CHECK_OK(rc);
    int64_t total = -1;
    char *user = NULL;
    if (c) {
        CHECK_OK(cc_controller_refresh(NULL, c, 10));
        CHECK_OK(cc_controller_counts(&total, NULL, c, NULL));
        CHECK_OK(cc_controller_user(&user, c));
    }
    if (total != 10 || user == NULL || strcmp(user, "u-1") != 0) {
        cc_test_failed++;
        fprintf(stderr, "the feed at the %s path: %lld cards for user %s\n", what, (long long)total,
                user ? user : "(none)");
    } else {
        cc_test_passed++;
    }
    cc_string_free(user);
    cc_controller_close(c);
    cc_config_close(config);
    unlink(path);
}

static void test_builds_json(void) {
    cc_config *config = NULL;
    CHECK_OK(cc_config_new(&config));
    CHECK(json_is(config, "{}"));
    CHECK_OK(cc_config_set_string(config, "userId", "u-1"));
    CHECK_OK(cc_config_set_string(config, "source.url", "https://cards.example.com/v1"));
    CHECK_OK(cc_config_set_string(config, "source.apiKey", "k"));
    CHECK_OK(cc_config_set_number(config, "refreshTokens", 0));
    CHECK_OK(cc_config_set_number(config, "timeoutSeconds", 2.5));
    CHECK_OK(cc_config_append_string(config, "knownClassTypes", "home_tile"));
    CHECK_OK(cc_config_append_string(config, "knownClassTypes", "coupon_code"));
    CHECK_OK(cc_config_set_bool(config, "events.callback", 7));
    CHECK_OK(cc_config_set_number(config, "images.maxBytes", 1048576));
    CHECK(json_is(config, "{\"userId\":\"u-1\",\"source\":{\"url\":\"https://cards.example.com/v1\",\"apiKey\":\"k\"},"
                          "\"refreshTokens\":0,\"timeoutSeconds\":2.5,\"knownClassTypes\":[\"home_tile\",\"coupon_code\"],"
                          "\"events\":{\"callback\":true},\"images\":{\"maxBytes\":1048576}}"));
    /* Setting again replaces, in place; a key may become another kind of value. */
    CHECK_OK(cc_config_set_string(config, "userId", "u-2"));
    CHECK_OK(cc_config_set_bool(config, "events.callback", 0));
    CHECK_OK(cc_config_set_string(config, "source", "not an object"));
    CHECK(json_is(config, "{\"userId\":\"u-2\",\"source\":\"not an object\",\"refreshTokens\":0,\"timeoutSeconds\":2.5,"
                          "\"knownClassTypes\":[\"home_tile\",\"coupon_code\"],\"events\":{\"callback\":false},"
                          "\"images\":{\"maxBytes\":1048576}}"));
    /* The JSON is a configuration cc_controller_open takes, and it stays usable. */
    cc_config_close(config);
    CHECK_OK(cc_config_new(&config));
    CHECK_OK(cc_config_set_string(config, "userId", "u-1"));
    CHECK_OK(cc_config_set_string(config, "source.file", CC_SAMPLE_FEED));
    CHECK_OK(cc_config_append_string(config, "knownClassTypes", "home_tile"));
    int rc = CC_OK;
    cc_controller *c = open_built(config, &rc);
    CHECK_OK(rc);
    if (c) CHECK_OK(cc_controller_refresh(NULL, c, 10));
    cc_controller_close(c);
    cc_config_close(config);
}

static void test_numbers(void) {
    static const struct { double value; const char *json; } cases[] = {
        {0, "0"}, {-0.0, "0"}, {180, "180"}, {-3, "-3"}, {0.1, "0.1"}, {0.2, "0.2"},
        {9007199254740991.0, "9007199254740991"}, {1e20, "1e+20"}, {1.5e-7, "1.5e-07"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cc_config *config = NULL;
        CHECK_OK(cc_config_new(&config));
        CHECK_OK(cc_config_set_number(config, "timeoutSeconds", cases[i].value));
        char expected[64];
        snprintf(expected, sizeof expected, "{\"timeoutSeconds\":%s}", cases[i].json);
        CHECK(json_is(config, expected));
        cc_config_close(config);
    }
    cc_config *config = NULL;
    CHECK_OK(cc_config_new(&config));
    CHECK_RC(CC_E_INVALID_ARGUMENT, cc_config_set_number(config, "timeoutSeconds", NAN));
    CHECK_MESSAGE("\"timeoutSeconds\" is NaN");
    CHECK_RC(CC_E_INVALID_ARGUMENT, cc_config_set_number(config, "timeoutSeconds", INFINITY));
    CHECK_MESSAGE("infinite");
    CHECK(json_is(config, "{}"));
    cc_config_close(config);
}

/* Values that would break or extend JSON pasted by hand stay one string. */
static void test_hostile_values(void) {
    char controls[40];
    size_t n = 0;
    for (int ch = 1; ch < 0x20; ch++) controls[n++] = (char)ch;
    controls[n++] = 0x7F;
    controls[n] = '\0';
    const char *values[] = {
        "\"", "\\", "\\\"", "\"}", "u\",\"storagePath\":\"/tmp/elsewhere", "x\"}, \"source\": {\"url\": \"http://evil\"}, \"a\":\"",
        "line\nbreak\r\ttab", "\\u0022", "/*", "</script>", "\xe2\x80\xa8 \xe2\x80\xa9", "caf\xc3\xa9 \xf0\x9f\x8e\x89 \xe6\x97\xa5",
        controls, "",
    };
    for (size_t i = 0; i < sizeof values / sizeof values[0]; i++) {
        char what[32];
        snprintf(what, sizeof what, "#%zu", i);
        check_user_round_trip(values[i], what);
    }
    /* The escaping itself: quote, backslash and control characters, nothing else touched. */
    cc_config *config = NULL;
    CHECK_OK(cc_config_new(&config));
    CHECK_OK(cc_config_set_string(config, "userId", "a\"b\\c\n\x01/\xc3\xa9"));
    CHECK(json_is(config, "{\"userId\":\"a\\\"b\\\\c\\n\\u0001/\xc3\xa9\"}"));
    cc_config_close(config);
}

/* Feeds at paths that hold what JSON must escape, and at a very long path. */
static void test_hostile_paths(void) {
    size_t feed_size = 0;
    char *feed = read_file(CC_SAMPLE_FEED, &feed_size);
    CHECK(feed != NULL && feed_size > 0);
    if (!feed) return;
    char dir[512];
    cc_test_make_dir(dir, sizeof dir, "cc-config");
    const char *names[] = {
        "quote\"d.json", "back\\slash.json", "\\\".json", "new\nline.json", "tab\there.json", "ctl\x01\x1f\x7f.json",
        "x\",\"userId\":\"evil.json", "feed.json\"},\"storagePath\":\"", "sp ace.json", "\xc3\xa9t\xc3\xa9 \xe6\x97\xa5.json",
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        char what[32];
        snprintf(what, sizeof what, "hostile #%zu", i);
        check_feed_at(path, feed, feed_size, what);
    }

    /* A path of over 3,800 bytes (as long as the 4096-byte buffer a pasted configuration used):
     * 19 directories of 200 characters, each holding a quote and a backslash. */
    char path[4096];
    size_t len = (size_t)snprintf(path, sizeof path, "%s", dir);
    int depth = 0;
    for (; depth < 19; depth++) {
        path[len++] = '/';
        for (int k = 0; k < 200; k++) path[len++] = "a\"b\\c"[k % 5];
        path[len] = '\0';
        if (mkdir(path, 0700) != 0) break;
    }
    CHECK(depth == 19);
    snprintf(path + len, sizeof path - len, "/feed \"\\.json");
    CHECK(strlen(path) > 3800);
    check_feed_at(path, feed, feed_size, "long");
    for (; depth > 0; depth--) {                     /* deepest first: rmdir needs them empty */
        path[len] = '\0';
        CHECK(rmdir(path) == 0);
        len -= 201;
    }
    CHECK(cc_test_remove_dir(dir));
    free(feed);

    /* A long user id: 200,000 bytes of quotes, backslashes and newlines. */
    size_t big = 200000;
    char *user = malloc(big + 1);
    CHECK(user != NULL);
    if (user) {
        for (size_t k = 0; k < big; k++) user[k] = "\"\\\n x"[k % 5];
        user[big] = '\0';
        check_user_round_trip(user, "of 200,000 bytes");
        free(user);
    }
}

/* Bytes that are not UTF-8 are refused with a message naming the key; nothing is set. */
static void test_not_utf8(void) {
    const char *bad[] = {"\xff", "caf\xe9", "\xc0\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80", "ok\xe2\x80"};
    cc_config *config = NULL;
    CHECK_OK(cc_config_new(&config));
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK_RC(CC_E_INVALID_ARGUMENT, cc_config_set_string(config, "source.file", bad[i]));
        CHECK_MESSAGE("the value of \"source.file\" is not valid UTF-8");
        CHECK_RC(CC_E_INVALID_ARGUMENT, cc_config_append_string(config, "knownClassTypes", bad[i]));
        CHECK_MESSAGE("not valid UTF-8");
        CHECK_RC(CC_E_INVALID_ARGUMENT, cc_config_set_string(config, bad[i], "x"));
        CHECK_MESSAGE("key is not valid UTF-8");
    }
    CHECK(json_is(config, "{}"));
    cc_config_close(config);
}

static void test_keys(void) {
    cc_config *config = NULL;
    CHECK_OK(cc_config_new(&config));
    const char *empty_parts[] = {"", ".", "source.", ".source", "source..file"};
    for (size_t i = 0; i < sizeof empty_parts / sizeof empty_parts[0]; i++) {
        CHECK_RC(CC_E_INVALID_ARGUMENT, cc_config_set_string(config, empty_parts[i], "x"));
        CHECK_MESSAGE("has an empty part");
    }
    CHECK_RC(CC_E_CONFIG, cc_config_set_string(config, "userid", "u"));
    CHECK_MESSAGE("unknown configuration key \"userid\" (did you mean \"userId\"?)");
    CHECK_RC(CC_E_CONFIG, cc_config_set_number(config, "refreshToken", 1));
    CHECK_MESSAGE("did you mean \"refreshTokens\"?");
    CHECK_RC(CC_E_INVALID_ARGUMENT, cc_config_set_string(config, "source.a.b.c.d.e.f.g.h.i.j.k.l.m.n.o.p", "x"));
    CHECK_MESSAGE("more than 16 parts");
    CHECK_OK(cc_config_set_string(config, "source.a.b.c.d.e.f.g.h.i.j.k.l.m.n.o", "x"));   /* 16 parts */
    CHECK_OK(cc_config_set_string(config, "userId", "u"));
    CHECK_RC(CC_E_INVALID_ARGUMENT, cc_config_set_string(config, "userId.name", "x"));
    CHECK_MESSAGE("\"userId\" is set to a string, not an object");
    CHECK_RC(CC_E_INVALID_ARGUMENT, cc_config_append_string(config, "userId", "x"));
    CHECK_MESSAGE("it is set to a string, not an array");
    CHECK_RC(CC_E_INVALID_ARGUMENT, cc_config_set_string(config, NULL, "x"));
    CHECK_MESSAGE("key is NULL");
    CHECK_RC(CC_E_INVALID_ARGUMENT, cc_config_set_string(config, "userId", NULL));
    CHECK_MESSAGE("the value of \"userId\" is NULL");
    CHECK_RC(CC_E_INVALID_ARGUMENT, cc_config_append_string(config, "knownClassTypes", NULL));
    CHECK_RC(CC_E_INVALID_ARGUMENT, cc_config_set_bool(config, NULL, 1));
    CHECK(json_is(config, "{\"source\":{\"a\":{\"b\":{\"c\":{\"d\":{\"e\":{\"f\":{\"g\":{\"h\":{\"i\":{\"j\":{\"k\":{\"l\":{\"m\":"
                          "{\"n\":{\"o\":\"x\"}}}}}}}}}}}}}}},\"userId\":\"u\"}"));
    /* The rest of a configuration is checked where it always is: at open. */
    CHECK_OK(cc_config_set_string(config, "source", "a string"));
    int rc = CC_OK;
    cc_controller *c = open_built(config, &rc);
    CHECK(c == NULL && rc == CC_E_CONFIG);
    cc_config_close(config);
}

static void test_handles(void) {
    CHECK_RC(CC_E_INVALID_ARGUMENT, cc_config_new(NULL));
    cc_config *config = NULL;
    CHECK_OK(cc_config_new(&config));
    char *json = (char *)"sentinel";
    CHECK_RC(CC_E_INVALID_ARGUMENT, cc_config_json(NULL, config));
    CHECK_OK(cc_config_close(config));
    CHECK_RC(CC_E_INVALID_HANDLE, cc_config_json(&json, config));
    CHECK(json == NULL);
    CHECK_RC(CC_E_INVALID_HANDLE, cc_config_set_string(config, "userId", "u"));
    CHECK_MESSAGE("configuration handle was closed");
    CHECK_RC(CC_E_INVALID_HANDLE, cc_config_close(config));
    CHECK_MESSAGE("already closed");
    CHECK_RC(CC_E_INVALID_HANDLE, cc_config_set_bool(NULL, "source.callback", 1));
    CHECK_RC(CC_E_INVALID_HANDLE, cc_config_close(NULL));
    /* Handles of the other kinds are refused both ways. */
    cc_controller *c = cc_test_open_sample();
    CHECK_RC(CC_E_INVALID_HANDLE, cc_config_set_number((cc_config *)c, "refreshTokens", 1));
    CHECK_MESSAGE("not a configuration handle");
    CHECK_OK(cc_config_new(&config));
    CHECK_RC(CC_E_INVALID_HANDLE, cc_controller_refresh(NULL, (cc_controller *)config, 1));
    CHECK_RC(CC_E_INVALID_HANDLE, cc_controller_close((cc_controller *)config));
    CHECK_OK(cc_config_close(config));
    cc_controller_close(c);
}

/* Relative paths are resolved once, at open (cc_controller_open): a host that changes its
 * working directory afterwards still refreshes from, stores into and delivers events to the
 * directory it opened in, and leaves nothing in the new one. The feed's images point at port
 * 1 of the loopback (refused at once: no network), and the test waits for their prefetch. */
static void test_relative_paths(void) {
    char home[512], elsewhere[512], cwd[1024], path[1100];
    cc_test_make_dir(home, sizeof home, "cc-relative");
    cc_test_make_dir(elsewhere, sizeof elsewhere, "cc-elsewhere");
    if (!getcwd(cwd, sizeof cwd) || chdir(home) != 0) { cc_test_failed++; return; }
    size_t size = 0;
    char *sample = read_file(CC_SAMPLE_FEED, &size);
    char *feed = sample ? cc_test_replaced(sample, "https://cdn.example.com/", "http://127.0.0.1:1/") : NULL;
    CHECK(feed != NULL && write_file("feed.json", feed, strlen(feed)));
    free(sample);
    free(feed);
    cc_controller *c = NULL;
    CHECK_OK(cc_controller_open(&c, "{\"userId\":\"u-1\",\"refreshTokens\":0,\"storagePath\":\"store\","
        "\"source\":{\"file\":\"feed.json\"},\"events\":{\"file\":\"events.jsonl\"},"
        "\"eventFlushIntervalSeconds\":0,\"images\":{}}"));
    CHECK(chdir(elsewhere) == 0);
    if (c) {
        int64_t total = -1;
        CHECK_OK(cc_controller_refresh(NULL, c, 10));
        CHECK_OK(cc_controller_counts(&total, NULL, c, NULL));
        CHECK(total == 10);
        CHECK_OK(cc_controller_log_feed_displayed(c));
        CHECK_OK(cc_controller_flush_events(NULL, c, 10));
        CHECK_OK(cc_controller_change_user(c, "u-2"));
        char *diagnostics = NULL;
        CHECK_OK(cc_controller_diagnostics(&diagnostics, c));
        snprintf(path, sizeof path, "\"storagePath\":\"%s/store\"", home);
        CHECK_CONTAINS(diagnostics, path);
        cc_string_free(diagnostics);
        CHECK_OK(cc_controller_wait_images(NULL, c, 10));
    }
    CHECK_OK(cc_controller_close(c));
    snprintf(path, sizeof path, "%s/events.jsonl", home);
    CHECK(access(path, F_OK) == 0);
    snprintf(path, sizeof path, "%s/store/contentcards.sqlite", home);
    CHECK(access(path, F_OK) == 0);
    DIR *d = opendir(elsewhere);
    int entries = 0;
    for (struct dirent *e; d && (e = readdir(d)) != NULL;) entries += e->d_name[0] != '.';
    if (d) closedir(d);
    CHECK(d != NULL && entries == 0);
    CHECK(chdir(cwd) == 0);
}

int main(void) {
    test_builds_json();
    test_numbers();
    test_hostile_values();
    test_hostile_paths();
    test_not_utf8();
    test_keys();
    test_handles();
    test_relative_paths();
    return cc_test_finish("test_config");
}
