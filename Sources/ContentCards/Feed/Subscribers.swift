/// The subscribers of one controller.
///
/// Callbacks run on the thread that made the change, after the controller's lock is released,
/// so a subscriber may call back into the library. Unsubscribing is immediate: once `remove`
/// returns, the subscriber is not called again.
///
/// Waiting and lock order, for every interleaving of subscribe,
/// unsubscribe, close and callbacks on any threads:
///
/// 1. Locks, outermost first: a controller's `lock`, its `feed.lock`, then the leaf locks (this
///    `lock`, the host transport slot, work queues, the scheduler, the handle tables, a
///    userdata's). A leaf lock is never held while taking another lock, and no lock at all is
///    held while a host callback (subscriber, transport, free_userdata) runs. The fork guard
///    (`ForkSafety`) stands apart: taken shared around SQLite calls and write transactions
///    (inside a controller's `lock`), never while waiting for anything else; only the fork
///    handler takes it exclusively, then the leaf locks registered with it (docs/CODE-MAP.md).
/// 2. The only unbounded wait is `remove` waiting for a call of the removed subscriber running
///    on another thread. It waits only when the calling thread is not inside any callback of
///    the library (`CallbackContext`): from inside a callback (a subscriber, a host transport,
///    of any controller) it returns at once; the subscriber is not called again, and its
///    `onRemove` (free_userdata) runs when its last running call returns. So a wait never
///    waits for a thread that is itself waiting: two subscribers unsubscribing each other from
///    two threads, or closing from inside callbacks, cannot deadlock.
/// 3. Updates caused from inside a callback are not delivered on that callback's stack: they
///    are queued on the thread and delivered when the outermost callback returns, at most
///    `maxCascade` of them; the rest go to this controller's notifier queue (a library
///    thread). So no callback pattern makes the library recurse.
final class Subscribers: @unchecked Sendable {
    final class Entry: @unchecked Sendable {
        let id: UInt64
        let callback: @Sendable (FeedUpdate) -> Void
        let onRemove: (@Sendable () -> Void)?
        var active = true
        /// Removed while a call to it was running on another thread: `onRemove` runs when the
        /// last such call returns.
        var removeWhenIdle = false
        /// Threads currently inside this subscriber's callback.
        var callers: [pthread_t] = []
        init(id: UInt64, callback: @escaping @Sendable (FeedUpdate) -> Void, onRemove: (@Sendable () -> Void)?) {
            self.id = id; self.callback = callback; self.onRemove = onRemove
        }
    }

    /// Updates delivered by one outermost notifier before the rest go to the notifier queue.
    static let maxCascade = 100

    private let lock = Lock()
    private let callEnded = Condition()
    private var entries: [Entry] = []
    private var nextID: UInt64 = 0
    /// Set by `removeAll` (close): no subscriber is added after it. Without it a subscribe
    /// that checked "open" just before close, and added just after close listed the
    /// subscribers, stayed in a list nobody empties: its `onRemove` (the host's
    /// free_userdata) never ran.
    private var closed = false
    /// Where a long cascade of updates continues (a library thread, started on demand).
    let later = WorkQueue()
    /// The fork generation it was made in. In a child of fork() its lock may be held by a
    /// parent's thread, and the calls `remove` would wait for are on threads that do not
    /// exist: there it adds, removes and calls nothing (Controller+Fork.swift).
    private let forkGeneration = ForkSafety.generation
    private var isInherited: Bool { forkGeneration != ForkSafety.generation }

    /// Adds a subscriber; `onRemove` runs exactly once when it is removed (or the controller
    /// closes). Nil once `removeAll` has run (the controller closed): nothing was added, and
    /// the caller runs `onRemove` itself.
    func add(_ callback: @escaping @Sendable (FeedUpdate) -> Void, onRemove: (@Sendable () -> Void)? = nil) -> UInt64? {
        if isInherited { return nil }
        return lock.withLock {
            if closed { return nil }
            nextID += 1
            entries.append(Entry(id: nextID, callback: callback, onRemove: onRemove))
            return nextID
        }
    }

