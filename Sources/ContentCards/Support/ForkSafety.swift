import CSQLite
/// fork() while other threads use the library.
///
/// A child of fork() has only the forking thread; a lock another thread held at that moment
/// stays held forever in the child. SQLite's global mutexes (its allocator's, the unix VFS's)
/// were the ones children hung in. So:
///
/// - every SQLite call, and every write transaction as a whole, holds `guardLock` shared
///   (`ForkSafety.sqlite { }`), and the prepare handler takes it exclusively: no SQLite call
///   and no write transaction is in progress at the fork;
/// - the prepare handler also takes the library's process-wide locks registered with
///   `holdAcrossFork` (the handle tables, the scheduler), released in parent and child;
/// - the child handler bumps `generation`: a connection (and a C handle) from an earlier
///   generation was inherited, and is never used again (calls fail with a clear error);
/// - the child's first use of SQLite closes the inherited SQLite connections, without writing
///   to their stores, so that the child's own connections take their file locks for real
///   (ForkSafety+Connections.swift).
package enum ForkSafety {
    nonisolated(unsafe) private static let guardLock: UnsafeMutablePointer<pthread_rwlock_t> = {
        let p = UnsafeMutablePointer<pthread_rwlock_t>.allocate(capacity: 1)
        initGuard(p)
        return p
    }()

    private static func initGuard(_ p: UnsafeMutablePointer<pthread_rwlock_t>) {
        var attr = pthread_rwlockattr_t()
        pthread_rwlockattr_init(&attr)
        // Writer preference: a fork is not starved by threads that keep the store busy
        // (a thread takes it once however its sections nest, so this cannot deadlock).
        Platform.preferWriters(&attr)
        pthread_rwlock_init(p, &attr)
        pthread_rwlockattr_destroy(&attr)
    }

    /// The process's fork generation: 0 in the process that loaded the library, +1 in each
    /// child. Written only by the child handler (the child then has one thread).
    nonisolated(unsafe) public private(set) static var generation: UInt64 = 0

    private static let registryLock = Lock()
    /// The registered locks and child hooks, in fixed slots read by index: the handlers run
    /// in the child no code that the parent never ran. (Iterating a Swift array there asked
    /// the Swift runtime for its `Sequence` conformance the first time, under a runtime lock
    /// that a parent thread could hold at the fork: a child hung in it; ForkTests.) The
    /// library registers nine locks; past `slots`, a lock is not held across fork().
    private static let slots = 32
    nonisolated(unsafe) private static let locks = UnsafeMutablePointer<Unmanaged<Lock>>.allocate(capacity: slots)
    nonisolated(unsafe) private static let childHooks = UnsafeMutablePointer<() -> Void>.allocate(capacity: slots)
    nonisolated(unsafe) private static var lockCount = 0, hookCount = 0

    private static let installed: Void = {
        // SQLite's allocator statistics take a global mutex on every allocation; the library
        // does not use them. (Refused, harmlessly, when the process initialized SQLite already.)
        _ = cc_sqlite_disable_memstatus()
        pthread_atfork({ ForkSafety.prepare() }, { ForkSafety.parent() }, { ForkSafety.child() })
    }()

    /// Installs the fork handlers (once; called before the first SQLite use).
    package static func install() { _ = installed }

    /// Holds `lock` across fork() (taken before, released after, in parent and child); `child`
    /// runs in the child with the lock held.
    package static func holdAcrossFork(_ lock: Lock, child: (() -> Void)? = nil) {
        install()
        registryLock.withLock {
            guard lockCount < slots else { return }
            (locks + lockCount).initialize(to: .passRetained(lock))
            lockCount += 1
            if let child {
                (childHooks + hookCount).initialize(to: child)
                hookCount += 1
            }
        }
    }

    /// Runs `body` holding the registry's lock (ForkSafety+Connections.swift).
    static func withRegistry(_ body: () -> Void) { registryLock.withLock(body) }

    /// This thread's nesting of `sqlite` sections (only the outermost takes the guard).
    private static let depthKey: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key, nil)
        return key
    }()

    /// Runs SQLite calls (one, or a whole write transaction: a transaction open at the fork
    /// would leave the store's write lock taken, as far as the child's SQLite knows, and a
    /// child's new connection to the same store would find it "locked"); the fork handlers
    /// wait for it to end. Sections nest on a thread.
    @inline(__always)
    static func sqlite<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        let depth = Int(bitPattern: pthread_getspecific(depthKey))
        if depth == 0 { pthread_rwlock_rdlock(guardLock) }
        pthread_setspecific(depthKey, UnsafeRawPointer(bitPattern: depth + 1))
        defer {
            pthread_setspecific(depthKey, UnsafeRawPointer(bitPattern: depth))
            if depth == 0 { pthread_rwlock_unlock(guardLock) }
        }
        return try body()
    }

    /// The guard first, then the registry: a thread inside an SQLite section may register a
    /// lock (the first use of a lazily made one, such as the event ids' random pool inside a
    /// log call's transaction) and so wait for the registry. Taking the registry first, the
    /// fork held it while waiting for that thread to leave its section: both waited forever
    /// (seen in a host that forked while its threads logged; ForkTests).
    private static func prepare() {
        pthread_rwlock_wrlock(guardLock)
        registryLock.lock()
        var i = 0
        while i < lockCount { locks[i].takeUnretainedValue().lock(); i += 1 }
    }

    private static func parent() {
        var i = lockCount
        while i > 0 { i -= 1; locks[i].takeUnretainedValue().unlock() }
        registryLock.unlock()
        pthread_rwlock_unlock(guardLock)
    }

    private static func child() {
        generation &+= 1
        var i = 0
        while i < hookCount { childHooks[i](); i += 1 }
        i = lockCount
        while i > 0 { i -= 1; locks[i].takeUnretainedValue().unlock() }
        registryLock.unlock()
        // The rwlock is write-held by the parent's thread id; start it afresh (one thread here).
        initGuard(guardLock)
    }
}
