#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The subscribers of one controller.
///
/// Callbacks run on the thread that made the change, after the controller's lock is released,
/// so a subscriber may call back into the library. Unsubscribing is immediate: once
/// `remove` returns, the subscriber is not called again; if a call to it is running on
/// another thread, `remove` waits for that call to end (from inside the subscriber's own call it
/// does not wait).
final class Subscribers: @unchecked Sendable {
    final class Entry: @unchecked Sendable {
        let id: UInt64
        let callback: @Sendable (FeedUpdate) -> Void
        let onRemove: (@Sendable () -> Void)?
        var active = true
        /// Threads currently inside this subscriber's callback.
        var callers: [pthread_t] = []
        init(id: UInt64, callback: @escaping @Sendable (FeedUpdate) -> Void, onRemove: (@Sendable () -> Void)?) {
            self.id = id; self.callback = callback; self.onRemove = onRemove
        }
    }

    private let lock = Lock()
    private let callEnded = Condition()
    private var entries: [Entry] = []
    private var nextID: UInt64 = 0

    /// Adds a subscriber; `onRemove` runs exactly once when it is removed (or the controller closes).
    func add(_ callback: @escaping @Sendable (FeedUpdate) -> Void, onRemove: (@Sendable () -> Void)? = nil) -> UInt64 {
        lock.withLock {
            nextID += 1
            entries.append(Entry(id: nextID, callback: callback, onRemove: onRemove))
            return nextID
        }
    }

    /// Removes a subscriber. Returns false when there is no such subscriber (already removed).
    @discardableResult
    func remove(_ id: UInt64) -> Bool {
        let me = pthread_self()
        let entry: Entry? = lock.withLock {
            guard let index = entries.firstIndex(where: { $0.id == id }) else { return nil }
            let entry = entries.remove(at: index)
            entry.active = false
            while entry.callers.contains(where: { pthread_equal($0, me) == 0 }) {
                callEnded.wait(lock, until: nil)
            }
            return entry
        }
        guard let entry else { return false }
        entry.onRemove?()
        return true
    }

    /// Removes every subscriber (at close).
    func removeAll() {
        let ids = lock.withLock { entries.map(\.id) }
        for id in ids { remove(id) }
    }

    var count: Int { lock.withLock { entries.count } }

    /// Calls every subscriber with `update`. Must be called with no controller lock held.
    func notify(_ update: FeedUpdate) {
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
            lock.withLock {
                if let i = entry.callers.firstIndex(where: { pthread_equal($0, me) != 0 }) { entry.callers.remove(at: i) }
                callEnded.broadcast()
            }
        }
    }
}
