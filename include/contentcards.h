/* SPDX-License-Identifier: Apache-2.0
 * Copyright 2026 The contentcards authors
 *
 * contentcards.h: the C API of libcontentcards, a Content Cards library.
 *
 * Content Cards are messages an application shows inside itself: a feed or inbox of cards
 * (classic, banner, captioned image, and invisible control cards for A/B tests), each with
 * extras whose "class_type" decides which of the application's own objects it becomes. This
 * library refreshes cards from a source, keeps them in a per-user store, serves the visible
 * feed and its badge counts, logs impressions, clicks and dismissals as durable events,
 * delivers those events, and tells subscribers what changed.
 *
 * This header is written by hand and is the single source of truth of the ABI.
 *
 * CONVENTIONS (every function follows them unless its comment says otherwise)
 *
 *   Status.      A function that can fail returns int: CC_OK (0) or a negative CC_E_* code.
 *                The codes are stable forever once published.
 *   Statuses.    Each function's "Errors:" lists every status it can return, also those these
 *                conventions imply: CC_E_INVALID_ARGUMENT for a NULL output or string, or invalid
 *                UTF-8; CC_E_INVALID_HANDLE; CC_E_STORAGE on a controller inherited across fork();
 *                CC_E_CLOSED when another thread closes the controller during the call; and
 *                CC_E_NO_MEMORY where the call allocates a result or a handle.
 *                bindings/python/tests/test_statuses.py checks the lists against real calls.
 *   Errors.      After a failure, cc_last_error_message() gives a message for people, for the
 *                calling thread. Every entry point clears it on entry, so read it right after
 *                the failing call.
 *   Output.      Output parameters come first. On failure they are set to NULL / 0 where the
 *                function documents it; a number output is otherwise left untouched, but a
 *                text, handle or pointer output (char **, const char **, cc_controller **)
 *                may be set to NULL (most are when the call begins): read outputs only after
 *                CC_OK, and never pass the only pointer to a buffer you still must free.
 *   Handles.     cc_controller, cc_snapshot and cc_config are opaque handles, never pointers to
 *                memory.
 *                A handle that was closed, never issued, or is of another kind gives
 *                CC_E_INVALID_HANDLE; using one is never undefined behaviour. Closing twice is
 *                harmless and returns CC_E_INVALID_HANDLE with a message saying so.
 *   Strings in.  const char * is UTF-8, NUL-terminated, and copied before the call returns:
 *                the library keeps no pointer to it. NULL where a string is required, and
 *                invalid UTF-8 anywhere, give CC_E_INVALID_ARGUMENT.
 *   Strings out. char ** outputs are allocated by the library; free each with cc_string_free()
 *                (never with free()). const char * results are owned by the library, and the
 *                function says how long they live.
 *   JSON.        Configuration, filters, cards, results and diagnostics cross the boundary as
 *                JSON. Cards use the long keys of the card model (docs/C-API.md, "JSON"),
 *                every field present, keys in a fixed order: the same card gives the same bytes
 *                on every call. A C program without a JSON parser reads cards through a
 *                snapshot (cc_controller_snapshot) and its field accessors.
 *   Filters.     A class-type filter is NULL, "" or "[]" for every card, or a JSON array of class
 *                types such as ["home_tile","coupon_code"]; matching ignores case and surrounding
 *                white space; "" in the array selects cards with no class type.
 *   Callbacks.   A callback comes with a void *userdata and a free_userdata function (may be
 *                NULL) that the library calls exactly once when it no longer needs userdata,
 *                also when the registration fails. No callback is ever called while the library
 *                holds a lock, so a callback may call any cc_ function. No call made from inside
 *                a callback waits for another callback (see cc_controller_unsubscribe), and no
 *                callback pattern makes the library recurse: an update caused from inside a
 *                callback is delivered after that callback returns (see Subscriptions).
 *   Threads.     Every function may be called from any thread at any time, on the same or on
 *                different handles. Each controller does its background work (async refresh,
 *                event delivery) on threads of its own, started when there is work and ending
 *                when there is none: one controller's blocked callback or slow server never
 *                delays another controller. A payload of 256 KiB and more is decoded by the
 *                calling thread and one of the library's together (half the cards each); the
 *                call returns after both, with what one thread would have decoded.
 *   Timeouts.    A function with a timeout returns by it, whatever the source or a host
 *                callback does (a FIFO, a stalled mount, a transport that never returns).
 *   fork().      A child process may use the library: new controllers work as in any process.
 *                A controller opened before the fork is unusable in the child: every call on it
 *                returns CC_E_STORAGE ("inherited across fork()"), except cc_controller_close,
 *                which releases the handle without touching its store (the parent keeps using
 *                it). The library holds its locks across fork() (pthread_atfork), so a child
 *                never hangs on a lock another thread held, including SQLite's; fork() itself
 *                waits only for the SQLite calls and write transactions in progress. The
 *                child's new controllers share a store with the parent as another process's
 *                would (the child's first use of SQLite, a new controller's or a kept feed's
 *                check, closes the child's copies of the parent's SQLite connections, writing
 *                nothing).
 *   Never trap.  No input makes the library abort the host process.
 */
#ifndef CONTENTCARDS_H
#define CONTENTCARDS_H

#include <stddef.h>
#include <stdint.h>

/* CC_API marks every function of the library: default visibility on GCC and Clang, so the
 * declarations stay usable in a program built with -fvisibility=hidden or inside
 * "#pragma GCC visibility push(hidden)". A program may define CC_API itself before including
 * this header. */
#ifndef CC_API
#  if defined(__GNUC__) || defined(__clang__)
#    define CC_API __attribute__((visibility("default")))
#  else
#    define CC_API
#  endif
#endif

/* CC_WARN_UNUSED_RESULT marks the functions whose result must be looked at: a status that says
 * whether the call did anything (open, refresh, apply, log_*, flush, snapshot, the getters...),
 * or a count. On GCC and Clang it is __attribute__((warn_unused_result)): a call that ignores
 * the result is warned about (-Wunused-result, on by default). Clang accepts a (void) cast as
 * "ignored on purpose"; GCC warns even then, so use the value (if (cc_...(...) != CC_OK) ...).
 * The closing functions (cc_controller_close, cc_snapshot_close, cc_config_close,
 * cc_controller_unsubscribe) and cc_set_log_handler are not marked: ignoring them is normal.
 * A program may define CC_WARN_UNUSED_RESULT itself before including this header (empty: no
 * warnings). */
#ifndef CC_WARN_UNUSED_RESULT
#  if defined(__GNUC__) || defined(__clang__)
#    define CC_WARN_UNUSED_RESULT __attribute__((warn_unused_result))
#  else
#    define CC_WARN_UNUSED_RESULT
#  endif
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------------------------
 * Versions
 * ------------------------------------------------------------------------------------------- */

/* The version of this header, in semantic versioning (CHANGELOG.md lists every release). It is
 * written here and nowhere else: CMake (the library's file name, the pkg-config and CMake
 * package versions), the Python package and cc_version() all take it from these four lines, and
 * Tests/repo/check_repo.py fails when anything in the repository disagrees with them. */
#define CC_VERSION_MAJOR 0
#define CC_VERSION_MINOR 1
#define CC_VERSION_PATCH 0
#define CC_VERSION_STRING "0.1.0"

/* The version as one number for #if: MAJOR * 10000 + MINOR * 100 + PATCH (1.2.3 is 10203). */
#define CC_VERSION_NUMBER (CC_VERSION_MAJOR * 10000 + CC_VERSION_MINOR * 100 + CC_VERSION_PATCH)

/* Whether this header is version major.minor.patch or later, at compile time:
 *   #if CC_VERSION_AT_LEAST(0, 2, 0)
 *   ... use something 0.2.0 added ...
 *   #endif
 * A program that must also run on an older library checks cc_version() at run time. */
#define CC_VERSION_AT_LEAST(major, minor, patch) \
    (CC_VERSION_NUMBER >= (major) * 10000 + (minor) * 100 + (patch))

/* The ABI version: the number in the SONAME (libcontentcards.so.1). It changes only when a
 * published function changes incompatibly; bindings should check cc_abi_version() at load. */
#define CC_ABI_VERSION 1

/* The version of the library actually loaded (its CC_VERSION_STRING). A static string: do not
 * free. */
CC_API const char *cc_version(void);

/* CC_ABI_VERSION of the library actually loaded. */
CC_API int cc_abi_version(void);

/* ---------------------------------------------------------------------------------------------
 * Status codes and errors
 * ------------------------------------------------------------------------------------------- */

#define CC_OK 0
#define CC_E_INVALID_ARGUMENT (-1)  /* NULL where a value is needed, invalid UTF-8, bad value   */
#define CC_E_INVALID_HANDLE (-2)    /* closed, never issued, or another kind of handle          */
#define CC_E_CONFIG (-3)            /* configuration JSON malformed, unknown key, bad value      */
#define CC_E_PARSE (-4)             /* a payload or filter that is not valid JSON or not of the
                                       expected shape, or a payload (response or source file)
                                       over maxPayloadBytes ("too large", naming the limit and
                                       the key); the stored cards are untouched                  */
