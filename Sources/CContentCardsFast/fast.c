/* See Sources/CContentCardsFast/include/cc_fast.h. */
#define _GNU_SOURCE
#include "cc_fast.h"
#include "contentcards.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- The thread's last error ---------------------------------------------------------------- */

struct cc_error_slot {
    int code;
    char *message;
    double retry_after;   /* meaningful only while code != 0 */
};

/* initial-exec: a direct %fs access; 24 bytes of the static TLS surplus glibc keeps for
 * libraries loaded with dlopen. */
static __thread struct cc_error_slot ccint_error_tls __attribute__((tls_model("initial-exec")));

static pthread_key_t cc_error_key;
static pthread_once_t cc_error_once = PTHREAD_ONCE_INIT;

/* Frees the message when the thread ends (registered the first time a thread stores one). */
static void cc_error_thread_end(void *unused) {
    (void)unused;
    free(ccint_error_tls.message);
    ccint_error_tls.message = NULL;
}

static void cc_error_key_create(void) { pthread_key_create(&cc_error_key, cc_error_thread_end); }

int ccint_error_code(void) { return ccint_error_tls.code; }

const char *ccint_error_message(void) { return ccint_error_tls.message ? ccint_error_tls.message : ""; }

double ccint_error_retry_after(void) { return ccint_error_tls.code != 0 ? ccint_error_tls.retry_after : -1; }

void ccint_error_set(int code, const char *message, double retry_after) {
    free(ccint_error_tls.message);
    ccint_error_tls.message = NULL;
    ccint_error_tls.code = code;
    ccint_error_tls.retry_after = retry_after;
    if (message) {
        pthread_once(&cc_error_once, cc_error_key_create);
        pthread_setspecific(cc_error_key, (void *)1);
        ccint_error_tls.message = strdup(message);
    }
}

static inline void cc_error_clear_inline(void) {
    if (ccint_error_tls.code == 0 && ccint_error_tls.message == NULL) return;
    free(ccint_error_tls.message);
    ccint_error_tls.message = NULL;
    ccint_error_tls.code = 0;
}

void ccint_error_clear(void) { cc_error_clear_inline(); }

/* ---- Badge cells ------------------------------------------------------------------------------ */

struct cc_cell {
    _Atomic uint64_t seq;          /* odd while a writer is in the middle */
    _Atomic uint64_t owner;        /* the generation of the handle it serves, + 1; 0: none */
    _Atomic int64_t total;
    _Atomic int64_t unviewed;
    _Atomic int64_t unread;
    _Atomic double valid_before;   /* < 0: no counts */
    _Atomic double valid_from;     /* exact from this time on (-inf: any time before valid_before) */
};

/* Handle slot indexes have 24 bits: 256 chunks of 65,536 cells, each chunk allocated when a
 * slot in it is first used and never freed (3.5 MiB a chunk: the first serves 65,536
 * controllers). */
#define CC_CHUNK_BITS 16
#define CC_CHUNKS 256
static struct cc_cell *_Atomic cc_chunks[CC_CHUNKS];
static pthread_mutex_t cc_chunks_lock = PTHREAD_MUTEX_INITIALIZER;

static struct cc_cell *cc_cell_at(uint32_t index, int create) {
    uint32_t chunk = index >> CC_CHUNK_BITS;
    if (chunk >= CC_CHUNKS) return NULL;
    struct cc_cell *cells = atomic_load_explicit(&cc_chunks[chunk], memory_order_acquire);
    if (cells || !create) return cells ? &cells[index & ((1u << CC_CHUNK_BITS) - 1)] : NULL;
    pthread_mutex_lock(&cc_chunks_lock);
    cells = atomic_load_explicit(&cc_chunks[chunk], memory_order_acquire);
    if (!cells) {
        cells = calloc((size_t)1 << CC_CHUNK_BITS, sizeof *cells);
        if (cells) atomic_store_explicit(&cc_chunks[chunk], cells, memory_order_release);
    }
    pthread_mutex_unlock(&cc_chunks_lock);
    return cells ? &cells[index & ((1u << CC_CHUNK_BITS) - 1)] : NULL;
}

/* Writers take cc_cells_lock: a closing controller's last publish may race with the attach of
 * the next controller in the same slot. Writes are rare (a feed change, a count that recounted);
 * reads take no lock. */
static pthread_mutex_t cc_cells_lock = PTHREAD_MUTEX_INITIALIZER;

/* fork(): both locks are leaves, held across the fork so that no thread of the parent holds
 * them in the child; and the child serves no count from a cell, since its handles are the
 * parent's (inherited controllers are refused, which the full path says). */
