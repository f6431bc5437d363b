/*
 * The Swift runtime's command-line stubs, for the runtime linked into libcontentcards
 * (CMakeLists.txt, -static-stdlib).
 *
 * The runtime's own definitions (CommandLine.cpp in libswiftCore.a) come with a static
 * constructor that finds argv, on Linux, by reading and parsing /proc/self/maps and walking
 * the stack up from `environ`: at every load of the library, in every host process, for
 * `CommandLine.arguments`, which the library never reads (cold start: the kernel
 * writing the map and sscanf reading it were a tenth of loading the library). These
 * definitions take their place in the link (an archive's member is linked only for a symbol
 * nothing defined first), so that object and its constructor never come in; glibc hands
 * argc and argv to a shared library's constructors, which is all these need. Hidden, like
 * arc4random in glibc_compat.c: never exported, never in the way of another Swift runtime a
 * host may load.
 */
/* Linux only: the static Swift runtime is linked into the library there; elsewhere the
 * system's Swift runtime keeps its own. */
#if defined(__linux__)
#include <stddef.h>

static char **argv_seen;
static int argc_seen;
static char **argv_override;
static int argc_override;

/* glibc calls the functions of .init_array with (argc, argv, envp). */
__attribute__((constructor)) static void cc_remember_argv(int argc, char **argv, char **envp) {
    (void)envp;
    if (argc > 0 && argv != NULL) {
        argc_seen = argc;
        argv_seen = argv;
    }
}

__attribute__((visibility("hidden"))) void _swift_stdlib_overrideUnsafeArgvArgc(char **argv, int argc) {
    argv_override = argv;
    argc_override = argc;
}

__attribute__((visibility("hidden"))) char **_swift_stdlib_getUnsafeArgvArgc(int *outArgLen) {
    static char *empty[] = {NULL};
    if (argv_override != NULL) {
        if (outArgLen != NULL) *outArgLen = argc_override;
        return argv_override;
    }
    if (argv_seen != NULL) {
        if (outArgLen != NULL) *outArgLen = argc_seen;
        return argv_seen;
    }
    if (outArgLen != NULL) *outArgLen = 0;
    return empty;
}
#endif /* __linux__ */
