// See cc_gzip.h. zlib.h is used for its types and constants only; the functions come from the
// zlib libcurl loaded, through dlsym on libcurl's handle (which searches its dependencies).
// A dlopen of libz.so.1 of our own would do too, but glibc then keeps a dependency list that
// valgrind reports as lost in every program that sends a batch.
#include "cc_gzip.h"
#include "cc_http.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

static struct {
    int loaded;
    int (*deflate_init2)(z_streamp, int, int, int, int, int, const char *, int);
    int (*deflate)(z_streamp, int);
    int (*deflate_end)(z_streamp);
    unsigned long (*deflate_bound)(z_streamp, unsigned long);
} z;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;

static void load_zlib(void) {
    void *lib = cc_http_library();
    if (!lib) return;
    *(void **)(&z.deflate_init2) = dlsym(lib, "deflateInit2_");
    *(void **)(&z.deflate) = dlsym(lib, "deflate");
    *(void **)(&z.deflate_end) = dlsym(lib, "deflateEnd");
    *(void **)(&z.deflate_bound) = dlsym(lib, "deflateBound");
    z.loaded = z.deflate_init2 && z.deflate && z.deflate_end && z.deflate_bound;
}

int cc_gzip_available(void) {
    pthread_once(&load_once, load_zlib);
    return z.loaded;
}

int cc_gzip(const unsigned char *data, size_t len, unsigned char **out, size_t *out_len) {
    *out = NULL;
    *out_len = 0;
    if (!cc_gzip_available() || len > 0x7fffffffu) return -1;
    z_stream s;
    memset(&s, 0, sizeof s);
    // windowBits 15 + 16: a gzip header and trailer instead of zlib's. Level 6 is zlib's
    // default: most of the gain of 9 at a fraction of its time.
    if (z.deflate_init2(&s, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY, ZLIB_VERSION, (int)sizeof s) != Z_OK)
        return -1;
    // deflateBound is an upper bound for one Z_FINISH call; the gzip wrapper adds 18 bytes.
    size_t cap = (size_t)z.deflate_bound(&s, (unsigned long)len) + 32;
    unsigned char *buffer = malloc(cap);
    if (!buffer) {
        z.deflate_end(&s);
        return -1;
    }
    s.next_in = (Bytef *)data;
    s.avail_in = (uInt)len;
    s.next_out = buffer;
    s.avail_out = (uInt)cap;
    int rc = z.deflate(&s, Z_FINISH);
    size_t produced = cap - s.avail_out;
    z.deflate_end(&s);
    if (rc != Z_STREAM_END) {
        free(buffer);
        return -1;
    }
    *out = buffer;
    *out_len = produced;
    return 0;
}
