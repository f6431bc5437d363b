import Foundation
import Testing
@testable import ContentCards

@Suite struct ConfigurationTests {
    @Test func defaults() throws {
        let c = try ConfigurationJSON.decode("{}")
        #expect(c == Configuration())
        #expect(c.userID == "" && c.storagePath == nil && c.source == nil && c.events == nil)
        #expect(c.refreshTokens == 5 && c.refreshIntervalSeconds == 180 && c.timeoutSeconds == 10)
        #expect(c.maxPayloadBytes == 16 << 20 && c.knownClassTypes == nil)
        #expect(try ConfigurationJSON.decode("") == Configuration())
    }

    @Test func everyKey() throws {
        let c = try ConfigurationJSON.decode(#"""
        {"userId":"u-1","storagePath":"/tmp/x","source":{"url":"http://127.0.0.1:8080/","apiKey":"k"},
         "events":{"file":"/tmp/e.jsonl"},"refreshTokens":0,"refreshIntervalSeconds":1.5,"timeoutSeconds":2,
         "knownClassTypes":["Home_Tile"],"maxPayloadBytes":1000,"deviceId":"d","eventBatchSize":7,
         "eventBatchBytes":2048,"eventFlushIntervalSeconds":0}
        """#)
        #expect(c.userID == "u-1" && c.storagePath == "/tmp/x")
        #expect(c.source == .url(base: "http://127.0.0.1:8080", apiKey: "k"))
        #expect(c.events == .file(path: "/tmp/e.jsonl"))
        #expect(c.refreshTokens == 0 && c.refreshIntervalSeconds == 1.5 && c.timeoutSeconds == 2)
        #expect(c.knownClassTypes == ["home_tile"] && c.maxPayloadBytes == 1000 && c.deviceID == "d")
        #expect(c.eventBatchSize == 7 && c.eventBatchBytes == 2048 && c.eventFlushIntervalSeconds == 0)
        #expect(try ConfigurationJSON.decode(#"{"source":{"callback":true},"events":{"callback":true}}"#).source == .callback)
        #expect(try ConfigurationJSON.decode(#"{"source":{"file":"f.json"}}"#).source == .file(path: "f.json"))
    }

    @Test(arguments: [
        (#"{"userID":"x"}"#, #"unknown configuration key "userID" (did you mean "userId"?)"#),
        (#"{"refreshToken":3}"#, #"(did you mean "refreshTokens"?)"#),
        (#"{"colour":"red"}"#, #"unknown configuration key "colour""#),
        (#"{"source":{"file":"a","urll":"b"}}"#, #""source.urll""#),
        (#"{"source":{}}"#, "exactly one of"),
        (#"{"source":{"file":"a","url":"http://x"}}"#, "exactly one of"),
        (#"{"source":{"url":"ftp://x"}}"#, "http:// or https://"),
        (#"{"source":{"file":"a","apiKey":"k"}}"#, "apiKey"),
        (#"{"source":{"callback":false}}"#, "must be true"),
        (#"{"source":"file.json"}"#, "expected an object"),
        (#"{"refreshTokens":-1}"#, "expected 0 to"),
        (#"{"refreshTokens":1.5}"#, "whole number"),
        (#"{"timeoutSeconds":0}"#, "more than 0"),
        (#"{"userId":5}"#, "\"userId\" is a number, expected a string"),
        (#"{"knownClassTypes":[1]}"#, "knownClassTypes"),
        (#"{"maxPayloadBytes":0}"#, "maxPayloadBytes"),
        (#"{"storagePath":""}"#, "must not be empty"),
        ("[]", "expected an object"),
        ("{", "not valid JSON"),
    ])
    func badConfigurationsNameTheProblem(json: String, fragment: String) {
        do { _ = try ConfigurationJSON.decode(json); Issue.record("accepted \(json)") } catch {
            #expect(error.message.contains(fragment), "\(error.message)")
        }
    }

    /// Relative paths are made absolute at open (a host's later chdir moves nothing: the C and
    /// Python tests change directory; tests here run in parallel in one process, so this one
    /// only reaches a temporary directory by a relative path from the working directory).
    @Test func relativePathsAreResolvedAtOpen() throws {
        let dir = Fixtures.temporaryDirectory("cc-relative")
        defer { Fixtures.removeTree(dir) }
        let cwd = FileManager.default.currentDirectoryPath
        let up = String(repeating: "../", count: cwd.split(separator: "/").count)
        let relative: String = up + String(dir.dropFirst())   // from the working directory, through "/", to dir
        let absolute: String = cwd + "/" + relative
        var configuration = Configuration()
        configuration.storagePath = relative + "/store"
        configuration.source = .file(path: relative + "/feed.json")
        configuration.events = .file(path: relative + "/events.jsonl")
        let controller = try ContentCardsController(configuration: configuration)
        defer { controller.close() }
        let resolved = controller.configuration
        let feed: Configuration.Endpoint = .file(path: absolute + "/feed.json")
        let events: Configuration.Endpoint = .file(path: absolute + "/events.jsonl")
        #expect(resolved.storagePath == absolute + "/store")
        #expect(resolved.source == feed)
        #expect(resolved.events == events)
        #expect(try Configuration().resolvingRelativePaths() == Configuration())
        var given = Configuration()
        given.storagePath = dir + "/store"
        #expect(try given.resolvingRelativePaths() == given)
    }

    /// A `Configuration` built in Swift keeps the same rules as one read from JSON: a NaN
    /// timeout, a negative size, images without a storage path and a NUL in an id are refused
    /// with `config` at open. They were taken as they were, and the NaN timeout trapped in the
    /// image prefetch (where it became the transport's milliseconds).
    @Test func aSwiftConfigurationKeepsTheJSONRules() {
        let dir = Fixtures.temporaryDirectory("config-rules")
        defer { Fixtures.removeTree(dir) }
        var cases: [(String, (inout Configuration) -> Void)] = [
            ("timeoutSeconds", { $0.timeoutSeconds = .nan }),
            ("refreshPeriodJitter", { $0.refreshPeriodJitter = .nan }),
            ("eventBatchSize", { $0.eventBatchSize = -1 }),
            ("images.maxBytes", { $0.images = .init(); $0.images?.maxBytes = -5 }),
            ("userId", { $0.userID = "a\u{0}b" }),
            ("source.file", { $0.source = .file(path: "/srv/feed.json\u{0}.bak") }),
            ("source.url", { $0.source = .url(base: "ftp://example.com", apiKey: "") }),
        ]
        cases.append(("images", { $0.storagePath = nil; $0.images = .init() }))
        for (key, change) in cases {
            var c = Configuration()
            c.storagePath = dir
            change(&c)
            do { _ = try ContentCardsController(configuration: c); Issue.record("\(key): opened") } catch {
                #expect(error.code == .config && error.message.contains(key), "\(key): \(error)")
            }
        }
    }

    /// A NUL in a path is refused: C would read the path cut there, another file.
    @Test func aNulInAPathIsRefused() {
        for json in [#"{"storagePath":"/tmp/x\u0000y"}"#, #"{"source":{"file":"/srv/feed.json\u0000.bak"}}"#] {
            #expect(throws: ConfigurationError.self) { try ConfigurationJSON.decode(json) }
        }
    }

    /// A configuration over its 1 MiB said "payload is N bytes": a configuration is no payload.
    @Test func aConfigurationOverItsLimitSaysSo() {
        let json = #"{"userId":""# + String(repeating: "u", count: 1 << 20) + #""}"#
        do {
            _ = try ConfigurationJSON.decode(json)
            Issue.record("a 1 MiB configuration was taken")
        } catch {
            #expect(error.message.hasPrefix("configuration is \(json.utf8.count) bytes, over the limit of 1048576"))
        }
    }
}
