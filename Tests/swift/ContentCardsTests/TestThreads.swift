import Foundation

/// Real threads for the tests' concurrent work.
///
/// Not `DispatchQueue.global().async` or `DispatchQueue.concurrentPerform`: on Linux their
/// blocks run on libdispatch's own pool, which starts a thread for a waiting block only when
/// its monitor finds the pool's workers blocked, not merely busy. With the whole suite running,
/// a block queued behind CPU-bound ones waits for them to end (measured here: 24 s behind four
/// 12-second loops on 2 cores), so a test that queued a log call and waited 10 s for it to
/// start failed in CI. And `concurrentPerform` runs as many workers at once as there are cores,
/// which on 2 cores is not the race a test of 8 threads means to make. A `Thread` starts at once.
enum TestThreads {
    /// Runs `body(0)`, ..., `body(count - 1)` each on a thread of its own, all at once; returns
    /// when every one has.
    static func run(_ count: Int, _ body: @escaping (Int) -> Void) {
        let box = Unchecked(body)
        let group = DispatchGroup()
        let threads = (0..<count).map { worker in
            group.enter()
            return Thread { box.value(worker); group.leave() }
        }
        threads.forEach { $0.start() }
        group.wait()
    }

    /// Starts `body` on a thread of its own, counted in `group` until it returns.
    static func start(in group: DispatchGroup, _ body: @escaping () -> Void) {
        let box = Unchecked(body)
        group.enter()
        Thread { box.value(); group.leave() }.start()
    }

    /// What the threads share: the caller waits for them (`run`) or for the group (`start`), as
    /// it would for `concurrentPerform` or a dispatch group.
    private final class Unchecked<T>: @unchecked Sendable {
        let value: T
        init(_ value: T) { self.value = value }
    }
}
