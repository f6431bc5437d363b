import CCurl
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Whether an events endpoint gets its batches gzip-compressed (docs/WIRE.md, "Compression"):
/// yes until it answers 415 (Unsupported Media Type) to one, then no for the life of the
/// controller. Batches under `minimumBytes` go as they are: gzip's header and trailer cost more
/// than they save there. Shared by the deliveries of one controller.
final class EventCompression: @unchecked Sendable {
    static let minimumBytes = 512
    private let lock = Lock()
    private var isRefused = false

    var enabled: Bool { lock.withLock { !isRefused } }

    func refused() {
        lock.withLock { isRefused = true }
        ContentCardsLog.emit(.info, "the events endpoint refused a gzip-compressed batch (HTTP 415): batches go uncompressed from now on")
    }

    /// The gzip of `bytes`, or nil when it should go as it is (small, refused, no zlib).
    func compress(_ bytes: [UInt8]) -> [UInt8]? {
        guard bytes.count >= Self.minimumBytes, enabled else { return nil }
        return Gzip.compress(bytes)
    }
}

/// gzip (RFC 1952) through the system's zlib, loaded at first use (Sources/CCurl/cc_gzip.c).
enum Gzip {
    /// nil when zlib cannot be loaded or memory ran out.
    static func compress(_ bytes: [UInt8]) -> [UInt8]? {
        var out: UnsafeMutablePointer<UInt8>?
        var length = 0
        let rc = bytes.withUnsafeBufferPointer { cc_gzip($0.baseAddress, $0.count, &out, &length) }
        guard rc == 0, let out else { return nil }
        defer { free(out) }
        return Array(UnsafeBufferPointer(start: out, count: length))
    }
}
