// See cc_http.h. The curl constants below are part of libcurl's stable ABI (curl.h has kept these
// numbers since 7.x); they are spelled out so that no curl headers are needed to build.
#include "cc_http.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

typedef void CURL;
struct curl_slist;

enum {
    CURLE_OK = 0,
    CURLE_WRITE_ERROR = 23,
    CURLE_OPERATION_TIMEDOUT = 28,
    CURLE_OUT_OF_MEMORY = 27,
    CURL_GLOBAL_ALL = 3,
    CURLOPT_WRITEDATA = 10001,
    CURLOPT_URL = 10002,
    CURLOPT_ERRORBUFFER = 10010,
    CURLOPT_POSTFIELDS = 10015,
    CURLOPT_USERAGENT = 10018,
    CURLOPT_HTTPHEADER = 10023,
    CURLOPT_HEADERDATA = 10029,
    CURLOPT_WRITEFUNCTION = 20011,
    CURLOPT_HEADERFUNCTION = 20079,
    CURLOPT_POST = 47,
    CURLOPT_HTTPGET = 80,
    CURLOPT_FOLLOWLOCATION = 52,
    CURLOPT_POSTFIELDSIZE = 60,
    CURLOPT_NOSIGNAL = 99,
    CURLOPT_TIMEOUT_MS = 155,
    CURLOPT_CONNECTTIMEOUT_MS = 156,
    CURLOPT_PROTOCOLS = 181,
    CURLOPT_ACCEPT_ENCODING = 10102,
    CURLE_BAD_CONTENT_ENCODING = 61,
    CURLOPT_REDIR_PROTOCOLS = 182,
    CURLPROTO_HTTP = 1,
    CURLPROTO_HTTPS = 2,
    CURLINFO_RESPONSE_CODE = 0x200000 + 2,
    CURL_ERROR_SIZE = 256
};

// OpenSSL's crypto.h (stable since 1.1.1b).
#define OPENSSL_INIT_NO_ATEXIT 0x00080000L

typedef size_t (*write_fn)(char *, size_t, size_t, void *);

static struct {
    int loaded;
    char error[256];
    int (*global_init)(long);
    CURL *(*easy_init)(void);
    int (*easy_setopt)(CURL *, int, ...);
    int (*easy_perform)(CURL *);
    int (*easy_getinfo)(CURL *, int, ...);
    void (*easy_cleanup)(CURL *);
    const char *(*easy_strerror)(int);
    struct curl_slist *(*slist_append)(struct curl_slist *, const char *);
    void (*slist_free_all)(struct curl_slist *);
} curl;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static void *curl_library; // the dlopen handle, once loaded (never closed)

