// cc_gzip.h: gzip of a request body (event batches) through the system's zlib, found through
// libcurl's handle (cc_http_library): libcurl links zlib to decode compressed responses, so its
// deflate is there wherever libcurl is, with no dlopen of its own and no link-time dependency.
// Only batches sent through libcurl are compressed; a host without libcurl, or a libcurl built
// without zlib, sends them uncompressed. Internal to libcontentcards.so.
#ifndef CC_GZIP_H
#define CC_GZIP_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CC_GZIP_INTERNAL __attribute__((visibility("hidden")))

/// Returns 1 when zlib can be found (then cc_gzip can compress), else 0.
CC_GZIP_INTERNAL int cc_gzip_available(void);

/// Compresses `len` bytes of `data` into a gzip member (RFC 1952) in a malloc'ed buffer the
/// caller frees with free(). Returns 0 and sets *out / *out_len; -1 when zlib is not available
/// or memory ran out (*out is NULL then). Thread-safe.
CC_GZIP_INTERNAL int cc_gzip(const unsigned char *data, size_t len, unsigned char **out, size_t *out_len);

#ifdef __cplusplus
}
#endif
#endif
