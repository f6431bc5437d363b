/// The rules every configuration must keep, however it was made: `ConfigurationJSON.decode`
/// checks each key as it reads it (with the key's own message) and then these; a
/// `Configuration` built in Swift is checked by these alone when a controller opens with it.
/// Without them a Swift caller could set a NaN timeout, which traps where it becomes an
/// integer (the transport's milliseconds), or sizes that are negative.
enum ConfigurationRules {
    static func check(_ c: Configuration) throws(ConfigurationError) {
        try text(c.userID, "userId")
        try text(c.deviceID, "deviceId")
        if let path = c.storagePath {
            guard !path.isEmpty else { throw ConfigurationError("\"storagePath\" must not be empty (leave it out to keep the store in memory)") }
            try text(path, "storagePath")
        }
        try endpoint(c.source, "source")
        try endpoint(c.events, "events")
        try whole(c.refreshTokens, "refreshTokens", 0, 1_000_000)
        try seconds(c.refreshIntervalSeconds, "refreshIntervalSeconds", allowZero: false)
        try seconds(c.timeoutSeconds, "timeoutSeconds", allowZero: false)
        try whole(c.maxPayloadBytes, "maxPayloadBytes", 1, ConfigurationJSON.maxPayloadLimit)
        try whole(c.eventBatchSize, "eventBatchSize", 1, 100_000)
        try whole(c.eventBatchBytes, "eventBatchBytes", 1024, ConfigurationJSON.maxPayloadLimit)
        try seconds(c.eventFlushIntervalSeconds, "eventFlushIntervalSeconds", allowZero: true)
        if let s = c.refreshOnOpenAfterSeconds { try seconds(s, "refreshOnOpenAfterSeconds", allowZero: true) }
        try seconds(c.refreshPeriodSeconds, "refreshPeriodSeconds", allowZero: true)
        guard c.refreshPeriodJitter >= 0 && c.refreshPeriodJitter <= 1 else {
            throw ConfigurationError("\"refreshPeriodJitter\" is \(c.refreshPeriodJitter), expected 0 to 1 (a fraction of the period)")
        }
        try seconds(c.retryBaseSeconds, "retryBaseSeconds", allowZero: false)
        try seconds(c.retryMaxSeconds, "retryMaxSeconds", allowZero: false)
        if c.retryMaxSeconds < c.retryBaseSeconds {
            throw ConfigurationError("\"retryMaxSeconds\" (\(c.retryMaxSeconds)) is less than \"retryBaseSeconds\" (\(c.retryBaseSeconds))")
        }
        if let h = c.hints {
            try seconds(h.idleSeconds, "source.hints.idleSeconds", allowZero: false)
            try seconds(h.retryMaxSeconds, "source.hints.retryMaxSeconds", allowZero: false)
            // Below a second, a stream refused at once would be made again many times a
            // second, for as long as the server refuses.
            if h.retryMaxSeconds < 1 {
                throw ConfigurationError("\"source.hints.retryMaxSeconds\" is \(h.retryMaxSeconds), expected 1 or more (the longest wait between two connections of the hint stream)")
            }
        }
        if let i = c.images {
            try whole(i.maxBytes, "images.maxBytes", 1024, 1 << 40)
            try whole(i.maxCount, "images.maxCount", 1, 100_000)
            try whole(i.maxImageBytes, "images.maxImageBytes", 1, ConfigurationJSON.maxPayloadLimit)
            if c.storagePath == nil {
                throw ConfigurationError("\"images\" needs \"storagePath\": the image cache is kept on disk beside the store")
            }
        }
    }

    /// Ids and paths go out through C strings, where a NUL would cut them short (a path cut
    /// there names another file).
    private static func text(_ s: String, _ key: String) throws(ConfigurationError) {
        guard !s.utf8.contains(0) else { throw ConfigurationError("\"\(key)\" must not contain a NUL character") }
    }

    private static func endpoint(_ e: Configuration.Endpoint?, _ name: String) throws(ConfigurationError) {
        switch e {
        case .file(let path)?:
            guard !path.isEmpty else { throw ConfigurationError("\"\(name).file\" must not be empty") }
            try text(path, "\(name).file")
        case .url(let base, let apiKey)?:
            let lower = base.lowercased()
            guard lower.hasPrefix("http://") || lower.hasPrefix("https://") else {
                throw ConfigurationError("\"\(name).url\" must be an http:// or https:// URL, not \"\(Redact.url(base))\"")
            }
            if base.unicodeScalars.contains(where: { $0.value <= 0x20 || $0.value == 0x7F }) {
                throw ConfigurationError("\"\(name).url\" must not contain spaces or control characters: \"\(Redact.url(base))\"")
            }
            if Redact.controlCharacter(inHeaderValue: apiKey) != nil {
                throw ConfigurationError("\"\(name).apiKey\" must not contain control characters: it goes into an HTTP header")
            }
        case .callback?, nil:
            break
        }
    }

    private static func whole(_ n: Int, _ key: String, _ min: Int, _ max: Int) throws(ConfigurationError) {
        guard n >= min && n <= max else { throw ConfigurationError("\"\(key)\" is \(n), expected \(min) to \(max)") }
    }

    /// NaN fails every comparison, so it is refused here too.
    private static func seconds(_ d: Double, _ key: String, allowZero: Bool) throws(ConfigurationError) {
        guard d >= 0, allowZero || d > 0, d <= 31_536_000 else {
            throw ConfigurationError("\"\(key)\" is \(d), expected \(allowZero ? "0" : "more than 0") to 31536000 seconds")
        }
    }
}
