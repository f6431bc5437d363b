import ContentCards
/// Strings across the boundary: in, validated UTF-8 copied into Swift; out, malloc'ed copies
/// the caller frees with cc_string_free.
enum CStrings {
    /// A required string argument.
    static func required(_ p: UnsafePointer<CChar>?, _ name: String) throws(ContentCardsError) -> String {
        guard let p else { throw ContentCardsError(.invalidArgument, "\(name) is NULL") }
        guard let s = String(validatingCString: p) else {
            throw ContentCardsError(.invalidArgument, "\(name) is not valid UTF-8")
        }
        return s
    }

    /// An optional string argument: NULL gives nil.
    static func optional(_ p: UnsafePointer<CChar>?, _ name: String) throws(ContentCardsError) -> String? {
        guard p != nil else { return nil }
        return try required(p, name)
    }

    /// A malloc'ed copy for a char ** output.
    static func copy(_ s: String) throws(ContentCardsError) -> UnsafeMutablePointer<CChar> {
        guard let p = strdup(s) else { throw ContentCardsError(.noMemory, "out of memory copying a result") }
        return p
    }

    /// A malloc'ed, NUL-terminated copy of UTF-8 bytes (the library's own JSON: valid UTF-8).
    static func copy(bytes: [UInt8]) throws(ContentCardsError) -> UnsafeMutablePointer<CChar> {
        try bytes.withUnsafeBufferPointer { buffer throws(ContentCardsError) in try copy(buffer) }
    }

    static func copy(_ bytes: UnsafeBufferPointer<UInt8>) throws(ContentCardsError) -> UnsafeMutablePointer<CChar> {
        guard let p = malloc(bytes.count + 1)?.assumingMemoryBound(to: CChar.self) else {
            throw ContentCardsError(.noMemory, "out of memory copying a result")
        }
        if let base = bytes.baseAddress { memcpy(p, base, bytes.count) }
        p[bytes.count] = 0
        return p
    }

    /// A string argument as its bytes, without copying: valid UTF-8 checked (mostly ASCII
    /// text goes eight bytes at a time), NULL refused. For large inputs (payloads), where
    /// making a String first cost as much as decoding them.
    static func requiredBytes(_ p: UnsafePointer<CChar>?, _ name: String) throws(ContentCardsError) -> UnsafeBufferPointer<UInt8> {
        guard let p else { throw ContentCardsError(.invalidArgument, "\(name) is NULL") }
        let bytes = UnsafeBufferPointer(start: UnsafeRawPointer(p).assumingMemoryBound(to: UInt8.self), count: strlen(p))
        guard UTF8Validation.isValid(bytes) else {
            throw ContentCardsError(.invalidArgument, "\(name) is not valid UTF-8")
        }
        return bytes
    }

    /// Writes `s` to an optional output; NULL outputs are skipped.
    static func output(_ out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?, _ s: @autoclosure () -> String) throws(ContentCardsError) {
        guard let out else { return }
        out.pointee = try copy(s())
    }

    /// Checks a required output pointer and sets it to NULL, so a failure leaves NULL behind.
    static func requireOutput<T>(_ out: UnsafeMutablePointer<T?>?, _ name: String) throws(ContentCardsError) -> UnsafeMutablePointer<T?> {
        guard let out else { throw ContentCardsError(.invalidArgument, "\(name) is NULL") }
        out.pointee = nil
        return out
    }
}

@_cdecl("cc_string_free")
public func cc_string_free(_ string: UnsafeMutablePointer<CChar>?) {
    free(string)
}
