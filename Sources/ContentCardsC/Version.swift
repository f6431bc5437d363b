// Version entry points. Static strings: never freed by the caller.

/// The library's version; keep in step with CC_VERSION_* in include/contentcards.h.
enum LibraryVersion {
    static let major: Int32 = 0
    static let minor: Int32 = 1
    static let patch: Int32 = 0
    /// The ABI version: the number in the SONAME (libcontentcards.so.1).
    static let abi: Int32 = 1
    static let string: StaticString = "0.1.0"
}

/// Returns the version as a static, NUL-terminated string ("0.1.0"); never free it.
@_cdecl("cc_version")
public func cc_version() -> UnsafePointer<CChar> {
    UnsafeRawPointer(LibraryVersion.string.utf8Start).assumingMemoryBound(to: CChar.self)
}

/// Returns CC_ABI_VERSION of the library actually loaded.
@_cdecl("cc_abi_version")
public func cc_abi_version() -> Int32 {
    LibraryVersion.abi
}
