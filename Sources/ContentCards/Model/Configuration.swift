/// A controller's configuration (README.md, "Configuration"). Every field has a default that works on a fresh
/// machine: no storage path keeps everything in memory, no source makes refresh report that
/// there is nothing to refresh from, no event sink keeps events until they are flushed.
public struct Configuration: Equatable, Sendable {
    /// Where a refresh asks for cards (`source`), or where events are delivered (`events`).
    public enum Endpoint: Equatable, Sendable {
        /// A file: a payload read on each refresh (a sync response or a bare array of cards), or
        /// events appended as JSON lines.
        case file(path: String)
        /// An HTTP endpoint: `{base}/content_cards/sync` or `{base}/events` (docs/WIRE.md).
        case url(base: String, apiKey: String)
        /// The host's own transport (a callback or a Swift closure) sends the request.
        case callback
    }

    public typealias Source = Endpoint
    public typealias EventSink = Endpoint

    public var userID: String = ""
    public var storagePath: String? = nil
    public var source: Source? = nil
    public var events: EventSink? = nil
    public var refreshTokens: Int = 5
    public var refreshIntervalSeconds: Double = 180
    public var timeoutSeconds: Double = 10
    public var knownClassTypes: Set<String>? = nil
    public var maxPayloadBytes: Int = 16 << 20
    /// Sent as `device_id` in sync requests. (An extension: docs/BEHAVIOUR.md, "Departures".)
    public var deviceID: String = ""
    /// Events a delivery batch holds at most. (Extension.)
    public var eventBatchSize: Int = 100
    /// Bytes a delivery batch holds at most (one event larger than this is sent alone). (Extension.)
    public var eventBatchBytes: Int = 256 << 10
    /// Seconds after an event is logged before delivery starts on its own; 0 delivers only when
    /// the application flushes. (Extension.)
    public var eventFlushIntervalSeconds: Double = 30
    /// At open (and at a user change), refresh in the background when the user's last sync is
    /// older than this many seconds, or there was none; nil: never on its own. (Extension:
    /// docs/BEHAVIOUR.md, "Automatic refresh".)
    public var refreshOnOpenAfterSeconds: Double? = nil
    /// Refresh in the background every this many seconds, give or take `refreshPeriodJitter`;
    /// 0: never on its own. (Extension.)
    public var refreshPeriodSeconds: Double = 0
    /// The spread of the periodic refresh, as a fraction of the period (0 to 1): each wait is
    /// uniform in period × (1 ± jitter), so devices that started together drift apart.
    public var refreshPeriodJitter: Double = 0.2
    /// Retries (automatic refreshes and event delivery) wait a uniformly random time between 0
    /// and min(retryMaxSeconds, retryBaseSeconds × 2^(failures − 1)): exponential backoff with
    /// full jitter; a server's Retry-After is waited first. (Extension.)
    public var retryBaseSeconds: Double = 1
    public var retryMaxSeconds: Double = 300

    /// The hint stream (`"source": {"url": BASE, "hints": true}`, docs/WIRE.md, "Hint stream");
    /// nil: no stream (hints may still be handed in with `hint`).
    public var hints: Hints? = nil

    /// How the hint stream is kept.
    public struct Hints: Equatable, Sendable {
        /// A stream that brings not a byte (not even a keepalive) for this long is reconnected.
        /// The reference server sends a keepalive every 15 s.
        public var idleSeconds: Double = 45
        /// Reconnections wait at most this long (exponential backoff with full jitter from the
        /// server's `retry`); 1 or more.
        public var retryMaxSeconds: Double = 30
        /// How long a stream must stay open, from its first byte, to count as a success (the
        /// backoff starts again). Not configurable: the tests shorten it.
        var lastingSeconds: Double = 10
        public init() {}
    }

    /// The image cache (docs/BEHAVIOUR.md, "Images"); nil: no images are fetched.
    public var images: Images? = nil

    /// Bounds of the on-disk image cache of each user.
    public struct Images: Equatable, Sendable {
        /// Bytes the cache of one user holds at most; the least recently used go first.
        public var maxBytes: Int = 50 << 20
        /// Images the cache of one user holds at most, and fetched per refresh at most.
        public var maxCount: Int = 200
        /// One image larger than this is not kept (its fetch fails).
        public var maxImageBytes: Int = 5 << 20
        public init() {}
    }

    public init() {}
}

extension Configuration {
    /// This configuration with its relative paths (the storage path, a file source or event
    /// sink) made absolute against the working directory of now (Files.absolute): a controller
    /// keeps the paths it was opened with whatever the host's working directory becomes.
    package func resolvingRelativePaths() throws(Files.Failure) -> Configuration {
        var c = self
        if let path = storagePath { c.storagePath = try Files.absolute(path) }
        if case .file(let path)? = source { c.source = .file(path: try Files.absolute(path)) }
        if case .file(let path)? = events { c.events = .file(path: try Files.absolute(path)) }
        return c
    }
}
