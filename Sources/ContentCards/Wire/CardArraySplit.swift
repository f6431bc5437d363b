/// A large cards array read by two threads: the caller's reads the first half, a thread of the
/// library's (`spawnThread`) the second, and the halves are joined in order.
///
/// Why: decoding is a pass over the payload's bytes at a few hundred nanoseconds a card, and
/// a 10,000-card sync waited that long on one core while the machine had others
/// (docs/PERFORMANCE.md, "Decode on two threads").
///
/// Why it gives exactly what one thread gives (`CardArraySplitTests` compares the two on
/// payloads made to trip it): where the second thread starts is a guess made from the bytes
/// alone (`guess`: a `,` between `}` and `{"`, about the middle of the array), and a guess can
/// be wrong (those bytes inside a string, or inside a card's own array of objects). The first
/// thread checks it: it reads on until it stands at a boundary between two of the array's
/// elements at or past the guess. Reading from such a boundary depends on nothing but the
/// position and the depth, so when the first thread stands exactly at the guessed comma, the
/// second thread's reading is the one the first would have done. Any other way (the guess
/// passed over, the second thread stopped by an error, an id of the second half repeating one
/// of the first) the first thread reads on by itself, as if there had been no second, and the
/// second thread's work is dropped: an error is always found, and worded, by one thread's
/// reading from the start.
///
/// The payload's UTF-8 check is split the same way: each thread checks its part, and the first
/// reads with the answer for the whole. A comma is ASCII, so the whole is valid exactly when
/// both parts are.
extension PayloadDecoder {
    /// Arrays shorter than this are read by one thread: a hand-over costs tens of
    /// microseconds, what a few dozen cards take to read.
    static let splitMinimumBytes = 256 * 1024

    /// How far past the middle `guess` looks for a boundary before it gives up (a card of a
    /// megabyte is not a feed worth splitting).
    static let guessWindow = 1 << 20

    /// The offset of a `,` that looks like a boundary between two elements of the array read
    /// from `start` (past its `[`): `}` then `,` then `{` then `"`, white space allowed between,
    /// the first found from a little past the middle of what is left on (the second thread
    /// starts later, and writes into memory new to it). Nil when there is none near there or
    /// the array is short.
    static func guess(_ bytes: UnsafeBufferPointer<UInt8>, start: Int) -> Int? {
        guard let base = bytes.baseAddress else { return nil }
        let n = bytes.count
        guard start >= 0, n - start >= splitMinimumBytes else { return nil }
        var p = start + (n - start) / 2 + (n - start) / 64
        let limit = min(n, p + guessWindow)
        @inline(__always) func skipSpace(_ q: inout Int) {
            while q < limit, base[q] == 0x20 || base[q] == 0x0A || base[q] == 0x0D || base[q] == 0x09 { q += 1 }
        }
        while p < limit {
            guard let found = memchr(base + p, 0x7D, limit - p) else { return nil }
            var q = UnsafePointer<UInt8>(found.assumingMemoryBound(to: UInt8.self)) - base + 1
            p = q
            skipSpace(&q)
            guard q < limit, base[q] == 0x2C else { continue }
            let comma = q
            q += 1
            skipSpace(&q)
            guard q < limit, base[q] == 0x7B else { continue }
            q += 1
            skipSpace(&q)
            guard q < limit, base[q] == 0x22 else { continue }
            return comma
        }
        return nil
    }

    /// Starts reading the array's elements from a guessed boundary on another thread, as
    /// `readElement` would read them at the parser's depth; nil when the array is short, no
    /// boundary is guessed or no thread is to be had (the caller reads it all).
    /// `checkUTF8`: the payload's UTF-8 is not checked yet; the second thread checks its part
    /// first (`SecondHalf.validUTF8`).
    func startSecondHalf(_ parser: Parser, checkUTF8: Bool) -> SecondHalf? {
        guard let comma = Self.guess(parser.bytes, start: parser.pos) else { return nil }
        let half = SecondHalf(comma: comma)
        let bytes = parser.bytes, depth = parser.depth, maxDepth = parser.maxDepth
        let knownValid = parser.validUTF8
        // The bytes are the caller's: they stay valid because the first thread never returns
        // (nor throws) before it has waited for this thread (`SecondHalf.wait`, `cancel`).
        let started = spawnThread { [self] in
            let valid = knownValid || (checkUTF8 && UTF8Validation.isValid(UnsafeBufferPointer(rebasing: bytes[comma...])))
            half.checked(valid: valid)
            var second = Parser(bytes: bytes, maxDepth: maxDepth)
            second.pos = comma
            second.depth = depth
            second.validUTF8 = valid
            var cursor = Parser.Cursor(first: false)
            var part = SecondHalf.Part(capacity: min((bytes.count - comma) / 384, 1 << 22))
            var seen = CardIDSet(minimumCapacity: min((bytes.count - comma) / 256, 1 << 20))
            var reading = CardReading()
            var index = 0
            var read = false
            do throws(JSONError) {
                while try second.nextElement(&cursor) {
                    // Asked every few cards, not every card (the lock costs what a card's
                    // member does): a first thread that gave up waits for at most that many.
                    if index & 7 == 0 && half.isCancelled { break }
                    try readElement(&second, index: index, seen: &seen, reading: &reading, into: &part)
                    index += 1
                }
                read = second.depth < depth
            } catch {}
            guard read else { return half.finish(nil) }
            half.finish(SecondHalf.Read(part: part, seen: seen, hashes: seen.hashes(), pos: second.pos, depth: second.depth))
        }
        return started ? half : nil
    }

