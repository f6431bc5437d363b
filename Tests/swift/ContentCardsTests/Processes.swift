import Foundation
@testable import ContentCards

/// The reference server (examples/server/cc_server.py) on 127.0.0.1, started and stopped by the
/// tests, with its admin API.
final class ReferenceServer {
    let process = Process()
    let url: String
    private let output = Pipe()

    init(feed: String = Fixtures.sampleFeedPath, apiKey: String? = nil, secret: String? = nil) throws {
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        var arguments = ["python3", Fixtures.root + "/examples/server/cc_server.py", "--feed", feed, "--port", "0", "--quiet"]
        if let apiKey { arguments += ["--api-key", apiKey] }
        if let secret { arguments += ["--secret", secret] }
        process.arguments = arguments
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        // The first line is "listening on http://127.0.0.1:PORT".
        var line = Data()
        let deadline = Date().addingTimeInterval(15)
        while !line.contains(0x0A), Date() < deadline {
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            line.append(chunk)
        }
        let text = String(decoding: line, as: UTF8.self)
        guard let range = text.range(of: "http://") else {
            process.terminate()
            throw ContentCardsError(.internal, "reference server did not start: \(text)")
        }
        url = String(text[range.lowerBound...].prefix { !$0.isNewline })
    }

    deinit { stop() }

    func stop() {
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
    }

    /// One admin call; returns the parsed answer.
    @discardableResult
    func admin(_ method: String, _ path: String, _ body: String? = nil) throws -> JSONValue {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = ["python3", Fixtures.root + "/Tests/c/with_server.py", "--admin", url, method, path] + (body.map { [$0] } ?? [])
        let out = Pipe()
        p.standardOutput = out
        try p.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        return try JSONReader.parse(Array(data))
    }

    func fault(_ json: String) throws { try admin("POST", "/_admin/fault", json) }

    func events() throws -> [JSONValue] {
        guard case .array(let events)? = try admin("GET", "/_admin/events")["events"] else { return [] }
        return events
    }
}

enum Tool {
    /// The contentcards-tool executable built next to the test bundle.
    static var path: String {
        let exe = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        var dir = URL(fileURLWithPath: exe).deletingLastPathComponent()
        // swift test runs .build/<triple>/debug/contentcardsPackageTests.xctest
        if dir.lastPathComponent.hasSuffix(".xctest") { dir = dir.deletingLastPathComponent() }
        return dir.appendingPathComponent("contentcards-tool").path
    }

    static func start(_ arguments: [String]) throws -> (Process, Pipe) {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: path)
        p.arguments = arguments
        let out = Pipe()
        p.standardOutput = out
        p.standardError = FileHandle.nullDevice
        try p.run()
        return (p, out)
    }
}
