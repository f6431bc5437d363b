/* The module is its header (Sources/CContentCardsSIMD/include/cc_simd.h: static inline
 * functions Swift inlines). A C target of SwiftPM must have a source file: this one. (The CMake
 * build needs none: the Swift modules import the header through their include path.) */
#include "cc_simd.h"
