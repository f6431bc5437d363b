import ContentCards

// cc_config_*: a configuration built key by key, its JSON written by the library, so that a C
// program never pastes a value (a path, a user id, a key) into JSON text itself
// (docs/C-API.md, "Building a configuration").

/// A configuration under construction: the members of a JSON object, in the order they were
/// first set. A value is held as what it is (a string, a number, a boolean, an array of
/// strings), so nothing a caller passes can end a string or add a key.
final class ConfigBuilder: @unchecked Sendable {
    typealias Members = [(key: String, value: JSONValue)]

    /// The deepest key accepted: the configuration parser reads 16 levels of nesting.
    static let maxParts = 16

    private let lock = Lock()
    private var members: Members = []

    /// Sets the value at a dotted key, making the objects on the way.
    func set(_ key: String, _ value: JSONValue) throws(ContentCardsError) {
        let path = try Self.parts(of: key)
        try lock.withLock { () throws(ContentCardsError) in
            members = try Self.setting(members, path[...], key) { _ throws(ContentCardsError) in value }
        }
    }

    /// Appends a string to the array at a dotted key, made when absent.
    func append(_ key: String, _ item: String) throws(ContentCardsError) {
        let path = try Self.parts(of: key)
        try lock.withLock { () throws(ContentCardsError) in
            members = try Self.setting(members, path[...], key) { old throws(ContentCardsError) in
                switch old {
                case nil: return .array([.string(item)])
                case .array(let items)?: return .array(items + [.string(item)])
                case let other?:
                    throw ContentCardsError(.invalidArgument, "cannot append to \(Redact.quoted(key)): it is set to \(other.typeName), not an array")
                }
            }
        }
    }

    /// The compact JSON of the configuration.
    var json: String {
        lock.withLock { JSONValue.object(members).jsonText }
    }

    /// The parts of a dotted key; the first must be a configuration key (the parser's own
    /// message names an unknown one and its near miss).
    static func parts(of key: String) throws(ContentCardsError) -> [String] {
        let parts = key.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        guard !parts.contains(where: \.isEmpty) else {
            throw ContentCardsError(.invalidArgument, "key \(Redact.quoted(key)) has an empty part (a key is names joined by dots, such as \"source.file\")")
        }
        guard parts.count <= maxParts else {
            throw ContentCardsError(.invalidArgument, "key \(Redact.quoted(key)) has more than \(maxParts) parts")
        }
        do {
            // A known key set to null is every default: only an unknown key fails.
            _ = try ConfigurationJSON.decode(.object([(key: parts[0], value: .null)]))
        } catch {
            throw ContentCardsError(.config, error.message)
        }
        return parts
    }

    /// `members` with the value at `path` replaced by `update(old value)`.
    private static func setting(_ members: Members, _ path: ArraySlice<String>, _ key: String,
                                _ update: (JSONValue?) throws(ContentCardsError) -> JSONValue) throws(ContentCardsError) -> Members {
        var members = members
        let name = path[path.startIndex]
        let at = members.lastIndex { $0.key == name }
        let old = at.map { members[$0].value }
        let new: JSONValue
        if path.count == 1 {
            new = try update(old)
        } else {
            var inner: Members = []
            switch old {
            case nil: break
            case .object(let existing)?: inner = existing
            case let other?:
                // path is a slice of the key's parts: its start is this part's index.
                let prefix = key.split(separator: ".", omittingEmptySubsequences: false)
                    .prefix(path.startIndex + 1).joined(separator: ".")
                throw ContentCardsError(.invalidArgument, "cannot set \(Redact.quoted(key)): \(Redact.quoted(prefix)) is set to \(other.typeName), not an object")
            }
            new = .object(try setting(inner, path.dropFirst(), key, update))
        }
        if let at { members[at].value = new } else { members.append((key: name, value: new)) }
        return members
    }
}

extension Handles {
    static let configs = HandleTable<ConfigBuilder>(tag: 0xC3, kind: "configuration")
}

/// A number as JSON: a whole number without a fraction, else the shortest text that reads back
/// as the same double.
private func jsonNumber(_ value: Double, _ key: String) throws(ContentCardsError) -> JSONValue {
    guard value.isFinite else {
        throw ContentCardsError(.invalidArgument, "the value of \"\(key)\" is \(value.isNaN ? "NaN" : "infinite"): JSON has finite numbers only")
    }
    if value == value.rounded(.towardZero) && abs(value) < 9_007_199_254_740_992 {
        return .number(String(Int64(value)))
    }
    return .number(value.description)
}

@_cdecl("cc_config_new")
public func cc_config_new(_ out: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    entry { () throws(ContentCardsError) in
        let out = try CStrings.requireOutput(out, "out")
        out.pointee = try Handles.configs.insert(ConfigBuilder())
    }
}

@_cdecl("cc_config_set_string")
public func cc_config_set_string(_ config: OpaquePointer?, _ key: UnsafePointer<CChar>?, _ value: UnsafePointer<CChar>?) -> Int32 {
    entry { () throws(ContentCardsError) in
        let builder = try Handles.configs.get(config)
        let name = try CStrings.required(key, "key")
        guard let value else { throw ContentCardsError(.invalidArgument, "the value of \"\(name)\" is NULL") }
        guard let text = String(validatingCString: value) else {
            throw ContentCardsError(.invalidArgument, "the value of \"\(name)\" is not valid UTF-8 (the configuration is JSON, which holds text only: a file name in another encoding cannot be given)")
        }
        try builder.set(name, .string(text))
    }
}

@_cdecl("cc_config_set_number")
public func cc_config_set_number(_ config: OpaquePointer?, _ key: UnsafePointer<CChar>?, _ value: Double) -> Int32 {
    entry { () throws(ContentCardsError) in
        let builder = try Handles.configs.get(config)
        let name = try CStrings.required(key, "key")
        try builder.set(name, try jsonNumber(value, name))
    }
}

@_cdecl("cc_config_set_bool")
public func cc_config_set_bool(_ config: OpaquePointer?, _ key: UnsafePointer<CChar>?, _ value: Int32) -> Int32 {
    entry { () throws(ContentCardsError) in
        let builder = try Handles.configs.get(config)
        try builder.set(try CStrings.required(key, "key"), .bool(value != 0))
    }
}

@_cdecl("cc_config_append_string")
public func cc_config_append_string(_ config: OpaquePointer?, _ key: UnsafePointer<CChar>?, _ value: UnsafePointer<CChar>?) -> Int32 {
    entry { () throws(ContentCardsError) in
        let builder = try Handles.configs.get(config)
        let name = try CStrings.required(key, "key")
        guard let value else { throw ContentCardsError(.invalidArgument, "the value appended to \"\(name)\" is NULL") }
        guard let text = String(validatingCString: value) else {
            throw ContentCardsError(.invalidArgument, "the value appended to \"\(name)\" is not valid UTF-8")
        }
        try builder.append(name, text)
    }
}

@_cdecl("cc_config_json")
public func cc_config_json(_ outJSON: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?, _ config: OpaquePointer?) -> Int32 {
    entry { () throws(ContentCardsError) in
        let out = try CStrings.requireOutput(outJSON, "out_json")
        out.pointee = try CStrings.copy(try Handles.configs.get(config).json)
    }
}

@_cdecl("cc_config_close")
public func cc_config_close(_ config: OpaquePointer?) -> Int32 {
    entry { () throws(ContentCardsError) in
        _ = try Handles.configs.remove(config)
    }
}