static void load_curl(void) {
    // libcurl.so.4 is the OpenSSL flavour; Debian also ships the GnuTLS one under another name.
    // CONTENTCARDS_LIBCURL names the one file to load instead (how the tests play a host
    // without libcurl).
#if defined(__APPLE__)
    const char *names[] = {"/usr/lib/libcurl.4.dylib", "libcurl.4.dylib", "libcurl.dylib"};
#else
    const char *names[] = {"libcurl.so.4", "libcurl-gnutls.so.4", "libcurl.so"};
#endif
    const char *only = getenv("CONTENTCARDS_LIBCURL");
    void *lib = NULL;
    if (only && *only) {
        lib = dlopen(only, RTLD_NOW | RTLD_LOCAL);
    } else {
        for (size_t i = 0; i < sizeof names / sizeof names[0] && !lib; i++)
            lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    }
    if (!lib) {
        snprintf(curl.error, sizeof curl.error,
                 "libcurl is not installed (libcurl.so.4 not found): install it "
                 "(Debian/Ubuntu: apt-get install libcurl4) or supply a transport callback");
        return;
    }
#define LOAD(field, symbol)                                                        \
    do {                                                                           \
        *(void **)(&curl.field) = dlsym(lib, symbol);                              \
        if (!curl.field) {                                                         \
            snprintf(curl.error, sizeof curl.error, "libcurl lacks %s", symbol);   \
            return;                                                                \
        }                                                                          \
    } while (0)
    LOAD(global_init, "curl_global_init");
    LOAD(easy_init, "curl_easy_init");
    LOAD(easy_setopt, "curl_easy_setopt");
    LOAD(easy_perform, "curl_easy_perform");
    LOAD(easy_getinfo, "curl_easy_getinfo");
    LOAD(easy_cleanup, "curl_easy_cleanup");
    LOAD(easy_strerror, "curl_easy_strerror");
    LOAD(slist_append, "curl_slist_append");
    LOAD(slist_free_all, "curl_slist_free_all");
#undef LOAD
    // OpenSSL (libcurl's TLS here) registers OPENSSL_cleanup with atexit when it is first
    // initialised, unless told not to. The library's threads use libcurl (a background refresh,
    // an image prefetch, the hint stream) and may still be inside it, even initialising it,
    // when the host calls exit(): the cleanup then freed OpenSSL's locks under them, and the
    // host crashed on its way out (Tests/c/test_exit_with_curl.c). Initialised here first,
    // without that handler, OpenSSL is left to the end of the process. A host that initialised
    // OpenSSL before has its own handler, which this cannot change; one that wants the cleanup
    // calls OPENSSL_cleanup() itself. Looked up through libcurl's handle, so only when libcurl
    // brought OpenSSL (not the GnuTLS flavour).
    int (*openssl_init)(uint64_t, const void *) = NULL;
    *(void **)(&openssl_init) = dlsym(lib, "OPENSSL_init_crypto");
    if (openssl_init) openssl_init(OPENSSL_INIT_NO_ATEXIT, NULL);
    // curl_global_init is not thread-safe; pthread_once makes it run exactly once.
    if (curl.global_init(CURL_GLOBAL_ALL) != CURLE_OK) {
        snprintf(curl.error, sizeof curl.error, "curl_global_init failed");
        return;
    }
    curl_library = lib;
    curl.loaded = 1;
}

void *cc_http_library(void) {
    pthread_once(&load_once, load_curl);
    return curl.loaded ? curl_library : NULL;
}

int cc_http_available(char *error, size_t error_len) {
    pthread_once(&load_once, load_curl);
    if (!curl.loaded && error && error_len)
        snprintf(error, error_len, "%s", curl.error);
    return curl.loaded;
}

struct sink {
    char *data;
    size_t len, cap, max;
    int too_large;
};

static int sink_grow(struct sink *s, size_t n) {
    if (s->len + n + 1 > s->cap) {
        size_t cap = s->cap ? s->cap : 4096;
        while (cap < s->len + n + 1) cap *= 2;
        char *grown = realloc(s->data, cap);
        if (!grown) return 0;
        s->data = grown;
        s->cap = cap;
    }
    return 1;
}

static size_t on_body(char *ptr, size_t size, size_t nmemb, void *userdata) {
    struct sink *s = userdata;
    size_t n = size * nmemb;
    if (n > s->max - s->len || s->len + n > s->max) {
        // Keep what fits: an error status's body over the limit still says something.
        size_t room = s->max - s->len;
        if (room && sink_grow(s, room)) {
            memcpy(s->data + s->len, ptr, room);
            s->len += room;
            s->data[s->len] = 0;
        }
        s->too_large = 1;
        return 0; // makes curl stop with CURLE_WRITE_ERROR
    }
    if (!sink_grow(s, n)) return 0;
    memcpy(s->data + s->len, ptr, n);
    s->len += n;
    s->data[s->len] = 0;
    return n;
}

struct headers {
    char *retry_after; // the response's field, sizeof == 64
    char *etag;        // the response's field, sizeof == 256
    size_t bytes;
    int too_large;
    int in_headers;    // a status line came and the blank line that ends its headers did not
};