#define CC_E_NOT_FOUND (-5)         /* no card with that id for the current user                 */
#define CC_E_REFUSED (-6)           /* a logging call that recorded nothing: no valid url for a
                                       click, not dismissible, already dismissed; a call that
                                       would wait for itself: a refresh or flush from inside the
                                       same controller's transport callback or token provider,
                                       wait_images from inside the image prefetch, forget_user
                                       from inside the events transport or the token provider
                                       while the user's batch is out                           */
#define CC_E_RATE_LIMITED (-7)      /* refresh refused by the rate limit (local or the server's) */
#define CC_E_NETWORK (-8)           /* connection failed, reset, truncated; a response header
                                       over 64 KiB (or one curl refuses)                         */
#define CC_E_TIMEOUT (-9)           /* the operation did not finish in time                      */
#define CC_E_SERVER (-10)           /* the server answered with an HTTP error status (also when
                                       its error body is over the size limit: the message keeps
                                       the status and a bounded, escaped excerpt)                */
#define CC_E_STORAGE (-11)          /* the store cannot be opened: damaged (corrupt), newer,
                                       read-only, another application's database, a symbolic
                                       link, or unsafe ownership/modes (the message says which
                                       and how to fix it, and the file is left as it was); or a
                                       write failed, also the event file's (cut back, retried); a
                                       controller inherited across fork(). After an open served
                                       by the kept feed (cc_controller_open), the open's errors
                                       come from the first call that opens the store         */
#define CC_E_NO_SOURCE (-12)        /* no source (refresh) or no event sink (flush) configured   */
#define CC_E_UNAVAILABLE (-13)      /* libcurl is not installed; the message names the fix       */
#define CC_E_WRONG_USER (-14)       /* a response or payload for another user, or a refresh's
                                       answer that crossed a change of user (also away and back)
                                       or a forget of the user by any controller or process:
                                       discarded                                                 */
#define CC_E_TRANSPORT (-15)        /* the host transport callback is missing or failed          */
#define CC_E_NO_MEMORY (-16)
#define CC_E_CLOSED (-17)           /* the controller was closed while this call was running (by
                                       another thread, or from inside a callback this call ran,
                                       e.g. its transport callback): the call had no effect      */
#define CC_E_SOURCE_FILE (-18)      /* a file source ("source": {"file": PATH}) that cannot be
                                       read: missing, unreadable, or not a regular file (a FIFO,
                                       a directory, a device): a local problem, not the network  */
#define CC_E_AUTH (-19)             /* no usable per-user token: the token provider failed, did
                                       not answer in time or gave a token that cannot be sent, or
                                       the server refused the token (401) again after the one
                                       retry with a new one; events stay pending                  */
#define CC_E_INTERNAL (-99)         /* a bug in the library; please report it                    */

/* The message of the last failing cc_ call on this thread, or "" when it succeeded. Owned by the
 * library, valid until the next cc_ call on this thread. Never NULL. Does not clear itself. */
CC_API const char *cc_last_error_message(void);

/* The status of the last cc_ call on this thread (CC_OK after a success). */
CC_API int cc_last_error_code(void);

/* Seconds the last failing cc_ call on this thread says to wait before trying again, or -1 when
 * it says nothing (and after a success). Set for CC_E_RATE_LIMITED (the server's 429 with
 * Retry-After, the server's earlier Retry-After still running, or the local rate limit) and
 * for CC_E_SERVER answers with Retry-After (e.g. 503). The value is the wait the library
 * enforces: a server's Retry-After is bounded to 3600 s, and the message's "retry after N s"
 * says the same (N rounded up). Retry-After is read as RFC 9110 says: whole seconds
 * (1*DIGIT) or an HTTP-date (IMF-fixdate, RFC 850, asctime); any other value is ignored. */
CC_API double cc_last_error_retry_after(void);

/* The name of a status code, e.g. "CC_E_NOT_FOUND"; "CC_E_UNKNOWN" for a code that is not one.
 * A static string: do not free. */
CC_API const char *cc_status_name(int status);

/* Frees a string the library returned through a char ** output. NULL is a no-op. */
CC_API void cc_string_free(char *string);

/* ---------------------------------------------------------------------------------------------
 * Building a configuration: no JSON written by hand
 * ------------------------------------------------------------------------------------------- */

/* A configuration being built for cc_controller_open, key by key: the library writes its JSON,
 * so a value that comes from outside the program (a path, a user id, an API key) may hold any
 * character, a quote, a backslash, a newline, and stays one string value: it can neither break
 * the JSON nor add keys (docs/C-API.md, "Building a configuration").
 *
 *   cc_config *config = NULL;
 *   char *json = NULL;
 *   int status = cc_config_new(&config);
 *   if (status == CC_OK) status = cc_config_set_string(config, "userId", user_id);
 *   if (status == CC_OK) status = cc_config_set_string(config, "source.file", path);
 *   if (status == CC_OK) status = cc_config_json(&json, config);
 *   cc_config_close(config);
 *   if (status == CC_OK) status = cc_controller_open(&controller, json);
 *   cc_string_free(json);
 *
 * A key is a configuration key of cc_controller_open, and a nested one is written with dots:
 * "source.file", "events.url", "images.maxBytes". Setting a key again replaces its value;
 * members keep the order they were first set in. The first part of a key is checked at once
 * (a typo is CC_E_CONFIG naming the near miss); the rest, and the values, are checked by
 * cc_controller_open as in any configuration. A cc_config is an opaque handle like
 * cc_controller: a closed or forged one is CC_E_INVALID_HANDLE. Any thread: the calls on one
 * configuration are serialised. */
typedef struct cc_config cc_config;

/* A new, empty configuration ({}: every default). Close it with cc_config_close. On failure
 * *out is set to NULL. Errors: CC_E_INVALID_ARGUMENT (out NULL), CC_E_NO_MEMORY (no handle
 * left). */
CC_API CC_WARN_UNUSED_RESULT int cc_config_new(cc_config **out);

/* Sets key to a string value (copied): "userId", "storagePath", "source.file", "source.url",
 * "source.apiKey"... The value is written as a JSON string, every quote, backslash and control
 * character escaped. It must be valid UTF-8: a file name in another encoding is refused, not
 * changed (JSON holds text only). Objects on the way that are not set yet are made
 * ("source.file" makes "source").
 * Errors: CC_E_INVALID_HANDLE, CC_E_INVALID_ARGUMENT (key or value NULL or not UTF-8, a key with
 * an empty part such as "source..file" or of more than 16 parts, a key below a part set to
 * something other than an object: "source.file" after "source" was set to a string),
 * CC_E_CONFIG (a first part that is not a configuration key), CC_E_NO_MEMORY. */
CC_API CC_WARN_UNUSED_RESULT int cc_config_set_string(cc_config *config, const char *key, const char *value);

/* Sets key to a number: "refreshTokens", "timeoutSeconds", "images.maxBytes"... A whole number
 * (below 2^53) is written without a fraction; any other the shortest text that reads back as
 * the same double. Errors: as cc_config_set_string, and a NaN or infinite value:
 * CC_E_INVALID_HANDLE, CC_E_INVALID_ARGUMENT, CC_E_CONFIG, CC_E_NO_MEMORY. */
CC_API CC_WARN_UNUSED_RESULT int cc_config_set_number(cc_config *config, const char *key, double value);

/* Sets key to true (value != 0) or false: "source.callback", "events.callback".
 * Errors: as cc_config_set_string: CC_E_INVALID_HANDLE, CC_E_INVALID_ARGUMENT, CC_E_CONFIG,
 * CC_E_NO_MEMORY. */
CC_API CC_WARN_UNUSED_RESULT int cc_config_set_bool(cc_config *config, const char *key, int value);

/* Appends a string (copied, UTF-8) to the array at key, made when not set yet:
 * "knownClassTypes". Errors: as cc_config_set_string, and a key set to something other than an
 * array: CC_E_INVALID_HANDLE, CC_E_INVALID_ARGUMENT, CC_E_CONFIG, CC_E_NO_MEMORY. */
CC_API CC_WARN_UNUSED_RESULT int cc_config_append_string(cc_config *config, const char *key, const char *value);

/* The configuration as compact JSON, for cc_controller_open (or to keep): keys in the order
 * they were first set. The configuration stays as it is (more keys may be set). Free *out_json
 * with cc_string_free; on failure it is set to NULL.
 * Errors: CC_E_INVALID_HANDLE, CC_E_INVALID_ARGUMENT (out_json NULL), CC_E_NO_MEMORY. */
CC_API CC_WARN_UNUSED_RESULT int cc_config_json(char **out_json, const cc_config *config);

