/// Numbers with a few decimals (an aspect ratio, a price) written without Swift's general
/// shortest-form algorithm; the writer's `double` and `rawDouble` ask here first.
extension JSONWriter {
    /// `v` as `digits / 10^decimals` when that is its shortest round-trip form with at most
    /// six decimals and `v` is between 0.001 and 10^9 in size (an aspect ratio, a price):
    /// found in a few divisions, where `description` runs the general algorithm and makes a
    /// `String` (500 instructions a number, 2% of a sync). Nil for any other number.
    ///
    /// Why it is the same text: if a text m / 10^k (k ≤ 6) reads back as `|v|`, then `|v|` is
    /// within half a unit in the last place (at most 2^-24 below 10^9) of it, so `|v|·10^k`
    /// is within 0.06 of m, and within 0.13 once the product is rounded (a unit in its last
    /// place is at most 0.125 below 10^15): rounding it gives m. Whether m round-trips is
    /// then exact: `m / 10^k` is one correctly rounded division of two exact values, which
    /// is what reading the text back gives. The first k that round-trips has the fewest
    /// digits, and no other text of k decimals reads back as `|v|` (they are 10^-k apart,
    /// far more than a unit in the last place). So it is the shortest text and the only one
    /// of its length: `description`'s.
    static func fewDecimals(_ v: Double) -> (digits: UInt64, decimals: Int)? {
        let a = abs(v)
        guard a >= 0.001, a < 1e9 else { return nil }
        var scale = 1.0
        for k in 1...6 {
            scale *= 10
            let near = (a * scale).rounded()
            if near / scale == a { return (UInt64(near), k) }
        }
        return nil
    }
}
