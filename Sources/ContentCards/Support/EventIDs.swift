/// Makes the unique ids of events (the server drops duplicates by id). Injected so tests get
/// predictable ids.
public protocol EventIDGenerator: Sendable {
    func next() -> String
}

/// Random version 4 UUIDs from the system's secure generator.
public struct RandomEventIDs: EventIDGenerator {
    public init() {}
    public func next() -> String {
        var random = RandomPool.take16()
        return withUnsafeMutableBytes(of: &random) { bytes in
            bytes[6] = (bytes[6] & 0x0F) | 0x40
            bytes[8] = (bytes[8] & 0x3F) | 0x80
            let hex: StaticString = "0123456789abcdef"
            return String(unsafeUninitializedCapacity: 36) { out in
                var o = 0
                hex.withUTF8Buffer { digits in
                    for i in 0..<16 {
                        if i == 4 || i == 6 || i == 8 || i == 10 { out[o] = 0x2D; o += 1 }
                        out[o] = digits[Int(bytes[i] >> 4)]
                        out[o + 1] = digits[Int(bytes[i] & 0x0F)]
                        o += 2
                    }
                }
                return o
            }
        }
    }
}

/// Random bytes for event ids, taken 16 at a time from a pool the system's generator fills
/// 4 KiB at a time: one system call for 256 ids instead of 16 for each (a fifth of a logged
/// impression's time went to getrandom). The ids only need to be unique, not secret; a child
/// of fork() empties the pool, so parent and child never hand out the same bytes.
enum RandomPool {
    private static let lock: Lock = {
        let lock = Lock()
        ForkSafety.holdAcrossFork(lock) { used = capacity }
        return lock
    }()
    private static let capacity = 4096
    nonisolated(unsafe) private static let pool = UnsafeMutableRawBufferPointer.allocate(byteCount: capacity, alignment: 16)
    nonisolated(unsafe) private static var used = capacity

    /// Sixteen bytes of the pool, as two words: an array of them was an allocation of its own
    /// for every id.
    static func take16() -> (UInt64, UInt64) {
        lock.withLock {
            if used + 16 > capacity {
                Platform.fillRandom(pool)
                used = 0
            }
            defer { used += 16 }
            return (pool.loadUnaligned(fromByteOffset: used, as: UInt64.self),
                    pool.loadUnaligned(fromByteOffset: used + 8, as: UInt64.self))
        }
    }
}

/// "prefix-1", "prefix-2", ...: for tests.
public final class SequentialEventIDs: EventIDGenerator, @unchecked Sendable {
    private let lock = Lock()
    private var n = 0
    private let prefix: String
    public init(prefix: String = "event") { self.prefix = prefix }
    public func next() -> String { lock.withLock { n += 1; return "\(prefix)-\(n)" } }
}
