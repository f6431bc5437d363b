/// Asks the kernel to back the large buffers of a big apply or feed with 2 MiB pages
/// (`madvise(MADV_HUGEPAGE)`, transparent huge pages), before they are first written.
///
/// Why: a 100,000-card apply and feed wrote some 90 MB of fresh memory, faulted in 4 KiB at a
/// time: 22,000 page faults a pass, about a tenth of its time, which made a card cost more at
/// 100,000 cards than at 1,000 (per-card scaling). A 2 MiB page is one fault for 512
/// of them, and its table entries keep the random reads of a large hash table from missing
/// the TLB as often.
///
/// Only a hint, and only for buffers of 4 MiB or more that the caller will fill: the kernel
/// may refuse it (THP set to `never`, an old kernel: ignored), and a buffer left mostly
/// unwritten would hold up to 2 MiB more resident per huge page it touched. Only the whole
/// 2 MiB pages inside the buffer are advised, so no byte outside it is affected. The memory is
/// the allocator's as before: freeing it is unchanged. One trace outlives the buffer: when
/// glibc took it from its heap rather than mapping it (its mmap threshold rises up to 32 MiB
/// after large frees), that stretch of the heap keeps the advice, and what is allocated there
/// later may get 2 MiB pages too, until the heap is trimmed.
///
/// Smaller buffers that will be filled (64 KiB to 4 MiB: a 10,000-card apply's table, its
/// arrays of changes and the feed index) have their pages faulted in by one call instead
/// (`prepare(filling:)`, `MADV_POPULATE_WRITE`), which changes no byte either.
enum HugePages {
    /// Below this, the 4 KiB pages' faults are few and a huge page would mostly sit empty.
    static let minimumBytes = 4 << 20
    private static let hugePage = 2 << 20

    /// Advises the whole 2 MiB pages inside `[start, start + count)`.
    static func advise(_ start: UnsafeRawPointer, count: Int) {
        guard let (first, length) = advisedRange(start: Int(bitPattern: start), count: count),
              let p = UnsafeMutableRawPointer(bitPattern: first) else { return }
        Platform.adviseHugePages(p, length)
    }

    /// The start and length of the whole 2 MiB pages inside `[start, start + count)`; nil for
    /// a buffer under `minimumBytes` or holding no whole huge page.
    static func advisedRange(start: Int, count: Int) -> (start: Int, count: Int)? {
        guard count >= minimumBytes else { return nil }
        return wholePages(start: start, count: count, page: hugePage)
    }

    /// Below `minimumBytes` and from this up, a buffer the caller will fill has its pages
    /// faulted in at once rather than one fault at a time as it is written.
    static let populatedBytes = 64 << 10

    /// For a buffer that will be filled: from 4 MiB its whole huge pages advised (`advise`);
    /// between 64 KiB and 4 MiB its whole pages faulted in by one `madvise(MADV_POPULATE_WRITE)`
    /// (one call instead of a fault a page: 1,000 faults a 10,000-card pass. The sixth round's
    /// host paid 1.9 µs for a faulted page against 1.2 µs populated; the eighteenth round's
    /// about the same for both, docs/PERFORMANCE.md). Nothing for a smaller one. Only a hint:
    /// the advice changes no byte, and an older kernel's refusal is ignored; only pages inside
    /// the buffer are touched, and only for a buffer that will be filled (the unfilled rest
    /// would be resident too).
    static func prepare(filling start: UnsafeRawPointer, count: Int) {
        if count >= minimumBytes {
            advise(start, count: count)
        } else if Platform.linuxFastPaths, let (first, length) = populatedRange(start: Int(bitPattern: start), count: count,
                                                                                 page: Int(sysconf(Int32(_SC_PAGESIZE)))),
                  let p = UnsafeMutableRawPointer(bitPattern: first) {
            Platform.populateForWriting(p, length)
        }
    }

    /// The whole pages inside `[start, start + count)` that `prepare(filling:)` faults in; nil
    /// for a buffer under `populatedBytes` or from `minimumBytes` up, or holding no whole page.
    static func populatedRange(start: Int, count: Int, page: Int) -> (start: Int, count: Int)? {
        guard count >= populatedBytes, count < minimumBytes else { return nil }
        return wholePages(start: start, count: count, page: page)
    }

    /// The whole pages of `page` bytes (a power of two) inside `[start, start + count)`, so
    /// that no byte outside the buffer is advised; nil when it holds none.
    private static func wholePages(start: Int, count: Int, page: Int) -> (start: Int, count: Int)? {
        guard page > 0, page & (page - 1) == 0, start > 0, start <= Int.max - count else { return nil }
        let first = (start + page - 1) & ~(page - 1)
        let last = (start + count) & ~(page - 1)
        return last > first ? (first, last - first) : nil
    }

    /// An array's reserved elements (after `reserveCapacity`), for a buffer that may not be
    /// filled: huge pages from 4 MiB, nothing faulted in.
    static func adviseCapacity<T>(of array: [T]) {
        withReserved(array) { advise($0, count: $1) }
    }

    /// `prepare(filling:)` for an array's reserved elements (after `reserveCapacity`), which
    /// the caller will fill: all of them, or the first `first` when only those surely will be.
    static func prepareFilling<T>(capacityOf array: [T], first: Int? = nil) {
        withReserved(array, first: first) { prepare(filling: $0, count: $1) }
    }

    /// `prepare(filling:)` for a dictionary's table (after `reserveCapacity`), which the caller
    /// will fill. A native dictionary is one reference to its storage object, whose keys and
    /// values follow its header: `capacity` times a key and a value is a lower bound of the
    /// object's size, so the range prepared is inside it.
    static func prepareFilling<K: Hashable, V>(storageOf dictionary: [K: V]) {
        let bytes = dictionary.capacity * (MemoryLayout<K>.stride + MemoryLayout<V>.stride)
        guard bytes >= populatedBytes, MemoryLayout<[K: V]>.size == MemoryLayout<UnsafeRawPointer>.size else { return }
        prepare(filling: unsafeBitCast(dictionary, to: UnsafeRawPointer.self), count: bytes)
    }

    /// The start and byte count of an array's reserved elements (its first `first`), when they
    /// are enough for either kind of advice.
    private static func withReserved<T>(_ array: [T], first: Int? = nil, _ body: (UnsafeRawPointer, Int) -> Void) {
        let bytes = min(array.capacity, first ?? .max) * MemoryLayout<T>.stride
        guard bytes >= populatedBytes else { return }
        array.withUnsafeBufferPointer { b in
            if let base = b.baseAddress { body(UnsafeRawPointer(base), bytes) }
        }
    }
}
