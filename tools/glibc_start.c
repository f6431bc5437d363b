/*
 * The glibc floor of the contentcards program: it runs on glibc 2.28 and later (README,
 * "Dependencies"), like the library, wherever it is built.
 *
 * A program linked against glibc 2.34 or later needs __libc_start_main@GLIBC_2.34, for one
 * change: the program's start code (Scrt1.o) no longer passes an init function, and the
 * GLIBC_2.34 version runs the program's constructors itself; an older glibc would run none.
 * This definition (hidden: the start code in the same link binds to it) calls the
 * GLIBC_2.2.5 version, which every glibc has, and gives it the init function the older start
 * code gave: the program's _init and then its .init_array, what glibc 2.34's own call_init
 * runs for a program (the .preinit_array is the dynamic linker's, in every version). Every
 * other function the program calls has had its version since glibc 2.14 or earlier;
 * Tests/c/check_exports.sh (ctest's abi_exports) checks the program too.
 *
 * Built into the programs that ship (CMakeLists.txt); x86-64 glibc only (other CPUs have other
 * base versions).
 */
#include <limits.h> /* defines __GLIBC__ where the C library is glibc */
#if defined(__linux__) && defined(__GLIBC__) && defined(__x86_64__)

typedef int (*cc_main_fn)(int, char **, char **);
typedef void (*cc_init_fn)(int, char **, char **);

int cc_glibc_start_main(cc_main_fn program_main, int argc, char **argv, cc_init_fn init, void (*fini)(void),
                        void (*rtld_fini)(void), void *stack_end);
__asm__(".symver cc_glibc_start_main, __libc_start_main@GLIBC_2.2.5");

/* From the linker (its default script) and crti.o, both in every program. */
extern void _init(void);
extern cc_init_fn __init_array_start[] __attribute__((visibility("hidden")));
extern cc_init_fn __init_array_end[] __attribute__((visibility("hidden")));

static void cc_program_init(int argc, char **argv, char **envp) {
    _init();
    for (cc_init_fn *fn = __init_array_start; fn < __init_array_end; fn++) (*fn)(argc, argv, envp);
}

__attribute__((visibility("hidden"))) int __libc_start_main(cc_main_fn program_main, int argc,
                                                            char **argv, cc_init_fn init,
                                                            void (*fini)(void),
                                                            void (*rtld_fini)(void), void *stack_end) {
    return cc_glibc_start_main(program_main, argc, argv, init != 0 ? init : cc_program_init, fini,
                               rtld_fini, stack_end);
}
#else
typedef int cc_glibc_start_unused; /* ISO C: not an empty translation unit */
#endif
