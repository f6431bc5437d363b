// The platform layer: the one file of the core that knows which operating system it runs on.
//
// Everything else in the module writes plain POSIX (threads, locks, files, clocks) against the
// C library imported here once, and asks `Platform` for what differs between systems or is a
// Linux fast path. Two kinds of difference live here:
//
// - Spellings that differ between C libraries (a `stat`'s times, `pthread_t`'s type): one
//   implementation per system, nothing to choose.
// - Linux fast paths (memory advice and 2 MiB pages, condition variables on the monotonic
//   clock), each with a plain POSIX path beside it. Building with `-DCC_PORTABLE` (Swift:
//   `-Xswiftc -DCC_PORTABLE`; `make test-portable`) compiles the Linux paths out, so the POSIX
//   paths, the ones macOS and the BSDs take, are built and tested on Linux too.
//
// The C library is re-exported (`@_exported`) so that each file of the module does not repeat
// the choice; Foundation does the same for its clients.

#if canImport(Glibc)
@_exported import Glibc
#elseif canImport(Musl)
@_exported import Musl
#elseif canImport(Darwin)
@_exported import Darwin
#else
#error("contentcards: a POSIX C library (Glibc, Musl or Darwin) is needed")
#endif

enum Platform {
    /// Whether the Linux fast paths are compiled in (false on other systems, and with
    /// `CC_PORTABLE`).
    #if os(Linux) && !CC_PORTABLE
    static let linuxFastPaths = true
    #else
    static let linuxFastPaths = false
    #endif

    // MARK: Files

    /// A `stat`'s modification time, seconds and nanoseconds.
    static func modificationTime(_ st: stat) -> (seconds: Int, nanoseconds: Int) {
        #if canImport(Darwin)
        return (Int(st.st_mtimespec.tv_sec), Int(st.st_mtimespec.tv_nsec))
        #else
        return (Int(st.st_mtim.tv_sec), Int(st.st_mtim.tv_nsec))
        #endif
    }

    /// A `stat`'s status change time, seconds and nanoseconds.
    static func changeTime(_ st: stat) -> (seconds: Int, nanoseconds: Int) {
        #if canImport(Darwin)
        return (Int(st.st_ctimespec.tv_sec), Int(st.st_ctimespec.tv_nsec))
        #else
        return (Int(st.st_ctim.tv_sec), Int(st.st_ctim.tv_nsec))
        #endif
    }

    // MARK: Randomness

    /// Fills `buffer` with bytes from the system's secure generator: getentropy(3) (glibc 2.25,
    /// the getrandom system call) 256 bytes a call on Linux, where `SystemRandomNumberGenerator`
    /// makes a call for every 8 bytes (16 system calls an event id); elsewhere, and if
    /// getentropy fails, that generator.
    static func fillRandom(_ buffer: UnsafeMutableRawBufferPointer) {
        var filled = 0
        #if os(Linux) && !CC_PORTABLE
        while filled < buffer.count, let base = buffer.baseAddress {
            let n = min(256, buffer.count - filled)
            guard getentropy(base + filled, n) == 0 else { break }
            filled += n
        }
        #endif
        var g = SystemRandomNumberGenerator()
        while filled < buffer.count {
            buffer[filled] = UInt8(truncatingIfNeeded: g.next())
            filled += 1
        }
    }

    // MARK: Threads

    /// Starts a detached thread that runs `runThreadBody(context)` (Scheduler.swift): 0, or
    /// the error `pthread_create` returned. Detached from its creation (an attribute), not by
    /// `pthread_detach` after it: a thread that ended before that call was, for a moment, a
    /// joinable thread that had ended, and tools that follow threads kept it so (LeakSanitizer
    /// then took a live thread that later got its reused id for that one, did not scan it,
    /// and reported what the live thread held as leaked).
    static func startDetachedThread(_ context: UnsafeMutableRawPointer) -> Int32 {
        var attr = pthread_attr_t()
        guard pthread_attr_init(&attr) == 0 else { return EAGAIN }
        defer { pthread_attr_destroy(&attr) }
        pthread_attr_setdetachstate(&attr, Int32(PTHREAD_CREATE_DETACHED))
        #if canImport(Darwin)
        var thread: pthread_t?
        #else
        var thread = pthread_t()
        #endif
        return pthread_create(&thread, &attr, { runThreadBody($0) }, context)
    }

    /// Writer preference for a read-write lock (glibc's `pthread_rwlockattr_setkind_np`);
    /// elsewhere, and with CC_PORTABLE, the system's default (POSIX leaves the choice open).
    static func preferWriters(_ attr: UnsafeMutablePointer<pthread_rwlockattr_t>) {
        #if canImport(Glibc) && !CC_PORTABLE
        pthread_rwlockattr_setkind_np(attr, Int32(PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP))
        #endif
    }

    // MARK: Memory advice (Linux only: elsewhere, and with CC_PORTABLE, nothing)

    /// `madvise(MADV_HUGEPAGE)` on whole 2 MiB pages (see `HugePages`).
    static func adviseHugePages(_ start: UnsafeMutableRawPointer, _ length: Int) {
        #if os(Linux) && !CC_PORTABLE
        _ = madvise(start, length, 14 /* MADV_HUGEPAGE */)
        #endif
    }

    /// `madvise(MADV_POPULATE_WRITE)` (Linux 5.14): faults the pages in at once, changing no
    /// byte (see `ByteBuffer.prefault`).
    static func populateForWriting(_ start: UnsafeMutableRawPointer, _ length: Int) {
        #if os(Linux) && !CC_PORTABLE
        _ = madvise(start, length, 23 /* MADV_POPULATE_WRITE */)
        #endif
    }

    // MARK: Condition variables

    /// Whether condition variables wait on the monotonic clock (`pthread_condattr_setclock`,
    /// Linux). Elsewhere (macOS has no `pthread_condattr_setclock`) they wait on the real-time
    /// clock, and `Condition` converts each monotonic deadline: a wall-clock jump then ends a
    /// wait early or late by the jump, and every caller re-checks its deadline on the
    /// monotonic clock after a wake-up, so a wait is never cut short; at worst a jump back
    /// makes it longer, which the callers bound as they bound spurious wake-ups.
    #if os(Linux) && !CC_PORTABLE
    static let conditionsUseMonotonicClock = true
    #else
    static let conditionsUseMonotonicClock = false
    #endif
}
