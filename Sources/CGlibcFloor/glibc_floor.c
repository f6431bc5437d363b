/*
 * The glibc floor of libcontentcards: the library built on any glibc (Debian 12 has 2.36) needs
 * no symbol version newer than GLIBC_2.28, so one build runs on glibc 2.28 and later (RHEL 8,
 * Debian 11, Ubuntu 20.04, Amazon Linux 2023), and the wheel is tagged manylinux_2_28.
 *
 * Linking against a newer glibc binds each function to its newest version. Most of what the
 * library calls has had one version since glibc 2.2.5; the rest got a new version without a new
 * behaviour, and the old version is still exported by every glibc since. This file gives the
 * link a hidden definition of each such name, which every reference in the library binds to
 * (the Swift runtime's, libstdc++'s, SQLite's and the unwinder's archives included, which no
 * `.symver` of ours could reach), and which calls the old version:
 *
 *  - pthread_*, sem_* and dl* (GLIBC_2.34; pthread_getattr_np, pthread_getaffinity_np and
 *    pthread_sigmask GLIBC_2.32): glibc 2.32-2.34 moved them from libpthread and libdl into
 *    libc under new versions; the functions are the same. A jump to the old version (GLIBC_2.2.5
 *    for most), which an older glibc has in libpthread.so.0 or libdl.so.2: the link names both
 *    as needed (CMakeLists.txt, the Makefile's `lib`), since glibc finds a versioned symbol in
 *    any loaded object that defines that version. (Some are only libdispatch's, which SwiftPM's
 *    link of the library pulls in more of; a name nothing calls costs nothing: the library's
 *    calls are bound at their first use.)
 *  - exp, exp2, log, log2, pow (GLIBC_2.29) and hypotf (GLIBC_2.35): the new versions only
 *    drop the SVID error-handling wrapper; the GLIBC_2.2.5 versions compute the same results
 *    (the same code since glibc 2.28) and set errno the same way.
 *  - stat, fstat, lstat and their 64 forms (GLIBC_2.33): before 2.33 they were inline calls
 *    of __xstat(_STAT_VER, ...) in libc_nonshared.a; the same calls here (x86-64: _STAT_VER 1,
 *    struct stat and struct stat64 are one layout).
 *  - __libc_single_threaded (GLIBC_2.32), which libstdc++ reads to skip atomic operations in a
 *    process without threads: defined here as 0, "there may be threads", always true of a
 *    process with this library in it (its workers), so libstdc++ always takes the atomic path.
 *  - _dl_find_object (GLIBC_2.35), which GCC's unwinder (linked in from libgcc_eh.a) calls to
 *    find a PC's unwind tables: the same answer from dl_iterate_phdr (GLIBC_2.2.5), what the
 *    unwinder itself did before glibc 2.35 (unwinding is rare here: a backtrace, a C++
 *    exception; the library's own code throws none).
 *
 * Everything here is hidden (and the export map keeps only cc_ names), so a host's own calls of
 * these functions never come here. It is compiled only for the shipped library (CC_GLIBC_FLOOR:
 * CMakeLists.txt, the Makefile's `lib`), not into SwiftPM's test and sanitizer builds, where a
 * strong definition of pthread_create or stat would hide the sanitizers' interceptors.
 * Tests/c/check_exports.sh (ctest's abi_exports) fails when a newer version comes in; the name
 * it prints then goes into the list below. x86-64 only: other CPUs have other base versions.
 */
#define _GNU_SOURCE
#include <limits.h> /* defines __GLIBC__ where the C library is glibc */
#if defined(CC_GLIBC_FLOOR) && defined(__linux__) && defined(__GLIBC__) && defined(__x86_64__)
#include <elf.h>
#include <link.h>
#include <stddef.h>
#include <stdint.h>

/* A hidden function `name` that jumps to `name@version`: arguments and the return address are
 * left as they are, so variadic functions (sem_open) and the caller-sensitive dlopen and dlsym
 * (which look at the return address to find the calling object) work unchanged. */
