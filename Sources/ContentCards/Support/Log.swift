/// The level of a log message. The numbers are those of the C header's CC_LOG_* macros and of
/// Python's `logging` (DEBUG 10, INFO 20, WARNING 30, ERROR 40).
public enum LogLevel: Int32, Comparable, Sendable, CaseIterable {
    case debug = 10, info = 20, warning = 30, error = 40

    public static func < (a: LogLevel, b: LogLevel) -> Bool { a.rawValue < b.rawValue }

    public var name: String {
        switch self {
        case .debug: return "debug"
        case .info: return "info"
        case .warning: return "warning"
        case .error: return "error"
        }
    }
}

/// The library's log (docs/BEHAVIOUR.md, "Logging to the application"): one handler for the
/// process, silent by default. The library reports refreshes (start, bytes, outcome, what the
/// merge did), cards left out of a payload, refusals (rate limit, no source, logging calls that
/// record nothing), event deliveries (delivered, dropped, failed) and their retries.
///
///     ContentCardsLog.setHandler(minLevel: .info) { level, message in print(level.name, message) }
///
/// The handler is never called while the library holds a lock, may be called from any thread
/// (the caller's, or a library thread for background work), and may call back into the library:
/// messages the library would log on that thread while the handler runs are not delivered, so a
/// handler never recurses.
public enum ContentCardsLog {
    public typealias Handler = @Sendable (LogLevel, String) -> Void

    private static let lock: Lock = {
        let lock = Lock()
        ForkSafety.holdAcrossFork(lock)
        return lock
    }()
    nonisolated(unsafe) private static var current: Handler?
    nonisolated(unsafe) private static var threshold: Int32 = Int32.max

    /// Set on a thread while it runs the handler: messages logged then are dropped.
    private static let insideKey: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key, nil)
        return key
    }()

    /// Sets the handler (nil: silence, the default) and the lowest level it receives.
    /// `minLevel` may be any number: messages whose level is at least it are delivered.
    public static func setHandler(minLevel: Int32, _ handler: Handler?) {
        _ = insideKey
        let old: Handler? = lock.withLock {
            let old = current
            current = handler
            threshold = handler == nil ? Int32.max : minLevel
            return old
        }
        // The replaced handler is released here, outside the lock: releasing it may run the
        // C caller's free_userdata, which may call back into the library.
        withExtendedLifetime(old) {}
    }

    public static func setHandler(minLevel: LogLevel = .info, _ handler: Handler?) {
        setHandler(minLevel: minLevel.rawValue, handler)
    }

    /// The handler, as a property (its minimum level is left as it is, `.info` at first).
    public static var handler: Handler? {
        get { lock.withLock { current } }
        set {
            let old: Handler? = lock.withLock {
                let old = current
                if current == nil && newValue != nil && threshold == Int32.max { threshold = LogLevel.info.rawValue }
                current = newValue
                if newValue == nil { threshold = Int32.max }
                return old
            }
            withExtendedLifetime(old) {}   // released outside the lock (see setHandler)
        }
    }

    /// Whether a message of this level would be delivered now (cheap: for callers that build
    /// costly messages).
    public static func isEnabled(_ level: LogLevel) -> Bool {
        lock.withLock { level.rawValue >= threshold }
    }

    /// Logs a message. Must not be called with a library lock held (every call site is after
    /// its lock is released); the message is built only when it will be delivered.
    public static func emit(_ level: LogLevel, _ message: @autoclosure () -> String) {
        let handler: Handler? = lock.withLock { level.rawValue >= threshold ? current : nil }
        guard let handler else { return }
        if pthread_getspecific(insideKey) != nil { return }
        let text = message()
        pthread_setspecific(insideKey, UnsafeRawPointer(bitPattern: 1))
        // Host code, as a subscriber is: a call it makes (unsubscribe, close) must not wait
        // for callbacks on other threads, one of which may be waiting for this thread.
        CallbackContext.run { handler(level, text) }
        pthread_setspecific(insideKey, nil)
    }
}