    /// Joins the second half to the first (`payload`, whose `count` elements the first thread
    /// read, with their ids in `seen`); false, with `payload` and `seen` as they were, when an
    /// id of the second half is one of the first's (the first thread then reads the rest
    /// itself, and leaves that card out as one thread does).
    func join(_ read: SecondHalf.Read, count: Int, seen: inout CardIDSet, into payload: inout Payload) -> Bool {
        guard seen.adopt(read.seen, hashes: read.hashes) else { return false }
        read.part.cards.moveAll(into: &payload.cards)
        for var left in read.part.leftOut {
            left.index += count
            payload.leftOut.append(left)
        }
        return true
    }
}

/// One card's scratch space, reused for the next: its fields (with their templates) and the
/// body's writer.
struct CardReading {
    var fields = CardFields()
    var writer = JSONWriter(reservingCapacity: 1024)
}

/// Where a reading puts the cards it keeps and leaves out: the payload, or the second half's
/// part of it.
protocol CardSink {
    mutating func keep(_ card: consuming Payload.ServerCard)
    mutating func leaveOut(_ left: Payload.LeftOut)
}

extension Payload: CardSink {
    mutating func keep(_ card: consuming ServerCard) { cards.append(card) }
    mutating func leaveOut(_ left: LeftOut) { leftOut.append(left) }
}

/// The second thread's reading of a cards array (`PayloadDecoder.startSecondHalf`): where it
/// started, and what it read once it finished.
final class SecondHalf: @unchecked Sendable {
    /// The second half's cards and left-out cards, its indices counted from its first element.
    struct Part: CardSink {
        let cards: MovableCards
        var leftOut: [Payload.LeftOut] = []
        init(capacity: Int) { cards = MovableCards(capacity: capacity) }
        mutating func keep(_ card: consuming Payload.ServerCard) { cards.append(card) }
        mutating func leaveOut(_ left: Payload.LeftOut) { leftOut.append(left) }
    }

    /// What the second thread read from the guessed comma to the array's end, and where that
    /// end left the parser.
    struct Read {
        let part: Part
        let seen: CardIDSet
        let hashes: [UInt64]
        let pos: Int
        let depth: Int
    }

    /// The offset of the `,` the second thread started at.
    let comma: Int
    private let lock = Lock()
    private let done = Condition()
    private var validity: Bool?
    private var finished = false
    private var cancelled = false
    private var read: Read?

    init(comma: Int) { self.comma = comma }

    var isCancelled: Bool { lock.withLock { cancelled } }

    func checked(valid: Bool) {
        lock.withLock {
            validity = valid
            done.broadcast()
        }
    }

    /// Waits for the second thread's UTF-8 check of its part (its first step).
    func validUTF8() -> Bool {
        lock.withLock {
            while validity == nil { done.wait(lock, until: nil) }
            return validity ?? false
        }
    }

    func finish(_ read: Read?) {
        lock.withLock {
            self.read = read
            finished = true
            done.broadcast()
        }
    }

    /// Waits for the second thread; what it read, nil when it did not reach the array's end
    /// (an error, or cancelled).
    func wait() -> Read? {
        lock.withLock {
            while !finished { done.wait(lock, until: nil) }
            let result = read
            read = nil
            return result
        }
    }

    /// Tells the second thread to stop, and waits until it has (its cards are dropped).
    func cancel() {
        lock.withLock { cancelled = true }
        _ = wait()
    }
}

/// Cards kept in memory of their own until they are moved, bit for bit, to the end of an
/// array: the second half's cards join the first's without a copy of each (a copy retains a
/// card's body, and the copies and their releases were 0.3 ms of a 10,000-card decode).
final class MovableCards {
    private var base: UnsafeMutablePointer<Payload.ServerCard>
    private var count = 0
    private var capacity: Int

    init(capacity: Int) {
        self.capacity = max(capacity, 16)
        base = .allocate(capacity: self.capacity)
    }

    deinit {
        base.deinitialize(count: count)
        base.deallocate()
    }

    func append(_ card: consuming Payload.ServerCard) {
        if count == capacity {
            let grown = UnsafeMutablePointer<Payload.ServerCard>.allocate(capacity: capacity * 2)
            grown.moveInitialize(from: base, count: count)
            base.deallocate()
            base = grown
            capacity *= 2
        }
        (base + count).initialize(to: card)
        count += 1
    }

    /// Moves every card to the end of `array`, leaving none here.
    func moveAll(into array: inout [Payload.ServerCard]) {
        array.append(contentsOf: Moving(base: base, count: count))
        count = 0
    }

    /// The cards as a sequence that moves each out as it is read: `append(contentsOf:)` takes
    /// the moved value as it is, where a buffer's elements would be copied.
    private struct Moving: Sequence, IteratorProtocol {
        let base: UnsafeMutablePointer<Payload.ServerCard>
        let count: Int
        var at = 0
        var underestimatedCount: Int { count - at }
        mutating func next() -> Payload.ServerCard? {
            guard at < count else { return nil }
            defer { at += 1 }
            return (base + at).move()
        }
    }
}