static _Atomic int cc_cells_forked;
static pthread_once_t cc_fork_once = PTHREAD_ONCE_INIT;

static void cc_fork_prepare(void) {
    pthread_mutex_lock(&cc_chunks_lock);
    pthread_mutex_lock(&cc_cells_lock);
}

static void cc_fork_parent(void) {
    pthread_mutex_unlock(&cc_cells_lock);
    pthread_mutex_unlock(&cc_chunks_lock);
}

static void cc_fork_child(void) {
    atomic_store(&cc_cells_forked, 1);
    pthread_mutex_unlock(&cc_cells_lock);
    pthread_mutex_unlock(&cc_chunks_lock);
}

static void cc_fork_install(void) { pthread_atfork(cc_fork_prepare, cc_fork_parent, cc_fork_child); }

static void cc_cell_write(struct cc_cell *cell, uint64_t owner, int64_t total, int64_t unviewed,
                          int64_t unread, double valid_from, double valid_before) {
    uint64_t seq = atomic_load_explicit(&cell->seq, memory_order_relaxed);
    atomic_store_explicit(&cell->seq, seq + 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    atomic_store_explicit(&cell->owner, owner, memory_order_relaxed);
    atomic_store_explicit(&cell->total, total, memory_order_relaxed);
    atomic_store_explicit(&cell->unviewed, unviewed, memory_order_relaxed);
    atomic_store_explicit(&cell->unread, unread, memory_order_relaxed);
    atomic_store_explicit(&cell->valid_before, valid_before, memory_order_relaxed);
    atomic_store_explicit(&cell->valid_from, valid_from, memory_order_relaxed);
    atomic_store_explicit(&cell->seq, seq + 2, memory_order_release);
}

void ccint_cell_attach(uint32_t index, uint32_t generation) {
    pthread_once(&cc_fork_once, cc_fork_install);
    struct cc_cell *cell = cc_cell_at(index, 1);
    if (!cell) return;
    pthread_mutex_lock(&cc_cells_lock);
    cc_cell_write(cell, (uint64_t)generation + 1, 0, 0, 0, -__builtin_inf(), -1);
    pthread_mutex_unlock(&cc_cells_lock);
}

void ccint_cell_detach(uint32_t index, uint32_t generation) {
    struct cc_cell *cell = cc_cell_at(index, 0);
    if (!cell) return;
    pthread_mutex_lock(&cc_cells_lock);
    /* Only the closing controller's own: the slot is free once its handle is removed, and a
     * controller opened meanwhile in the same slot may have attached already (clearing its
     * owner sent every later count of that controller down the slow path). */
    if (atomic_load_explicit(&cell->owner, memory_order_relaxed) == (uint64_t)generation + 1)
        cc_cell_write(cell, 0, 0, 0, 0, -__builtin_inf(), -1);
    pthread_mutex_unlock(&cc_cells_lock);
}

void ccint_cell_publish(uint32_t index, uint32_t generation, int64_t total, int64_t unviewed,
                          int64_t unread, double valid_from, double valid_before) {
    struct cc_cell *cell = cc_cell_at(index, 0);
    if (!cell) return;
    pthread_mutex_lock(&cc_cells_lock);
    if (atomic_load_explicit(&cell->owner, memory_order_relaxed) == (uint64_t)generation + 1)
        cc_cell_write(cell, (uint64_t)generation + 1, total, unviewed, unread, valid_from, valid_before);
    pthread_mutex_unlock(&cc_cells_lock);
}

/* ---- cc_controller_counts ----------------------------------------------------------------------- */

/* The whole call, in Swift (Sources/ContentCardsC/ControllerExports.swift). */
extern int ccint_controller_counts(int64_t *out_total, int64_t *out_unviewed, int64_t *out_unread,
                                   cc_controller *controller, const char *filter_json);

/* Handles: see CCINT_HANDLE_* in cc_fast.h. */

struct cc_counts { int64_t total, unviewed, unread; };

#ifdef CC_COUNT_CELL_HITS
static __thread uint64_t cc_cell_hits;
uint64_t ccint_cell_hits_on_this_thread(void) { return cc_cell_hits; }
#define CC_CELL_HIT() (cc_cell_hits++)
#else
uint64_t ccint_cell_hits_on_this_thread(void) { return 0; }
#define CC_CELL_HIT() ((void)0)
#endif

/* The unfiltered counts from the handle's badge cell; 0 when they cannot be served from it
 * (a filter, a file store, no counts yet, a card expired since or the clock set back before
 * an expiry they count, a closed or foreign handle). */
static int cc_counts_from_cell(struct cc_counts *out, cc_controller *controller) {
    uint64_t h = (uint64_t)(uintptr_t)controller;
    uint32_t slot = (uint32_t)(h & CCINT_HANDLE_INDEX_MASK);
    if (h >> CCINT_HANDLE_TAG_SHIFT != CCINT_CONTROLLER_TAG || slot == 0) return 0;
    if (atomic_load_explicit(&cc_cells_forked, memory_order_relaxed)) return 0;
    struct cc_cell *cell = cc_cell_at(slot - 1, 0);
    if (!cell) return 0;
    uint64_t seq = atomic_load_explicit(&cell->seq, memory_order_acquire);
    uint64_t owner = atomic_load_explicit(&cell->owner, memory_order_relaxed);
    int64_t total = atomic_load_explicit(&cell->total, memory_order_relaxed);
    int64_t unviewed = atomic_load_explicit(&cell->unviewed, memory_order_relaxed);
    int64_t unread = atomic_load_explicit(&cell->unread, memory_order_relaxed);
    double valid_before = atomic_load_explicit(&cell->valid_before, memory_order_relaxed);
    double valid_from = atomic_load_explicit(&cell->valid_from, memory_order_relaxed);
    atomic_thread_fence(memory_order_acquire);
    if ((seq & 1) != 0 || atomic_load_explicit(&cell->seq, memory_order_relaxed) != seq) return 0;
    if (owner != (uint64_t)(uint32_t)(h >> CCINT_HANDLE_INDEX_BITS) + 1 || valid_before < 0) return 0;
    /* The clock is read only when a card's expiry bounds the counts: a feed without expiries
     * is served without it. Before valid_from (the clock set back past the expiry of a card
     * the counts leave out) that card is visible again: the full path recounts. */
    if (valid_before != __builtin_inf()) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        double now = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
        if (now >= valid_before || now < valid_from) return 0;
    } else if (valid_from != -__builtin_inf()) {
        /* Only a lower bound: the coarse clock (the time at the last tick, read from memory,
         * never later than the precise one) is enough, and a fifth of the cost here: a feed
         * holding an expired card read the precise clock on every count (51 ns a count
         * instead of 14). Up to a tick after valid_from it sends a count down the full path. */
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME_COARSE, &ts);
        if ((double)ts.tv_sec + (double)ts.tv_nsec / 1e9 < valid_from) return 0;
    }
    cc_error_clear_inline();
    out->total = total;
    out->unviewed = unviewed;
    out->unread = unread;
    CC_CELL_HIT();
    return 1;
}

