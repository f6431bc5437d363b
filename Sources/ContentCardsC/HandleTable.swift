import CContentCardsFast
import ContentCards

/// Generation-checked handles (as in mozilla's ffi-support HandleMap): the value a C program
/// holds is never a pointer but `tag << 56 | generation << 24 | (index + 1)` (the layout is
/// written once, as `CCINT_HANDLE_*` in cc_fast.h, which fast.c reads too), so a closed,
/// never-issued, forged, or other-kind handle is recognized and refused; nothing is ever
/// dereferenced.
final class HandleTable<Object: AnyObject>: @unchecked Sendable {
    private struct Slot {
        var generation: UInt32 = 0
        var object: Object?
        /// The fork generation (ForkSafety) the object was made in.
        var forkGeneration: UInt64 = 0
    }

    private let tag: UInt64
    private let kind: String
    private let lock = Lock()
    private var slots: [Slot] = []
    private var free: [Int] = []
    /// Objects of handles inherited across fork() and closed in the child: kept, never
    /// released, since releasing one would touch its inherited SQLite connection.
    private var inheritedClosed: [Object] = []
    /// Whether an object inherited across fork() is refused (controllers: their store is the
    /// parent's; snapshots are plain memory and stay usable).
    private let refuseInherited: Bool

    private static var indexBits: UInt64 { UInt64(CCINT_HANDLE_INDEX_BITS) }
    private static var tagShift: UInt64 { UInt64(CCINT_HANDLE_TAG_SHIFT) }
    private static var indexMask: UInt64 { (1 << indexBits) - 1 }

    /// The slot index and generation a handle value holds, unchecked (the badge cells' key).
    static func fields(of handle: OpaquePointer?) -> (index: UInt32, generation: UInt32) {
        let value = UInt64(UInt(bitPattern: handle))
        return (UInt32(truncatingIfNeeded: (value & indexMask) &- 1), UInt32(truncatingIfNeeded: value >> indexBits))
    }

    init(tag: UInt8, kind: String, refuseInherited: Bool = false) {
        self.tag = UInt64(tag)
        self.kind = kind
        self.refuseInherited = refuseInherited
        ForkSafety.holdAcrossFork(lock)
    }

    private var inheritedError: ContentCardsError {
        ContentCardsError(.storage, "the \(kind) was opened before fork() and is inherited by this child process: it cannot be used here (open a new \(kind) in the child; closing this handle is allowed)")
    }

    func insert(_ object: Object) throws(ContentCardsError) -> OpaquePointer? {
        try lock.withLock { () throws(ContentCardsError) -> OpaquePointer? in
            let index: Int
            if let reused = free.popLast() {
                index = reused
            } else {
                guard UInt64(slots.count) < Self.indexMask else {
                    throw ContentCardsError(.noMemory, "too many open \(kind) handles")
                }
                slots.append(Slot())
                index = slots.count - 1
            }
            slots[index].object = object
            slots[index].forkGeneration = ForkSafety.generation
            let value = tag << Self.tagShift | UInt64(slots[index].generation) << Self.indexBits | UInt64(index + 1)
            return OpaquePointer(bitPattern: UInt(value))
        }
    }

    private func decode(_ handle: OpaquePointer?) throws(ContentCardsError) -> (index: Int, generation: UInt32) {
        guard let handle else { throw ContentCardsError(.invalidHandle, "the \(kind) handle is NULL") }
        let value = UInt64(UInt(bitPattern: handle))
        guard value >> Self.tagShift == tag else {
            throw ContentCardsError(.invalidHandle, "not a \(kind) handle (another kind of handle, or not a handle)")
        }
        let raw = value & Self.indexMask
        let generation = UInt32(truncatingIfNeeded: value >> Self.indexBits)
        guard raw >= 1 else { throw ContentCardsError(.invalidHandle, "not a \(kind) handle (never issued)") }
        return (Int(raw - 1), generation)
    }

    /// The object behind a live handle.
    func get(_ handle: OpaquePointer?) throws(ContentCardsError) -> Object {
        let (index, generation) = try decode(handle)
        return try lock.withLock { () throws(ContentCardsError) -> Object in
            guard index < slots.count else { throw ContentCardsError(.invalidHandle, "not a \(kind) handle (never issued)") }
            let slot = slots[index]
            guard let object = slot.object, slot.generation == generation else {
                throw ContentCardsError(.invalidHandle, generation < slot.generation || slot.object == nil
                                        ? "the \(kind) handle was closed" : "not a \(kind) handle (never issued)")
            }
            if refuseInherited && slot.forkGeneration != ForkSafety.generation { throw inheritedError }
            return object
        }
    }

    /// Removes a live handle and returns its object; the handle is invalid from then on. An
    /// object inherited across fork() is kept forever instead, and nil returned.
    func remove(_ handle: OpaquePointer?) throws(ContentCardsError) -> Object? {
        let (index, generation) = try decode(handle)
        return try lock.withLock { () throws(ContentCardsError) -> Object? in
            guard index < slots.count else { throw ContentCardsError(.invalidHandle, "not a \(kind) handle (never issued)") }
            guard let object = slots[index].object, slots[index].generation == generation else {
                throw ContentCardsError(.invalidHandle, "the \(kind) handle was already closed (closing twice is harmless)")
            }
            slots[index].object = nil
            slots[index].generation &+= 1
            free.append(index)
            if refuseInherited && slots[index].forkGeneration != ForkSafety.generation {
                inheritedClosed.append(object)
                return nil
            }
            return object
        }
    }
}
