// See cc_stream.h. The request starts as every request of the library does (cc_http_begin in
// cc_http.c); the option numbers are libcurl's stable ABI (see cc_http.c).
#include "cc_stream.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum {
    CURLE_OK = 0,
    CURLE_OPERATION_TIMEDOUT = 28,
    CURLE_ABORTED_BY_CALLBACK = 42,
    CURLOPT_WRITEDATA = 10001,
    CURLOPT_ERRORBUFFER = 10010,
    CURLOPT_HEADERDATA = 10029,
    CURLOPT_XFERINFODATA = 10057,
    CURLOPT_OPENSOCKETDATA = 10164,
    CURLOPT_CLOSESOCKETDATA = 10209,
    CURLOPT_WRITEFUNCTION = 20011,
    CURLOPT_HEADERFUNCTION = 20079,
    CURLOPT_OPENSOCKETFUNCTION = 20163,
    CURLOPT_CLOSESOCKETFUNCTION = 20208,
    CURLOPT_XFERINFOFUNCTION = 20219,
    CURLOPT_NOPROGRESS = 43,
    CURLOPT_HTTPGET = 80,
    CURLOPT_CONNECTTIMEOUT_MS = 156,
    CURL_ERROR_SIZE = 256
};

struct curl_sockaddr {
    int family;
    int socktype;
    int protocol;
    unsigned int addrlen;
    struct sockaddr addr;
};

void cc_stream_control_init(cc_stream_control *control) {
    pthread_mutex_init(&control->lock, NULL);
    control->fd = -1;
    control->stopped = 0;
    control->interrupted = 0;
    control->last_byte_ms = 0;
    control->idle_ms = 0;
    control->idled = 0;
}

static long long now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
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
    control->interrupted = 1;
    if (control->fd >= 0) shutdown(control->fd, SHUT_RDWR);
    pthread_mutex_unlock(&control->lock);
}

void cc_stream_resume(cc_stream_control *control) {
    pthread_mutex_lock(&control->lock);
    control->interrupted = 0;
    pthread_mutex_unlock(&control->lock);
}

