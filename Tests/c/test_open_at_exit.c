/* A program that exits with a controller still open, holding cards from a refresh and an
 * apply. Run under valgrind by `make memcheck`: every block the library still holds must be
 * "still reachable" through its handle table, none "definitely lost". (Cards once kept their
 * kind-specific fields in an indirect enum, whose box pointers carry the case in spare bits:
 * valgrind did not see them as pointers and reported live cards as lost.) */
#include "cc_test.h"

static char *read_all(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) { free(buf); buf = NULL; }
    if (buf) buf[n] = 0;
    fclose(f);
    return buf;
}

int main(void) {
    char config[1024];
    snprintf(config, sizeof config, "{\"userId\":\"u\",\"source\":{\"file\":\"%s\"}}", CC_SAMPLE_FEED);
    cc_controller *c = NULL;
    CHECK_OK(cc_controller_open(&c, config));
    char *summary = NULL;
    CHECK_OK(cc_controller_refresh(&summary, c, 10.0));
    cc_string_free(summary);
    char *payload = read_all(CC_SAMPLE_FEED);
    CHECK(payload != NULL);
    summary = NULL;
    CHECK_OK(cc_controller_apply(&summary, c, payload));
    cc_string_free(summary);
    free(payload);
    int64_t total = 0;
    CHECK_OK(cc_controller_counts(&total, NULL, c, NULL));
    CHECK(total > 0);
    /* No cc_controller_close: the process ends with the controller open. */
    return cc_test_finish("test_open_at_exit");
}
