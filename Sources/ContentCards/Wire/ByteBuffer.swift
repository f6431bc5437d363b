/// The writer's output: a growable byte buffer. Its pointer, count and capacity are fields of a
/// struct (a class's stored properties would be checked for exclusive access on every append);
/// the class `Storage` only owns the memory, so it is freed once, and tells a copied writer that
/// its buffer is shared.
///
/// The memory comes from `malloc` and grows with `realloc`, so a finished buffer can be handed to
/// a C caller as it is (`takeMalloced`) instead of copied: for a large feed that copy was the
/// peak of memory. An allocation that fails leaves the buffer as it was and marks it failed:
/// the writer keeps going without writing, and `takeMalloced` returns nil (out of memory is an
/// error the caller reports, not a trap in the host's process).
struct ByteBuffer {
    final class Storage {
        var pointer: UnsafeMutablePointer<UInt8>?
        init(_ pointer: UnsafeMutablePointer<UInt8>?) { self.pointer = pointer }
        deinit { free(pointer) }
    }

    private(set) var base: UnsafeMutablePointer<UInt8>
    private(set) var count = 0
    private var capacity: Int
    private var storage: Storage
    /// An allocation failed: what was written since is missing.
    private(set) var failed = false

    /// One byte that is never written, for a buffer whose allocation failed.
    private static let empty = UnsafeMutablePointer<UInt8>.allocate(capacity: 1)

    init(capacity: Int) {
        let size = max(capacity, 16)
        if let p = malloc(size)?.assumingMemoryBound(to: UInt8.self) {
            base = p
            self.capacity = size
        } else {
            base = Self.empty
            self.capacity = 0
            failed = true
        }
        storage = Storage(failed ? nil : base)
    }

    var array: [UInt8] { Array(UnsafeBufferPointer(start: base, count: count)) }

    /// For a buffer that will be filled: its pages faulted in at once, or from 4 MiB backed by
    /// 2 MiB pages as they are written (`HugePages.prepare(filling:)`). The 160 pages of a
    /// 1,000-card feed, faulted one at a time, were a tenth of a cold start.
    func prepareForFilling() {
        guard capacity > 0 else { return }
        HugePages.prepare(filling: base, count: capacity)
    }

    func withBytes<R>(_ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R {
        try withExtendedLifetime(storage) { try body(UnsafeBufferPointer(start: base, count: count)) }
    }

    /// Forgets the bytes written, keeping the memory (the buffer must be this copy's own); a
    /// failed allocation is forgotten too (the next write tries again).
    mutating func removeAll() {
        count = 0
        failed = false
    }

    /// Whether no other copy shares the buffer.
    mutating func isUnique() -> Bool { isKnownUniquelyReferenced(&storage) }

    /// Gives this copy a buffer of its own when another copy shares it.
    @inline(__always)
    mutating func makeUnique() {
        if !isKnownUniquelyReferenced(&storage) { copyToOwnBuffer() }
    }

    private mutating func copyToOwnBuffer() {
        guard let next = malloc(max(capacity, 16))?.assumingMemoryBound(to: UInt8.self) else {
            // The shared bytes stay the other copy's: this one starts over, failed.
            base = Self.empty; count = 0; capacity = 0; failed = true
            storage = Storage(nil)
            return
        }
        next.update(from: base, count: count)
        base = next
        capacity = max(capacity, 16)
        storage = Storage(next)
    }

    /// Room for `n` more bytes; false when it could not be had (the buffer is then failed).
    @inline(__always)
    private mutating func reserve(_ n: Int) -> Bool {
        // Once an allocation failed nothing more is written: the bytes stay a prefix of what
        // was meant, never a text with holes in it.
        if count + n <= capacity && !failed { return true }
        return grow(to: max(count + n, capacity * 2))
    }

    private mutating func grow(to size: Int) -> Bool {
        // `base` is this buffer's own (writers call `makeUnique` before they append).
        guard !failed, let next = realloc(storage.pointer, size)?.assumingMemoryBound(to: UInt8.self) else {
            failed = true
            return false
        }
        base = next
        capacity = size
        storage.pointer = next
        return true
    }

    @inline(__always)
    mutating func append(_ byte: UInt8) {
        guard reserve(1) else { return }
        base[count] = byte
        count += 1
    }

    /// `bytes` between quotes, with one check for room.
    @inline(__always)
    mutating func appendQuoted(_ bytes: UnsafeBufferPointer<UInt8>) {
        guard reserve(bytes.count + 2) else { return }
        base[count] = 0x22
        if let source = bytes.baseAddress, bytes.count > 0 {
            (base + count + 1).update(from: source, count: bytes.count)
        }
        count += bytes.count + 2
        base[count - 1] = 0x22
    }

    @inline(__always)
    mutating func append(_ bytes: UnsafeBufferPointer<UInt8>) {
        guard let source = bytes.baseAddress, bytes.count > 0, reserve(bytes.count) else { return }
        (base + count).update(from: source, count: bytes.count)
        count += bytes.count
    }

    mutating func append(maxCount: Int, _ body: (UnsafeMutablePointer<UInt8>) -> Int) {
        guard maxCount > 0, reserve(maxCount) else { return }
        let written = body(base + count)
        assert(written >= 0 && written <= maxCount, "a piece wrote past the room it asked for")
        count += min(max(written, 0), maxCount)
    }

    @inline(__always)
    mutating func append(_ bytes: UnsafeRawBufferPointer) {
        guard let source = bytes.baseAddress, bytes.count > 0, reserve(bytes.count) else { return }
        UnsafeMutableRawPointer(base + count).copyMemory(from: source, byteCount: bytes.count)
        count += bytes.count
    }

    mutating func append(string: String) {
        var text = string
        text.withUTF8 { append($0) }
    }

    /// The bytes written, NUL-terminated, in memory the caller now owns and frees with `free`;
    /// nil when an allocation failed. The buffer is left empty. When another copy shares the
    /// memory, the caller gets a copy instead.
    mutating func takeMalloced() -> UnsafeMutablePointer<UInt8>? {
        makeUnique()
        guard reserve(1), !failed, let owned = storage.pointer else { return nil }
        base[count] = 0
        storage.pointer = nil       // no longer freed here
        base = Self.empty; count = 0; capacity = 0
        storage = Storage(nil)
        return owned
    }

    /// As `takeMalloced`, with `trailer` after the NUL at the next multiple of Int's stride.
    /// A feed's buffer is reserved at 720 bytes a card and a card rarely writes 660, so the
    /// trailer (8 bytes a card) usually fits without the `realloc`.
    mutating func takeMalloced(trailer: [Int]) -> (text: UnsafeMutablePointer<UInt8>, trailer: UnsafePointer<Int>)? {
        let stride = MemoryLayout<Int>.stride
        let at = (count + 1 + stride - 1) / stride * stride
        let (bytes, overflow) = trailer.count.multipliedReportingOverflow(by: stride)
        makeUnique()
        guard !overflow, reserve(at - count + bytes), !failed else { return nil }
        let slots = UnsafeMutableRawPointer(base + at).bindMemory(to: Int.self, capacity: trailer.count)
        trailer.withUnsafeBufferPointer { slots.update(from: $0.baseAddress!, count: trailer.count) }
        guard let owned = takeMalloced() else { return nil }
        return (owned, UnsafePointer(slots))
    }
}
