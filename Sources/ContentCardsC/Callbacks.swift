import CContentCardsABI
import ContentCards

/// A C callback's userdata with its free_userdata, released exactly once (docs/C-API.md, "Callbacks"): whichever of
/// unsubscribe, close, replacement or a failed registration comes first.
final class UserData: @unchecked Sendable {
    let pointer: UnsafeMutableRawPointer?
    private let free: (@convention(c) (UnsafeMutableRawPointer?) -> Void)?
    private let lock = Lock()
    private var released = false

    init(_ pointer: UnsafeMutableRawPointer?, free: (@convention(c) (UnsafeMutableRawPointer?) -> Void)?) {
        self.pointer = pointer; self.free = free
    }

    func release() {
        let run: Bool = lock.withLock {
            if released { return false }
            released = true
            return true
        }
        if run { free?(pointer) }
    }

    deinit { release() }
}

/// The answers C callbacks fill in (a host transport's response, a token provider's token):
/// each handed to C as an opaque handle that is a number never given out again (not the box's
/// address, which a later box may get: an answer set late, by a task the host let run past
/// its callback, then went to another request, perhaps another user's), checked against the
/// boxes being answered now before any use, so a stray handle, or one kept past its callback,
/// is refused. A box is written only under the lock (`answer`), and read by the library only
/// once it was closed (`close`), under the same lock: an answer set from another thread is
/// never read half written.
final class AnswerBoxes<Box: AnyObject>: @unchecked Sendable {
    private let lock = Lock()
    private var active: [UInt: Box] = [:]
    private var next: UInt = 0
    /// "a response", and "the transport callback": for the refusal's message.
    private let what: String
    private let inside: String

    init(what: String, inside: String) {
        self.what = what
        self.inside = inside
        ForkSafety.holdAcrossFork(lock)
    }

    /// Opens `box` to answers; its handle for C.
    func open(_ box: Box) -> OpaquePointer {
        lock.withLock {
            next += 1
            active[next] = box
            return OpaquePointer(bitPattern: next)!
        }
    }

    /// Closes the box of `handle` to answers: what was set is the library's to read from now on.
    func close(_ handle: OpaquePointer) {
        _ = lock.withLock { active.removeValue(forKey: UInt(bitPattern: handle)) }
    }

    /// Reads the box of `p` (being answered now) under the lock: what a setter checks before
    /// work it should not do under a lock every controller's callbacks share (a body's copy).
    func read<T>(_ p: OpaquePointer?, _ body: (Box) -> T) throws(ContentCardsError) -> T {
        try lock.withLock { () throws(ContentCardsError) -> T in body(try box(p)) }
    }

    /// Sets an answer: `body` runs on the box of `p`, under the lock.
    func answer(_ p: OpaquePointer?, _ body: (Box) throws(ContentCardsError) -> Void) throws(ContentCardsError) {
        try lock.withLock { () throws(ContentCardsError) in try body(try box(p)) }
    }

    /// The box of `p`; called with the lock held.
    private func box(_ p: OpaquePointer?) throws(ContentCardsError) -> Box {
        guard let p else { throw ContentCardsError(.invalidArgument, "response is NULL") }
        guard let box = active[UInt(bitPattern: p)] else {
            throw ContentCardsError(.invalidArgument, "response is not \(what) being answered (use it only inside \(inside))")
        }
        return box
    }
}

/// Sets (`fn` not nil) or removes a controller's callback (a transport, a token provider):
/// `data`'s free_userdata runs exactly once, when the callback is replaced, at close, or at
/// once when this fails or removes it.
func setCallback<Fn>(_ controller: OpaquePointer?, _ fn: Fn?, _ data: UserData,
                     _ set: (ContentCardsController, Fn?) throws(ContentCardsError) -> Void) throws(ContentCardsError) {
    do throws(ContentCardsError) {
        let c = try Handles.controller(controller)
        if fn == nil { data.release() }
        try set(c, fn)
    } catch {
        data.release()
        throw error
    }
}

@_cdecl("cc_controller_subscribe")
public func cc_controller_subscribe(_ outSubscription: UnsafeMutablePointer<UInt64>?, _ controller: OpaquePointer?,
                                    _ fn: cc_update_fn?, _ userdata: UnsafeMutableRawPointer?,
                                    _ freeUserdata: (@convention(c) (UnsafeMutableRawPointer?) -> Void)?) -> Int32 {
    let data = UserData(userdata, free: freeUserdata)
    return entry { () throws(ContentCardsError) in
        do throws(ContentCardsError) {
            guard let outSubscription else { throw ContentCardsError(.invalidArgument, "out_subscription is NULL") }
            guard let fn else { throw ContentCardsError(.invalidArgument, "fn is NULL") }
            let c = try Handles.controller(controller)
            let subscription = try c.subscribe({ update in
                ResultJSON.update(update).withCString { fn(data.pointer, $0) }
            }, onRemove: { data.release() })
            outSubscription.pointee = subscription.id
        } catch {
            data.release()
            throw error
        }
    }
}

@_cdecl("cc_controller_unsubscribe")
public func cc_controller_unsubscribe(_ controller: OpaquePointer?, _ subscription: UInt64) -> Int32 {
    entry { () throws(ContentCardsError) in
        let c = try Handles.controller(controller)
        guard c.unsubscribe(subscription) else {
            throw ContentCardsError(.notFound, "no subscription \(subscription) (already unsubscribed?)")
        }
    }
}

@_cdecl("cc_controller_current_update")
public func cc_controller_current_update(_ outJSON: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?,
                                         _ controller: OpaquePointer?) -> Int32 {
    entry { () throws(ContentCardsError) in
        let out = try CStrings.requireOutput(outJSON, "out_json")
        out.pointee = try CStrings.copy(ResultJSON.update(try Handles.controller(controller).currentUpdate()))
    }
}