/* The counts from the cell when it can serve them, otherwise from the Swift layer; the status. */
static int cc_counts_get(struct cc_counts *out, cc_controller *controller, const char *filter_json) {
    if (filter_json == NULL && cc_counts_from_cell(out, controller)) return CC_OK;
    return ccint_controller_counts(&out->total, &out->unviewed, &out->unread, controller, filter_json);
}

int cc_controller_counts(int64_t *out_total, int64_t *out_unviewed, cc_controller *controller,
                         const char *filter_json) {
    struct cc_counts c;
    int status = cc_counts_get(&c, controller, filter_json);
    if (status != CC_OK) return status;
    if (out_total) *out_total = c.total;
    if (out_unviewed) *out_unviewed = c.unviewed;
    return CC_OK;
}

int cc_controller_all_counts(int64_t *out_total, int64_t *out_unviewed, int64_t *out_unread,
                             cc_controller *controller, const char *filter_json) {
    struct cc_counts c;
    int status = cc_counts_get(&c, controller, filter_json);
    if (status != CC_OK) return status;
    if (out_total) *out_total = c.total;
    if (out_unviewed) *out_unviewed = c.unviewed;
    if (out_unread) *out_unread = c.unread;
    return CC_OK;
}

int64_t cc_controller_total_count(cc_controller *controller, const char *filter_json) {
    struct cc_counts c;
    int status = cc_counts_get(&c, controller, filter_json);
    return status == CC_OK ? c.total : status;
}

int64_t cc_controller_unviewed_count(cc_controller *controller, const char *filter_json) {
    struct cc_counts c;
    int status = cc_counts_get(&c, controller, filter_json);
    return status == CC_OK ? c.unviewed : status;
}

int64_t cc_controller_unread_count(cc_controller *controller, const char *filter_json) {
    struct cc_counts c;
    int status = cc_counts_get(&c, controller, filter_json);
    return status == CC_OK ? c.unread : status;
}
