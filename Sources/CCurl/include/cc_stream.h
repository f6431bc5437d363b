// cc_stream.h: one long-lived GET through the system's libcurl, its body handed over as it
// arrives (the hint stream, Server-Sent Events), stoppable at once from another thread.
//
// Internal to libcontentcards.so, like cc_http.h; the Swift HintStream is its only caller.
#ifndef CC_STREAM_H
#define CC_STREAM_H

#include <pthread.h>
#include <stddef.h>

#include "cc_http.h"

#ifdef __cplusplus
extern "C" {
#endif

/// Shared between the thread running cc_http_stream and the one stopping it. The socket is
/// recorded as curl opens it and forgotten (under the lock) before curl closes it, so a stop
/// shuts down the connection in use, never a descriptor reused by something else.
typedef struct cc_stream_control {
    pthread_mutex_t lock;
    int fd;          // the connection's socket, -1 when none
    int stopped;     // set by cc_stream_stop: the transfer ends at once, a new one does not start
    int interrupted; // set by cc_stream_interrupt until cc_stream_resume: as `stopped`, for now
    // Monotonic milliseconds of the last byte received, and how long the stream may go silent
    // (the transfer's own, set by cc_http_stream).
    long long last_byte_ms;
    long idle_ms;
    int idled;       // the transfer ended for its silence
} cc_stream_control;

CC_HTTP_INTERNAL void cc_stream_control_init(cc_stream_control *control);
CC_HTTP_INTERNAL void cc_stream_control_destroy(cc_stream_control *control);

/// Ends the transfer in progress now (its socket shut down) and any later one on `control`
/// before it starts. Any thread.
CC_HTTP_INTERNAL void cc_stream_stop(cc_stream_control *control);

/// Ends the transfer in progress now (its socket shut down), and any that starts before
/// cc_stream_resume: the reader reconnects (a user change). A transfer that is connecting,
/// or that has no socket recorded (curl tried two addresses at once), ends at its next
/// progress call (curl makes one about every second). Any thread.
CC_HTTP_INTERNAL void cc_stream_interrupt(cc_stream_control *control);

/// Lets transfers start again after cc_stream_interrupt (the reader is about to connect for
/// the user it read after the interrupt).
CC_HTTP_INTERNAL void cc_stream_resume(cc_stream_control *control);

/// Called with each piece of the body as it arrives; return 0 to go on, anything else to end
/// the transfer (CC_HTTP_NETWORK, `error` says "stopped by the reader").
typedef int (*cc_stream_data_fn)(void *context, const char *data, size_t len);

/// GETs `url` with `headers` and hands the body to `on_data` as it comes, until the server ends
/// it, the connection breaks, `idle_ms` pass without a byte (a server that accepted and went
/// silent, measured from the last byte received, so a keepalive of a few bytes now and then
/// keeps it: CC_HTTP_TIMEOUT), `on_data` asks to stop, or cc_stream_stop. `connect_ms` bounds the
/// connection. `out->status` is the response's status; only a 200's body is handed over (the
/// transfer of any other ends at its first byte, CC_HTTP_OK, `error` "HTTP N"; out->body stays
/// NULL); `out->retry_after` its Retry-After. Returns a CC_HTTP_* outcome: CC_HTTP_OK when the
/// server ended the body or answered another status.
CC_HTTP_INTERNAL int cc_http_stream(const char *url, const char *const *headers, size_t header_count,
                                    long connect_ms, long idle_ms, cc_stream_data_fn on_data, void *context,
                                    cc_stream_control *control, cc_http_response *out);

#ifdef __cplusplus
}
#endif
#endif
