/// The library's one error type: a stable code (the same numbers as the C ABI's `CC_E_*`) and a
/// message for people.
public struct ContentCardsError: Error, Equatable, CustomStringConvertible, Sendable {
    public enum Code: Int32, Sendable, CaseIterable {
        case invalidArgument = -1
        case invalidHandle = -2
        case config = -3
        case parse = -4
        case notFound = -5
        case refused = -6
        case rateLimited = -7
        case network = -8
        case timeout = -9
        case server = -10
        case storage = -11
        case noSource = -12
        case unavailable = -13
        case wrongUser = -14
        case transport = -15
        case noMemory = -16
        case closed = -17
        /// A file source that cannot be read (missing, unreadable, not a regular file): a
        /// local problem, not the network.
        case sourceFile = -18
        /// No usable per-user token: the token provider failed, did not answer in time or gave
        /// a token that cannot go in a header, or the server refused the token (401) again
        /// after the one retry with a new one.
        case auth = -19
        case `internal` = -99

        /// The status name of the C header: "CC_E_NOT_FOUND".
        public var statusName: String { "CC_E_" + name.uppercased() }

        /// A short stable name: "not_found".
        public var name: String {
            switch self {
            case .invalidArgument: return "invalid_argument"
            case .invalidHandle: return "invalid_handle"
            case .config: return "config"
            case .parse: return "parse"
            case .notFound: return "not_found"
            case .refused: return "refused"
            case .rateLimited: return "rate_limited"
            case .network: return "network"
            case .timeout: return "timeout"
            case .server: return "server"
            case .storage: return "storage"
            case .noSource: return "no_source"
            case .unavailable: return "unavailable"
            case .wrongUser: return "wrong_user"
            case .transport: return "transport"
            case .noMemory: return "no_memory"
            case .closed: return "closed"
            case .sourceFile: return "source_file"
            case .auth: return "auth"
            case .internal: return "internal"
            }
        }
    }

    public let code: Code
    public let message: String
    /// For `.rateLimited` and server answers with `Retry-After`: seconds until a retry may work.
    public let retryAfter: Double?

    public init(_ code: Code, _ message: String, retryAfter: Double? = nil) {
        self.code = code; self.message = message; self.retryAfter = retryAfter
    }

    public var description: String { message }
}
