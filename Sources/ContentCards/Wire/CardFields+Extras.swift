/// The card's extras: its `class_type`, and the members in key order for the body (the last of
/// equal keys wins, as in a dictionary).
extension CardFields {
    /// The raw `class_type` extra (the last one, as in a dictionary).
    func classTypeValue() -> String? {
        switch extras {
        case .absent, .wrongType: return nil
        case .object(let map): return map[ClassType.extrasKey]
        case .entries:
            return classTypeEntryValue().map(string)
        }
    }

    /// The card's class type, normalized (`ClassType.normalize`), then mapped to `""` when
    /// `known` does not hold it. A payload holds a handful of class types over thousands of
    /// cards: one met before, as a text without escapes, is found by its raw bytes in
    /// `classTypes` instead of being made into a `String` and normalized again (520
    /// instructions a card).
    mutating func normalizedClassType(known: Set<String>?) -> String {
        guard case .entries = extras, let value = classTypeEntryValue(), value.kind == .span, value.plain else {
            return ClassType.normalize(classTypeValue() ?? "", known: known)
        }
        let raw = bytes(value)
        let normalized: String
        if let kept = classTypes.find(raw) {
            normalized = kept
        } else {
            normalized = ClassType.normalize(string(value))
            classTypes.keep(raw, normalized)
        }
        guard let known else { return normalized }
        return known.contains(normalized) ? normalized : ""
    }

    /// The value of the last `class_type` member of the extras read from the stream.
    func classTypeEntryValue() -> Field? {
        if extrasSummary.valid { return extrasSummary.classType >= 0 ? entries[extrasSummary.classType].value : nil }
        for entry in entries.reversed() where isClassTypeKey(entry.key) { return entry.value }
        return nil
    }

    func isClassTypeKey(_ key: Field) -> Bool {
        guard key.kind == .span else { return string(key) == ClassType.extrasKey }
        return bytes(key).bytesEqual("class_type")    // ClassType.extrasKey
    }

    /// Puts `entries` in key order in `order`, keeping the last of equal keys, when every key
    /// is ASCII without escapes (then byte order is the order of Swift's `<` on the keys);
    /// false otherwise, and the extras go through a dictionary as any others.
    mutating func sortEntries() -> Bool {
        guard case .entries = extras else { return false }
        var ascending = true
        if extrasSummary.valid {
            // What the one-pass reader found as it read them.
            guard extrasSummary.asciiKeys else { return false }
            ascending = extrasSummary.inKeyOrder
        } else {
            // Checked and compared in one pass over the entries.
            let allSpans = entries.withUnsafeBufferPointer { all in
                for i in all.indices {
                    let key = all[i].key
                    guard key.kind == .span, key.ascii else { return false }
                    if ascending && i > 0 && Self.compareKeys(all[i - 1].key, key, in: source) >= 0 { ascending = false }
                }
                return true
            }
            guard allSpans else { return false }
        }
        // Already strictly ascending (servers often send them so): nothing to sort or drop.
        inKeyOrder = ascending
        if ascending { return true }
        order.removeAll(keepingCapacity: true)
        order.append(contentsOf: entries.indices)
        let input = source
        // Sorted and thinned in the array's own memory: through the array, each write checked
        // its uniqueness (2,000 instructions a card whose extras came out of order).
        let kept = entries.withUnsafeBufferPointer { all in
            order.withUnsafeMutableBufferPointer { order in
                Self.sortKeys(all, &order, in: input)
            }
        }
        order.removeLast(order.count - kept)
        return true
    }

    /// Puts the indices in `order` (every index of `all`) in key order, and keeps the last
    /// of equal keys at the front; how many are kept.
    private static func sortKeys(_ all: UnsafeBufferPointer<Entry>, _ order: inout UnsafeMutableBufferPointer<Int>,
                                 in source: UnsafeBufferPointer<UInt8>) -> Int {
        @inline(__always) func compare(_ a: Int, _ b: Int) -> Int { compareKeys(all[a].key, all[b].key, in: source) }
        if order.count <= 16 {
            // Insertion sort: a card has a handful of extras. Equal keys stay in input order.
            var i = 1
            while i < order.count {
                let x = order[i]
                var j = i - 1
                while j >= 0 && compare(order[j], x) > 0 {
                    order[j + 1] = order[j]
                    j -= 1
                }
                order[j + 1] = x
                i += 1
            }
        } else {
            // A payload may hold a card with a million extras: O(n log n), equal keys in input
            // order (the index breaks the tie).
            order.sort { a, b in
                let c = compare(a, b)
                return c != 0 ? c < 0 : a < b
            }
        }
        // Of equal keys, the last one read wins.
        var kept = 0
        for k in 0..<order.count {
            if k + 1 < order.count && compare(order[k], order[k + 1]) == 0 { continue }
            order[kept] = order[k]
            kept += 1
        }
        return kept
    }

