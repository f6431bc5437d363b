/*
 * arc4random for the C++ standard library linked into libcontentcards (CMakeLists.txt).
 *
 * libstdc++.a's std::random_device calls arc4random, a glibc 2.36 function: linked as it is,
 * it raised the library's glibc floor from 2.35 (Ubuntu 22.04) to 2.36, for a function the
 * library never calls (nothing in it uses std::random_device; the object comes in with the
 * string instantiations the Swift runtime needs). This definition takes its place in the link.
 * It is hidden: the export map and the visibility keep it out of the library's symbols, so a
 * host's own arc4random is never replaced.
 *
 * 32 random bits from getrandom(2) (glibc 2.25), retried when interrupted; from /dev/urandom
 * when the kernel lacks getrandom; and, should both fail, from the clock, rather than stopping
 * the host's process (the library never traps).
 */
/* glibc on Linux only: elsewhere the C library has arc4random of its own (macOS, the BSDs).
 * __GLIBC__ comes from a header (features.h, which limits.h includes): tested before any, it
 * would be undefined, arc4random compiled out, and the library would need GLIBC_2.36. */
#define _GNU_SOURCE
#include <limits.h>
#if defined(__linux__) && defined(__GLIBC__)
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

__attribute__((visibility("hidden"))) uint32_t arc4random(void) {
    uint32_t value = 0;
    for (;;) {
        ssize_t n = getrandom(&value, sizeof value, 0);
        if (n == (ssize_t)sizeof value) return value;
        if (n < 0 && errno == EINTR) continue;
        break;
    }
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        ssize_t n = read(fd, &value, sizeof value);
        close(fd);
        if (n == (ssize_t)sizeof value) return value;
    }
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint32_t)t.tv_nsec ^ (uint32_t)t.tv_sec * 2654435761u ^ (uint32_t)(uintptr_t)&t;
}
#endif /* __linux__ && __GLIBC__ */
