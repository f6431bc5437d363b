/* Vector scans of the JSON reader's hot loops, as static inline functions: Swift imports them
 * through this module and inlines them where they are called, so each is the few vector
 * instructions it holds, not a call. Only what x86-64 has everywhere (SSE2, part of the
 * architecture's baseline): every x86-64 processor runs them, with no check at run time. On
 * other architectures the header defines nothing and the Swift callers keep their eight-bytes-
 * at-a-time loops (`#if arch(x86_64)` there). */
#ifndef CC_SIMD_H
#define CC_SIMD_H

#include <stdint.h>

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

#endif

#endif
