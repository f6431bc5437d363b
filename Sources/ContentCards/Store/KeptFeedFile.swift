import CPlatform

/// The kept feed's file (`KeptFeed`): written whole to a temporary file and renamed into place,
/// read with a few `pread`s, the body straight into the memory the first feed hands out.
///
/// Layout, little-endian:
///
///     0    "CCFEED02"
///     8    flags (bit 0: confirmed, an open found the store's bytes and settled times)
///     16   the store's sum, writtenAt, validBefore, syncedAt, total, unviewed, unread,
///          pending events, card count, text length: ten 8-byte words
///     96   the stamp, then the identity: each an 8-byte length and its bytes
///     H    the body (`KeptFeed`'s layout: its offsets are the machine's own integers), then
///          the check sum: XXH64 of the body's bytes after the text, seeded with the XXH64
///          of the text, seeded with that of bytes 16..<H
///
/// The flags are outside the check sum: an open sets "confirmed" in place, one byte, while
/// another process may be reading the file.
enum KeptFeedFile {
    private static let magic = Array("CCFEED02".utf8)
    private static let fixedEnd = 96
    private static let confirmedFlag: UInt8 = 1

    struct Read {
        var feed: KeptFeed
        var storeSum: UInt64
        var confirmed: Bool
    }

    // MARK: Writing

    /// What a copy holds besides its ties.
    struct Contents {
        var text: UnsafeBufferPointer<UInt8>
        var offsets: [Int]
        var counts: FeedCounts
        var writtenAt: Double
        var validBefore: Double
        var syncedAt: Double
        var pendingEvents = 0
    }

    /// Writes the copy for `store` (called with SQLite's write lock held, the WAL empty,
    /// `storeSum` the file's bytes' sum). Written to a temporary file and renamed over the old
    /// one, so a reader sees a whole copy or none, and one being read is never cut short;
    /// failures leave no copy.
    static func save(store: String, identity: String, stamp: String, storeSum: UInt64, feed: Contents) {
        let target = KeptFeed.path(of: store)
        let (head, tail) = encode(feed, identity: identity, stamp: stamp, storeSum: storeSum)
        let temporary = target + ".tmp"
        unlink(temporary)
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { unlink(target); return }
        // 0600 whatever the umask: under one such as 0477 the copy was made unreadable to its
        // own reader (never served), and the reader refuses any other mode anyway.
        var whole = fchmod(fd, 0o600) == 0
        // The text from the feed's own buffer: the copy is not assembled in memory first.
        whole = whole && head.withUnsafeBytes { Files.writeAll(fd, $0) }
        whole = whole && Files.writeAll(fd, UnsafeRawBufferPointer(feed.text))
        whole = whole && tail.withUnsafeBytes { Files.writeAll(fd, $0) }
        // The store file's times settled already (against the file system's own clock: the
        // time it just gave the copy): no later write can leave them as they are.
        var written = stat()
        if whole, fstat(fd, &written) == 0, KeptFeed.settledTimes(store, now: Platform.modificationTime(written)) {
            var flag = confirmedFlag
            whole = pwrite(fd, &flag, 1, 8) == 1
        }
        whole = close(fd) == 0 && whole
        if !whole || rename(temporary, target) != 0 {
            unlink(temporary)
            unlink(target)
        }
    }

    /// Removes the copy (it no longer stands for the store, or none may be written), and a
    /// temporary one a crash left.
    static func remove(store: String) {
        unlink(KeptFeed.path(of: store))
        unlink(KeptFeed.path(of: store) + ".tmp")
    }