/* Frees the configuration (a controller opened from its JSON does not need it). Errors:
 * CC_E_INVALID_HANDLE (also a second close, otherwise harmless). */
CC_API int cc_config_close(cc_config *config);

/* ---------------------------------------------------------------------------------------------
 * The controller
 * ------------------------------------------------------------------------------------------- */

typedef struct cc_controller cc_controller;

/* Opens a controller from a JSON configuration (NULL or "" for every default; cc_config_json
 * writes one from values set key by key, see "Building a configuration" above):
 *
 *   {"userId": "u-123",                       current user; default ""
 *    "storagePath": "/var/lib/app/cards",     directory (created 0700, the store file 0600);
 *                                             default: in memory
 *    "source": {"file": PATH} | {"url": BASE, "apiKey": KEY} | {"callback": true},
 *    "events": {"url": BASE, "apiKey": KEY} | {"file": PATH} | {"callback": true},
 *    "refreshTokens": 5, "refreshIntervalSeconds": 180,   refresh rate limit; 0 tokens = off
 *    "timeoutSeconds": 10, "knownClassTypes": ["home_tile"], "maxPayloadBytes": 16777216,
 *    "deviceId": "", "eventBatchSize": 100, "eventBatchBytes": 262144,
 *    "eventFlushIntervalSeconds": 30,          0 = deliver events only on cc_controller_flush_events
 *    "refreshOnOpenAfterSeconds": null,        at open and at a user change, a background refresh
 *                                             when the user's last sync is older (0: always);
 *                                             default: none
 *    "refreshPeriodSeconds": 0, "refreshPeriodJitter": 0.2,   a background refresh every
 *                                             period x (1 +- jitter) seconds; 0 = off
 *    "retryBaseSeconds": 1, "retryMaxSeconds": 300,   retries of automatic refreshes and event
 *                                             delivery: a random wait up to
 *                                             min(max, base x 2^(failures-1)), after any Retry-After
 *    "images": {"maxBytes": 52428800, "maxCount": 200, "maxImageBytes": 5242880}}
 *                                             the image cache (see Images); needs "storagePath";
 *                                             default: none, no image is fetched
 *
 * Relative paths ("storagePath", a "file" source or event sink) are resolved against the
 * working directory at open, once, as SQLite resolves a database name: changing directory
 * later moves nothing (CC_E_STORAGE when the working directory cannot be read at open).
 *
 * An unknown key is CC_E_CONFIG with a message naming it. So is an "apiKey" holding a control
 * character (CR, LF, NUL, ESC...: it goes into an HTTP header; tab is allowed), and a "url" that
 * is not http(s) or holds white space or control characters. Messages never show a URL's
 * user:password@ nor the values of query parameters named like key, token, secret or password.
 *
 * The store's trust boundary (CC_E_STORAGE, nothing written, the message says how to fix it):
 * the storage directory (symbolic links in its path are followed) must be owned by the
 * effective user and not writable by group or others, inside parents owned by that user or
 * root and not writable by others unless sticky (/tmp); contentcards.sqlite and its -wal, -shm
 * and -journal files are never followed through a symbolic link and must be regular files of
 * that user, not writable by group or others; the directory and the file must be writable
 * ("read-only"). A file that is another application's SQLite database (application_id not
 * contentcards' 0x43437264, or tables that are not contentcards') is refused; a store made by
 * version 0.1.0 (application_id 0, contentcards' tables) is adopted. A damaged store
 * (PRAGMA quick_check) is refused before anything is written; the check of every page is
 * skipped when the file is exactly as a clean close of this library left it (the stamp
 * contentcards.sqlite-checked beside it: inode, size, modification and change times), so it
 * runs at the first open after any change made to the file by other means. The -wal and -shm
 * files stay beside the store between opens (emptied at a clean close). Events left pending by an earlier run
 * are delivered in the background when an event sink is configured.
 * The kept feed: a clean close also leaves the visible feed beside the store
 * (contentcards.sqlite-feed). An open that finds it standing for the store file (the very file
 * it was written for, unchanged since, for this user and build, and no card expired since)
 * does not open SQLite: cc_controller_feed, cc_controller_feed_indexed and cc_controller_counts
 * without a filter are answered from it, byte for byte what the store gives, and the first
 * other call opens the store (docs/BEHAVIOUR.md, "The kept feed"). A CC_E_STORAGE that the
 * store's open would have returned is then returned by that call.
 * On success *out is the new handle; on failure *out is set to NULL.
 * Errors: CC_E_INVALID_ARGUMENT (out NULL, invalid UTF-8), CC_E_CONFIG, CC_E_STORAGE,
 * CC_E_NO_MEMORY (no handle left). */
CC_API CC_WARN_UNUSED_RESULT int cc_controller_open(cc_controller **out, const char *config_json);

/* Closes the controller: the store is closed and every subscriber is removed (their
 * free_userdata runs). A refresh or delivery running on another thread finishes without
 * effect. The handle is invalid afterwards. It may be called from inside any callback,
 * including this controller's transport callback: it returns CC_OK, and the call that is
 * running the callback (the refresh, the flush) returns CC_E_CLOSED. Like unsubscribe, it
 * waits for subscriber calls running on other threads, unless it is called from inside a
 * callback. On a controller inherited across fork() it only releases the handle (CC_OK).
 * Errors: CC_E_INVALID_HANDLE (also for a second close, which is otherwise harmless). */
CC_API int cc_controller_close(cc_controller *controller);

/* Refreshes from the configured source and waits at most timeout_seconds (<= 0: the
 * configuration's timeoutSeconds) for the outcome. A refresh already running is joined
 * instead of starting another. On success, if out_summary_json is not NULL, it receives
 *   {"added":N,"updated":N,"removed":N,"keptNewer":N,"fullSync":B,"notModified":B,
 *    "leftOut":[{"index":N,"id":S|null,"reason":S}],"counts":{"total":N,"unviewed":N,"unread":N}}
 * ("notModified" true: the server answered 304 to the stored validator, docs/WIRE.md
 * "Conditional sync"; nothing was merged or written and every other number is 0 but counts.)
 * On failure the cached cards stay as they were and *out_summary_json is set to NULL.
 * Subscribers are told of the outcome either way, on the calling thread.
 * It returns by its timeout whatever the source does: the source is read (the request sent,
 * the host transport callback called) on a library thread of its own while the calling
 * thread waits; at min(timeout_seconds, timeoutSeconds) the refresh ends with CC_E_TIMEOUT and
 * the fetch is abandoned: its late answer is discarded. While 4 abandoned fetches of this
 * controller are still blocked, a refresh fails at once with CC_E_TIMEOUT (no thread pile-up).
 * A file source must be a regular file: a FIFO, device, socket or directory is
 * CC_E_SOURCE_FILE at once, as is a missing or unreadable file. Called from inside this
 * controller's own transport callback or token provider it fails at once with CC_E_REFUSED
 * (the running refresh, or the request asking for the token, is waiting for that callback); closed meanwhile (e.g. from inside the transport callback),
 * CC_E_CLOSED. Joining a cc_controller_refresh_in_background whose request has not gone yet,
 * it starts that refresh on a thread of its own (with that refresh's own bound) and waits for
 * it to its own timeout: the library thread may be the caller itself (a completion that
 * refreshes). The request carries the
 * store's cursors (read again if another controller or process wrote since); an answer that
 * crosses a change of user (also away and back) or a forget of the user, by this or another
 * controller or process, is discarded: CC_E_WRONG_USER.
 * Errors: CC_E_INVALID_HANDLE, CC_E_INVALID_ARGUMENT (NaN timeout), CC_E_NO_SOURCE,
 * CC_E_RATE_LIMITED, CC_E_NETWORK, CC_E_SOURCE_FILE, CC_E_TIMEOUT, CC_E_SERVER, CC_E_PARSE, CC_E_WRONG_USER,
 * CC_E_UNAVAILABLE, CC_E_TRANSPORT, CC_E_AUTH (a token provider is set and gave no usable
 * token, or the server refused the new one too), CC_E_STORAGE, CC_E_REFUSED, CC_E_CLOSED,
 * CC_E_NO_MEMORY. */
CC_API CC_WARN_UNUSED_RESULT int cc_controller_refresh(char **out_summary_json, cc_controller *controller, double timeout_seconds);

/* Called once with the outcome of a refresh started by cc_controller_refresh_in_background:
 * status is CC_OK or the CC_E_* code the refresh failed with; result_json (valid only during
 * the call) is the summary of cc_controller_refresh on CC_OK, else the error
 *   {"code":N,"name":S,"message":S[,"retryAfter":F]}
 * It runs on the library thread that did the refresh, after the subscribers were told (or on
 * the calling thread, before cc_controller_refresh_in_background returns, when the refresh it
 * joined had just finished; or, when no thread can be started, on the thread of a
 * cc_controller_refresh that started it). It may call any cc_ function. */
typedef void (*cc_refresh_done_fn)(void *userdata, int status, const char *result_json);

