/* The image cache (docs/BEHAVIOUR.md, "Images") against the reference server over HTTP on
 * 127.0.0.1 (CC_SERVER_URL; with_server.py --feed empty_feed.json): prefetch after a refresh,
 * the cached path in snapshots and card JSON, 0700/0600, failures that never fail the refresh,
 * the per-image size limit, cleaning when cards go, LRU eviction by bytes, and a second refresh
 * served from the cache; then maxCount with LRU eviction, and one cache per user. The same scenario as bindings/python/tests/test_images.py. */
#include "cc_test.h"
#include "cc_admin.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *server;

/* A card of `user` whose image is on the server: NAME.png of SIZE bytes, or a status. */
static void set_user_card(const char *user, const char *id, int created, const char *image_query) {
    char body[1024];
    snprintf(body, sizeof body,
             "{\"user_id\":\"%s\",\"cards\":[{\"id\":\"%s\",\"tp\":\"banner_image\",\"ca\":%d,"
             "\"i\":\"%s/images/%s.png?%s\"}]}", user, id, created, server, id, image_query);
    admin("POST", "/_admin/cards", body, NULL, 0);
}

/* Cards of user "pics". */
static void set_card(const char *id, int created, const char *image_query) {
    set_user_card("pics", id, created, image_query);
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

/* The directory holding `path` (a cached image), copied into `out`. */
static const char *dir_of(const char *path, char *out, size_t len) {
    snprintf(out, len, "%s", path);
    *strrchr(out, '/') = 0;
    return out;
}

/* The number of entries of `dir` other than . and .. (-1 when it cannot be read). */
static int count_files(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) n++;
    closedir(d);
    return n;
}

/* Refreshes, waits for the prefetch, and checks the wait's "cached" figure. */
static void refresh_and_wait(cc_controller *c, int cached) {
    char *stats = NULL, want[64];
    CHECK_OK(cc_controller_refresh(NULL, c, 5));
    CHECK_OK(cc_controller_wait_images(&stats, c, 10));
    snprintf(want, sizeof want, "\"cached\":%d,", cached);
    CHECK_CONTAINS(stats, want);
    cc_string_free(stats);
}

static void test_images(void) {
    char dir[256];
    cc_test_make_dir(dir, sizeof dir, "cc-images");
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

    CHECK(cc_test_remove_dir(dir));
}

/* maxCount (2) with four visible cards with images: at most two files in the user's directory;
 * over the bound the least recently used image goes (by last use, not by the card's place in the
 * feed: an image wanted again is renewed), and a card whose image went has imagePath null. */
static void test_max_count_lru(void) {
    char dir[256];
    cc_test_make_dir(dir, sizeof dir, "cc-images");
    char config[1024];
    snprintf(config, sizeof config,
             "{\"userId\":\"lru\",\"storagePath\":\"%s/store\",\"refreshTokens\":0,\"source\":{\"url\":\"%s\"},"
             "\"images\":{\"maxCount\":2}}", dir, server);
    cc_controller *c = NULL;
    CHECK_OK(cc_controller_open(&c, config));

    char p1[4096], p2[4096], p3[4096], p4[4096], cache[4096];
    set_user_card("lru", "lru1", 1, "size=1000");
    refresh_and_wait(c, 1);
    CHECK(image_path(c, "lru1", p1, sizeof p1) != NULL);
    dir_of(p1, cache, sizeof cache);

    /* Feed lru2, lru1: lru2 fetched, then lru1 wanted again (its last use renewed). */
    set_user_card("lru", "lru2", 2, "size=1000");
    refresh_and_wait(c, 2);
    CHECK(image_path(c, "lru2", p2, sizeof p2) != NULL);
    CHECK(image_path(c, "lru1", p1, sizeof p1) != NULL);
    CHECK(count_files(cache) == 2);

    /* Feed lru4, lru3 (404), lru2, lru1: only the first two are wanted; lru4 is fetched and one
     * image must go: lru2, used before lru1 was used again. */
    set_user_card("lru", "lru3", 3, "status=404");
    set_user_card("lru", "lru4", 4, "size=1000");
    refresh_and_wait(c, 2);
    CHECK(count_files(cache) == 2);
    CHECK(image_path(c, "lru4", p4, sizeof p4) != NULL);
    CHECK(image_path(c, "lru1", p1, sizeof p1) != NULL);
    CHECK(image_path(c, "lru2", p3, sizeof p3) == NULL);          /* evicted */
    CHECK(image_path(c, "lru3", p3, sizeof p3) == NULL);          /* failed */
    CHECK(access(p2, F_OK) != 0);
    CHECK(access(p1, F_OK) == 0 && access(p4, F_OK) == 0);
    char *card = NULL;
    CHECK_OK(cc_controller_card(&card, c, "lru2"));
    CHECK_CONTAINS(card, "\"imagePath\":null");
    cc_string_free(card);
    cc_controller_close(c);

    /* A reopen reads the bounded cache from the directory as it was left. */
    CHECK_OK(cc_controller_open(&c, config));
    CHECK(image_path(c, "lru4", p3, sizeof p3) != NULL && strcmp(p3, p4) == 0);
    CHECK(image_path(c, "lru2", p3, sizeof p3) == NULL);
    cc_controller_close(c);

    CHECK(cc_test_remove_dir(dir));
}