#define CC_GLIBC_OLD(name, version)                                                          \
    __asm__(".symver cc_glibc_old_" #name ", " #name "@" version "\n\t"                      \
            ".pushsection .text.cc_glibc_floor." #name ",\"ax\",@progbits\n\t"                \
            ".globl " #name "\n\t"                                                            \
            ".hidden " #name "\n\t"                                                           \
            ".type " #name ", @function\n\t"                                                  \
            ".p2align 4\n"                                                                    \
            #name ":\n\t"                                                                     \
            "jmp cc_glibc_old_" #name "@PLT\n\t"                                              \
            ".size " #name ", . - " #name "\n\t"                                              \
            ".popsection")

/* GLIBC_2.34 (libpthread.so.0 and libdl.so.2 before 2.34). */
CC_GLIBC_OLD(pthread_create, "GLIBC_2.2.5");
CC_GLIBC_OLD(pthread_detach, "GLIBC_2.2.5");
CC_GLIBC_OLD(pthread_join, "GLIBC_2.2.5");
CC_GLIBC_OLD(pthread_once, "GLIBC_2.2.5");
CC_GLIBC_OLD(pthread_key_create, "GLIBC_2.2.5");
CC_GLIBC_OLD(__pthread_key_create, "GLIBC_2.2.5");
CC_GLIBC_OLD(pthread_getspecific, "GLIBC_2.2.5");
CC_GLIBC_OLD(pthread_setspecific, "GLIBC_2.2.5");
CC_GLIBC_OLD(pthread_attr_getstack, "GLIBC_2.2.5");
CC_GLIBC_OLD(pthread_mutex_trylock, "GLIBC_2.2.5");
CC_GLIBC_OLD(pthread_mutexattr_init, "GLIBC_2.2.5");
CC_GLIBC_OLD(pthread_mutexattr_destroy, "GLIBC_2.2.5");
CC_GLIBC_OLD(pthread_mutexattr_settype, "GLIBC_2.2.5");
CC_GLIBC_OLD(pthread_condattr_setclock, "GLIBC_2.3.3");
CC_GLIBC_OLD(pthread_rwlock_init, "GLIBC_2.2.5");
CC_GLIBC_OLD(pthread_rwlock_rdlock, "GLIBC_2.2.5");
CC_GLIBC_OLD(pthread_rwlock_wrlock, "GLIBC_2.2.5");
CC_GLIBC_OLD(pthread_rwlock_unlock, "GLIBC_2.2.5");
CC_GLIBC_OLD(pthread_rwlockattr_init, "GLIBC_2.2.5");
CC_GLIBC_OLD(pthread_rwlockattr_destroy, "GLIBC_2.2.5");
CC_GLIBC_OLD(pthread_rwlockattr_setkind_np, "GLIBC_2.2.5");
CC_GLIBC_OLD(pthread_kill, "GLIBC_2.2.5");
CC_GLIBC_OLD(pthread_setname_np, "GLIBC_2.12");
CC_GLIBC_OLD(sem_open, "GLIBC_2.2.5");
CC_GLIBC_OLD(sem_init, "GLIBC_2.2.5");
CC_GLIBC_OLD(sem_destroy, "GLIBC_2.2.5");
CC_GLIBC_OLD(sem_wait, "GLIBC_2.2.5");
CC_GLIBC_OLD(sem_timedwait, "GLIBC_2.2.5");
CC_GLIBC_OLD(sem_post, "GLIBC_2.2.5");
CC_GLIBC_OLD(dlopen, "GLIBC_2.2.5");
CC_GLIBC_OLD(dlclose, "GLIBC_2.2.5");
CC_GLIBC_OLD(dlsym, "GLIBC_2.2.5");
CC_GLIBC_OLD(dlerror, "GLIBC_2.2.5");
CC_GLIBC_OLD(dladdr, "GLIBC_2.2.5");
/* GLIBC_2.32. */
CC_GLIBC_OLD(pthread_getattr_np, "GLIBC_2.2.5");
CC_GLIBC_OLD(pthread_getaffinity_np, "GLIBC_2.3.4");
CC_GLIBC_OLD(pthread_sigmask, "GLIBC_2.2.5");
/* GLIBC_2.29 and GLIBC_2.35 (libm). */
CC_GLIBC_OLD(exp, "GLIBC_2.2.5");
CC_GLIBC_OLD(exp2, "GLIBC_2.2.5");
CC_GLIBC_OLD(log, "GLIBC_2.2.5");
CC_GLIBC_OLD(log2, "GLIBC_2.2.5");
CC_GLIBC_OLD(pow, "GLIBC_2.2.5");
CC_GLIBC_OLD(hypotf, "GLIBC_2.2.5");

