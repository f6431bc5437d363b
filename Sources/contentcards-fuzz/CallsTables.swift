// The `calls` target's tables: the ids, users, filters, actions and fields its calls pick from,
// the cards and payloads the host transport serves, the answers it gives, and what a callback
// may do (`Deed`).
import CContentCardsABI
import ContentCardsC
@testable import ContentCards
#if canImport(Glibc)
import Glibc
#endif

let cardIDs = ["tile-1", "tile-2", "msg-1", "msg-2", "coupon-1", "coupon-control", "img-1", "img-2", "gone", "nope", "", "tile-1\u{301}", "test-1"]
let userIDs = ["fuzz", "other", "", "ü-3"]
let filters: [String?] = [nil, #"["home_tile"]"#, "[]", #"["message_center","coupon_code"]"#, #"["HOME_TILE"," x "]"#, "[1]", #""home_tile""#, "{", "null"]
let actions = ["impression", "click", "dismissal", "feed_displayed", "read", "unread", "bogus", ""]
let stringFields = ["id", "type", "url", "classType", "image", "imageAltText", "title", "cardDescription", "domain", "imagePath", "created", "nope"]
let intFields = ["created", "expiresAt", "id"]
let boolFields = ["viewed", "clicked", "dismissed", "read", "dismissible", "pinned", "isTest", "isControl", "openURLInWebView", "url"]

/// Cards of the tables below: every kind, images (served from memory), read state, a control.
let now = Int64(time(nil))
func card(_ id: String, _ extra: String) -> String {
    #"{"id":"\#(id)","ca":\#(now - 100),"tp":"short_news","ds":"d","db":true,"u":"https://e.example/\#(id)",\#(extra)}"#
}
let fullSync = """
    {"cards":[\(card("tile-1", #""e":{"class_type":"home_tile"},"i":"http://img.test/1.png""#)),
    \(card("tile-2", #""p":true,"e":{"class_type":"home_tile"},"i":"http://img.test/2.png""#)),
    \(card("msg-1", #""e":{"class_type":"message_center"},"rd":true"#)),
    \(card("msg-2", #""e":{"class_type":"message_center"}"#)),
    {"id":"coupon-1","ca":\(now - 50),"tp":"captioned_image","i":"https://img.test/c.png","tt":"t","ds":"d","e":{"class_type":"coupon_code","discount":"5"}},
    {"id":"coupon-control","ca":\(now - 40),"tp":"control","e":{"class_type":"coupon_code"}},
    {"id":"img-1","ca":\(now - 30),"tp":"banner_image","i":"http://img.test/big.png"},
    {"id":"img-2","ca":\(now - 20),"tp":"banner_image","i":"ftp://img.test/x.png","ea":\(now + 1)}],
    "full_sync":true,"last_full_sync_at":\(now),"last_card_updated_at":\(now),"user_id":null}
    """
let incremental = """
    {"cards":[\(card("tile-1", #""v":true,"rd":false,"e":{"class_type":"home_tile","n":1.50}"#)),
    {"id":"msg-2","ca":\(now),"r":true},{"id":"gone","ca":\(now),"r":true},
    \(card("img-2", #""i":"http://img.test/3.png","d":true"#)),
    \(card("new-\(now)", #""i":"http://img.test/4.png","ea":\(now - 1)"#))],
    "full_sync":false,"last_card_updated_at":\(now + 1)}
    """
let payloads: [String] = [
    fullSync, incremental, "[]", #"{"cards":[],"full_sync":true}"#, #"{"cards":[],"user_id":"someone else"}"#,
    #"[{"id":"tile-1","ca":1,"tp":"control"},{"id":"tile-1","ca":2,"tp":"control"}]"#,
    #"{"cards":[{"id":"x","ca":1.5}],"full_sync":"yes"}"#, "not json", "",
    "[\(card("test-1", #""t":true,"e":{"class_type":"message_center"}"#))]",   // a test card: a full sync keeps it
]

/// What the host transport answers to a sync, in the order the grammar queued them.
enum SyncAnswer: Int, CaseIterable {
    case full, incremental, notModified, tooMany, unavailable, serverError, fail, noAnswer, garbage, wrongUser,
         slow, badValidator, misuse, fuzzed
}

/// What it answers to an event batch and an image.
enum EventsAnswer: Int, CaseIterable { case ok, accepted, badRequest, unsupported, tooMany, serverError, fail, noAnswer }
enum ImageAnswer: Int, CaseIterable { case ok, notFound, empty, tooLarge, fail }

/// What a callback does besides its job (a subscriber, a transport, a done callback, the log
/// handler), at most `budget` times, so that a callback that refreshes on every update cannot
/// keep the process busy past the input.
enum Deed: Int, CaseIterable {
    case nothing, close, unsubscribeSelf, refresh, refreshInBackground, logImpression, markRead, apply, changeUser,
         snapshot, subscribe, flush, counts, removeTransport, removeLogHandler
}