/* Starts a refresh on a library thread (this controller's own) and returns at once: "refresh
 * in background" in every language (docs/API.md). The source is waited for at most
 * min(timeout_seconds, timeoutSeconds) (<= 0: timeoutSeconds). The outcome reaches the
 * subscribers, then fn (may be NULL: fire and forget). When a refresh is already running this
 * joins it: CC_OK, and fn gets that refresh's outcome. A caller that stops waiting (a binding's
 * cancelled await) simply lets fn run later; nothing blocks on it.
 * fn runs exactly once when this returns CC_OK, and never when it returns an error. free_userdata
 * (may be NULL) runs exactly once: right after fn, or right away when this call fails or fn
 * is NULL. Refusals known at once are returned (and told to subscribers, not to fn):
 * CC_E_NO_SOURCE, CC_E_RATE_LIMITED, CC_E_TIMEOUT (4 abandoned fetches still blocked).
 * Any thread. Errors: CC_E_INVALID_HANDLE, CC_E_INVALID_ARGUMENT (NaN timeout), CC_E_NO_SOURCE,
 * CC_E_RATE_LIMITED, CC_E_TIMEOUT, CC_E_STORAGE (inherited across fork(); a deferred open
 * that fails; the store unreadable when read again for another connection's changes),
 * CC_E_CLOSED. */
CC_API CC_WARN_UNUSED_RESULT int cc_controller_refresh_in_background(cc_controller *controller,
                                                                  double timeout_seconds,
                                                                  cc_refresh_done_fn fn, void *userdata,
                                                                  void (*free_userdata)(void *userdata));

/* The former name of cc_controller_refresh_in_background(controller, 0, NULL, NULL, NULL), kept
 * for ABI 1 ("async" names an awaitable call in docs/API.md; this is fire and forget).
 * Errors: CC_E_INVALID_HANDLE, CC_E_NO_SOURCE, CC_E_RATE_LIMITED, CC_E_TIMEOUT,
 * CC_E_STORAGE (as cc_controller_refresh_in_background), CC_E_CLOSED. */
CC_API CC_WARN_UNUSED_RESULT int cc_controller_refresh_async(cc_controller *controller);

/* Hands in cards the application got itself (a push message, its own networking): a sync
 * response object or a bare JSON array of server cards, merged exactly as a refresh. No rate
 * limit. Output as cc_controller_refresh. Errors: CC_E_INVALID_HANDLE, CC_E_INVALID_ARGUMENT
 * (payload_json NULL or invalid UTF-8),
 * CC_E_PARSE, CC_E_WRONG_USER, CC_E_STORAGE, CC_E_CLOSED, CC_E_NO_MEMORY. */
CC_API CC_WARN_UNUSED_RESULT int cc_controller_apply(char **out_summary_json, cc_controller *controller, const char *payload_json);

/* The visible feed (not dismissed, not expired now), in feed order (pinned first, then newest,
 * then id descending), as a JSON array of cards, filtered by class types (see Filters).
 * Control cards are included: log their impression, do not draw them. No network I/O.
 * Errors: CC_E_INVALID_HANDLE, CC_E_INVALID_ARGUMENT (out_json NULL, invalid UTF-8),
 * CC_E_PARSE (filter), CC_E_STORAGE, CC_E_CLOSED, CC_E_NO_MEMORY. */
CC_API CC_WARN_UNUSED_RESULT int cc_controller_feed(char **out_json, cc_controller *controller, const char *filter_json);

/* The same feed, the same text, with where each card of it begins: for a binding that makes
 * one object per card and parses a card only when it is read (Python's lazy cards), without
 * scanning the text for the cards' bounds (in Python that scan and a copy of each card were
 * more than the C call itself, docs/PERFORMANCE.md).
 *   *out_json     the text of cc_controller_feed; free it with cc_string_free, which frees
 *                 the offsets too.
 *   *out_length   its length in bytes (the terminating NUL not counted).
 *   *out_offsets  *out_count + 1 byte offsets into *out_json, ascending: offsets[i] is where
 *                 card i's object begins (its '{'), and offsets[*out_count] is *out_length.
 *                 Every card is followed by one byte, the ',' before the next or the closing
 *                 ']', so card i is the offsets[i + 1] - 1 - offsets[i] bytes at offsets[i].
 *                 The array lives in the allocation of *out_json: valid until it is freed.
 *   *out_count    the number of cards (0 for the empty feed "[]", whose one offset is 2).
 * On failure *out_json and *out_offsets are set to NULL and the counts to 0 (each output that
 * is not NULL itself). Any thread. Errors: those of cc_controller_feed, and
 * CC_E_INVALID_ARGUMENT for any output NULL. */
CC_API CC_WARN_UNUSED_RESULT int cc_controller_feed_indexed(char **out_json, size_t *out_length, const size_t **out_offsets,
                                                            size_t *out_count, cc_controller *controller,
                                                            const char *filter_json);

/* One stored card by id as JSON, visible or not (dismissed and expired cards come back with
 * their flags). Errors: CC_E_INVALID_HANDLE, CC_E_INVALID_ARGUMENT (out_json or card_id NULL,
 * invalid UTF-8),
 * CC_E_NOT_FOUND, CC_E_STORAGE, CC_E_CLOSED, CC_E_NO_MEMORY. */
CC_API CC_WARN_UNUSED_RESULT int cc_controller_card(char **out_json, cc_controller *controller, const char *card_id);

/* The badge counts of the visible feed, optionally for a filter: total counts control cards,
 * unviewed does not. Either output may be NULL. No network I/O. Visible means at the wall
 * clock of this call, also when it was set back past a card's expiry since the last count (the
 * card counts again).
 * Errors: CC_E_INVALID_HANDLE, CC_E_INVALID_ARGUMENT (invalid UTF-8), CC_E_PARSE (filter),
 * CC_E_STORAGE, CC_E_CLOSED. */
CC_API CC_WARN_UNUSED_RESULT int cc_controller_counts(int64_t *out_total, int64_t *out_unviewed, cc_controller *controller,
                                const char *filter_json);

/* The same counts, one number returned directly, for callers that poll a badge (a binding's
 * property, a UI timer): the total or the unviewed count (>= 0), or a negative CC_E_* status,
 * the one cc_controller_counts would return, with the thread's error set.
 *
 * Speed: with a NULL filter on a controller with an in-memory store (no storagePath), this and
 * cc_controller_counts answer from counts the library republishes on every change, without a
 * lock or an allocation (tens of nanoseconds). A file store is asked for changes made by other
 * processes first (a few microseconds).
 * Errors: returned negative: CC_E_INVALID_HANDLE, CC_E_INVALID_ARGUMENT (invalid UTF-8),
 * CC_E_PARSE (filter), CC_E_STORAGE, CC_E_CLOSED. */
CC_API CC_WARN_UNUSED_RESULT int64_t cc_controller_total_count(cc_controller *controller, const char *filter_json);
CC_API CC_WARN_UNUSED_RESULT int64_t cc_controller_unviewed_count(cc_controller *controller, const char *filter_json);

/* Logs an impression: marks the card viewed (once) and records an event, a control impression
 * for a control card. Logging again records another event. The state change and the event are
 * on disk before the call returns. Subscribers are told.
 * Threads: any. Logging calls made from several threads at the same time (this one, the click,
 * the dismissal, feed_displayed, cc_controller_log) may share one transaction, decided in the
 * order they were made; each returns once its own event is on disk, and a transaction that
 * fails fails every call in it with nothing recorded.
 * Errors: CC_E_INVALID_HANDLE, CC_E_INVALID_ARGUMENT (card_id NULL or invalid UTF-8),
 * CC_E_NOT_FOUND,
 * CC_E_STORAGE, CC_E_CLOSED. */
CC_API CC_WARN_UNUSED_RESULT int cc_controller_log_impression(cc_controller *controller, const char *card_id);

/* Logs a click: records an event and marks the card clicked, only when the card has a valid
 * url (a scheme and more; javascript: and data: are refused). Otherwise records nothing and
 * returns CC_E_REFUSED. Errors: as cc_controller_log_impression, plus CC_E_REFUSED:
 * CC_E_INVALID_HANDLE,
 * CC_E_INVALID_ARGUMENT, CC_E_NOT_FOUND, CC_E_REFUSED, CC_E_STORAGE, CC_E_CLOSED. */
CC_API CC_WARN_UNUSED_RESULT int cc_controller_log_click(cc_controller *controller, const char *card_id);

/* Dismisses a dismissible card that is not dismissed yet: it leaves the feed at once and stays
 * out after later refreshes until the server removes it. Otherwise records nothing and returns
 * CC_E_REFUSED. Errors: CC_E_INVALID_HANDLE, CC_E_INVALID_ARGUMENT, CC_E_NOT_FOUND, CC_E_REFUSED,
 * CC_E_STORAGE, CC_E_CLOSED. */
