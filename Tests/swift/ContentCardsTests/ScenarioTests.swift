import ContentCards
import ContentCardsC
import Foundation
import Testing

/// The one-API scenario through the Swift API: Tests/scenarios/one_api.scenario run
/// step by step with the controller's methods; the transcript must equal one_api.expected,
/// which the C runner (Tests/c/test_scenarios.c) and the Python runner (test_scenarios.py)
/// match too (Tests/scenarios/README.md).
@Suite struct ScenarioTests {
    static let directory = Fixtures.root + "/Tests/scenarios"

    @Test func theSwiftTranscriptIsTheExpectedOne() throws {
        let scenario = try String(contentsOfFile: Self.directory + "/one_api.scenario", encoding: .utf8)
        let expected = try String(contentsOfFile: Self.directory + "/one_api.expected", encoding: .utf8)
        let tmp = Fixtures.temporaryDirectory("scenario")
        defer { Fixtures.removeTree(tmp) }
        var runner = Runner(tmp: tmp)
        defer { runner.controller?.close() }
        var lines: [String] = []
        for line in scenario.split(separator: "\n", omittingEmptySubsequences: true) where !line.hasPrefix("#") {
            let text = String(line)
            let (op, arg) = text.firstIndex(of: " ").map { (String(text[..<$0]), String(text[text.index(after: $0)...])) } ?? (text, "")
            lines.append("> \(text)")
            do {
                let result = try runner.step(op, arg)
                lines.append(result.map { "= ok " + Runner.mask($0, ["eventId", "time"]) } ?? "= ok")
            } catch {
                // A step on a closed controller: Swift says CC_E_CLOSED, C CC_E_INVALID_HANDLE
                // (docs/API.md); each runner writes its own code so.
                if runner.closed && error.code == .closed {
                    lines.append("= error (closed)")
                } else {
                    let message = error.message.replacingOccurrences(of: tmp, with: "@TMP")
                    lines.append("= error \(error.code.statusName) (\(error.code.rawValue)): \(message)")
                }
            }
        }
        let got = lines.joined(separator: "\n") + "\n"
        let gotLines = got.split(separator: "\n"), expectedLines = expected.split(separator: "\n")
        for (i, (a, b)) in zip(gotLines, expectedLines).enumerated() where a != b {
            Issue.record("line \(i + 1) differs:\n  swift:    \(a)\n  expected: \(b)")
        }
        #expect(got == expected)
    }
}

private struct Runner {
    let tmp: String
    var controller: ContentCardsController?
    /// Whether the scenario closed the current controller (a `close` step since the last `open`).
    var closed = false

    init(tmp: String) { self.tmp = tmp }

    /// The value of each "key": (a string or a number, not null) replaced by "*".
    static func mask(_ text: String, _ keys: [String]) -> String {
        var out = text
        for key in keys {
            let pattern = "(\"\(key)\":)(\"(?:[^\"\\\\]|\\\\.)*\"|-?[0-9][^,}\\]]*)"
            out = out.replacingOccurrences(of: pattern, with: "$1\"*\"", options: .regularExpression)
        }
        return out
    }

    /// The range of the value of `key` at the top level of the JSON object `text`, or nil
    /// (keys inside nested objects and arrays are not top-level ones).
    static func topValue(_ text: String, _ key: String) -> Range<String.Index>? {
        let chars = Array(text.utf8)
        var depth = 0, i = 0
        /// The index after the string starting at `start` (a quote).
        func stringEnd(_ start: Int) -> Int {
            var j = start + 1
            while j < chars.count && chars[j] != UInt8(ascii: "\"") { j += chars[j] == UInt8(ascii: "\\") ? 2 : 1 }
            return min(j + 1, chars.count)
        }
        while i < chars.count {
            switch chars[i] {
            case UInt8(ascii: "\""):
                let end = stringEnd(i)
                if depth == 1 && end < chars.count && chars[end] == UInt8(ascii: ":")
                    && Array(chars[(i + 1)..<(end - 1)]) == Array(key.utf8) {
                    var j = end + 1, d = 0
                    scan: while j < chars.count {
                        switch chars[j] {
                        case UInt8(ascii: "\""): j = stringEnd(j); continue scan
                        case UInt8(ascii: "{"), UInt8(ascii: "["): d += 1
                        case UInt8(ascii: "}"), UInt8(ascii: "]"): if d == 0 { break scan }; d -= 1
                        case UInt8(ascii: ","): if d == 0 { break scan }
                        default: break
                        }
                        j += 1
                    }
                    let utf8 = text.utf8
                    return utf8.index(utf8.startIndex, offsetBy: end + 1)..<utf8.index(utf8.startIndex, offsetBy: j)
                }
                i = end
                continue
            case UInt8(ascii: "{"), UInt8(ascii: "["): depth += 1
            case UInt8(ascii: "}"), UInt8(ascii: "]"): depth -= 1
            default: break
            }
            i += 1
        }
        return nil
    }

