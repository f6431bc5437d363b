/* The image cache (docs/BEHAVIOUR.md, "Images") against the reference server over HTTP on
 * 127.0.0.1 (CC_SERVER_URL; with_server.py --feed empty_feed.json): prefetch after a refresh,
 * the cached path in snapshots and card JSON, 0700/0600, failures that never fail the refresh,
 * the per-image size limit, cleaning when cards go, LRU eviction by bytes, and a second refresh
 * served from the cache. The same scenario as bindings/python/tests/test_images.py. */
#include "cc_test.h"

#include <sys/stat.h>
#include <unistd.h>

static const char *server;

static void admin(const char *method, const char *path, const char *json, char *out, size_t out_len) {
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "%s %s %s '%s'", getenv("CC_ADMIN"), method, path, json ? json : "");
    FILE *p = popen(cmd, "r");
    if (!p) { perror("popen"); exit(2); }
    size_t n = fread(out ? out : cmd, 1, out ? out_len - 1 : sizeof cmd - 1, p);
    if (out) out[n] = 0;
    if (pclose(p) != 0) { fprintf(stderr, "admin call failed: %s\n", cmd); exit(2); }
}

/* Cards of user "pics" whose images are on the server: NAME.png of SIZE bytes, or a status. */
static void set_card(const char *id, int created, const char *image_query) {
    char body[1024];
    snprintf(body, sizeof body,
             "{\"user_id\":\"pics\",\"cards\":[{\"id\":\"%s\",\"tp\":\"banner_image\",\"ca\":%d,"
             "\"i\":\"%s/images/%s.png?%s\"}]}", id, created, server, id, image_query);
    admin("POST", "/_admin/cards", body, NULL, 0);
}

static int served(void) {
    char out[65536];
    admin("GET", "/_admin/images", NULL, out, sizeof out);
    return atoi(strstr(out, "\"served\":") + 9);
}

/* The snapshot's imagePath of card `id` (NULL when none), copied into `out`. */
static const char *image_path(cc_controller *c, const char *id, char *out, size_t len) {
    cc_snapshot *s = NULL;
    size_t n = 0;
    const char *found = NULL;
    if (cc_controller_snapshot(&s, c, NULL) != CC_OK || cc_snapshot_count(&n, s) != CC_OK) return NULL;
    for (size_t i = 0; i < n; i++) {
        const char *card_id = NULL, *path = NULL;
        if (cc_snapshot_string(&card_id, s, i, "id") == CC_OK && strcmp(card_id, id) == 0
            && cc_snapshot_string(&path, s, i, "imagePath") == CC_OK && path) {
            snprintf(out, len, "%s", path);
            found = out;
        }
    }
    cc_snapshot_close(s);
    return found;
}