    /// How many entries the body's extras hold, and the `n`th of them in key order (after
    /// `sortEntries` returned true).
    var keyOrderCount: Int { inKeyOrder ? entries.count : order.count }

    @inline(__always)
    func keyOrderIndex(_ n: Int) -> Int { inKeyOrder ? n : order[n] }

    /// Byte order of two keys read as spans of `source`. A static function of the fields and
    /// the input, not a method: a method called in a loop of a mutating one was handed a
    /// copy of all the fields (a retain of each of their arrays a call).
    static func compareKeys(_ a: Field, _ b: Field, in source: UnsafeBufferPointer<UInt8>) -> Int {
        // This runs in the sort of every card's extras. Keys of up to 8 bytes with 8 bytes to
        // load (most) compare as big-endian words, without a call to `memcmp`.
        let p = UnsafeBufferPointer(rebasing: source[a.start..<a.end]), q = UnsafeBufferPointer(rebasing: source[b.start..<b.end])
        if p.count <= 8, q.count <= 8, let x = prefixWord(p, in: source), let y = prefixWord(q, in: source) {
            if x != y { return x < y ? -1 : 1 }
            return p.count - q.count
        }
        return p.bytesCompare(q)
    }

    /// The key's bytes as a big-endian word, padded with zero bytes: word order is then byte
    /// order, and a key comes before its extensions (a key read as a span holds no zero
    /// byte, which JSON text cannot carry unescaped). Nil when the 8 bytes from the key's
    /// start are not all inside `source`.
    @inline(__always)
    static func prefixWord(_ key: UnsafeBufferPointer<UInt8>, in source: UnsafeBufferPointer<UInt8>) -> UInt64? {
        guard let start = key.baseAddress, let base = source.baseAddress, start + 8 <= base + source.count else { return nil }
        let word = UInt64(bigEndian: UnsafeRawPointer(start).loadUnaligned(as: UInt64.self))
        return word & ~(UInt64.max >> UInt64(key.count * 8))     // `>>` by 64 gives 0: a key of 8 bytes keeps all
    }

    func writeExtras(sorted: Bool, to w: inout JSONWriter) {
        switch extras {
        case .absent, .wrongType:
            w.raw("{}")
        case .object(let map):
            CardBody.write(extras: map, to: &w)
        case .entries where sorted:
            w.raw(0x7B)
            for n in 0..<keyOrderCount {
                let i = keyOrderIndex(n)
                if n > 0 { w.raw(0x2C) }
                let entry = entries[i]
                if entry.key.plain { w.rawString(plain: bytes(entry.key)) } else { w.rawString(utf8: bytes(entry.key)) }
                w.raw(0x3A)
                let v = entry.value
                if v.kind == .string {
                    w.rawString(strings[v.start])
                } else if v.plain {
                    w.rawString(plain: bytes(v))
                } else {
                    w.rawString(utf8: bytes(v))
                }
            }
            w.raw(0x7D)
        case .entries:
            var map = [String: String](minimumCapacity: entries.count)
            for entry in entries { map[string(entry.key)] = string(entry.value) }
            CardBody.write(extras: map, to: &w)
        }
    }
}

/// Raw class-type texts and their normalized `String`s (before the known class types are
/// applied, which may differ from call to call), at most `capacity` of them: past that, a
/// payload of many class types normalizes the others each time, as before.
struct ClassTypeMemo {
    static let capacity = 16
    private var raws: [[UInt8]] = []
    private var values: [String] = []

    func find(_ raw: UnsafeBufferPointer<UInt8>) -> String? {
        for (i, kept) in raws.enumerated() where kept.count == raw.count {
            if kept.withUnsafeBufferPointer({ $0.bytesEqual(raw) }) { return values[i] }
        }
        return nil
    }

    mutating func keep(_ raw: UnsafeBufferPointer<UInt8>, _ value: String) {
        guard raws.count < Self.capacity else { return }
        raws.append(Array(raw))
        values.append(value)
    }
}