    /// The bytes before the text (the header) and after it (the padding, the offsets, the
    /// check sum).
    private static func encode(_ feed: Contents, identity: String, stamp: String, storeSum: UInt64) -> (head: [UInt8], tail: [UInt8]) {
        var head: [UInt8] = []
        head.reserveCapacity(fixedEnd + 16 + stamp.utf8.count + identity.utf8.count)
        head += magic
        func word(_ v: UInt64, to out: inout [UInt8]) { withUnsafeBytes(of: v.littleEndian) { out += $0 } }
        word(0, to: &head)
        word(storeSum, to: &head)
        for d in [feed.writtenAt, feed.validBefore, feed.syncedAt] { word(d.bitPattern, to: &head) }
        for n in [feed.counts.total, feed.counts.unviewed, feed.counts.unread, feed.pendingEvents,
                  feed.offsets.count - 1, feed.text.count] {
            word(UInt64(n), to: &head)
        }
        for text in [stamp, identity] {
            word(UInt64(text.utf8.count), to: &head)
            head += text.utf8
        }
        let stride = MemoryLayout<Int>.stride
        let textEnd = (feed.text.count + 1 + stride - 1) / stride * stride
        var tail = [UInt8](repeating: 0, count: textEnd - feed.text.count)
        tail.reserveCapacity(tail.count + feed.offsets.count * 8 + 8)
        // The offsets as the machine's own integers: the body is handed to C as it is (a copy
        // is read back only by the same build, so on the same kind of machine).
        for o in feed.offsets { withUnsafeBytes(of: o) { tail += $0 } }
        let sum = head.withUnsafeBufferPointer { h in
            tail.withUnsafeBytes { t in
                sumOf(header: UnsafeBufferPointer(rebasing: h[16...]), text: UnsafeRawBufferPointer(feed.text), rest: t)
            }
        }
        word(sum, to: &tail)
        return (head, tail)
    }

    /// The check sum: XXH64 of the bytes after the text, seeded with that of the text, seeded
    /// with that of the header from byte 16.
    private static func sumOf(header: UnsafeBufferPointer<UInt8>, text: UnsafeRawBufferPointer,
                              rest: UnsafeRawBufferPointer) -> UInt64 {
        let seed = RecordSum.xxh64(text.bindMemory(to: UInt8.self), seed: RecordSum.xxh64(header, seed: 0))
        return RecordSum.xxh64(rest.bindMemory(to: UInt8.self), seed: seed)
    }

    // MARK: Reading

