/// Class types: how an application decides which of its own objects a card becomes.
///
/// The value comes from `extras["class_type"]`, trimmed and lower-cased, so that
/// `" Coupon_Code "` and `"coupon_code"` are the same class type. An application that declares
/// the class types it knows gets `""` for any other value, as an enum with a `none` case would.
public enum ClassType {
    /// The extras key that holds the class type.
    public static let extrasKey = "class_type"

    /// Trims ASCII and Unicode white space and lower-cases.
    public static func normalize(_ raw: String) -> String {
        // Nearly every class type is already plain lower-case ASCII: return it as it is.
        // (A loop over the contiguous bytes: the generic `allSatisfy` was 1% of a sync.)
        var copy = raw
        let plain = copy.withUTF8 { bytes in
            for b in bytes where !((b >= 0x61 && b <= 0x7A) || (b >= 0x30 && b <= 0x39) || b == 0x5F || b == 0x2D || b == 0x2E) {
                return false
            }
            return true
        }
        if plain { return raw }
        var scalars = Substring(raw).unicodeScalars[...]
        while let first = scalars.first, first.properties.isWhitespace { scalars.removeFirst() }
        while let last = scalars.last, last.properties.isWhitespace { scalars.removeLast() }
        return String(String.UnicodeScalarView(scalars)).lowercased()
    }

    /// Normalizes, then maps values outside `known` (already normalized) to `""`.
    public static func normalize(_ raw: String, known: Set<String>?) -> String {
        let value = normalize(raw)
        guard let known else { return value }
        return known.contains(value) ? value : ""
    }
}

/// A set of class types selecting cards. Empty selects every card; `""` selects cards that have
/// no class type.
public struct ClassTypeFilter: Hashable, Sendable {
    public let classTypes: Set<String>

    /// Every card.
    public static let all = ClassTypeFilter([])

    public init<S: Sequence>(_ classTypes: S) where S.Element == String {
        self.classTypes = Set(classTypes.map { ClassType.normalize($0) })
    }

    public var selectsAll: Bool { classTypes.isEmpty }

    public func matches(_ card: Card) -> Bool {
        classTypes.isEmpty || classTypes.contains(card.classType)
    }
}