/// Copies the value of header line `ptr` (n bytes) into `field` (size `cap`) when the line is
/// `name` (lower case, with its colon); white space trimmed, "" when it does not fit.
void cc_http_copy_header(const char *ptr, size_t n, const char *name, char *field, size_t cap) {
    size_t name_len = strlen(name);
    if (n <= name_len || strncasecmp(ptr, name, name_len) != 0) return;
    const char *v = ptr + name_len, *end = ptr + n;
    while (v < end && (*v == ' ' || *v == '\t')) v++;
    while (end > v && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' ' || end[-1] == '\t')) end--;
    size_t len = (size_t)(end - v);
    if (len < cap) {
        memcpy(field, v, len);
        field[len] = 0;
    } else {
        field[0] = 0;
    }
}

static size_t on_header(char *ptr, size_t size, size_t nmemb, void *userdata) {
    struct headers *h = userdata;
    size_t n = size * nmemb;
    h->bytes += n;
    if (h->bytes > CC_HTTP_MAX_HEADER_BYTES) {
        h->too_large = 1;
        return 0; // makes curl stop with CURLE_WRITE_ERROR
    }
    if (n >= 5 && strncmp(ptr, "HTTP/", 5) == 0) h->in_headers = 1;
    else if ((n == 2 && ptr[0] == '\r' && ptr[1] == '\n') || (n == 1 && ptr[0] == '\n')) h->in_headers = 0;
    // Longer than any valid form: ignored. Parsed by the caller (RFC 9110 section 10.2.3).
    cc_http_copy_header(ptr, n, "retry-after:", h->retry_after, 64);
    // The sync validator, sent back as If-None-Match (docs/WIRE.md, "Conditional sync").
    cc_http_copy_header(ptr, n, "etag:", h->etag, 256);
    return n;
}

