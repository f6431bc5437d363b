// See cc_stream.h. libcurl's functions are looked up through the handle cc_http.c loaded, as
// Sources/CZlib/cc_gzip.c does for zlib; the option numbers are libcurl's stable ABI (see cc_http.c).
#include "cc_stream.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

typedef void CURL;
struct curl_slist;

enum {
    CURLE_OK = 0,
    CURLE_WRITE_ERROR = 23,
    CURLE_OPERATION_TIMEDOUT = 28,
    CURLE_ABORTED_BY_CALLBACK = 42,
    CURLOPT_WRITEDATA = 10001,
    CURLOPT_URL = 10002,
    CURLOPT_ERRORBUFFER = 10010,
    CURLOPT_USERAGENT = 10018,
    CURLOPT_HTTPHEADER = 10023,
    CURLOPT_HEADERDATA = 10029,
    CURLOPT_XFERINFODATA = 10057,
    CURLOPT_OPENSOCKETDATA = 10164,
    CURLOPT_CLOSESOCKETDATA = 10209,
    CURLOPT_WRITEFUNCTION = 20011,
    CURLOPT_HEADERFUNCTION = 20079,
    CURLOPT_OPENSOCKETFUNCTION = 20163,
    CURLOPT_CLOSESOCKETFUNCTION = 20208,
    CURLOPT_XFERINFOFUNCTION = 20219,
    CURLOPT_LOW_SPEED_LIMIT = 19,
    CURLOPT_LOW_SPEED_TIME = 20,
    CURLOPT_NOPROGRESS = 43,
    CURLOPT_FOLLOWLOCATION = 52,
    CURLOPT_HTTPGET = 80,
    CURLOPT_NOSIGNAL = 99,
    CURLOPT_CONNECTTIMEOUT_MS = 156,
    CURLOPT_PROTOCOLS = 181,
    CURLOPT_REDIR_PROTOCOLS = 182,
    CURLPROTO_HTTP = 1,
    CURLPROTO_HTTPS = 2,
    CURLINFO_RESPONSE_CODE = 0x200000 + 2,
    CURL_ERROR_SIZE = 256
};

struct curl_sockaddr {
    int family;
    int socktype;
    int protocol;
    unsigned int addrlen;
    struct sockaddr addr;
};

typedef size_t (*write_fn)(char *, size_t, size_t, void *);
typedef int (*open_fn)(void *, int, struct curl_sockaddr *);
typedef int (*close_fn)(void *, int);
typedef int (*xferinfo_fn)(void *, long long, long long, long long, long long);

static struct {
    int loaded;
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

static void load(void) {
    void *lib = cc_http_library();
    if (!lib) return;
    *(void **)(&curl.easy_init) = dlsym(lib, "curl_easy_init");
    *(void **)(&curl.easy_setopt) = dlsym(lib, "curl_easy_setopt");
    *(void **)(&curl.easy_perform) = dlsym(lib, "curl_easy_perform");
    *(void **)(&curl.easy_getinfo) = dlsym(lib, "curl_easy_getinfo");
    *(void **)(&curl.easy_cleanup) = dlsym(lib, "curl_easy_cleanup");
    *(void **)(&curl.easy_strerror) = dlsym(lib, "curl_easy_strerror");
    *(void **)(&curl.slist_append) = dlsym(lib, "curl_slist_append");
    *(void **)(&curl.slist_free_all) = dlsym(lib, "curl_slist_free_all");
    curl.loaded = curl.easy_init && curl.easy_setopt && curl.easy_perform && curl.easy_getinfo &&
                  curl.easy_cleanup && curl.easy_strerror && curl.slist_append && curl.slist_free_all;
}

void cc_stream_control_init(cc_stream_control *control) {
    pthread_mutex_init(&control->lock, NULL);
    control->fd = -1;
    control->stopped = 0;
}

void cc_stream_control_destroy(cc_stream_control *control) { pthread_mutex_destroy(&control->lock); }

void cc_stream_stop(cc_stream_control *control) {
    pthread_mutex_lock(&control->lock);
    control->stopped = 1;
    // The blocked recv returns at once; curl then ends the transfer and closes the socket
    // through on_close, which waits for this lock: the descriptor cannot be reused meanwhile.
    if (control->fd >= 0) shutdown(control->fd, SHUT_RDWR);
    pthread_mutex_unlock(&control->lock);
}

void cc_stream_interrupt(cc_stream_control *control) {
    pthread_mutex_lock(&control->lock);
    if (control->fd >= 0) shutdown(control->fd, SHUT_RDWR);
    pthread_mutex_unlock(&control->lock);
}

static int on_open(void *data, int purpose, struct curl_sockaddr *address) {
    (void)purpose;
    cc_stream_control *control = data;
    pthread_mutex_lock(&control->lock);
    int fd = -1;
    if (!control->stopped) {
#ifdef SOCK_CLOEXEC
        fd = socket(address->family, address->socktype | SOCK_CLOEXEC, address->protocol);
#else
        fd = socket(address->family, address->socktype, address->protocol);
#endif
        control->fd = fd;
    }
    pthread_mutex_unlock(&control->lock);
    return fd;   // -1 is CURL_SOCKET_BAD: curl gives up on this address
}

static int on_close(void *data, int fd) {
    cc_stream_control *control = data;
    pthread_mutex_lock(&control->lock);
    if (control->fd == fd) control->fd = -1;
    int rc = close(fd);
    pthread_mutex_unlock(&control->lock);
    return rc;
}

/// Called by curl about once a second at least: a stop that came between two reads ends it.
static int on_progress(void *data, long long a, long long b, long long c, long long d) {
    (void)a; (void)b; (void)c; (void)d;
    cc_stream_control *control = data;
    pthread_mutex_lock(&control->lock);
    int stopped = control->stopped;
    pthread_mutex_unlock(&control->lock);
    return stopped;
}

struct reader {
    cc_stream_data_fn on_data;
    void *context;
    int refused;
};

static size_t on_body(char *ptr, size_t size, size_t nmemb, void *userdata) {
    struct reader *r = userdata;
    size_t n = size * nmemb;
    if (r->on_data(r->context, ptr, n) != 0) {
        r->refused = 1;
        return 0;   // CURLE_WRITE_ERROR
    }
    return n;
}

struct seen_headers {
    char *retry_after;
    size_t bytes;
    int too_large;
};

static size_t on_header(char *ptr, size_t size, size_t nmemb, void *userdata) {
    struct seen_headers *h = userdata;
    size_t n = size * nmemb;
    h->bytes += n;
    if (h->bytes > CC_HTTP_MAX_HEADER_BYTES) {
        h->too_large = 1;
        return 0;
    }
    const char *name = "retry-after:";
    size_t name_len = strlen(name);
    if (n > name_len && strncasecmp(ptr, name, name_len) == 0) {
        const char *v = ptr + name_len, *end = ptr + n;
        while (v < end && (*v == ' ' || *v == '\t')) v++;
        while (end > v && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' ' || end[-1] == '\t')) end--;
        size_t len = (size_t)(end - v);
        if (len < 64) {
            memcpy(h->retry_after, v, len);
            h->retry_after[len] = 0;
        }
    }
    return n;
}