CC_API CC_WARN_UNUSED_RESULT int cc_controller_log_dismissal(cc_controller *controller, const char *card_id);

/* Records that the application showed a feed. Errors: CC_E_INVALID_HANDLE, CC_E_STORAGE,
 * CC_E_CLOSED. */
CC_API CC_WARN_UNUSED_RESULT int cc_controller_log_feed_displayed(cc_controller *controller);

/* Logs by action name, with the result the Swift and Python APIs return: action is
 * "impression", "click", "dismissal", "read", "unread" (card_id required) or "feed_displayed"
 * (card_id NULL). The rules are those of the four functions above and, for "read" and
 * "unread", of cc_controller_mark_read (refused, "already read" / "already unread", when the
 * card is in that state already). If out_result_json is not NULL it receives
 *   {"recorded":B,"reason":S|null,"eventId":S|null,"stateChanged":B}
 * on CC_OK (recorded) and also on CC_E_REFUSED (recorded false, reason the message), so a
 * refusal says why in the same fields as elsewhere; on any other error it is set to NULL.
 * A card that is stored but not visible (expired or dismissed) is logged like any other
 * (docs/BEHAVIOUR.md, "Logging"). Free *out_result_json with cc_string_free. Any thread.
 * Errors: CC_E_INVALID_HANDLE, CC_E_INVALID_ARGUMENT (action NULL or unknown, card_id NULL for
 * a card action or not NULL for "feed_displayed", invalid UTF-8), CC_E_NOT_FOUND,
 * CC_E_REFUSED, CC_E_STORAGE, CC_E_CLOSED, CC_E_NO_MEMORY. */
CC_API CC_WARN_UNUSED_RESULT int cc_controller_log(char **out_result_json, cc_controller *controller, const char *action,
                             const char *card_id);

/* ---------------------------------------------------------------------------------------------
 * Read state: an inbox's read / unread flag, apart from impressions (docs/BEHAVIOUR.md,
 * "Read state")
 * ------------------------------------------------------------------------------------------- */

/* Marks the card read (read != 0) or unread (read == 0). When that changes the card's state it
 * records a "read" or "unread" event, on disk with the new state before the call returns, and
 * tells the subscribers; when the card already is in that state it records nothing and
 * returns CC_OK. If out_changed is not NULL it receives 1 when the state changed, else 0.
 * Any stored card may be marked (dismissed, expired and control cards too). Read state is
 * sent to the event sink and merged from the server's "rd" (docs/WIRE.md), so another device
 * of the same user sees it; the viewed flag and the unviewed count are not touched. Any thread.
 * Errors: CC_E_INVALID_HANDLE, CC_E_INVALID_ARGUMENT (card_id NULL or not UTF-8),
 * CC_E_NOT_FOUND (no such card for the current user), CC_E_STORAGE, CC_E_CLOSED. */
CC_API CC_WARN_UNUSED_RESULT int cc_controller_mark_read(int *out_changed, cc_controller *controller, const char *card_id,
                                                         int read);

/* Marks every card of the visible feed that passes the filter (see Filters; NULL: every card)
 * read, recording one "read" event per card that was unread, all in one transaction; cards
 * already read are left as they are. If out_changed is not NULL it receives the number of
 * cards that changed (0 when none did). Subscribers are told once when any did. Any thread.
 * Errors: CC_E_INVALID_HANDLE, CC_E_INVALID_ARGUMENT, CC_E_PARSE (filter), CC_E_STORAGE,
 * CC_E_CLOSED. */
CC_API CC_WARN_UNUSED_RESULT int cc_controller_mark_all_read(int64_t *out_changed, cc_controller *controller,
                                                             const char *filter_json);

/* The unread count of the visible feed, optionally for a filter: cards not marked read,
 * control cards left out (the unread badge; cc_controller_unviewed_count is the unviewed
 * one). Returns the count (>= 0) or a negative CC_E_* status with the thread's error set, as
 * cc_controller_unviewed_count, and as fast: with a NULL filter on an in-memory store it is
 * answered from the same lock-free badge cell. No network I/O. Any thread.
 * Errors: CC_E_INVALID_HANDLE, CC_E_INVALID_ARGUMENT (invalid UTF-8), CC_E_PARSE (filter),
 * CC_E_STORAGE, CC_E_CLOSED. */
CC_API CC_WARN_UNUSED_RESULT int64_t cc_controller_unread_count(cc_controller *controller, const char *filter_json);

/* The three badge counts of the visible feed at one moment (the same state for all three, which
 * separate calls cannot promise while another thread changes the feed): total (control cards
 * included), unviewed and unread (control cards left out). Any output may be NULL. Fast as
 * cc_controller_counts (the badge cell for a NULL filter on an in-memory store). Any thread.
 * Errors: CC_E_INVALID_HANDLE, CC_E_INVALID_ARGUMENT (invalid UTF-8), CC_E_PARSE (filter),
 * CC_E_STORAGE, CC_E_CLOSED. */
CC_API CC_WARN_UNUSED_RESULT int cc_controller_all_counts(int64_t *out_total, int64_t *out_unviewed, int64_t *out_unread,
                                                          cc_controller *controller, const char *filter_json);

/* Switches to another user's cards, state and cursors at once; nothing of the previous user's
 * state is reset, and events logged before keep their user. A refresh still running for the
 * previous user is discarded. Subscribers are told (unless the user is the same).
 * Errors: CC_E_INVALID_HANDLE, CC_E_INVALID_ARGUMENT (user_id NULL or invalid UTF-8), CC_E_STORAGE,
 * CC_E_CLOSED. */
CC_API CC_WARN_UNUSED_RESULT int cc_controller_change_user(cc_controller *controller, const char *user_id);

/* The current user id. Free *out_user_id with cc_string_free. Errors: CC_E_INVALID_HANDLE,
 * CC_E_INVALID_ARGUMENT (out_user_id NULL),
 * CC_E_STORAGE (inherited across fork()), CC_E_CLOSED, CC_E_NO_MEMORY. */
CC_API CC_WARN_UNUSED_RESULT int cc_controller_user(char **out_user_id, cc_controller *controller);

/* Delivers every pending event now, waiting at most timeout_seconds (<= 0: the configuration's
 * timeoutSeconds). If out_result_json is not NULL it receives
 * {"delivered":N,"dropped":N,"pending":N}. On failure the undelivered events stay pending and are
 * retried in the background with backoff. Returns by the timeout whatever the sink does: each
 * batch goes to the sink on a library thread, and a sink that has not returned by then is
 * abandoned (CC_E_TIMEOUT; the batch stays pending and is sent again: at least once). Only
 * 400, 413, 422 (and 415 to a plain batch) drop a batch ("dropped"); 401, 403, 3xx, 404 and
 * every other refusal keep it pending (docs/WIRE.md, "Status codes"). With
 * "events": {"file": PATH}, a batch is appended whole or not at all: a failed or short write
 * (disk full, file size limit) cuts the file back to its length before (CC_E_STORAGE), so a
 * retry never writes an event twice nor leaves half a line; PATH must be a regular file (a
 * FIFO, a device or a socket: CC_E_STORAGE at once). A server's Retry-After (seconds
 * or an HTTP-date) is obeyed up to 3600 s; see cc_last_error_retry_after. Called from
 * inside this controller's own events transport callback or token provider it fails at once
 * with CC_E_REFUSED.
 * Errors: CC_E_INVALID_HANDLE, CC_E_INVALID_ARGUMENT (NaN timeout), CC_E_NO_SOURCE (no event
 * sink), CC_E_NETWORK, CC_E_TIMEOUT, CC_E_SERVER, CC_E_RATE_LIMITED, CC_E_UNAVAILABLE,
 * CC_E_TRANSPORT, CC_E_AUTH (a token provider is set and gave no usable token, or the endpoint
 * refused the new one too), CC_E_PARSE (the endpoint's answer over its 1 MiB bound),
 * CC_E_STORAGE (also a file sink that cannot write or sync the batch), CC_E_REFUSED,
 * CC_E_CLOSED, CC_E_NO_MEMORY. */
CC_API CC_WARN_UNUSED_RESULT int cc_controller_flush_events(char **out_result_json, cc_controller *controller, double timeout_seconds);

/* The number of events waiting in the store's outbox (every user's).
 * Errors: CC_E_INVALID_ARGUMENT (out_count NULL), CC_E_INVALID_HANDLE, CC_E_STORAGE,
 * CC_E_CLOSED. */
CC_API CC_WARN_UNUSED_RESULT int cc_controller_pending_events(int64_t *out_count, cc_controller *controller);

