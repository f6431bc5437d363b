/* What the core asks of the C library that Swift's Glibc module does not declare (it is
 * compiled without _GNU_SOURCE). */
#ifndef CC_PLATFORM_H
#define CC_PLATFORM_H

#include <stddef.h>

/* The GNU build id (the linker's NT_GNU_BUILD_ID note) of the loaded object (the shared
 * library, or the program it is linked into) that holds `address`: its bytes copied into
 * `out`, at most `capacity` of them. Returns the id's length, or 0 when the object has none,
 * it is longer than `capacity`, or the system cannot tell (no dl_iterate_phdr). */
size_t ccint_platform_build_id(const void *address, unsigned char *out, size_t capacity);

#endif
