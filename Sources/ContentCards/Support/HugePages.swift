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