int cc_http_begin(cc_http_request *r, const char *url, const char *const *headers, size_t header_count,
                  cc_http_response *out) {
    memset(out, 0, sizeof *out);
    memset(r, 0, sizeof *r);
    if (!cc_http_available(out->error, sizeof out->error)) return CC_HTTP_UNAVAILABLE;
    CURL *h = curl.easy_init();
    if (!h) {
        snprintf(out->error, sizeof out->error, "curl_easy_init failed");
        return CC_HTTP_NO_MEMORY;
    }
    struct curl_slist *list = NULL;
    for (size_t i = 0; i < header_count; i++) {
        struct curl_slist *next = curl.slist_append(list, headers[i]);
        if (!next) {
            curl.slist_free_all(list);
            curl.easy_cleanup(h);
            snprintf(out->error, sizeof out->error, "out of memory for the request's headers");
            return CC_HTTP_NO_MEMORY;
        }
        list = next;
    }
    curl.easy_setopt(h, CURLOPT_URL, url);
    curl.easy_setopt(h, CURLOPT_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
    curl.easy_setopt(h, CURLOPT_REDIR_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
    curl.easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
    curl.easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl.easy_setopt(h, CURLOPT_HTTPHEADER, list);
    curl.easy_setopt(h, CURLOPT_USERAGENT, "contentcards/1");
    r->handle = h;
    r->headers = list;
    return CC_HTTP_OK;
}

void cc_http_end(cc_http_request *r) {
    if (r->headers) curl.slist_free_all(r->headers);
    if (r->handle) curl.easy_cleanup(r->handle);
    r->headers = NULL;
    r->handle = NULL;
}

void cc_http_set_long(cc_http_request *r, int option, long value) { curl.easy_setopt(r->handle, option, value); }
void cc_http_set_pointer(cc_http_request *r, int option, void *value) { curl.easy_setopt(r->handle, option, value); }
void cc_http_set_function(cc_http_request *r, int option, void (*fn)(void)) { curl.easy_setopt(r->handle, option, fn); }
int cc_http_perform(cc_http_request *r) { return curl.easy_perform(r->handle); }
long cc_http_status(cc_http_request *r) {
    long status = 0;
    curl.easy_getinfo(r->handle, CURLINFO_RESPONSE_CODE, &status);
    return status;
}
const char *cc_http_strerror(int code) { return curl.easy_strerror(code); }

int cc_http_post(const char *url, const char *const *headers, size_t header_count,
                 const char *body, size_t body_len, long timeout_ms, size_t max_body,
                 int accept_encoding, cc_http_response *out) {
    cc_http_request request;
    int begun = cc_http_begin(&request, url, headers, header_count, out);
    if (begun != CC_HTTP_OK) return begun;
    CURL *h = request.handle;
    struct sink sink = {.max = max_body};
    struct headers seen = {.retry_after = out->retry_after, .etag = out->etag};
    char errbuf[CURL_ERROR_SIZE] = {0};
    curl.easy_setopt(h, CURLOPT_TIMEOUT_MS, timeout_ms);
    curl.easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms);
    if (body) {
        curl.easy_setopt(h, CURLOPT_POST, 1L);
        curl.easy_setopt(h, CURLOPT_POSTFIELDS, body);
        curl.easy_setopt(h, CURLOPT_POSTFIELDSIZE, (long)body_len);
    } else {
        curl.easy_setopt(h, CURLOPT_HTTPGET, 1L);   /* an image of the image cache */
    }
    // "": every coding this libcurl was built to decode; the body callback sees decoded bytes.
    if (accept_encoding) curl.easy_setopt(h, CURLOPT_ACCEPT_ENCODING, "");
    curl.easy_setopt(h, CURLOPT_WRITEFUNCTION, (write_fn)on_body);
    curl.easy_setopt(h, CURLOPT_WRITEDATA, &sink);
    curl.easy_setopt(h, CURLOPT_HEADERFUNCTION, (write_fn)on_header);
    curl.easy_setopt(h, CURLOPT_HEADERDATA, &seen);
    curl.easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);

    int code = curl.easy_perform(h);
    int result = CC_HTTP_OK;
    long status = 0;
    if (code != CURLE_OK && sink.too_large) {
        // An error status with a long body is still that status (the body was cut).
        curl.easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
        if (status >= 300 || (status > 0 && status < 200)) code = CURLE_OK;
    }
    if (code == CURLE_OK) {
        curl.easy_getinfo(h, CURLINFO_RESPONSE_CODE, &out->status);
        if (!sink.data) sink.data = calloc(1, 1);
        out->body = sink.data;
        out->body_len = sink.len;
        sink.data = NULL;
    } else {
        const char *text = errbuf[0] ? errbuf : curl.easy_strerror(code);
        // curl refuses a header line over its own bound (100 KB) with CURLE_OUT_OF_MEMORY (7.x,
        // no message) or CURLE_TOO_LARGE (100, 8.6 and later), before our callback sees it:
        // a failure of that kind while the headers are being read is that, not a lack of memory.
        int header_refused = seen.too_large ||
            ((code == CURLE_OUT_OF_MEMORY || code == 100) &&
             (seen.in_headers || strstr(text, "header") != NULL) && sink.len == 0);
        if (header_refused) {
            result = CC_HTTP_HEADER_TOO_LARGE;
            if (seen.too_large)
                snprintf(out->error, sizeof out->error, "the response headers are larger than %d bytes",
                         CC_HTTP_MAX_HEADER_BYTES);
            else
                snprintf(out->error, sizeof out->error,
                         "a response header is too large (over curl's bound of 100 KB for one header)");
        } else if (sink.too_large) {
            result = CC_HTTP_TOO_LARGE;
            snprintf(out->error, sizeof out->error, "response body larger than %zu bytes", max_body);
        } else {
            result = code == CURLE_OPERATION_TIMEDOUT   ? CC_HTTP_TIMEOUT
                   : code == CURLE_OUT_OF_MEMORY        ? CC_HTTP_NO_MEMORY
                   : code == CURLE_BAD_CONTENT_ENCODING ? CC_HTTP_BAD_ENCODING
                                                        : CC_HTTP_NETWORK;
            snprintf(out->error, sizeof out->error, "%s", text);
        }
        free(sink.data);
    }
    cc_http_end(&request);
    return result;
}

void cc_http_response_free(cc_http_response *response) {
    if (!response) return;
    free(response->body);
    response->body = NULL;
    response->body_len = 0;
}
