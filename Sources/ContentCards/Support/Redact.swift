/// Text from outside (a server's answer, a configured URL) made safe to put into a message:
/// no credentials, no control characters, a bounded length.
package enum Redact {
    /// Query parameters whose values are secrets, by name (case-insensitive, also as a suffix:
    /// `api_key`, `access_token`).
    static let secretNames = ["key", "token", "secret", "password", "passwd", "pwd", "auth", "signature", "sig", "credential", "session"]

    /// A URL for a message: `user:password@` becomes `***@`, the values of query parameters
    /// named like a secret become `***`, control characters are escaped.
    static func url(_ url: String) -> String {
        var s = url
        // userinfo: between "//" and the first "@" before the path.
        if let scheme = s.firstRange(ofText: "://") {
            let authorityStart = scheme.upperBound
            let authorityEnd = s[authorityStart...].firstIndex(where: { $0 == "/" || $0 == "?" || $0 == "#" }) ?? s.endIndex
            if let at = s[authorityStart..<authorityEnd].lastIndex(of: "@") {
                s.replaceSubrange(authorityStart..<at, with: "***")
            }
        }
        if let q = s.firstIndex(of: "?") {
            let fragment = s[q...].firstIndex(of: "#") ?? s.endIndex
            let query = s[s.index(after: q)..<fragment]
            let redacted = query.split(separator: "&", omittingEmptySubsequences: false).map { pair -> String in
                guard let eq = pair.firstIndex(of: "=") else { return String(pair) }
                let name = pair[..<eq].lowercased()
                let secret = secretNames.contains { name == $0 || name.hasSuffix("_" + $0) || name.hasSuffix("-" + $0) || name.hasSuffix($0) }
                return secret ? String(pair[..<eq]) + "=***" : String(pair)
            }.joined(separator: "&")
            s.replaceSubrange(s.index(after: q)..<fragment, with: redacted)
        }
        return escape(s, limit: 300)
    }

    /// Text from outside (an id, a type, a user id, a configuration key) for a message:
    /// quoted, its control characters escaped, and cut at `limit` characters with its length
    /// in bytes after (such text can be megabytes long, and hold a NUL that would end the
    /// message at the C boundary).
    package static func quoted(_ text: String, limit: Int = 120) -> String {
        let cut = text.unicodeScalars.count > limit
        return "\"\(escape(text, limit: limit))\"" + (cut ? " (\(text.utf8.count) bytes)" : "")
    }

    /// `text` with control characters (C0, DEL, C1) written as `\u001b`, and cut to `limit`
    /// characters with "…" after.
    package static func escape(_ text: String, limit: Int) -> String {
        var out = ""
        var count = 0
        for scalar in text.unicodeScalars {
            if count >= limit { out += "…"; break }
            let v = scalar.value
            if v < 0x20 || v == 0x7F || (0x80...0x9F).contains(v) || v == 0x2028 || v == 0x2029 {
                let hex = String(v, radix: 16)
                out += "\\u" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex
            } else {
                out.unicodeScalars.append(scalar)
            }
            count += 1
        }
        return out
    }

    /// Bytes from a server (an error body): decoded as UTF-8 (invalid bytes become U+FFFD),
    /// escaped and bounded.
    static func serverText(_ bytes: [UInt8], limit: Int = 200) -> String {
        escape(String(decoding: bytes.prefix(limit * 4), as: UTF8.self), limit: limit)
    }

    /// The first control character of a header value (CR and LF would start a new header),
    /// or nil when there is none. Tab is allowed (RFC 9110 field values may hold it).
    static func controlCharacter(inHeaderValue value: String) -> UInt32? {
        for scalar in value.unicodeScalars {
            let v = scalar.value
            if (v < 0x20 && v != 0x09) || v == 0x7F { return v }
        }
        return nil
    }
}

extension Redact {
    /// `message` (a transport's text) with `url` and its credentials replaced by the redacted
    /// form, control characters escaped, bounded.
    static func scrub(_ message: String, url: String) -> String {
        var m = message
        let safe = Redact.url(url)
        if safe != url, !url.isEmpty { m = m.replacingAll(url, with: safe) }
        if let scheme = url.firstRange(ofText: "://") {
            let rest = url[scheme.upperBound...]
            let authority = rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
            if let at = authority.lastIndex(of: "@") {
                let userinfo = String(authority[..<at])
                if !userinfo.isEmpty { m = m.replacingAll(userinfo, with: "***") }
            }
        }
        return escape(m, limit: 400)
    }
}

extension StringProtocol {
    /// Where `target` first occurs, compared character by character as the standard
    /// library's `firstRange(of:)` does (an empty `target` is found at the start). That one is
    /// `_StringProcessing`'s, and using it linked the whole regular expression engine into
    /// libcontentcards: 0.9 MB of code and 2,600 relocations that every process loading the
    /// library paid for (docs/PERFORMANCE.md, "Cold start"). The texts here are messages.
    func firstRange(ofText target: String) -> Range<Index>? {
        var i = startIndex
        while true {
            var at = i, t = target.startIndex
            while t < target.endIndex && at < endIndex && self[at] == target[t] {
                formIndex(after: &at)
                target.formIndex(after: &t)
            }
            if t == target.endIndex { return i..<at }
            guard i < endIndex else { return nil }
            formIndex(after: &i)
        }
    }
}

extension String {
    /// Every occurrence of `target` replaced (no Foundation).
    func replacingAll(_ target: String, with replacement: String) -> String {
        guard !target.isEmpty else { return self }
        var out = ""
        var rest = self[...]
        while let r = rest.firstRange(ofText: target) {
            out += rest[..<r.lowerBound]
            out += replacement
            rest = rest[r.upperBound...]
        }
        out += rest
        return out
    }
}
