// cc_http.h: one HTTP POST through the system's libcurl, loaded with dlopen at first use.
//
// Why C: curl_easy_setopt is variadic, which Swift cannot call, and loading libcurl lazily keeps
// libcontentcards.so loadable on hosts that have no libcurl (slim containers). Nothing here is
// part of the public ABI; the Swift `sync` layer is its only caller.
#ifndef CC_HTTP_H
#define CC_HTTP_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

// Internal to libcontentcards.so: never exported, whatever the export list says.
#define CC_HTTP_INTERNAL __attribute__((visibility("hidden")))

/// Outcome classes of one request, so callers need not know curl's codes.
enum {
    CC_HTTP_OK = 0,            // a response arrived (any status)
    CC_HTTP_UNAVAILABLE = 1,   // libcurl could not be loaded; `error` names the fix
    CC_HTTP_TIMEOUT = 2,       // the whole request took longer than timeout_ms
    CC_HTTP_TOO_LARGE = 3,     // the body exceeded max_body bytes
    CC_HTTP_NETWORK = 4,       // connection refused, reset, DNS, TLS, truncated body...
    CC_HTTP_NO_MEMORY = 5,
    CC_HTTP_HEADER_TOO_LARGE = 6, // a response header line, or all of them, over the bound
    CC_HTTP_BAD_ENCODING = 7   // the body does not decode under its Content-Encoding
};

/// The bound on the response headers of one request, all lines together.
#define CC_HTTP_MAX_HEADER_BYTES (64 * 1024)

typedef struct cc_http_response {
    long status;              // HTTP status, 0 when no response
    char *body;               // malloc'ed, NUL-terminated; free with cc_http_response_free.
                              // For a non-2xx status whose body is over max_body: the first
                              // max_body bytes (the outcome is still CC_HTTP_OK)
    size_t body_len;
    char retry_after[64];     // the Retry-After header's value, white space trimmed; "" when
                              // absent or longer than this (the caller parses it, RFC 9110)
    char etag[256];           // the ETag header's value (the sync validator, docs/WIRE.md), white
                              // space trimmed; "" when absent or longer than this
    char error[256];          // human-readable reason when the outcome is not CC_HTTP_OK
} cc_http_response;

/// Returns 1 when libcurl can be loaded, else 0 and a message in `error` (may be NULL).
CC_HTTP_INTERNAL int cc_http_available(char *error, size_t error_len);

/// The dlopen handle of libcurl (loading it if need be), or NULL when it cannot be loaded.
/// dlsym through it also finds the symbols of libcurl's own dependencies (zlib: Sources/CZlib/cc_gzip.c).
CC_HTTP_INTERNAL void *cc_http_library(void);

/// POSTs `body` to `url` with `headers` ("Name: value" strings); with `body` NULL, a GET (the
/// image cache's fetches). Only http and https are allowed,
/// redirects are not followed, signals are not used (thread-safe). Thread-safe.
/// `accept_encoding` non-zero asks for a compressed response (Accept-Encoding with every coding
/// this libcurl decodes: gzip and deflate at least) and decodes it: `max_body` then bounds the
/// decoded bytes, which curl hands over 16 KiB at a time, so a small body that inflates to
/// gigabytes (a gzip bomb) ends as CC_HTTP_TOO_LARGE with at most max_body bytes held.
CC_HTTP_INTERNAL int cc_http_post(const char *url, const char *const *headers, size_t header_count,
                 const char *body, size_t body_len, long timeout_ms, size_t max_body,
                 int accept_encoding, cc_http_response *out);

CC_HTTP_INTERNAL void cc_http_response_free(cc_http_response *response);

/// One request as every request of the library starts (cc_http_post, cc_stream.c's stream):
/// a curl handle for `url` (http and https only, no redirects, no signals, the library's user
/// agent) with `headers`. cc_http_begin clears `out` and returns CC_HTTP_OK, or an outcome with
/// `out->error` (libcurl missing, no memory); cc_http_end frees what it made. The setters take
/// libcurl's option numbers (the caller's own options: callbacks, timeouts).
typedef struct cc_http_request {
    void *handle;    // CURL *
    void *headers;   // struct curl_slist *
} cc_http_request;

CC_HTTP_INTERNAL int cc_http_begin(cc_http_request *r, const char *url, const char *const *headers,
                                   size_t header_count, cc_http_response *out);
CC_HTTP_INTERNAL void cc_http_end(cc_http_request *r);
CC_HTTP_INTERNAL void cc_http_set_long(cc_http_request *r, int option, long value);
CC_HTTP_INTERNAL void cc_http_set_pointer(cc_http_request *r, int option, void *value);
CC_HTTP_INTERNAL void cc_http_set_function(cc_http_request *r, int option, void (*fn)(void));
CC_HTTP_INTERNAL int cc_http_perform(cc_http_request *r);        // curl's code: 0 done
CC_HTTP_INTERNAL long cc_http_status(cc_http_request *r);        // the response's status, 0 if none
CC_HTTP_INTERNAL const char *cc_http_strerror(int code);

/// Copies the value of header line `ptr` (n bytes) into `field` (size `cap`) when the line is
/// `name` (lower case, with its colon); white space trimmed, "" when it does not fit.
CC_HTTP_INTERNAL void cc_http_copy_header(const char *ptr, size_t n, const char *name, char *field, size_t cap);

#ifdef __cplusplus
}
#endif
#endif