    /// The copy at `path` when it is whole, written for `identity` and `stamp`, and `accept`s
    /// it; nil otherwise. Only a private regular file of this user, never through a symbolic
    /// link. A copy accepted that was not confirmed is marked confirmed, through the very
    /// descriptor it was read from (the path may name another copy by then).
    static func read(_ path: String, identity: String, stamp: String, accept: (Read) -> Bool) -> KeptFeed? {
        var fd = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)   // a FIFO never blocks
        if fd < 0 && errno == EACCES { fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK) }
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        guard let read = readOpen(fd, identity: identity, stamp: stamp), accept(read) else { return nil }
        if !read.confirmed {
            var flag = confirmedFlag
            _ = pwrite(fd, &flag, 1, 8)
        }
        return read.feed
    }

    private static func readOpen(_ fd: Int32, identity: String, stamp: String) -> Read? {
        var st = stat()
        guard fstat(fd, &st) == 0, Files.isPrivateRegularFile(st), st.st_size > fixedEnd + 24,
              st.st_size <= Int64(2 * KeptFeed.maxBytes) else { return nil }
        let size = Int(st.st_size)
        // The header: the fixed words, then the stamp and identity, which must be ours (so at
        // most their lengths plus two words).
        let headerEnd = fixedEnd + 16 + stamp.utf8.count + identity.utf8.count
        guard headerEnd + 8 < size, let header = preadAll(fd, count: headerEnd, at: 0) else { return nil }
        return header.withUnsafeBufferPointer { h -> Read? in
            let raw = UnsafeRawBufferPointer(h)
            func word(_ at: Int) -> UInt64 { UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: at, as: UInt64.self)) }
            func count(_ at: Int) -> Int? { let v = word(at); return v <= UInt64(KeptFeed.maxBytes) ? Int(v) : nil }
            guard h.starts(with: magic) else { return nil }
            var at = fixedEnd
            func text(_ expected: String) -> Bool {
                let n = Int(truncatingIfNeeded: word(at))
                guard n == expected.utf8.count else { return false }
                defer { at += 8 + n }
                return expected.utf8.elementsEqual(h[(at + 8)..<(at + 8 + n)])
            }
            guard text(stamp), text(identity),
                  let total = count(48), let unviewed = count(56), let unread = count(64), let pending = count(72),
                  let cards = count(80), let textLength = count(88) else { return nil }
            let (writtenAt, validBefore, syncedAt) = (Double(bitPattern: word(24)), Double(bitPattern: word(32)),
                                                     Double(bitPattern: word(40)))
            let stride = MemoryLayout<Int>.stride
            let bodyLength = (textLength + 1 + stride - 1) / stride * stride + (cards + 1) * stride
            guard bodyLength == size - headerEnd - 8, !writtenAt.isNaN, !validBefore.isNaN,
                  let body = malloc(bodyLength) else { return nil }
            HugePages.prepare(filling: body, count: bodyLength)    // its pages faulted in at once
            var sum: UInt64 = 0
            guard preadAll(fd, into: body, count: bodyLength, at: headerEnd),
                  preadAll(fd, into: &sum, count: 8, at: headerEnd + bodyLength),
                  UInt64(littleEndian: sum) == sumOf(header: UnsafeBufferPointer(rebasing: h[16...]),
                                                      text: UnsafeRawBufferPointer(start: body, count: textLength),
                                                      rest: UnsafeRawBufferPointer(start: body + textLength,
                                                                                   count: bodyLength - textLength)),
                  validOffsets(body, textLength: textLength, cards: cards, bodyLength: bodyLength) else {
                free(body)
                return nil
            }
            body.storeBytes(of: 0, toByteOffset: textLength, as: UInt8.self)
            let feed = KeptFeed(body: body, bodyLength: bodyLength, textLength: textLength, cardCount: cards,
                                counts: FeedCounts(total: total, unviewed: unviewed, unread: unread),
                                writtenAt: writtenAt, validBefore: validBefore, syncedAt: syncedAt,
                                pendingEvents: pending, stamp: stamp)
            return Read(feed: feed, storeSum: word(16), confirmed: h[8] & confirmedFlag != 0)
        }
    }

    /// The offsets describe the text: from 1 (past the `[`), never decreasing, the last the
    /// text's length.
    private static func validOffsets(_ body: UnsafeMutableRawPointer, textLength: Int, cards: Int, bodyLength: Int) -> Bool {
        let first = bodyLength - (cards + 1) * MemoryLayout<Int>.stride
        var previous = 1
        for i in 0...cards {
            let o = body.loadUnaligned(fromByteOffset: first + i * MemoryLayout<Int>.stride, as: Int.self)
            if o < previous || o > textLength { return false }
            previous = o
        }
        return previous == textLength
    }

    private static func preadAll(_ fd: Int32, count: Int, at offset: Int) -> [UInt8]? {
        var bytes = [UInt8](repeating: 0, count: count)
        let ok = bytes.withUnsafeMutableBytes { preadAll(fd, into: $0.baseAddress!, count: count, at: offset) }
        return ok ? bytes : nil
    }

    private static func preadAll(_ fd: Int32, into buffer: UnsafeMutableRawPointer, count: Int, at offset: Int) -> Bool {
        var got = 0
        while got < count {
            let n = pread(fd, buffer + got, count - got, off_t(offset + got))
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { return false }
            got += n
        }
        return true
    }
}

/// Which build of the library is running: the GNU build id the linker wrote into the object
/// holding this code (the shared library, or the program it is linked into). A kept feed
/// written by another build is not trusted, since the JSON a build writes may differ. Read
/// from the loaded object itself, so an upgrade that replaces the file under a running process
/// does not change it. Nil without a build id: then no copy is written or read.
///
/// Written as `readelf -n` shows it, two lowercase hex digits a byte, by hand: a map to
/// `String(_:radix:)` and `joined(separator:)` went through the generic code of both and the
/// runtime's first look-up of their types, 159,000 instructions of a cold start's 1.79 M.
enum BuildIdentity {
    static let current: String? = {
        let capacity = 64
        let id = UnsafeMutablePointer<UInt8>.allocate(capacity: capacity)
        defer { id.deallocate() }
        let n = Int(ccint_platform_build_id(#dsohandle, id, capacity))
        guard n > 0 && n <= capacity else { return nil }
        return String(unsafeUninitializedCapacity: 2 * n) { out in
            func digit(_ v: UInt8) -> UInt8 { v < 10 ? UInt8(ascii: "0") + v : UInt8(ascii: "a") + v - 10 }
            for i in 0..<n {
                out[2 * i] = digit(id[i] >> 4)
                out[2 * i + 1] = digit(id[i] & 15)
            }
            return 2 * n
        }
    }()
}
