/// Makes the unique ids of events (the server drops duplicates by id). Injected so tests get
/// predictable ids.
public protocol EventIDGenerator: Sendable {
    func next() -> String
}

/// Random version 4 UUIDs from the system's secure generator.
public struct RandomEventIDs: EventIDGenerator {
    public init() {}
    public func next() -> String {
        var g = SystemRandomNumberGenerator()
        var bytes = (0..<16).map { _ in UInt8.random(in: 0...255, using: &g) }
        bytes[6] = (bytes[6] & 0x0F) | 0x40
        bytes[8] = (bytes[8] & 0x3F) | 0x80
        let hex = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(36)
        for (i, b) in bytes.enumerated() {
            if i == 4 || i == 6 || i == 8 || i == 10 { out.append(0x2D) }
            out.append(hex[Int(b >> 4)]); out.append(hex[Int(b & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
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
