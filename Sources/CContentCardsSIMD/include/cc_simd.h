/* Vector scans of the JSON reader's hot loops, and one cache hint, as static inline functions:
 * Swift imports them through this module and inlines them where they are called, so each is
 * the few instructions it holds, not a call. The scans use only what x86-64 has everywhere
 * (SSE2, part of the architecture's baseline): every x86-64 processor runs them, with no check
 * at run time. On other architectures the header defines only the hint (a no-op where the
 * compiler has no prefetch), and the Swift callers of the scans keep their eight-bytes-at-a-
 * time loops (`#if arch(x86_64)` there). */
#ifndef CC_SIMD_H
#define CC_SIMD_H

#include <stdint.h>

/* Asks the processor to bring the cache line at `p` in, to be written soon: a hint, on every
 * architecture the compilers know (nothing where they do not), that changes no byte and cannot
 * fault. The decoder asks for the place of each card's id in the payload's id set as soon as
 * the id is read, so that the line has come by the time the card is built and the id put in
 * its place: with the payload's bytes and the cards' bodies streaming through the cache
 * between two inserts, the insert's first load missed nearly every time (`CardIDSet.prefetch`). */
static inline void cc_prefetch_for_write(const void *p) {
#if defined(__GNUC__) || defined(__clang__)
    __builtin_prefetch(p, 1, 3);
#else
    (void)p;
#endif
}

#if defined(__x86_64__) && defined(__SSE2__)
#include <emmintrin.h>

/* The 16 bytes at `p` (unaligned; all 16 must be readable) as two bit masks, bit i for byte i:
 * the low 32 bits mark the bytes that end a run of plain string text (a quote, a backslash, a
 * control character below 0x20, or DEL 0x7F), the high 32 bits the bytes with their high bit
 * set (not ASCII). The same bytes `Parser.endingMask` marks eight at a time. */
static inline uint64_t cc_simd_string_masks16(const uint8_t *p) {
    const __m128i v = _mm_loadu_si128((const __m128i *)(const void *)p);
    const __m128i quote = _mm_cmpeq_epi8(v, _mm_set1_epi8(0x22));
    const __m128i backslash = _mm_cmpeq_epi8(v, _mm_set1_epi8(0x5C));
    const __m128i del = _mm_cmpeq_epi8(v, _mm_set1_epi8(0x7F));
    /* Below 0x20, unsigned: the byte is its own minimum with 0x1F. */
    const __m128i control = _mm_cmpeq_epi8(_mm_min_epu8(v, _mm_set1_epi8(0x1F)), v);
    const __m128i ending = _mm_or_si128(_mm_or_si128(quote, backslash), _mm_or_si128(del, control));
    return (uint64_t)(uint32_t)_mm_movemask_epi8(ending) | ((uint64_t)(uint32_t)_mm_movemask_epi8(v) << 32);
}

/* Whether any of the 64 bytes at `p` (unaligned; all 64 must be readable) has its high bit set
 * (is not ASCII): four loads, three ORs and one mask, the loop `UTF8Validation.isValid` runs
 * over a payload's long ASCII runs (a word at a time it was 2.7% of a 10,000-card sync). */
static inline int cc_simd_any_high64(const uint8_t *p) {
    const __m128i a = _mm_loadu_si128((const __m128i *)(const void *)p);
    const __m128i b = _mm_loadu_si128((const __m128i *)(const void *)(p + 16));
    const __m128i c = _mm_loadu_si128((const __m128i *)(const void *)(p + 32));
    const __m128i d = _mm_loadu_si128((const __m128i *)(const void *)(p + 48));
    return _mm_movemask_epi8(_mm_or_si128(_mm_or_si128(a, b), _mm_or_si128(c, d)));
}

/* The high bits of the 64 bytes at `p` (unaligned; all 64 must be readable), bit i for byte i:
 * where `cc_simd_any_high64` found one, the first of them is the mask's lowest set bit. */
static inline uint64_t cc_simd_high_mask64(const uint8_t *p) {
    const uint64_t a = (uint32_t)_mm_movemask_epi8(_mm_loadu_si128((const __m128i *)(const void *)p));
    const uint64_t b = (uint32_t)_mm_movemask_epi8(_mm_loadu_si128((const __m128i *)(const void *)(p + 16)));
    const uint64_t c = (uint32_t)_mm_movemask_epi8(_mm_loadu_si128((const __m128i *)(const void *)(p + 32)));
    const uint64_t d = (uint32_t)_mm_movemask_epi8(_mm_loadu_si128((const __m128i *)(const void *)(p + 48)));
    return a | b << 16 | c << 32 | d << 48;
}

#endif

#endif