    /// Removes a subscriber. Returns false when there is no such subscriber (already removed).
    /// Waits for a call to it running on another thread, unless this thread is inside a
    /// callback (then `onRemove` runs when that call returns).
    @discardableResult
    func remove(_ id: UInt64) -> Bool {
        if isInherited { return false }
        let mayWait = !CallbackContext.isInsideCallback
        let found: (entry: Entry, runNow: Bool)? = lock.withLock {
            guard let index = entries.firstIndex(where: { $0.id == id }) else { return nil }
            let entry = entries.remove(at: index)
            entry.active = false
            if mayWait {
                while !entry.callers.isEmpty { callEnded.wait(lock, until: nil) }
            }
            if entry.callers.isEmpty { return (entry, true) }
            entry.removeWhenIdle = true
            return (entry, false)
        }
        guard let found else { return false }
        if found.runNow { found.entry.onRemove?() }
        return true
    }

    /// Removes every subscriber, and refuses any added later (at close).
    func removeAll() {
        if isInherited { return }
        let ids = lock.withLock {
            closed = true
            return entries.map(\.id)
        }
        for id in ids { remove(id) }
    }

    var count: Int { isInherited ? 0 : lock.withLock { entries.count } }

    /// Tells every subscriber of `update`. Must be called with no controller lock held. From
    /// inside a callback the update is queued and delivered once the outermost callback of
    /// this thread has returned.
    func notify(_ update: FeedUpdate) {
        if isInherited { return }
        let context = CallbackContext.current
        if context.depth > 0 {
            context.pending.append((self, update))
            return
        }
        CallbackContext.run { deliver(update) }
    }

    /// Calls every active subscriber. Called inside `CallbackContext.run`.
    fileprivate func deliver(_ update: FeedUpdate) {
        let me = pthread_self()
        let current = lock.withLock { entries }
        for entry in current {
            let go: Bool = lock.withLock {
                guard entry.active else { return false }
                entry.callers.append(me)
                return true
            }
            guard go else { continue }
            entry.callback(update)
            let removeNow: Bool = lock.withLock {
                if let i = entry.callers.firstIndex(where: { pthread_equal($0, me) != 0 }) { entry.callers.remove(at: i) }
                callEnded.broadcast()
                if entry.removeWhenIdle && entry.callers.isEmpty {
                    entry.removeWhenIdle = false
                    return true
                }
                return false
            }
            if removeNow { entry.onRemove?() }
        }
    }
}

/// Per thread: how deep the thread is inside the library's callbacks (subscribers, host
/// transports), and the updates waiting for its outermost callback to return.
final class CallbackContext {
    var depth = 0
    var pending: [(Subscribers, FeedUpdate)] = []

    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        // (A call, not a body: the destructor's parameter is optional in glibc, not in Darwin.)
        pthread_key_create(&key) { releaseCallbackContext($0) }
        return key
    }()

    static var current: CallbackContext {
        if let raw = pthread_getspecific(key) {
            return Unmanaged<CallbackContext>.fromOpaque(raw).takeUnretainedValue()
        }
        let context = CallbackContext()
        pthread_setspecific(key, Unmanaged.passRetained(context).toOpaque())
        return context
    }

    static var isInsideCallback: Bool { current.depth > 0 }

    /// Runs `body`, which calls host code (a subscriber, a host transport), marking this thread
    /// as inside a callback. When the outermost one returns, the updates queued meanwhile are
    /// delivered here, at most `Subscribers.maxCascade`; the rest continue on a library thread.
    static func run<T>(_ body: () -> T) -> T {
        let context = current
        context.depth += 1
        let value = body()
        context.depth -= 1
        if context.depth == 0 && !context.pending.isEmpty { context.drain() }
        return value
    }

    private func drain() {
        var delivered = 0
        while !pending.isEmpty {
            if delivered >= Subscribers.maxCascade {
                let rest = pending
                pending = []
                for (target, update) in rest { target.later.async { target.notify(update) } }
                return
            }
            let (target, update) = pending.removeFirst()
            delivered += 1
            depth += 1
            target.deliver(update)
            depth -= 1
        }
    }
}

/// The destructor of `CallbackContext`'s thread-specific value.
private func releaseCallbackContext(_ raw: UnsafeMutableRawPointer?) {
    if let raw { Unmanaged<CallbackContext>.fromOpaque(raw).release() }
}
