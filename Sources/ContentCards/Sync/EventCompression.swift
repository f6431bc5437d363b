import CZlib
/// Whether an events endpoint gets its batches gzip-compressed (docs/WIRE.md, "Compression"):
/// yes until it answers 415 (Unsupported Media Type) to one, then no for the life of the
/// controller. Batches under `minimumBytes` go as they are: gzip's header and trailer cost more
/// than they save there. Shared by the deliveries of one controller.
final class EventCompression: @unchecked Sendable {
    static let minimumBytes = 512
    private let lock = Lock()
    private var isRefused = false
    private var notice: String?

    var enabled: Bool { lock.withLock { !isRefused } }

    /// Called on the delivering thread: nothing is logged from here (the controller logs once
    /// the delivery is over, see `takeNotice`).
    func refused() {
        lock.withLock {
            isRefused = true
            notice = "the events endpoint refused a gzip-compressed batch (HTTP 415): batches go uncompressed from now on"
        }
    }

    /// What changed since the last call, for the controller's log; nil when nothing did.
    func takeNotice() -> String? {
        lock.withLock {
            defer { notice = nil }
            return notice
        }
    }

    /// The gzip of `bytes`, or nil when it should go as it is (small, refused, no zlib).
    func compress(_ bytes: [UInt8]) -> [UInt8]? {
        guard bytes.count >= Self.minimumBytes, enabled else { return nil }
        return Gzip.compress(bytes)
    }
}

/// gzip (RFC 1952) through the system's zlib, loaded at first use (Sources/CZlib/cc_gzip.c).
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