    /// The export document (export_user) with the top-level "exported_at", and "id" and
    /// "time" of each pending event (inside the top-level "pending_events" only: the cards
    /// have ids too) written "*" (Tests/scenarios/README.md).
    static func maskExport(_ text: String) -> String {
        guard let at = topValue(text, "exported_at"), let events = topValue(text, "pending_events"),
              at.upperBound <= events.lowerBound else { return text }
        return String(text[..<at.lowerBound]) + (text[at] == "null" ? "null" : "\"*\"")
            + String(text[at.upperBound..<events.lowerBound])
            + mask(String(text[events]), ["id", "time"]) + String(text[events.upperBound...])
    }

    static func filter(_ arg: String) throws(ContentCardsError) -> ClassTypeFilter {
        do { return try ResultJSON.filter(arg.isEmpty ? nil : arg) } catch {
            throw ContentCardsError(.parse, error.message)
        }
    }

    static func json(_ write: (inout JSONWriter) -> Void) -> String {
        var w = JSONWriter()
        write(&w)
        return w.string
    }

    mutating func step(_ op: String, _ arg: String) throws(ContentCardsError) -> String? {
        if op == "open" {
            let config = arg.replacingOccurrences(of: "@REPO", with: Fixtures.root).replacingOccurrences(of: "@TMP", with: tmp)
            controller = try ContentCardsController(json: config)
            closed = false
            return nil
        }
        guard let c = controller else { throw ContentCardsError(.invalidHandle, "no controller") }
        switch op {
        case "refresh": return ResultJSON.summary(try c.refresh())
        case "apply": return ResultJSON.summary(try c.apply(arg))
        case "cards": return CardJSON.encode(try c.cards(try Self.filter(arg)))
        case "card": return CardJSON.encode(try c.card(id: arg))
        case "counts":
            let counts = try c.counts(try Self.filter(arg))
            return Self.json { ResultJSON.counts(counts, to: &$0) }
        case "log":
            let parts = arg.split(separator: " ", maxSplits: 1).map(String.init)
            let id = parts.count > 1 ? parts[1] : ""
            let result: LogResult
            switch parts[0] {
            case "impression": result = try c.logImpression(cardID: id)
            case "click": result = try c.logClick(cardID: id)
            case "dismissal": result = try c.logDismissal(cardID: id)
            default: result = try c.logFeedDisplayed()
            }
            return ResultJSON.log(result)
        case "pending_events": return Self.mask(ResultJSON.pendingEvents(try c.listPendingEvents()), ["id"])
        case "flush_events": return ResultJSON.flush(try c.flushEvents())
        case "change_user":
            try c.changeUser(arg)
            return nil
        case "user": return Self.json { $0.string(c.currentUserID) }
        case "mark_read", "mark_unread":
            let result = op == "mark_read" ? try c.markRead(cardID: arg) : try c.markUnread(cardID: arg)
            return Self.json { w in
                w.beginObject()
                w.key("changed"); w.bool(result.stateChanged)
                w.endObject()
            }
        case "mark_all_read":
            let marked = try c.markAllRead(try Self.filter(arg))
            return Self.json { w in
                w.beginObject()
                w.key("marked"); w.int(marked)
                w.endObject()
            }
        case "diagnostics":
            // The stable fields only (Tests/scenarios/README.md).
            let d = c.diagnostics()
            return Self.json { w in
                w.beginObject()
                w.key("userId"); w.string(d.userID)
                w.key("closed"); w.bool(d.closed)
                w.key("storedCards"); w.int(d.storedCards)
                w.key("counts"); ResultJSON.counts(d.counts, to: &w)
                w.key("pendingEvents"); w.int(d.pendingEvents)
                w.key("lastSuccessfulRefreshAt")
                if d.lastSuccessfulRefreshAt != nil { w.string("*") } else { w.null() }
                w.endObject()
            }
        case "export_user": return Self.maskExport(try c.exportUser(arg.isEmpty ? nil : arg))
        case "forget_user":
            // USER|- flush|discard ("-": the current user); the configuration's timeout.
            let parts = arg.split(separator: " ", maxSplits: 1).map(String.init)
            let user = parts[0] == "-" ? nil : parts[0]
            let pending: PendingEventsChoice = parts.count > 1 && parts[1] == "discard" ? .discard : .flush
            return ResultJSON.forgetReceipt(try c.forgetUser(user, pending: pending))
        case "close":
            c.close()
            closed = true
            return nil
        default: throw ContentCardsError(.invalidArgument, "unknown step \(op)")
        }
    }
}
