/* A host that exits while a library thread is inside libcurl must not crash. OpenSSL (libcurl's
 * TLS) registered OPENSSL_cleanup with atexit when a library thread first initialised it, and a
 * host's exit ran it while that thread was still initialising or using OpenSSL: test_config
 * crashed in 1 run in 7 on its way out (an image prefetch loading libcurl as the test ended).
 * The library now initialises OpenSSL first, without the handler (cc_http.c, load_curl).
 *
 * The check is deterministic: this program registers its own exit handler before the library
 * loads libcurl, so it runs after any handler OpenSSL registers then (handlers run newest
 * first), and there it asks OpenSSL to initialise again, which fails once OPENSSL_cleanup has
 * run. Skipped where libcurl does not use OpenSSL (the GnuTLS flavour). */
#include "cc_test.h"

#include <dlfcn.h>
#include <stdint.h>
#include <unistd.h>

static void openssl_still_usable_at_exit(void) {
    const char *names[] = {"libcrypto.so.3", "libcrypto.so.1.1"};
    void *crypto = NULL;
    for (size_t i = 0; i < sizeof names / sizeof names[0] && !crypto; i++)
        crypto = dlopen(names[i], RTLD_NOW | RTLD_NOLOAD);
    if (!crypto) {
        printf("test_exit_with_curl: skipped, libcurl did not load OpenSSL\n");
        fflush(stdout);
        return;
    }
    int (*init)(uint64_t, const void *) = NULL;
    *(void **)(&init) = dlsym(crypto, "OPENSSL_init_crypto");
    int usable = init && init(0, NULL) == 1;
    dlclose(crypto);   /* the reference RTLD_NOLOAD took (valgrind counts an unclosed one lost) */
    if (!usable) {
        printf("FAILED: OpenSSL was cleaned up by an exit handler while the library may still use it\n");
        fflush(stdout);
        _exit(1);
    }
    printf("test_exit_with_curl: OpenSSL still usable after every exit handler\n");
    fflush(stdout);
}

int main(void) {
    atexit(openssl_still_usable_at_exit);   /* before the library loads libcurl */
    cc_controller *c = NULL;
    /* Port 1 of the loopback: refused at once. The refresh loads libcurl, as a background
     * thread's first request would. */
    CHECK_OK(cc_controller_open(&c, "{\"userId\":\"u\",\"source\":{\"url\":\"http://127.0.0.1:1\"},"
                                    "\"refreshTokens\":0,\"timeoutSeconds\":5}"));
    char *summary = NULL;
    int rc = cc_controller_refresh(&summary, c, 5);
    CHECK(rc == CC_E_NETWORK);
    cc_string_free(summary);
    CHECK_OK(cc_controller_close(c));
    return cc_test_finish("test_exit_with_curl");
}
