/// The `Retry-After` header (RFC 9110 §10.2.3): `delay-seconds` (1*DIGIT) or an HTTP-date
/// (IMF-fixdate, and the obsolete RFC 850 and asctime forms, §5.6.7). Anything else is ignored:
/// no number prefix (`7abc`), no exponent (`1e999`), no sign, no fraction.
enum RetryAfter {
    /// The longest wait obeyed, and so the longest reported: a bad header cannot stop refresh
    /// or delivery for days.
    static let maxSeconds: Double = 3600

    /// Seconds to wait from `now` (unix seconds), or nil when the value is not valid. A date in
    /// the past is 0.
    static func parse(_ raw: String, now: Double) -> Double? {
        let value = raw.trimmingWhiteSpace()
        guard !value.isEmpty else { return nil }
        if value.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) {
            var seconds: Double = 0
            for d in value.utf8 {
                seconds = seconds * 10 + Double(d - 0x30)
                if seconds > 1e15 { return 1e15 }   // saturates: bounded later anyway
            }
            return seconds
        }
        guard let date = httpDate(value, now: now) else { return nil }
        return max(0, date - now)
    }

    /// A parsed value bounded for use: nil when absent or not a finite non-negative number,
    /// else at most `maxSeconds`. What a message reports is what is enforced.
    static func bounded(_ seconds: Double?) -> Double? {
        guard let seconds, seconds.isFinite, seconds >= 0 else { return nil }
        return min(seconds, maxSeconds)
    }

    private static let days = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]
    private static let longDays = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// Unix seconds of an HTTP-date, or nil.
    static func httpDate(_ s: String, now: Double) -> Double? {
        let b = Array(s.utf8)
        func str(_ r: Range<Int>) -> String? { r.upperBound <= b.count ? String(decoding: b[r], as: UTF8.self) : nil }
        func num(_ r: Range<Int>, space: Bool = false) -> Int? {
            guard r.upperBound <= b.count else { return nil }
            var n = 0, digits = 0
            for (i, c) in b[r].enumerated() {
                if c == 0x20 && space && i == 0 && r.count > 1 { continue }
                guard c >= 0x30 && c <= 0x39 else { return nil }
                n = n * 10 + Int(c - 0x30); digits += 1
            }
            return digits > 0 ? n : nil
        }
        func at(_ i: Int, _ c: Character) -> Bool { i < b.count && b[i] == c.asciiValue! }
        func month(_ r: Range<Int>) -> Int? { str(r).flatMap { months.firstIndex(of: $0) }.map { $0 + 1 } }
        func time(_ i: Int) -> (Int, Int, Int)? {
            guard let h = num(i..<i + 2), at(i + 2, ":"), let m = num(i + 3..<i + 5), at(i + 5, ":"),
                  let sec = num(i + 6..<i + 8) else { return nil }
            return (h, m, sec)
        }
        var year = 0, mon = 0, day = 0, hms = (0, 0, 0)
        if b.count == 29, let name = str(0..<3), days.contains(name), at(3, ","), at(4, " ") {
            // IMF-fixdate: Sun, 06 Nov 1994 08:49:37 GMT
            guard let d = num(5..<7), at(7, " "), let m = month(8..<11), at(11, " "), let y = num(12..<16),
                  at(16, " "), let t = time(17), at(25, " "), str(26..<29) == "GMT" else { return nil }
            (year, mon, day, hms) = (y, m, d, t)
        } else if b.count == 24, let name = str(0..<3), days.contains(name), at(3, " ") {
            // asctime: Sun Nov  6 08:49:37 1994
            guard let m = month(4..<7), at(7, " "), let d = num(8..<10, space: true), at(10, " "),
                  let t = time(11), at(19, " "), let y = num(20..<24) else { return nil }
            (year, mon, day, hms) = (y, m, d, t)
        } else if let comma = b.firstIndex(of: 0x2C), let name = str(0..<comma), longDays.contains(name),
                  b.count == comma + 24 {
            // RFC 850: Sunday, 06-Nov-94 08:49:37 GMT
            let i = comma + 2
            guard at(comma + 1, " "), let d = num(i..<i + 2), at(i + 2, "-"), let m = month(i + 3..<i + 6),
                  at(i + 6, "-"), let yy = num(i + 7..<i + 9), at(i + 9, " "), let t = time(i + 10),
                  at(i + 18, " "), str(i + 19..<i + 22) == "GMT" else { return nil }
            // A two-digit year more than 50 years in the future is the most recent past year
            // with those digits (RFC 9110 §5.6.7).
            let thisYear = Int((now / 31_556_952).rounded(.down)) + 1970
            var y = thisYear - thisYear % 100 + yy
            if y > thisYear + 50 { y -= 100 }
            (year, mon, day, hms) = (y, m, d, t)
        } else {
            return nil
        }
        let monthDays = [31, year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
        guard year >= 1970, day >= 1, day <= monthDays[mon - 1], hms.0 < 24, hms.1 < 60, hms.2 <= 60 else { return nil }
        return Double(daysFromCivil(year, mon, day)) * 86_400 + Double(hms.0 * 3600 + hms.1 * 60 + hms.2)
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
    static func daysFromCivil(_ y0: Int, _ m: Int, _ d: Int) -> Int {
        let y = m <= 2 ? y0 - 1 : y0
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }
}

extension String {
    /// Without leading and trailing spaces and tabs (HTTP's OWS).
    func trimmingWhiteSpace() -> String {
        let u = Array(utf8)
        var lo = 0, hi = u.count
        while lo < hi && (u[lo] == 0x20 || u[lo] == 0x09) { lo += 1 }
        while hi > lo && (u[hi - 1] == 0x20 || u[hi - 1] == 0x09) { hi -= 1 }
        return String(decoding: u[lo..<hi], as: UTF8.self)
    }
}
