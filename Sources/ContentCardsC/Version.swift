import CContentCardsABI
import ContentCards
// Version entry points. The numbers come from the header's macros, so they cannot drift.

/// The version string: a static string, never freed by the caller.
@_cdecl("cc_version")
public func cc_version() -> UnsafePointer<CChar>? {
    StaticCString.version
}

/// CC_ABI_VERSION of the library actually loaded.
@_cdecl("cc_abi_version")
public func cc_abi_version() -> Int32 {
    CC_ABI_VERSION
}

enum StaticCString {
    static let version = pointer(CC_VERSION_STRING)

    /// A C string that lives as long as the process (made once; the library never frees it).
    static func pointer(_ s: String) -> UnsafePointer<CChar>? {
        UnsafePointer(strdup(s))
    }
}
