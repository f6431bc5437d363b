// The targets other than `calls` (Calls.swift): payload, config, filter, decoders.
import CContentCardsABI
import ContentCardsC
@testable import ContentCards
#if canImport(Glibc)
import Glibc
#endif

/// The input as a NUL-terminated C string (a NUL inside ends it, as in C).
func withCString<R>(_ data: UnsafeRawBufferPointer, _ body: (UnsafePointer<CChar>) -> R) -> R {
    var bytes = Array(data.bindMemory(to: CChar.self))
    bytes.append(0)
    return bytes.withUnsafeBufferPointer { buffer in
        guard let base = buffer.baseAddress else { return body("") }   // never empty: it holds the NUL
        return body(base)
    }
}

func freeing(_ p: UnsafeMutablePointer<CChar>?) { cc_string_free(p) }

// MARK: - payload

/// The controller of `payload`: in memory, no source (apply needs none), opened once per
/// process. Each input starts from an empty store: after it, a full sync that lists nothing
/// removes its cards; test cards survive that (by design), and a controller they are left in
/// is replaced by a new one.
var payloadController: OpaquePointer?
let emptyFullSync = #"{"cards":[],"full_sync":true,"last_full_sync_at":0,"last_card_updated_at":0}"#

/// The input is up to three payloads separated by NUL bytes, applied in turn (the second and
/// third merge into what the first left: updates, tombstones, read state, dismissals), then
/// the feed is read back.
func runPayload(_ data: UnsafeRawBufferPointer) {
    if payloadController == nil {
        _ = cc_controller_open(&payloadController, #"{"userId":"fuzz"}"#)
    }
    let c = payloadController
    var pieces = data.split(separator: 0, maxSplits: 2, omittingEmptySubsequences: false)
    if pieces.isEmpty { pieces = [data[...]] }
    for piece in pieces {
        var bytes = Array(piece)
        bytes.append(0)
        bytes.withUnsafeBufferPointer { b in
            b.withMemoryRebound(to: CChar.self) { s in
                var summary: UnsafeMutablePointer<CChar>?
                let rc = status(cc_controller_apply(&summary, c, s.baseAddress), "apply")
                if rc == CC_OK { mustBeJSON(summary, "an apply summary") }
                freeing(summary)
            }
        }
    }
    var feed: UnsafeMutablePointer<CChar>?
    status(cc_controller_feed(&feed, c, nil), "feed")
    // Whatever went in, what comes out is JSON (cards are written from their stored bytes).
    if let feed, (try? JSONReader.parse(String(cString: feed))) == nil {
        finding("the feed is not JSON: \(String(cString: feed).prefix(400))")
    }
    freeing(feed)
    var out: UnsafeMutablePointer<CChar>?
    status(cc_controller_card(&out, c, "tile-1"), "card")
    freeing(out)
    // Back to an empty store for the next input.
    status(cc_controller_apply(nil, c, emptyFullSync), "apply (reset)")
    if !storeIsEmpty(c) {
        _ = cc_controller_close(c)
        payloadController = nil
    }
}

/// Whether the current user has no stored card, visible or not: the diagnostics say
/// "storedCards":0 (read as text: parsing them would cost more than the check is worth).
func storeIsEmpty(_ c: OpaquePointer?) -> Bool {
    var out: UnsafeMutablePointer<CChar>?
    defer { freeing(out) }
    guard cc_controller_diagnostics(&out, c) == CC_OK, let out else { return false }
    return strstr(out, "\"storedCards\":0,") != nil || strstr(out, "\"storedCards\":0}") != nil
}

// MARK: - config

var configInputs = 0

func runConfig(_ data: UnsafeRawBufferPointer) {
    // The stores and event files inputs created, removed every so often.
    configInputs += 1
    if configInputs % 5_000 == 0 { emptyScratch() }
    // The fuzzer runs as whoever runs it (root in CI): a storage path or an event file could
    // create or append to any file. Inputs that could spell a path outside the scratch
    // directory (a '/' or an escape that might decode to one) are skipped.
    if data.contains(0x2F) || data.contains(0x5C) { return }
    withCString(data) { s in
        var c: OpaquePointer?
        if status(cc_controller_open(&c, s), "open") == CC_OK {
            // A config that opens must give a working controller (no network: refresh is bounded).
            var total: Int64 = 0
            status(cc_controller_counts(&total, nil, c, nil), "counts")
            _ = cc_controller_close(c)
        }
    }
}

// MARK: - filter

/// The controller of `filter`: in memory, the sample feed applied once per process.
var filterController: OpaquePointer?
var filterUses = 0

func runFilter(_ data: UnsafeRawBufferPointer) {
    // Reopened every so often: mark_all_read leaves read state and read events behind.
    filterUses += 1
    if filterController == nil || filterUses % 20_000 == 0 {
        if filterController != nil { _ = cc_controller_close(filterController) }
        _ = cc_controller_open(&filterController, #"{"userId":"fuzz"}"#)
        _ = cc_controller_apply(nil, filterController, sampleFeedText)
    }
    let c = filterController
    withCString(data) { s in
        var feed: UnsafeMutablePointer<CChar>?
        status(cc_controller_feed(&feed, c, s), "feed")
        freeing(feed)
        var total: Int64 = 0, unviewed: Int64 = 0, unread: Int64 = 0
        status(cc_controller_counts(&total, &unviewed, c, s), "counts")
        status(cc_controller_all_counts(&total, &unviewed, &unread, c, s), "all_counts")
        count(cc_controller_unread_count(c, s), "unread_count")
        status(cc_controller_mark_all_read(&total, c, s), "mark_all_read")
        var snap: OpaquePointer?
        if status(cc_controller_snapshot(&snap, c, s), "snapshot") == CC_OK {
            var n = 0
            status(cc_snapshot_count(&n, snap), "snapshot_count")
            for i in 0..<n {
                var v: UnsafePointer<CChar>?
                status(cc_snapshot_string(&v, snap, i, "id"), "snapshot_string")
                status(cc_snapshot_extra(&v, snap, i, s), "snapshot_extra")
            }
            status(cc_snapshot_close(snap), "snapshot_close")
        }
    }
}

/// The sample feed's text, read once.
let sampleFeedText: String = {
    guard let bytes = readFile(sampleFeed) else { finding("cannot read the sample feed \(sampleFeed) (set CC_SAMPLE_FEED)") }
    return String(decoding: bytes, as: UTF8.self)
}()

// MARK: - decoders

/// The two ways a payload is read must agree: the token stream (what sync and apply use) and a
/// parsed `JSONValue`. Every card read must encode to JSON that parses back to it, and survive
/// the store's form.
func runDecoders(_ data: UnsafeRawBufferPointer) {
    let bytes = Array(data.bindMemory(to: UInt8.self))
    // The input as a record whose sum matched (someone who rewrote both on purpose): whatever
    // it reads as must be safe to use, field by field and encoded.
    if let forged = bytes.withUnsafeBufferPointer({ StoredCard.decodeSummed($0, id: "f", knownClassTypes: ["x"]) }) {
        _ = (forged.url, forged.openURLInWebView, forged.extras, forged.content, forged.classType)
        _ = CardJSON.encode(forged)
        _ = StoredCard.encode(forged)
    }
    let decoder = PayloadDecoder()
    let streamed = try? decoder.decode(bytes)
    let tree = Result { () throws(JSONError) in try JSONReader.parse(bytes) }
    let parsed = (try? tree.get()).flatMap { try? decoder.decode($0) }
    // An escaped lone surrogate inside a card leaves that card out of the stream, while a tree
    // (which knows no cards) refuses it wherever it is (docs/WIRE.md): not a disagreement.
    if case .failure(let e) = tree, e.message.contains("surrogate"), streamed?.leftOut.contains(where: {
        $0.reason.contains("lone surrogate")
    }) == true { return }
    if (streamed == nil) != (parsed == nil) {
        finding("one decoder refused what the other read: stream \(streamed == nil ? "refused" : "read"), parsed \(parsed == nil ? "refused" : "read")")
    }
    guard let streamed, let parsed else { return }
    if streamed != parsed { finding("the decoders disagree:\n\(streamed)\n\(parsed)") }
    for server in streamed.cards {
        let json = CardJSON.encode(server.card)
        guard let back = try? CardJSON.decode(json) else { finding("a card's JSON does not parse: \(json)") }
        if back != server.card { finding("a card's JSON reads back different: \(json)") }
        guard let stored = StoredCard.encode(server.card) else { continue }
        let again = stored.withUnsafeBufferPointer { StoredCard.decode($0, id: server.card.id, knownClassTypes: nil) }
        if again != server.card { finding("a card's stored form reads back different: \(json)") }
        // Read as a record whose sum matched: the same card as the full check, under any
        // configuration (or nil, left to the full check: an escaped class type, 19 digits).
        for known in [nil, Set([server.card.classType]), Set(["x"])] {
            let full = stored.withUnsafeBufferPointer { StoredCard.decode($0, id: server.card.id, knownClassTypes: known) }
            let summed = stored.withUnsafeBufferPointer { StoredCard.decodeSummed($0, id: server.card.id, knownClassTypes: known) }
            if let summed, summed != full { finding("a summed record reads back different: \(json)") }
        }
    }
}
