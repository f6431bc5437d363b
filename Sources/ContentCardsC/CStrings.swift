import ContentCards
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

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
