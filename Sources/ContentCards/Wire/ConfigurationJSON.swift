/// Reads a `Configuration` from JSON. Every key is optional; an unknown key, or a value of the
/// wrong type or out of range, is an error that names the key, so a typo is never ignored.
package enum ConfigurationJSON {
    /// The keys, in a list: a configuration names a few, each found by comparing; a `Set` was
    /// hashed whole (all nineteen) at the first open of a process, 1% of a cold start's
    /// instructions.
    package static let keys: [String] = [
        "userId", "storagePath", "source", "events", "refreshTokens", "refreshIntervalSeconds",
        "timeoutSeconds", "knownClassTypes", "maxPayloadBytes", "deviceId", "eventBatchSize",
        "eventBatchBytes", "eventFlushIntervalSeconds", "images", "refreshOnOpenAfterSeconds",
        "refreshPeriodSeconds", "refreshPeriodJitter", "retryBaseSeconds", "retryMaxSeconds",
    ]

    /// The largest payload limit accepted (1 GiB): a bound, so a typo cannot ask for 1 TB.
    package static let maxPayloadLimit = 1 << 30
    /// The longest configuration text taken (nested 16 levels at most).
    static let maxTextBytes = 1 << 20

    package static func decode(_ text: String) throws(ConfigurationError) -> Configuration {
        if text.utf8.allSatisfy({ $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }) { return Configuration() }
        // Bounds of a configuration's text (docs/WIRE.md, "Limits"), said as such: the reader's
        // own words spoke of a payload.
        if text.utf8.count > maxTextBytes {
            throw ConfigurationError("configuration is \(text.utf8.count) bytes, over the limit of \(maxTextBytes) (1 MiB)")
        }
        let root: JSONValue
        do { root = try JSONReader.parse(text, limits: .init(maxBytes: maxTextBytes, maxDepth: 16)) } catch {
            throw ConfigurationError("configuration is not valid JSON: \(error)")
        }
        return try decode(root)
    }

    package static func decode(_ root: JSONValue) throws(ConfigurationError) -> Configuration {
        guard case .object(let members) = root else {
            throw ConfigurationError("configuration is \(root.typeName), expected an object")
        }
        var c = Configuration()
        for (key, value) in members {
            guard keys.contains(key) else {
                throw ConfigurationError("unknown configuration key \(Redact.quoted(key))\(suggestion(for: key, in: keys))")
            }
            if value == .null { continue }
            switch key {
            case "userId": c.userID = try noNUL(value, key)
            case "storagePath":
                let path = try noNUL(value, key)
                guard !path.isEmpty else { throw ConfigurationError("\"storagePath\" must not be empty (leave it out to keep the store in memory)") }
                c.storagePath = path
            case "source":
                c.source = try endpoint(value, "source")
                c.hints = try hints(value)
            case "events": c.events = try endpoint(value, "events")
            case "refreshTokens": c.refreshTokens = try int(value, key, min: 0, max: 1_000_000)
            case "refreshIntervalSeconds": c.refreshIntervalSeconds = try seconds(value, key, allowZero: false)
            case "timeoutSeconds": c.timeoutSeconds = try seconds(value, key, allowZero: false)
            case "knownClassTypes":
                guard case .array(let items) = value else { throw wrongType(key, value, "an array of strings") }
                var known = Set<String>()
                for item in items {
                    guard let s = item.stringValue else { throw wrongType("knownClassTypes[]", item, "a string") }
                    known.insert(ClassType.normalize(s))
                }
                c.knownClassTypes = known
            case "maxPayloadBytes": c.maxPayloadBytes = try int(value, key, min: 1, max: maxPayloadLimit)
            case "deviceId": c.deviceID = try noNUL(value, key)
            case "eventBatchSize": c.eventBatchSize = try int(value, key, min: 1, max: 100_000)
            case "eventBatchBytes": c.eventBatchBytes = try int(value, key, min: 1024, max: maxPayloadLimit)
            case "eventFlushIntervalSeconds": c.eventFlushIntervalSeconds = try seconds(value, key, allowZero: true)
            case "images": c.images = try images(value)
            case "refreshOnOpenAfterSeconds": c.refreshOnOpenAfterSeconds = try seconds(value, key, allowZero: true)
            case "refreshPeriodSeconds": c.refreshPeriodSeconds = try seconds(value, key, allowZero: true)
            case "refreshPeriodJitter":
                guard let d = value.doubleValue else { throw wrongType(key, value, "a number from 0 to 1") }
                guard d >= 0 && d <= 1 else { throw ConfigurationError("\"\(key)\" is \(d), expected 0 to 1 (a fraction of the period)") }
                c.refreshPeriodJitter = d
            case "retryBaseSeconds": c.retryBaseSeconds = try seconds(value, key, allowZero: false)
            case "retryMaxSeconds": c.retryMaxSeconds = try seconds(value, key, allowZero: false)
            default: break
            }
        }
        // The rules across keys (and those every configuration keeps) are checked once, there.
        try ConfigurationRules.check(c)
        return c
    }

    /// `{"maxBytes": N, "maxCount": N, "maxImageBytes": N}`, each optional; `{}` for the defaults.
    private static func images(_ v: JSONValue) throws(ConfigurationError) -> Configuration.Images {
        _ = try object(v, "images", allowed: ["maxBytes", "maxCount", "maxImageBytes"])
        var images = Configuration.Images()
        if let n = v["maxBytes"], n != .null { images.maxBytes = try int(n, "images.maxBytes", min: 1024, max: 1 << 40) }
        if let n = v["maxCount"], n != .null { images.maxCount = try int(n, "images.maxCount", min: 1, max: 100_000) }
        if let n = v["maxImageBytes"], n != .null { images.maxImageBytes = try int(n, "images.maxImageBytes", min: 1, max: maxPayloadLimit) }
        return images
    }

    /// `source.hints`: true (the defaults), false or null (none), or `{"idleSeconds": S,
    /// "retryMaxSeconds": S}`; only with `source.url` (the stream is the server's).
    private static func hints(_ source: JSONValue) throws(ConfigurationError) -> Configuration.Hints? {
        guard let v = source["hints"], v != .null, v != .bool(false) else { return nil }
        guard source["url"] != nil else {
            throw ConfigurationError("\"source.hints\" goes only with \"source.url\": the hint stream is the server's (hand hints in with hint otherwise)")
        }
        var hints = Configuration.Hints()
        if v == .bool(true) { return hints }
        _ = try object(v, "source.hints", allowed: ["idleSeconds", "retryMaxSeconds"])
        if let n = v["idleSeconds"], n != .null { hints.idleSeconds = try seconds(n, "source.hints.idleSeconds", allowZero: false) }
        if let n = v["retryMaxSeconds"], n != .null { hints.retryMaxSeconds = try seconds(n, "source.hints.retryMaxSeconds", allowZero: false) }
        return hints
    }

    /// `{"file": PATH}`, `{"url": BASE, "apiKey": KEY}` or `{"callback": true}`, for `source`
    /// and `events` alike (`source` may also have `hints`).
    private static func endpoint(_ v: JSONValue, _ name: String) throws(ConfigurationError) -> Configuration.Endpoint {
        let members = try object(v, name, allowed: name == "source" ? ["file", "url", "apiKey", "callback", "hints"] : ["file", "url", "apiKey", "callback"])
        let kinds = members.filter { ["file", "url", "callback"].contains($0) }
        if v["hints"] != nil && v["url"] == nil && v["hints"] != .null && v["hints"] != .bool(false) {
            throw ConfigurationError("\"\(name).hints\" goes only with \"\(name).url\": the hint stream is the server's (hand hints in with hint otherwise)")
        }
        guard kinds.count == 1 else {
            throw ConfigurationError("\"\(name)\" needs exactly one of \"file\", \"url\" or \"callback\"")
        }
        if let url = v["url"] {
            var apiKey = ""
            if let key = v["apiKey"] {
                apiKey = try string(key, "\(name).apiKey")
                // It goes into an HTTP header: CR or LF would start a header of its own.
                if let c = Redact.controlCharacter(inHeaderValue: apiKey) {
                    throw ConfigurationError("\"\(name).apiKey\" must not contain control characters (it has U+\(hex4(c))): it goes into an HTTP header, where CR and LF would start another header")
                }
            }
            return .url(base: try httpURL(url, "\(name).url"), apiKey: apiKey)
        }
        if v["apiKey"] != nil { throw ConfigurationError("\"\(name).apiKey\" goes only with \"\(name).url\"") }
        if let path = v["file"] {
            let file = try nonEmpty(path, "\(name).file")
            // A path cut at a NUL by C names another file.
            guard !file.utf8.contains(0) else { throw ConfigurationError("\"\(name).file\" must not contain a NUL character") }
            return .file(path: file)
        }
        guard v["callback"] == .bool(true) else { throw ConfigurationError("\"\(name).callback\" must be true") }
        return .callback
    }

    private static func object(_ v: JSONValue, _ name: String, allowed: Set<String>) throws(ConfigurationError) -> [String] {
        guard case .object(let members) = v else { throw wrongType(name, v, "an object") }
        for m in members where !allowed.contains(m.key) {
            throw ConfigurationError("unknown configuration key \(Redact.quoted(name + "." + m.key))\(suggestion(for: m.key, in: allowed))")
        }
        return members.map(\.key)
    }

    private static func wrongType(_ key: String, _ v: JSONValue, _ expected: String) -> ConfigurationError {
        ConfigurationError("\"\(key)\" is \(v.typeName), expected \(expected)")
    }

    private static func string(_ v: JSONValue, _ key: String) throws(ConfigurationError) -> String {
        guard let s = v.stringValue else { throw wrongType(key, v, "a string") }
        return s
    }

    /// Ids go out through C strings, where a NUL would cut them short.
    private static func noNUL(_ v: JSONValue, _ key: String) throws(ConfigurationError) -> String {
        let s = try string(v, key)
        guard !s.utf8.contains(0) else { throw ConfigurationError("\"\(key)\" must not contain a NUL character") }
        return s
    }

    private static func nonEmpty(_ v: JSONValue, _ key: String) throws(ConfigurationError) -> String {
        let s = try string(v, key)
        guard !s.isEmpty else { throw ConfigurationError("\"\(key)\" must not be empty") }
        return s
    }

    private static func httpURL(_ v: JSONValue, _ key: String) throws(ConfigurationError) -> String {
        var s = try nonEmpty(v, key)
        let lower = s.lowercased()
        // Messages show the URL redacted: no user:password@, no secret query values.
        guard lower.hasPrefix("http://") || lower.hasPrefix("https://") else {
            throw ConfigurationError("\"\(key)\" must be an http:// or https:// URL, not \"\(Redact.url(s))\"")
        }
        if let bad = s.unicodeScalars.first(where: { $0.value <= 0x20 || $0.value == 0x7F }) {
            throw ConfigurationError("\"\(key)\" must not contain spaces or control characters (it has U+\(hex4(bad.value))): \"\(Redact.url(s))\"")
        }
        while s.hasSuffix("/") { s.removeLast() }
        return s
    }

    private static func hex4(_ v: UInt32) -> String {
        let h = String(v, radix: 16, uppercase: true)
        return String(repeating: "0", count: max(0, 4 - h.count)) + h
    }

    private static func int(_ v: JSONValue, _ key: String, min: Int, max: Int) throws(ConfigurationError) -> Int {
        guard let n = v.int64Value else { throw wrongType(key, v, "a whole number") }
        guard n >= min && n <= max else { throw ConfigurationError("\"\(key)\" is \(n), expected \(min) to \(max)") }
        return Int(n)
    }

    private static func seconds(_ v: JSONValue, _ key: String, allowZero: Bool) throws(ConfigurationError) -> Double {
        guard let d = v.doubleValue else { throw wrongType(key, v, "a number of seconds") }
        guard d >= 0, allowZero || d > 0, d <= 31_536_000 else {
            throw ConfigurationError("\"\(key)\" is \(d), expected \(allowZero ? "0" : "more than 0") to 31536000 seconds")
        }
        return d
    }

    /// " (did you mean \"userId\"?)" for a key one small edit away from a known one.
    static func suggestion(for key: String, in known: some Collection<String>) -> String {
        // No known key is within two edits of a long one; the distance to each would cost its
        // length times theirs (a megabyte key: seconds).
        guard key.utf8.count <= 64 else { return "" }
        let lower = key.lowercased()
        let best = known.map { ($0, editDistance(lower, $0.lowercased())) }.min { $0.1 < $1.1 || ($0.1 == $1.1 && $0.0 < $1.0) }
        guard let best, best.1 <= 2 else { return "" }
        return " (did you mean \"\(best.0)\"?)"
    }

    static func editDistance(_ a: String, _ b: String) -> Int {
        let a = Array(a.utf8), b = Array(b.utf8)
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var previous = Array(0...b.count)
        var current = [Int](repeating: 0, count: b.count + 1)
        for i in 1...a.count {
            current[0] = i
            for j in 1...b.count {
                current[j] = Swift.min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
            }
            swap(&previous, &current)
        }
        return previous[b.count]
    }
}

package struct ConfigurationError: Error, Equatable, CustomStringConvertible, Sendable {
    package let message: String
    package var description: String { message }
    package init(_ message: String) { self.message = message }
}
