/// Swift concurrency over the controller (docs/API.md, "Async"): `refresh() async`,
/// `flushEvents() async` and `updates()`, an `AsyncStream` of the subscribers' updates.
///
/// None of them blocks a thread of the cooperative pool: the refresh is the background refresh
/// with a completion, the flush runs on a thread of its own. A cancelled task stops waiting at
/// once (`CancellationError`); the work goes on by its timeout and its outcome still reaches
/// the subscribers, as in Python (`asyncio` cancellation) and as C's completion callbacks.
extension ContentCardsController {
    /// Refreshes, as `refresh(timeout:)` does, without blocking the calling task's thread.
    /// Throws a `ContentCardsError`, or `CancellationError` when the task is cancelled.
    @discardableResult
    public func refresh(timeout: Double? = nil) async throws -> SyncSummary {
        let box = ResumeOnce<SyncSummary>()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<SyncSummary, Error>) in
                box.set(continuation)
                do {
                    try refreshInBackground(timeout: timeout) { result in box.resume(result.mapError { $0 as Error }) }
                } catch {
                    box.resume(.failure(error))
                }
            }
        } onCancel: {
            box.resume(.failure(CancellationError()))
        }
    }

    /// Delivers the pending events, as `flushEvents(timeout:)` does, on a thread of its own.
    /// Throws a `ContentCardsError`, or `CancellationError` when the task is cancelled.
    @discardableResult
    public func flushEvents(timeout: Double? = nil) async throws -> FlushResult {
        let box = ResumeOnce<FlushResult>()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<FlushResult, Error>) in
                box.set(continuation)
                let started = spawnThread { [self] in
                    let result: Result<FlushResult, ContentCardsError>
                    do throws(ContentCardsError) { result = .success(try flushEvents(timeout: timeout)) } catch { result = .failure(error) }
                    box.resume(result.mapError { $0 as Error })
                }
                if !started { box.resume(.failure(ContentCardsError(.noMemory, "cannot start a thread for the flush"))) }
            }
        } onCancel: {
            box.resume(.failure(CancellationError()))
        }
    }

    /// The updates the subscribers receive, as an `AsyncStream`: a subscription that ends when
    /// the iterating task stops (or is cancelled) and finishes when the controller closes. It
    /// keeps the newest `bufferingNewest` updates a slow reader has not taken yet. With
    /// `startingWithCurrent` the first element is `currentUpdate()`, so a badge drawn from the
    /// stream is right before anything changes. A closed controller gives an empty stream.
    ///
    /// The subscription is made before the current update is taken, and what it hears
    /// meanwhile follows the current update in the stream: taken first, a change between the
    /// two was in neither, and a badge kept from the stream stayed on the older counts.
    public func updates(bufferingNewest limit: Int = 100, startingWithCurrent: Bool = false) -> AsyncStream<FeedUpdate> {
        AsyncStream(bufferingPolicy: .bufferingNewest(max(limit, 1))) { continuation in
            let start = StreamStart(continuation)
            do {
                let subscription = try subscribe({ start.deliver($0) }, onRemove: { continuation.finish() })
                continuation.onTermination = { _ in subscription.cancel() }
            } catch {
                continuation.finish()
                return
            }
            start.begin(with: startingWithCurrent ? try? currentUpdate() : nil)
        }
    }
}

/// An update stream's start: updates heard before the current update is taken wait, and follow
/// it. Yields under the lock, so the current update stays first (a yield only buffers).
final class StreamStart: @unchecked Sendable {
    private let lock = Lock()
    private let continuation: AsyncStream<FeedUpdate>.Continuation
    private var begun = false
    private var held: [FeedUpdate] = []

    init(_ continuation: AsyncStream<FeedUpdate>.Continuation) { self.continuation = continuation }

    func deliver(_ update: FeedUpdate) {
        lock.withLock {
            if begun { continuation.yield(update) } else { held.append(update) }
        }
    }

    func begin(with current: FeedUpdate?) {
        lock.withLock {
            if let current { continuation.yield(current) }
            for update in held { continuation.yield(update) }
            held = []
            begun = true
        }
    }
}

/// A continuation resumed exactly once: by the work's outcome or by cancellation, whichever
/// comes first (the other is dropped).
final class ResumeOnce<T: Sendable>: @unchecked Sendable {
    private let lock = Lock()
    private var continuation: CheckedContinuation<T, Error>?
    private var early: Result<T, Error>?
    private var done = false

    func set(_ c: CheckedContinuation<T, Error>) {
        let pending: Result<T, Error>? = lock.withLock {
            if done, let early { self.early = nil; return early }
            continuation = c
            return nil
        }
        if let pending { c.resume(with: pending) }
    }

    func resume(_ result: Result<T, Error>) {
        let c: CheckedContinuation<T, Error>? = lock.withLock {
            if done { return nil }
            done = true
            guard let c = continuation else { early = result; return nil }
            continuation = nil
            return c
        }
        c?.resume(with: result)
    }
}