static int on_open(void *data, int purpose, struct curl_sockaddr *address) {
    (void)purpose;
    cc_stream_control *control = data;
    pthread_mutex_lock(&control->lock);
    int fd = -1;
    if (!control->stopped && !control->interrupted) {
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

/// Called by curl about once a second at least, on the transfer's thread: a stop or an
/// interrupt that came between two reads ends it, and so does `idle_ms` without a byte.
static int on_progress(void *data, long long a, long long b, long long c, long long d) {
    (void)a; (void)b; (void)c; (void)d;
    cc_stream_control *control = data;
    pthread_mutex_lock(&control->lock);
    int end = control->stopped || control->interrupted;
    pthread_mutex_unlock(&control->lock);
    if (!end && control->idle_ms > 0 && now_ms() - control->last_byte_ms > control->idle_ms) {
        control->idled = 1;
        end = 1;
    }
    return end;
}

struct reader {
    cc_stream_data_fn on_data;
    void *context;
    int refused;
    cc_stream_control *control;
    cc_http_request *request;
    /// The status was looked at (at the first byte of the body), and it was not 200.
    int status_checked, wrong_status;
};

static size_t on_body(char *ptr, size_t size, size_t nmemb, void *userdata) {
    struct reader *r = userdata;
    size_t n = size * nmemb;
    r->control->last_byte_ms = now_ms();
    // Only a 200 is a stream. The body of an error, a redirect or a captive portal's page is
    // not read as events (a "hint" in it would refresh, and a page kept open would count as a
    // connected stream); the transfer ends and the caller reports the status.
    if (!r->status_checked) {
        r->status_checked = 1;
        if (cc_http_status(r->request) != 200) {
            r->wrong_status = 1;
            return 0;   // CURLE_WRITE_ERROR
        }
    }
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
    cc_stream_control *control;
};

static size_t on_header(char *ptr, size_t size, size_t nmemb, void *userdata) {
    struct seen_headers *h = userdata;
    size_t n = size * nmemb;
    h->control->last_byte_ms = now_ms();
    h->bytes += n;
    if (h->bytes > CC_HTTP_MAX_HEADER_BYTES) {
        h->too_large = 1;
        return 0;
    }
    cc_http_copy_header(ptr, n, "retry-after:", h->retry_after, 64);
    return n;
}

int cc_http_stream(const char *url, const char *const *headers, size_t header_count,
                   long connect_ms, long idle_ms, cc_stream_data_fn on_data, void *context,
                   cc_stream_control *control, cc_http_response *out) {
    cc_http_request r;
    int begun = cc_http_begin(&r, url, headers, header_count, out);
    if (begun != CC_HTTP_OK) return begun;
    struct reader reader = {on_data, context, 0, control, &r, 0, 0};
    struct seen_headers seen = {out->retry_after, 0, 0, control};
    char errbuf[CURL_ERROR_SIZE] = {0};
    cc_http_set_long(&r, CURLOPT_HTTPGET, 1L);
    cc_http_set_long(&r, CURLOPT_CONNECTTIMEOUT_MS, connect_ms);
    // No overall timeout: the stream lasts. A server that sends nothing, not even a keepalive,
    // for idle_ms after its last byte ends it (on_progress). (curl's low-speed limit, a byte a
    // second on average, dropped a live server whose keepalive is a few bytes every 15 s.)
    control->idle_ms = idle_ms < 1000 ? 1000 : idle_ms;
    control->last_byte_ms = now_ms();
    control->idled = 0;
    cc_http_set_function(&r, CURLOPT_WRITEFUNCTION, (void (*)(void))on_body);
    cc_http_set_pointer(&r, CURLOPT_WRITEDATA, &reader);
    cc_http_set_function(&r, CURLOPT_HEADERFUNCTION, (void (*)(void))on_header);
    cc_http_set_pointer(&r, CURLOPT_HEADERDATA, &seen);
    cc_http_set_function(&r, CURLOPT_OPENSOCKETFUNCTION, (void (*)(void))on_open);
    cc_http_set_pointer(&r, CURLOPT_OPENSOCKETDATA, control);
    cc_http_set_function(&r, CURLOPT_CLOSESOCKETFUNCTION, (void (*)(void))on_close);
    cc_http_set_pointer(&r, CURLOPT_CLOSESOCKETDATA, control);
    cc_http_set_long(&r, CURLOPT_NOPROGRESS, 0L);
    cc_http_set_function(&r, CURLOPT_XFERINFOFUNCTION, (void (*)(void))on_progress);
    cc_http_set_pointer(&r, CURLOPT_XFERINFODATA, control);
    cc_http_set_pointer(&r, CURLOPT_ERRORBUFFER, errbuf);

    int code = cc_http_perform(&r);
    out->status = cc_http_status(&r);
    int result = CC_HTTP_OK;
    pthread_mutex_lock(&control->lock);
    int stopped = control->stopped || control->interrupted;
    pthread_mutex_unlock(&control->lock);
    if (code != CURLE_OK && reader.wrong_status) {
        snprintf(out->error, sizeof out->error, "HTTP %ld", out->status);   // a whole exchange: the status says it
    } else if (code != CURLE_OK) {
        if (stopped) {
            result = CC_HTTP_NETWORK;
            snprintf(out->error, sizeof out->error, "stopped");
        } else if (code == CURLE_ABORTED_BY_CALLBACK && control->idled) {
            result = CC_HTTP_TIMEOUT;
            snprintf(out->error, sizeof out->error, "no byte from the server for %ld ms", control->idle_ms);
        } else if (reader.refused) {
            result = CC_HTTP_NETWORK;
            snprintf(out->error, sizeof out->error, "stopped by the reader");
        } else if (seen.too_large) {
            result = CC_HTTP_HEADER_TOO_LARGE;
            snprintf(out->error, sizeof out->error, "the response headers are larger than %d bytes", CC_HTTP_MAX_HEADER_BYTES);
        } else {
            result = code == CURLE_OPERATION_TIMEDOUT ? CC_HTTP_TIMEOUT : CC_HTTP_NETWORK;
            snprintf(out->error, sizeof out->error, "%s", errbuf[0] ? errbuf : cc_http_strerror(code));
        }
    }
    cc_http_end(&r);
    return result;
}
