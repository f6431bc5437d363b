/* A program outside the project, built against the installed tree (pkg-config or
 * find_package): it must compile, link and run with the installed header and library. */
#include <stdio.h>
#include <string.h>

#include <contentcards.h>

int main(int argc, char **argv) {
    if (cc_abi_version() != CC_ABI_VERSION) {
        fprintf(stderr, "ABI %d, header %d\n", cc_abi_version(), CC_ABI_VERSION);
        return 1;
    }
    /* The configuration built with the installed header's cc_config_* (no JSON by hand). */
    cc_config *built = NULL;
    char *config = NULL;
    cc_controller *c = NULL;
    int64_t total = 0, unviewed = 0;
    if (cc_config_new(&built) != CC_OK
        || cc_config_set_string(built, "source.file", argc > 1 ? argv[1] : "sample_feed.json") != CC_OK
        || cc_config_json(&config, built) != CC_OK || cc_controller_open(&c, config) != CC_OK
        || cc_controller_refresh(NULL, c, 5) != CC_OK || cc_controller_counts(&total, &unviewed, c, NULL) != CC_OK) {
        fprintf(stderr, "failed: %s\n", cc_last_error_message());
        return 1;
    }
    cc_string_free(config);
    cc_config_close(built);
    cc_controller_close(c);
    printf("consumer: contentcards %s, %lld cards, %lld unviewed\n", cc_version(), (long long)total, (long long)unviewed);
    return total == 10 && unviewed == 9 ? 0 : 1;
}
