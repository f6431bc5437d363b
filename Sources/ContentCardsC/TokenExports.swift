import CContentCardsABI
import ContentCards
/// The answer a token provider callback fills in (`AnswerBoxes`: C sees only an opaque pointer
/// to it, checked before any use).
final class TokenResponseBox {
    var token: AuthToken?
    var failure: String?

    static let answers = AnswerBoxes<TokenResponseBox>(what: "a token response", inside: "the token provider")
}

/// The host's token provider callback as a `TokenProvider`.
private func cTokenProvider(fn: cc_token_fn, data: UserData) -> TokenProvider {
    { user in
        let box = TokenResponseBox()
        let handle = TokenResponseBox.answers.open(box)
        let status = user.withCString { fn(data.pointer, $0, handle) }
        TokenResponseBox.answers.close(handle)
        if status != CC_OK {
            return .failure(ContentCardsError(.auth, box.failure ?? "the token provider returned \(status)"))
        }
        guard let token = box.token else {
            return .failure(ContentCardsError(.auth, "the token provider returned CC_OK without cc_token_response_set"))
        }
        return .success(token)
    }
}

@_cdecl("cc_token_response_set")
public func cc_token_response_set(_ response: OpaquePointer?, _ token: UnsafePointer<CChar>?, _ expiresAt: Double) -> Int32 {
    entry { () throws(ContentCardsError) in
        guard let token else { throw ContentCardsError(.invalidArgument, "token is NULL") }
        // Checked byte by byte before any decoding: a token is printable ASCII, never shown.
        let length = strnlen(token, TokenSlot.maxBytes + 1)
        let bytes = UnsafeRawBufferPointer(start: token, count: length)
        if length > TokenSlot.maxBytes {
            throw ContentCardsError(.invalidArgument, "token is over the limit of \(TokenSlot.maxBytes) bytes")
        }
        if let why = TokenSlot.invalidity(bytes: bytes) { throw ContentCardsError(.invalidArgument, "token cannot be sent: \(why)") }
        let answer = AuthToken(String(decoding: bytes, as: UTF8.self), expiresAt: expiresAt)
        try TokenResponseBox.answers.answer(response) { box in box.token = answer }
    }
}

@_cdecl("cc_token_response_fail")
public func cc_token_response_fail(_ response: OpaquePointer?, _ message: UnsafePointer<CChar>?) -> Int32 {
    entry { () throws(ContentCardsError) in
        let failure = try CStrings.required(message, "message")
        try TokenResponseBox.answers.answer(response) { box in box.failure = failure }
    }
}

@_cdecl("cc_controller_set_token_provider")
public func cc_controller_set_token_provider(_ controller: OpaquePointer?, _ fn: cc_token_fn?, _ userdata: UnsafeMutableRawPointer?,
                                             _ freeUserdata: (@convention(c) (UnsafeMutableRawPointer?) -> Void)?) -> Int32 {
    let data = UserData(userdata, free: freeUserdata)
    return entry { () throws(ContentCardsError) in
        try setCallback(controller, fn, data) { (c, fn) throws(ContentCardsError) in
            try c.setTokenProvider(fn.map { cTokenProvider(fn: $0, data: data) })
        }
    }
}