#define CC_HIDDEN __attribute__((visibility("hidden")))

/* GLIBC_2.33: the stat family, as glibc's headers compiled it before 2.33. The structures are
 * only passed through (no header: its declarations of these names are not needed). */
struct stat;
struct stat64;
enum { CC_STAT_VER = 1 }; /* _STAT_VER_LINUX, x86-64 */
int cc_glibc_xstat(int, const char *, struct stat *);
int cc_glibc_lxstat(int, const char *, struct stat *);
int cc_glibc_fxstat(int, int, struct stat *);
int cc_glibc_xstat64(int, const char *, struct stat64 *);
int cc_glibc_lxstat64(int, const char *, struct stat64 *);
int cc_glibc_fxstat64(int, int, struct stat64 *);
__asm__(".symver cc_glibc_xstat, __xstat@GLIBC_2.2.5");
__asm__(".symver cc_glibc_lxstat, __lxstat@GLIBC_2.2.5");
__asm__(".symver cc_glibc_fxstat, __fxstat@GLIBC_2.2.5");
__asm__(".symver cc_glibc_xstat64, __xstat64@GLIBC_2.2.5");
__asm__(".symver cc_glibc_lxstat64, __lxstat64@GLIBC_2.2.5");
__asm__(".symver cc_glibc_fxstat64, __fxstat64@GLIBC_2.2.5");

CC_HIDDEN int stat(const char *path, struct stat *buf) { return cc_glibc_xstat(CC_STAT_VER, path, buf); }
CC_HIDDEN int lstat(const char *path, struct stat *buf) { return cc_glibc_lxstat(CC_STAT_VER, path, buf); }
CC_HIDDEN int fstat(int fd, struct stat *buf) { return cc_glibc_fxstat(CC_STAT_VER, fd, buf); }
CC_HIDDEN int stat64(const char *path, struct stat64 *buf) { return cc_glibc_xstat64(CC_STAT_VER, path, buf); }
CC_HIDDEN int lstat64(const char *path, struct stat64 *buf) { return cc_glibc_lxstat64(CC_STAT_VER, path, buf); }
CC_HIDDEN int fstat64(int fd, struct stat64 *buf) { return cc_glibc_fxstat64(CC_STAT_VER, fd, buf); }

/* GLIBC_2.32: libstdc++'s "no other thread" flag, always false here (see above). */
CC_HIDDEN char __libc_single_threaded = 0;

/* GLIBC_2.35: the loaded object that holds `pc`, from dl_iterate_phdr. */
struct cc_find_object {
    uintptr_t pc;
    struct dl_find_object *result;
};

static int cc_find_object_visit(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    struct cc_find_object *find = data;
    uintptr_t start = UINTPTR_MAX, end = 0;
    const void *eh_frame = NULL;
    int holds = 0;
    for (ElfW(Half) i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *phdr = &info->dlpi_phdr[i];
        uintptr_t begin = info->dlpi_addr + phdr->p_vaddr;
        if (phdr->p_type == PT_LOAD) {
            if (begin < start) start = begin;
            if (begin + phdr->p_memsz > end) end = begin + phdr->p_memsz;
            if (find->pc >= begin && find->pc < begin + phdr->p_memsz) holds = 1;
        } else if (phdr->p_type == PT_GNU_EH_FRAME) {
            eh_frame = (const void *)begin;
        }
    }
    if (!holds) return 0;
    find->result->dlfo_flags = 0;
    find->result->dlfo_map_start = (void *)start;
    find->result->dlfo_map_end = (void *)end;
    find->result->dlfo_link_map = NULL; /* not read by the unwinder */
    find->result->dlfo_eh_frame = (void *)eh_frame;
    return 1;
}

CC_HIDDEN int _dl_find_object(void *pc, struct dl_find_object *result) {
    struct cc_find_object find = {(uintptr_t)pc, result};
    return dl_iterate_phdr(cc_find_object_visit, &find) == 1 ? 0 : -1;
}
#else
typedef int cc_glibc_floor_unused; /* ISO C: not an empty translation unit */
#endif /* CC_GLIBC_FLOOR && __linux__ && __GLIBC__ && __x86_64__ */
