/* The C side of libcontentcards' hot paths, shared with the Swift layer.
 *
 * 1. The thread's last error (cc_last_error_message / cc_last_error_code) in C thread-local
 *    storage with the initial-exec model: clearing it on entry to every call costs a load and
 *    a compare instead of a pthread_getspecific and a Swift object.
 * 2. Badge cells: for each controller handle, the unfiltered counts of its published feed and
 *    the time they stay exact (the next card expiry), written by the Swift layer whenever the
 *    feed changes and read by cc_controller_counts without any lock (a sequence lock), so the
 *    badge an application polls costs tens of nanoseconds. Cells are never freed: a cell is
 *    reused by the handle slot of the same index, and a reader checks the handle's generation. */
#ifndef CC_FAST_H
#define CC_FAST_H

#include <stdint.h>

/* Handle values, written here once for both sides: a handle a C program holds is
 * tag << CCINT_HANDLE_TAG_SHIFT | generation << CCINT_HANDLE_INDEX_BITS | (index + 1).
 * HandleTable.swift makes and checks them; cc_controller_counts reads them in fast.c. */
#define CCINT_HANDLE_INDEX_BITS 24
#define CCINT_HANDLE_TAG_SHIFT 56
#define CCINT_HANDLE_INDEX_MASK ((1u << CCINT_HANDLE_INDEX_BITS) - 1u)
#define CCINT_CONTROLLER_TAG 0xC1u
#define CCINT_SNAPSHOT_TAG 0xC2u

/* The last error of this thread: its code (0 = CC_OK) and message (NULL = ""). */
int ccint_error_code(void);
const char *ccint_error_message(void);
/* Sets the thread's error; the message is copied (NULL or out of memory: no message).
 * retry_after: seconds the error says to wait, or -1. */
void ccint_error_set(int code, const char *message, double retry_after);
/* The wait of the thread's last error, -1 when none (or after a success). */
double ccint_error_retry_after(void);
void ccint_error_clear(void);

/* Attaches the cell of handle slot `index` to a handle of `generation`, with no counts yet. */
void ccint_cell_attach(uint32_t index, uint32_t generation);
/* Detaches it when the handle of `generation` still owns it (a handle opened in the slot since
 * keeps its own): readers of that handle take the slow path from now on. */
void ccint_cell_detach(uint32_t index, uint32_t generation);
/* Publishes the unfiltered counts of the handle's feed, exact from `valid_from` until
 * `valid_before` (unix seconds; -inf and +inf: unbounded on that side, until the feed changes).
 * A negative `valid_before` withdraws them. */
void ccint_cell_publish(uint32_t index, uint32_t generation, int64_t total, int64_t unviewed,
                          int64_t unread, double valid_from, double valid_before);

/* Counts the calling thread has had served from a cell, in a build with CC_COUNT_CELL_HITS
 * (SwiftPM's debug builds, which the Swift tests run; always 0 in others, where the count
 * would cost the fast path a thread-local write). The two paths give the same numbers, so
 * only this shows that the fast one is taken. */
uint64_t ccint_cell_hits_on_this_thread(void);

#endif