/* The events waiting in the store's outbox (every user's), oldest first, at most `limit` of
 * them (0: all), so the outbox can be inspected without opening the SQLite file:
 *   {"pending":N,"failedAttempts":N,
 *    "events":[{"id":S,"type":S,"cardId":S|null,"classType":S|null,"userId":S,"time":F,
 *               "attempts":N}]}
 * "pending" counts every event of the outbox, also those a limit left out. "type" is
 * "impression", "control_impression", "click", "dismissal", "feed_displayed", "read" or
 * "unread" (cc_controller_mark_read); "time" is unix seconds; "attempts" the failed delivery
 * attempts of that event in this process (the store keeps no count: 0 in a new process).
 * "failedAttempts" is the number of delivery attempts of this controller that failed in a row
 * since it last delivered; they concern the oldest events, which are always sent first. Free *out_json
 * with cc_string_free; on failure *out_json is set to NULL. Any thread.
 * Errors: CC_E_INVALID_ARGUMENT (out_json NULL), CC_E_INVALID_HANDLE, CC_E_STORAGE,
 * CC_E_CLOSED, CC_E_NO_MEMORY. */
CC_API CC_WARN_UNUSED_RESULT int cc_controller_pending_events_json(char **out_json, cc_controller *controller, size_t limit);

/* Diagnostics as JSON: user, last refresh (time, error, summary), last delivery, last error,
 * rate-limit state, cards left out of the last payload, counts, pending/delivered/dropped
 * events, subscriber count, "unreadableStoredCards": rows of the user's cards in the store
 * that do not decode (left out of the feed, counted here), and "lastSuccessfulRefreshAt": when
 * the user's cards last came from a successful refresh (unix seconds, null when never), kept in
 * the store so that it survives a reopen (a 304's time is not written: docs/BEHAVIOUR.md,
 * "Conditional refresh"), and "threadStartsRefused": thread starts the system refused in this
 * process (the background work waited and was retried, never dropped).
 * Errors: CC_E_INVALID_ARGUMENT (out_json NULL), CC_E_INVALID_HANDLE,
 * CC_E_STORAGE (inherited across fork()), CC_E_NO_MEMORY. A closed controller's diagnostics say
 * "closed":true. */
CC_API CC_WARN_UNUSED_RESULT int cc_controller_diagnostics(char **out_json, cc_controller *controller);

/* ---------------------------------------------------------------------------------------------
 * Images: an on-disk cache of the visible cards' images (docs/BEHAVIOUR.md, "Images")
 * ------------------------------------------------------------------------------------------- */

/* With "images" in the configuration, every successful refresh or apply queues a prefetch of the
 * images of the visible cards on a library thread of the controller, into a cache per user
 * beside the store; a card's cached file is its "imagePath" (card JSON, snapshots). This waits
 * until no prefetch is queued or running, at most timeout_seconds (<= 0: four times the
 * configuration's timeoutSeconds), and then, if out_json is not NULL, gives
 *   {"fetched":N,"failed":N,"cached":N,"bytes":N,"pending":N}
 * (images fetched and fetches failed by this controller since it opened; images and bytes in the
 * current user's cache; prefetches still queued or running: 0 unless the wait timed out, which is
 * not an error). A failed fetch never fails a refresh; it is counted here and logged. Free
 * *out_json with cc_string_free; on failure it is set to NULL. Any thread.
 * Called from inside the prefetch (its image transport callback, or a log handler it
 * called), it fails at once with CC_E_REFUSED: it would wait for itself.
 * Errors: CC_E_INVALID_HANDLE, CC_E_INVALID_ARGUMENT (NaN timeout), CC_E_NO_SOURCE (no "images"
 * in the configuration), CC_E_REFUSED, CC_E_STORAGE (inherited across fork()), CC_E_CLOSED,
 * CC_E_NO_MEMORY. */
CC_API CC_WARN_UNUSED_RESULT int cc_controller_wait_images(char **out_json, cc_controller *controller, double timeout_seconds);

/* ---------------------------------------------------------------------------------------------
 * Logging: what the library does, told to a handler of the application
 * ------------------------------------------------------------------------------------------- */

/* Levels of a log message (the numbers of Python's logging module). */
#define CC_LOG_DEBUG 10     /* each step: a refresh starting, the bytes fetched, a batch sent   */
#define CC_LOG_INFO 20      /* outcomes: a merge (added/updated/removed), events delivered, a
                               retry scheduled (with its wait), a logging call refused           */
#define CC_LOG_WARNING 30   /* a refresh refused (rate limit, no source) or failed, a card left
                               out of a payload (with the reason), a delivery that failed        */
#define CC_LOG_ERROR 40     /* events dropped for good (the sink refused them)                  */

/* A log handler: level is one of CC_LOG_*, message is UTF-8 text for people (no trailing
 * newline), valid only during the call. Messages never show credentials (URLs are redacted as
 * in error messages) and may change between versions. */
typedef void (*cc_log_fn)(void *userdata, int level, const char *message);

/* Sets the log handler of the process (one for every controller; the library is silent until
 * one is set): fn receives every message whose level is >= min_level. fn NULL removes the
 * handler (silence again). Replaces an earlier handler, whose free_userdata runs once no call
 * of it is running; free_userdata of this call (may be NULL) runs exactly once: when the
 * handler is replaced or removed, or right away when fn is NULL.
 * fn is never called while the library holds a lock. It runs on the thread that did the work:
 * the caller's, or a library thread for background refreshes, deliveries and retries, so it
 * may run on several threads at once. It may call any cc_ function (including this one):
 * what the library would log on that thread while fn runs is not delivered, so a handler
 * never recurses. It should return promptly: the work that logged waits for it.
 * Any thread. Returns CC_OK. */
CC_API int cc_set_log_handler(cc_log_fn fn, int min_level, void *userdata, void (*free_userdata)(void *userdata));

/* ---------------------------------------------------------------------------------------------
 * Subscriptions
 * ------------------------------------------------------------------------------------------- */

/* Called after every refresh (success or failure), apply, user change, logged impression,
 * click or dismissal, read-state change, and when a card expires, with update_json (valid only
 * during the call):
 *   {"reason":"refresh"|"cards_applied"|"user_changed"|"user_forgotten"|"impression"|"click"
 *             |"dismissal"|"read"|"unread"|"expired" ("current": cc_controller_current_update),
 *    "ok":B, "error":null|{"code":N,"name":S,"message":S}, "cardId":S|null,
 *    "counts":{"total":N,"unviewed":N,"unread":N},
 *    "sync":null|{...as cc_controller_refresh's summary}, "origin":"server"|"application"|"store",
 *    "sequence":N}
 * ("read" with "cardId" null: cc_controller_mark_all_read.) "expired": a card's expiry time
 * passed, and the counts are those after it (a badge drawn from updates stays true). "origin":
 * where the cards described came from: "server" for a refresh that succeeded, "application"
 * for an apply that succeeded, "store" for the rest. "sequence": where "counts" stand among the
 * controller's updates (>= 1, taken with "counts": a larger number holds counts no older;
 * increasing, with gaps; the calls of one group commit share their counts; "sync"'s own counts
 * are the merge's, taken before). Updates made on several threads at once can reach fn in
 * another order than their numbers: keep the counts of the largest "sequence" seen, and a
 * badge drawn from updates ends on the newest counts.
 * It runs on the thread that made the change: the caller's, or a library thread for
 * cc_controller_refresh_in_background, expiry and background work.
 * An update caused from inside a callback (fn refreshes, logs, applies; a transport callback
 * applies) is not delivered on that callback's stack: it is queued, and delivered on the same
 * thread as soon as the outermost callback running there returns, before the call that ran
 * it returns. After 100 such updates in a chain (a subscriber that refreshes or logs on every
 * update), the rest are delivered on a library thread of the controller, one after another,
 * until the chain ends or the controller is closed: never an unbounded recursion. */
typedef void (*cc_update_fn)(void *userdata, const char *update_json);

/* Subscribes. *out_subscription receives an id for cc_controller_unsubscribe (never 0).
 * free_userdata (may be NULL) runs exactly once: at unsubscribe, at close, or right away when
 * this call fails. Errors: CC_E_INVALID_HANDLE, CC_E_INVALID_ARGUMENT (out_subscription or fn
 * NULL),
 * CC_E_STORAGE (inherited across fork()), CC_E_CLOSED. */
CC_API CC_WARN_UNUSED_RESULT int cc_controller_subscribe(uint64_t *out_subscription, cc_controller *controller, cc_update_fn fn,
                                   void *userdata, void (*free_userdata)(void *userdata));

/* Unsubscribes at once: when this returns, fn is not called again.
 * Called outside any callback: if fn is running on another thread, this waits for it to
 * return, and free_userdata has run when this returns.
 * Called from inside any callback of the library (any subscriber, a transport callback, of
 * any controller): it never waits, so callbacks unsubscribing each other from two threads
 * cannot deadlock; free_userdata runs as soon as the last call of fn running anywhere
 * (including the one this is called from) returns.
 * Lock order and waits: the library never holds a lock while a callback runs, and this is
 * the only call that waits for a callback; see docs/RELIABILITY.md. Do not call it (or close)
 * outside a callback while holding a lock your fn takes.
 * Errors: CC_E_INVALID_HANDLE, CC_E_NOT_FOUND (no such subscription, e.g. already
 * unsubscribed), CC_E_STORAGE (inherited across fork()). */