int cc_http_stream(const char *url, const char *const *headers, size_t header_count,
                   long connect_ms, long idle_ms, cc_stream_data_fn on_data, void *context,
                   cc_stream_control *control, cc_http_response *out) {
    memset(out, 0, sizeof *out);
    if (!cc_http_available(out->error, sizeof out->error)) return CC_HTTP_UNAVAILABLE;
    pthread_once(&load_once, load);
    if (!curl.loaded) {
        snprintf(out->error, sizeof out->error, "libcurl lacks a function the hint stream needs");
        return CC_HTTP_UNAVAILABLE;
    }
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
            return CC_HTTP_NO_MEMORY;
        }
        list = next;
    }
    struct reader reader = {on_data, context, 0};
    struct seen_headers seen = {out->retry_after, 0, 0};
    char errbuf[CURL_ERROR_SIZE] = {0};
    long idle_seconds = idle_ms <= 1000 ? 1 : (idle_ms + 999) / 1000;
    curl.easy_setopt(h, CURLOPT_URL, url);
    curl.easy_setopt(h, CURLOPT_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
    curl.easy_setopt(h, CURLOPT_REDIR_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
    curl.easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
    curl.easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl.easy_setopt(h, CURLOPT_HTTPGET, 1L);
    curl.easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, connect_ms);
    // No overall timeout: the stream lasts. A server that sends nothing, not even a keepalive,
    // for idle_ms (less than a byte a second over that time) ends it.
    curl.easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl.easy_setopt(h, CURLOPT_LOW_SPEED_TIME, idle_seconds);
    curl.easy_setopt(h, CURLOPT_HTTPHEADER, list);
    curl.easy_setopt(h, CURLOPT_USERAGENT, "contentcards/1");
    curl.easy_setopt(h, CURLOPT_WRITEFUNCTION, (write_fn)on_body);
    curl.easy_setopt(h, CURLOPT_WRITEDATA, &reader);
    curl.easy_setopt(h, CURLOPT_HEADERFUNCTION, (write_fn)on_header);
    curl.easy_setopt(h, CURLOPT_HEADERDATA, &seen);
    curl.easy_setopt(h, CURLOPT_OPENSOCKETFUNCTION, (open_fn)on_open);
    curl.easy_setopt(h, CURLOPT_OPENSOCKETDATA, control);
    curl.easy_setopt(h, CURLOPT_CLOSESOCKETFUNCTION, (close_fn)on_close);
    curl.easy_setopt(h, CURLOPT_CLOSESOCKETDATA, control);
    curl.easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
    curl.easy_setopt(h, CURLOPT_XFERINFOFUNCTION, (xferinfo_fn)on_progress);
    curl.easy_setopt(h, CURLOPT_XFERINFODATA, control);
    curl.easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);

    int code = curl.easy_perform(h);
    curl.easy_getinfo(h, CURLINFO_RESPONSE_CODE, &out->status);
    int result = CC_HTTP_OK;
    pthread_mutex_lock(&control->lock);
    int stopped = control->stopped;
    pthread_mutex_unlock(&control->lock);
    if (code != CURLE_OK) {
        if (stopped) {
            result = CC_HTTP_NETWORK;
            snprintf(out->error, sizeof out->error, "stopped");
        } else if (reader.refused) {
            result = CC_HTTP_NETWORK;
            snprintf(out->error, sizeof out->error, "stopped by the reader");
        } else if (seen.too_large) {
            result = CC_HTTP_HEADER_TOO_LARGE;
            snprintf(out->error, sizeof out->error, "the response headers are larger than %d bytes", CC_HTTP_MAX_HEADER_BYTES);
        } else {
            result = code == CURLE_OPERATION_TIMEDOUT ? CC_HTTP_TIMEOUT : CC_HTTP_NETWORK;
            snprintf(out->error, sizeof out->error, "%s", errbuf[0] ? errbuf : curl.easy_strerror(code));
        }
    }
    curl.slist_free_all(list);
    curl.easy_cleanup(h);
    return result;
}