/* Two users of one storage path: a directory each; a user change shows only the new user's
 * images, and the other user's cache is neither used nor cleaned by it. */
static void test_per_user(void) {
    char dir[256];
    cc_test_make_dir(dir, sizeof dir, "cc-images");
    set_user_card("ann", "same", 1, "size=1200");                 /* the same image for both */
    set_user_card("ann", "annonly", 2, "size=1300");
    set_user_card("bob", "same", 1, "size=1200");
    char config[1024];
    snprintf(config, sizeof config,
             "{\"userId\":\"ann\",\"storagePath\":\"%s/store\",\"refreshTokens\":0,\"source\":{\"url\":\"%s\"},"
             "\"images\":{}}", dir, server);
    cc_controller *c = NULL;
    CHECK_OK(cc_controller_open(&c, config));
    refresh_and_wait(c, 2);
    char ann_same[4096], ann_only[4096], bob_same[4096], other[4096], ann_dir[4096], bob_dir[4096];
    CHECK(image_path(c, "same", ann_same, sizeof ann_same) != NULL);
    CHECK(image_path(c, "annonly", ann_only, sizeof ann_only) != NULL);
    dir_of(ann_same, ann_dir, sizeof ann_dir);

    /* Bob: nothing of Ann's shows, before or after his refresh; his image is his own file. */
    int before = served();
    CHECK_OK(cc_controller_change_user(c, "bob"));
    CHECK(image_path(c, "same", other, sizeof other) == NULL);
    CHECK(image_path(c, "annonly", other, sizeof other) == NULL);
    refresh_and_wait(c, 1);
    CHECK(served() == before + 1);                                /* fetched again, for bob */
    CHECK(image_path(c, "annonly", other, sizeof other) == NULL);
    CHECK(image_path(c, "same", bob_same, sizeof bob_same) != NULL);
    dir_of(bob_same, bob_dir, sizeof bob_dir);
    CHECK(strcmp(bob_dir, ann_dir) != 0);
    char images[4096];
    dir_of(ann_dir, images, sizeof images);
    CHECK(strncmp(bob_dir, images, strlen(images)) == 0);        /* both under <store>/images */
    struct stat st;
    CHECK(stat(bob_dir, &st) == 0 && (st.st_mode & 0777) == 0700);
    CHECK(count_files(bob_dir) == 1);
    CHECK(count_files(ann_dir) == 2);                             /* Ann's not cleaned by Bob's */
    CHECK(access(ann_only, F_OK) == 0);

    /* Back to Ann: her paths again (from her cache, before any refresh), none of Bob's. */
    CHECK_OK(cc_controller_change_user(c, "ann"));
    CHECK(image_path(c, "same", other, sizeof other) != NULL && strcmp(other, ann_same) == 0);
    CHECK(image_path(c, "annonly", other, sizeof other) != NULL && strcmp(other, ann_only) == 0);
    cc_controller_close(c);

    CHECK(cc_test_remove_dir(dir));
}

int main(void) {
    server = getenv("CC_SERVER_URL");
    if (!server) {
        fprintf(stderr, "CC_SERVER_URL not set: run through Tests/c/with_server.py\n");
        return 2;
    }
    test_images();
    test_max_count_lru();
    test_per_user();
    return cc_test_finish("test_images");
}
