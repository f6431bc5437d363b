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
        guard count >= minimumBytes, start > 0, start <= Int.max - count else { return nil }
        let first = (start + hugePage - 1) & ~(hugePage - 1)
        let last = (start + count) & ~(hugePage - 1)
        return last > first ? (first, last - first) : nil
    }

    /// Below `minimumBytes` and from this up, a buffer the caller will fill has its pages
    /// faulted in at once (`populate`) rather than one fault at a time as it is written.
    static let populatedBytes = 64 << 10

    /// For a buffer that will be filled: from 4 MiB its whole huge pages advised (`advise`);
    /// between 64 KiB and 4 MiB its whole pages faulted in by one `madvise(MADV_POPULATE_WRITE)`
    /// (1.2 µs a page here, against 1.9 µs for a page faulted in by its first write: a
    /// 10,000-card apply faulted 1,000 pages a pass). Nothing for a smaller one. Only a hint:
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
        guard count >= populatedBytes, count < minimumBytes, page > 0, page & (page - 1) == 0,
              start > 0, start <= Int.max - count else { return nil }
        let first = (start + page - 1) & ~(page - 1)
        let last = (start + count) & ~(page - 1)
        return last > first ? (first, last - first) : nil
    }

    /// `prepare(filling:)` for an array's reserved elements (after `reserveCapacity`), which
    /// the caller will fill: all of them, or the first `first` when only those surely will be.
    static func prepareFilling<T>(capacityOf array: [T], first: Int? = nil) {
        let bytes = min(array.capacity, first ?? .max) * MemoryLayout<T>.stride
        guard bytes >= populatedBytes else { return }
        array.withUnsafeBufferPointer { b in
            if let base = b.baseAddress { prepare(filling: UnsafeRawPointer(base), count: bytes) }
        }
    }

    /// `prepare(filling:)` for a dictionary's table (after `reserveCapacity`), which the
    /// caller will fill (see `adviseStorage`).
    static func prepareFilling<K: Hashable, V>(storageOf dictionary: [K: V]) {
        let bytes = dictionary.capacity * (MemoryLayout<K>.stride + MemoryLayout<V>.stride)
        guard bytes >= populatedBytes, MemoryLayout<[K: V]>.size == MemoryLayout<UnsafeRawPointer>.size else { return }
        prepare(filling: unsafeBitCast(dictionary, to: UnsafeRawPointer.self), count: bytes)
    }

    /// An array's reserved elements (after `reserveCapacity`).
    static func adviseCapacity<T>(of array: [T]) {
        let bytes = array.capacity * MemoryLayout<T>.stride
        guard bytes >= minimumBytes else { return }
        array.withUnsafeBufferPointer { b in
            if let base = b.baseAddress { advise(UnsafeRawPointer(base), count: bytes) }
        }
    }

    /// A dictionary's table (after `reserveCapacity`). A native dictionary is one reference to
    /// its storage object, whose keys and values follow its header: `capacity` times a key and
    /// a value is a lower bound of the object's size, so the range advised is inside it.
    static func adviseStorage<K: Hashable, V>(of dictionary: [K: V]) {
        let bytes = dictionary.capacity * (MemoryLayout<K>.stride + MemoryLayout<V>.stride)
        guard bytes >= minimumBytes, MemoryLayout<[K: V]>.size == MemoryLayout<UnsafeRawPointer>.size else { return }
        advise(unsafeBitCast(dictionary, to: UnsafeRawPointer.self), count: bytes)
    }

    /// A set's table, as for a dictionary.
    static func adviseStorage<T: Hashable>(of set: Set<T>) {
        let bytes = set.capacity * MemoryLayout<T>.stride
        guard bytes >= minimumBytes, MemoryLayout<Set<T>>.size == MemoryLayout<UnsafeRawPointer>.size else { return }
        advise(unsafeBitCast(set, to: UnsafeRawPointer.self), count: bytes)
    }
}
