/* What the core asks of the C library that Swift's Glibc module does not declare (it is
 * compiled without _GNU_SOURCE). */
#ifndef CC_PLATFORM_H
#define CC_PLATFORM_H

/* The path of the loaded file (the shared library, or the program it is linked into) that
 * holds `address`; NULL when the loader cannot tell. The string is the loader's: not freed. */
const char *cc_platform_image_path(const void *address);

#endif