static void test_images(void) {
    char dir[] = "/tmp/cc-images-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    set_card("a", 10, "size=3000");
    set_card("b", 11, "size=3000");
    set_card("missing", 12, "status=404");
    set_card("huge", 13, "size=5000");
    admin("POST", "/_admin/cards", "{\"user_id\":\"pics\",\"cards\":[{\"id\":\"text\",\"tp\":\"short_news\",\"ca\":14,\"ds\":\"no image\"}]}", NULL, 0);

    char config[1024];
    snprintf(config, sizeof config,
             "{\"userId\":\"pics\",\"storagePath\":\"%s/store\",\"refreshTokens\":0,\"source\":{\"url\":\"%s\"},"
             "\"images\":{\"maxBytes\":8000,\"maxCount\":10,\"maxImageBytes\":4000}}", dir, server);
    cc_controller *c = NULL;
    CHECK_OK(cc_controller_open(&c, config));
    char *stats = NULL;
    CHECK_OK(cc_controller_refresh(NULL, c, 5));               /* failures never fail it */
    CHECK_OK(cc_controller_wait_images(&stats, c, 10));
    CHECK_CONTAINS(stats, "\"fetched\":2,\"failed\":2,\"cached\":2,\"bytes\":6000,\"pending\":0");
    cc_string_free(stats);

    char a[4096], b[4096], other[4096];
    CHECK(image_path(c, "a", a, sizeof a) != NULL);
    CHECK(image_path(c, "b", b, sizeof b) != NULL);
    CHECK(image_path(c, "missing", other, sizeof other) == NULL);   /* 404 */
    CHECK(image_path(c, "huge", other, sizeof other) == NULL);      /* over maxImageBytes */
    CHECK(image_path(c, "text", other, sizeof other) == NULL);      /* no image */
    struct stat st;
    CHECK(stat(a, &st) == 0 && st.st_size == 3000 && (st.st_mode & 0777) == 0600);
    char parent[4096];
    snprintf(parent, sizeof parent, "%s", a);
    *strrchr(parent, '/') = 0;
    CHECK(stat(parent, &st) == 0 && (st.st_mode & 0777) == 0700);
    char prefix[4096];
    snprintf(prefix, sizeof prefix, "%s/store/images/", dir);
    CHECK(strncmp(a, prefix, strlen(prefix)) == 0);                 /* beside the store */
    char *card = NULL;
    CHECK_OK(cc_controller_card(&card, c, "a"));
    CHECK_CONTAINS(card, a);                                        /* the card JSON has it too */
    cc_string_free(card);

    /* A refresh with nothing new fetches nothing: the cache serves. */
    int before = served();
    CHECK_OK(cc_controller_refresh(NULL, c, 5));
    CHECK_OK(cc_controller_wait_images(NULL, c, 10));
    CHECK(served() == before + 2);                                  /* only the two failures again */

    /* A card that goes takes its image along. */
    admin("POST", "/_admin/remove", "{\"user_id\":\"pics\",\"ids\":[\"a\"]}", NULL, 0);
    CHECK_OK(cc_controller_refresh(NULL, c, 5));
    CHECK_OK(cc_controller_wait_images(NULL, c, 10));
    CHECK(access(a, F_OK) != 0);

    /* Over maxBytes (8000): three images of 3000 bytes; the feed's last one (b) goes. */
    set_card("g", 20, "size=3000");
    set_card("h", 21, "size=3000");
    CHECK_OK(cc_controller_refresh(NULL, c, 5));
    CHECK_OK(cc_controller_wait_images(&stats, c, 10));
    CHECK_CONTAINS(stats, "\"cached\":2,\"bytes\":6000");
    cc_string_free(stats);
    CHECK(image_path(c, "h", other, sizeof other) != NULL);
    CHECK(image_path(c, "g", other, sizeof other) != NULL);
    CHECK(image_path(c, "b", other, sizeof other) == NULL);
    CHECK(access(b, F_OK) != 0);

    cc_controller_close(c);
    CHECK_RC(CC_E_INVALID_HANDLE, cc_controller_wait_images(NULL, c, 1));

    /* Misuse: no image cache; images without a storagePath. */
    CHECK_OK(cc_controller_open(&c, "{}"));
    CHECK_RC(CC_E_NO_SOURCE, cc_controller_wait_images(&stats, c, 1));
    CHECK(stats == NULL);
    CHECK_RC(CC_E_INVALID_ARGUMENT, cc_controller_wait_images(NULL, c, 0.0 / 0.0));
    cc_controller_close(c);
    CHECK_RC(CC_E_CONFIG, cc_controller_open(&c, "{\"images\":{}}"));
    CHECK_MESSAGE("storagePath");
    snprintf(config, sizeof config, "{\"storagePath\":\"%s/x\",\"images\":{\"maxBytez\":1}}", dir);
    CHECK_RC(CC_E_CONFIG, cc_controller_open(&c, config));
    CHECK_MESSAGE("\"images.maxBytez\" (did you mean \"maxBytes\"?)");

    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0);
}

int main(void) {
    server = getenv("CC_SERVER_URL");
    if (!server) {
        fprintf(stderr, "CC_SERVER_URL not set: run through tests/c/with_server.py\n");
        return 2;
    }
    test_images();
    return cc_test_finish("test_images");
}