CC_API int cc_controller_unsubscribe(cc_controller *controller, uint64_t subscription);

/* The state now as an update, in the JSON fn gets (reason "current", "ok" true, the counts of
 * the whole visible feed, "origin" "store"), numbered as the updates are: what a new subscriber
 * draws before the first change reaches it; an update whose "sequence" is smaller describes an
 * earlier state. *out_json receives a string to free with cc_string_free. Opens a store whose
 * open was deferred (the kept feed). No network I/O. Any thread.
 * Errors: CC_E_INVALID_ARGUMENT (out_json NULL), CC_E_INVALID_HANDLE, CC_E_STORAGE (the store;
 * inherited across fork()), CC_E_CLOSED, CC_E_NO_MEMORY. */
CC_API CC_WARN_UNUSED_RESULT int cc_controller_current_update(char **out_json, cc_controller *controller);

/* ---------------------------------------------------------------------------------------------
 * Host transport: the application does the HTTP itself
 * ------------------------------------------------------------------------------------------- */

/* One request the library needs sent. Every pointer is valid only during the callback. */
typedef struct cc_transport_request {
    const char *kind;             /* "sync", "events", or "image" (a GET of url, no body) */
    const char *url;              /* "/content_cards/sync" or "/events" for {"callback": true};
                                     an image's full http(s) URL */
    const char *const *headers;   /* header_count strings "Name: value" */
    size_t header_count;
    const char *body;             /* JSON, body_len bytes, NUL-terminated ("" for an image) */
    size_t body_len;
    double timeout_seconds;       /* the callback should give up after this long */
} cc_transport_request;

/* Where the callback puts the answer (opaque; valid only during the callback). */
typedef struct cc_transport_response cc_transport_response;

/* Sets the answer: the HTTP status, the body (copied; may be NULL when body_len is 0) and
 * Retry-After seconds (< 0 for none). An error status (not 2xx) whose body is over the
 * request's response limit (maxPayloadBytes, or the image limit) is taken with the first
 * 64 KiB of its body (at most the limit): its status and Retry-After count, as libcurl's
 * transport keeps them. Errors: CC_E_INVALID_ARGUMENT (response NULL or not the one being
 * answered, body NULL with body_len > 0, status not within 100...999, a 2xx body_len over the
 * limit: the request then fails with CC_E_PARSE, "too large", and nothing is copied). A
 * response handle is never given out twice: one
 * kept past its callback is refused, never taken for a later request's. An answer may be set
 * from another thread while the callback runs; one set after the callback returned is
 * refused. */
CC_API CC_WARN_UNUSED_RESULT int cc_transport_response_set(cc_transport_response *response, int status, const char *body,
                                     size_t body_len, double retry_after_seconds);

/* The transport. Return CC_OK after cc_transport_response_set; return anything else for a
 * failure to reach the server (the library treats it as a network error and keeps the cached
 * cards / the pending events), optionally with a message from cc_transport_response_fail.
 * Runs on the thread doing the request: for a sync, a library thread of its own (so the
 * refresh can return by its timeout even when the callback does not); for events, the caller
 * of cc_controller_flush_events, or a library thread for background delivery. A sync callback
 * that has not returned by request->timeout_seconds is abandoned: its answer is discarded.
 * An events callback is waited for: it should honour request->timeout_seconds. */
typedef int (*cc_transport_fn)(void *userdata, const cc_transport_request *request,
                               cc_transport_response *response);

/* Records why the transport failed (copied). Errors: CC_E_INVALID_ARGUMENT. */
CC_API CC_WARN_UNUSED_RESULT int cc_transport_response_fail(cc_transport_response *response, const char *message);

/* Sets the validator of a sync answer: the response's ETag header, as the server sent it
 * (copied; e.g. "\"v42\"" or "W/\"v42\""). The library stores it with the user's cards and
 * sends it back as an "If-None-Match: ..." line in request->headers of the next sync, which
 * the transport passes on; a server answering that request with 304 (not modified) is answered
 * with cc_transport_response_set(response, 304, NULL, 0, -1): the cached cards are kept, with
 * no merge and no write (docs/WIRE.md, "Conditional sync"). May be called before or after
 * cc_transport_response_set, inside the callback only; a validator that cannot go back in a
 * header as it is (over 255 bytes, a control character) is ignored. Ignored for events.
 * Compression is the transport's own business: requests carry no Accept-Encoding, and the body
 * handed to cc_transport_response_set is the decoded one.
 * Errors: CC_E_INVALID_ARGUMENT (response NULL or not the one being answered, etag NULL). */
CC_API CC_WARN_UNUSED_RESULT int cc_transport_response_set_etag(cc_transport_response *response, const char *etag);

/* Sets the host transport, used where the configuration says {"callback": true}; fn NULL
 * removes it. Replaces an earlier one (whose free_userdata runs once no request uses it).
 * free_userdata runs exactly once: when replaced, at close, or right away when this call fails.
 * Errors: CC_E_INVALID_HANDLE, CC_E_STORAGE (inherited across fork()), CC_E_CLOSED. */
CC_API CC_WARN_UNUSED_RESULT int cc_controller_set_transport(cc_controller *controller, cc_transport_fn fn, void *userdata,
                                       void (*free_userdata)(void *userdata));

/* ---------------------------------------------------------------------------------------------
 * Per-user tokens: Authorization: Bearer, from the application's provider
 * ------------------------------------------------------------------------------------------- */

/* Where a token provider puts its answer (opaque; valid only during the callback). */
typedef struct cc_token_response cc_token_response;

/* Sets the token (copied): 1 to 8192 bytes of printable ASCII (0x21-0x7E), sent as
 * "Authorization: Bearer TOKEN" on the user's requests; expires_at_unix_seconds is when it stops
 * working, when the provider knows it (<= 0 or NaN: unknown, then it is used until a server
 * answers 401). A token is asked for again 30 s before its expiry (or half its lifetime, when
 * shorter). Errors: CC_E_INVALID_ARGUMENT (response NULL or not the one being answered, token
 * NULL, empty, too long or holding another byte: the message says which byte at which offset,
 * never the token). */
CC_API CC_WARN_UNUSED_RESULT int cc_token_response_set(cc_token_response *response, const char *token,
                                                       double expires_at_unix_seconds);

/* Records why there is no token (copied; shown in the error of the request). Errors:
 * CC_E_INVALID_ARGUMENT. */
CC_API CC_WARN_UNUSED_RESULT int cc_token_response_fail(cc_token_response *response, const char *message);

/* The provider, asked for user_id's token: return CC_OK after cc_token_response_set; anything
 * else is a failure (the request is not sent: CC_E_AUTH, events stay pending). It is asked only
 * for the user a request is for (a sync of the current user, a batch of one user's events, the
 * hint stream), never with a token of one user sent for another; again before the expiry; and
 * once after a 401, when the request is sent again once with the new token.
 * Runs on a library thread of its own, never with a lock of the library held; one ask at a time
 * per user (requests that need the same user's token meanwhile wait for the same answer). It
 * gets at most 80% of the request's timeout: one that has not returned by then (for every
 * request waiting for it) is abandoned (CC_E_AUTH, its late answer discarded); while 4 are
 * abandoned and still running, requests fail at once with CC_E_AUTH. From inside it,
 * cc_controller_refresh, cc_controller_flush_events and a cc_controller_forget_user that
 * must wait for the user's delivery fail at once with CC_E_REFUSED (they would wait for this
 * call's answer). */
typedef int (*cc_token_fn)(void *userdata, const char *user_id, cc_token_response *response);

/* Sets the token provider (fn NULL removes it: requests go without Authorization). Replaces an
 * earlier one, whose tokens are forgotten. free_userdata runs exactly once: when replaced, at
 * close, or right away when this call fails; a call of fn still running then keeps userdata
 * until it returns (free_userdata then runs on that library thread; never, for a call that
 * never returns). Any thread.
 * Errors: CC_E_INVALID_HANDLE, CC_E_STORAGE (inherited across fork()), CC_E_CLOSED. */
CC_API CC_WARN_UNUSED_RESULT int cc_controller_set_token_provider(cc_controller *controller, cc_token_fn fn, void *userdata,
                                                                  void (*free_userdata)(void *userdata));

/* ---------------------------------------------------------------------------------------------
 * Hints: new cards without polling (docs/SYNC.md, "Hints")
 * ------------------------------------------------------------------------------------------- */

/* Hands in a hint that user_id's cards may have changed (a push notification, the
 * application's own socket); NULL: the current user. A hint carries no card data: the
 * controller answers it with its own conditional refresh in the background (a 304 when nothing
 * changed), coalesced: at most one refresh in flight and one queued, however many hints come.
 * A hint for another user than the current one is ignored (CC_OK; counted in the diagnostics'
 * "hints"). The configuration's "source": {"url": BASE, "hints": true} makes the controller
 * receive hints itself from BASE/content_cards/stream (docs/WIRE.md, "Hint stream").
 * Any thread, callbacks included; returns at once.
 * Errors: CC_E_INVALID_HANDLE, CC_E_INVALID_ARGUMENT (user_id not UTF-8), CC_E_NO_SOURCE,
 * CC_E_STORAGE (inherited across fork()), CC_E_CLOSED. */
