/// User ids compared byte for byte, as card ids are (`CardKey`).
///
/// Swift's `==` on strings is canonical equivalence: "é" (U+00E9) and "e" + U+0301 would be one
/// user to it, while SQLite, the server and C callers see two. Every comparison of user ids
/// and every map keyed by one goes through here, so a change between two such users is a
/// change, a forget of one is not a forget of the other, and an event batch or a token is
/// never shared between them.
typealias UserKey = CardKey

/// The same user id, byte for byte.
@inline(__always)
func sameUser(_ a: String, _ b: String) -> Bool { CardKey.bytewiseCompare(a, b) == 0 }

/// The same user id, byte for byte; nil is no user, equal only to nil.
@inline(__always)
func sameUser(_ a: String?, _ b: String?) -> Bool {
    switch (a, b) {
    case let (x?, y?): return sameUser(x, y)
    case (nil, nil): return true
    default: return false
    }
}
