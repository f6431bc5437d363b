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