CC_API CC_WARN_UNUSED_RESULT int cc_controller_hint(cc_controller *controller, const char *user_id);

/* ---------------------------------------------------------------------------------------------
 * Forgetting and exporting a user: logout, erasure and access requests
 * ------------------------------------------------------------------------------------------- */

#define CC_PENDING_FLUSH 0          /* cc_controller_forget_user: deliver the user's events first */
#define CC_PENDING_DISCARD 1        /* cc_controller_forget_user: remove them undelivered          */

/* Removes everything stored for user_id (NULL: the current user): cards, dismissals, read
 * state, sync state and ETag, pending events (pending CC_PENDING_FLUSH: delivered first, within
 * timeout_seconds (<= 0: the configuration's timeoutSeconds); CC_PENDING_DISCARD: removed
 * undelivered), and its image cache (each user's images are cached apart). No
 * recoverable bytes are left in the store file or its WAL: the deletion runs with SQLite's
 * secure_delete, the store is rewritten (VACUUM) and the WAL checkpointed and truncated.
 * Forgetting the current user leaves the controller open for the same user with nothing
 * stored (subscribers get an update; a refresh in flight is discarded).
 * If out_receipt_json is not NULL it receives what was removed:
 * {"user_id":U,"cards":N,"dismissals":N,"events_delivered":N,"events_discarded":N,
 *  "sync_state":B,"images":N,"wal_truncated":B}. wal_truncated is false when another connection
 * to the store (another process) kept the WAL from being truncated: its bytes are overwritten
 * at that connection's next checkpoint. Free it with cc_string_free.
 * With CC_PENDING_FLUSH, when the events cannot be delivered (no sink, a network error, the
 * timeout), nothing is removed and the error is the delivery's. A batch of the user's events
 * already out (a background delivery, or another thread's flush) is waited for first, within
 * the same timeout (past it: CC_E_TIMEOUT, nothing removed); another user's is not. Called
 * from inside this controller's events transport callback or token provider while the user's
 * batch is out, or with CC_PENDING_FLUSH from inside its token provider: CC_E_REFUSED.
 * Errors: CC_E_INVALID_HANDLE, CC_E_INVALID_ARGUMENT (pending not one of the two, NaN timeout,
 * user_id not UTF-8), CC_E_NO_SOURCE (CC_PENDING_FLUSH with events pending and no event sink),
 * the delivery's errors (CC_E_NETWORK, CC_E_TIMEOUT, CC_E_SERVER, CC_E_AUTH...), CC_E_REFUSED,
 * CC_E_STORAGE, CC_E_CLOSED, CC_E_NO_MEMORY. */
CC_API CC_WARN_UNUSED_RESULT int cc_controller_forget_user(char **out_receipt_json, cc_controller *controller,
                                                           const char *user_id, int pending, double timeout_seconds);

/* Everything stored for user_id (NULL: the current user) as one JSON document, the same in
 * every runtime (docs/schema/export.schema.json):
 * {"format":1,"user_id":U,"exported_at":T,"cards":[card JSON as cc_controller_card, with the
 *  local state, every card stored, visible or not],"dismissed":[ids],"sync":{"last_full_sync_at":N,
 *  "last_card_updated_at":N,"etag":S|null,"synced_at":T},"pending_events":[event JSON as sent],
 *  "images":[{"url":S,"bytes":N}]}. A user with nothing stored gives empty lists.
 * Free *out_json with cc_string_free; on failure it is set to NULL.
 * Errors: CC_E_INVALID_HANDLE, CC_E_INVALID_ARGUMENT (out_json NULL, user_id not UTF-8),
 * CC_E_STORAGE, CC_E_CLOSED, CC_E_NO_MEMORY. */
CC_API CC_WARN_UNUSED_RESULT int cc_controller_export_user(char **out_json, cc_controller *controller, const char *user_id);

/* ---------------------------------------------------------------------------------------------
 * Feed snapshots: every card field without a JSON parser
 * ------------------------------------------------------------------------------------------- */

typedef struct cc_snapshot cc_snapshot;
/* A snapshot never changes once taken: the functions that read it take const cc_snapshot *. */

/* Takes a snapshot of the visible feed (as cc_controller_feed, same order and filter). It does
 * not change when the controller does. Close it with cc_snapshot_close.
 * Errors: CC_E_INVALID_HANDLE, CC_E_INVALID_ARGUMENT (out NULL, invalid UTF-8), CC_E_PARSE
 * (filter),
 * CC_E_STORAGE, CC_E_CLOSED, CC_E_NO_MEMORY (no handle left). */
CC_API CC_WARN_UNUSED_RESULT int cc_controller_snapshot(cc_snapshot **out, cc_controller *controller, const char *filter_json);

/* The number of cards. Errors: CC_E_INVALID_HANDLE, CC_E_INVALID_ARGUMENT (out_count NULL). */
CC_API CC_WARN_UNUSED_RESULT int cc_snapshot_count(size_t *out_count, const cc_snapshot *snapshot);

/* A string field of card `index` by its name: "id", "type", "url", "classType", "image",
 * "imageAltText", "title", "cardDescription", "domain", "imagePath" (the local file of the
 * card's image in the image cache, as when the snapshot was taken; NULL when not cached, see
 * "images" in cc_controller_open). *out is NULL where the card has no such value (JSON null).
 * The string is owned by the snapshot and lives until it is closed.
 * Errors: CC_E_INVALID_HANDLE, CC_E_INVALID_ARGUMENT (out or field NULL, index out of range,
 * unknown field, a field that is not a string, a text that holds a NUL character, which a C
 * string cannot carry: read it from the feed's JSON, cc_controller_feed; the same holds for
 * cc_snapshot_extra and cc_snapshot_extra_at). */
CC_API CC_WARN_UNUSED_RESULT int cc_snapshot_string(const char **out, const cc_snapshot *snapshot, size_t index, const char *field);

/* An integer field: "created", "expiresAt" (unix seconds; -1 = never). Errors: as
 * cc_snapshot_string (a field that is not an integer): CC_E_INVALID_HANDLE,
 * CC_E_INVALID_ARGUMENT. */
CC_API CC_WARN_UNUSED_RESULT int cc_snapshot_int(int64_t *out, const cc_snapshot *snapshot, size_t index, const char *field);

/* A boolean field (1 or 0): "viewed", "clicked", "dismissed", "read", "dismissible", "pinned",
 * "isTest", "isControl", "openURLInWebView". Errors: as cc_snapshot_string (a field that is
 * not a boolean): CC_E_INVALID_HANDLE, CC_E_INVALID_ARGUMENT. */
CC_API CC_WARN_UNUSED_RESULT int cc_snapshot_bool(int *out, const cc_snapshot *snapshot, size_t index, const char *field);

/* "imageAspectRatio": *out_present is 0 when the card has none (then *out is 0); out_present
 * is optional (NULL: the caller reads 0 for a card without a ratio).
 * Errors: as cc_snapshot_string (a field other than imageAspectRatio):
 * CC_E_INVALID_HANDLE, CC_E_INVALID_ARGUMENT. */
CC_API CC_WARN_UNUSED_RESULT int cc_snapshot_double(double *out, int *out_present, const cc_snapshot *snapshot, size_t index,
                              const char *field);

/* An extras value by key; *out is NULL when the card has no such key. Owned by the snapshot.
 * Errors: CC_E_INVALID_HANDLE, CC_E_INVALID_ARGUMENT (out or key NULL, index out of range). */
CC_API CC_WARN_UNUSED_RESULT int cc_snapshot_extra(const char **out, const cc_snapshot *snapshot, size_t index, const char *key);

/* The number of extras of card `index`, and the key and value of extra `extra_index` (keys in
 * sorted order). Owned by the snapshot. Errors: CC_E_INVALID_HANDLE, CC_E_INVALID_ARGUMENT (an
 * output NULL, index or extra_index out
 * of range). */
CC_API CC_WARN_UNUSED_RESULT int cc_snapshot_extras_count(size_t *out_count, const cc_snapshot *snapshot, size_t index);
CC_API CC_WARN_UNUSED_RESULT int cc_snapshot_extra_at(const char **out_key, const char **out_value, const cc_snapshot *snapshot,
                                size_t index, size_t extra_index);

/* Frees the snapshot and every string it owns. Errors: CC_E_INVALID_HANDLE (also a second
 * close, otherwise harmless). */
CC_API int cc_snapshot_close(cc_snapshot *snapshot);

#ifdef __cplusplus
}
#endif
#endif /* CONTENTCARDS_H */
