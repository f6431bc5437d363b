/* The module is its header (Sources/CContentCardsSIMD/include/cc_simd.h: static inline
 * functions Swift inlines). A C target of SwiftPM must have a source file: this one compiles
 * the header once, so a mistake in it shows in every build, not only where Swift imports it. */
#include "cc_simd.h"
