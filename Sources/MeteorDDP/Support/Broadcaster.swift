import NIOConcurrencyHelpers

/// Fans values out to any number of `AsyncStream` consumers: each consumer gets every value yielded after it
/// started (buffered up to `bufferLimit` newest values). A broadcaster made with a current value keeps the newest one
/// and starts every stream with it: registering a consumer, reading that value and every yield happen in one order
/// (``order``), so a stream never misses a value yielded after its start nor goes back to an older one.
///
/// Two locks, because a consumer's stream ends (its task cancelled) under that task's status lock, and its termination
/// handler then takes `state`'s lock to unregister; a yield resumes the consumer, which takes the task's status lock.
/// So values are handed to the streams under ``order`` only, never under `state`'s lock, which is held just long enough
/// to read or change the list of consumers: holding it across a resume deadlocked with a cancellation.
final class Broadcaster<Element: Sendable>: @unchecked Sendable {
    // @unchecked because `state` is protected by its lock, and `order` serialises the hand-overs (an `AsyncStream`
    // continuation's yield runs no user code: it only enqueues the value and wakes the consumer's task).

    // MARK: - Mutable State

    private struct State {
        /// Live consumers. Protected by `state`'s lock.
        var continuations: [Int: AsyncStream<Element>.Continuation] = [:]
        /// Protected by `state`'s lock.
        var nextID = 0
        /// Once finished, new consumers end at once. Protected by `state`'s lock.
        var finished = false
        /// The newest value, when the broadcaster keeps one (`nil`: it does not). Protected by `state`'s lock.
        var current: Element?
    }

    private let state: NIOLockedValueBox<State>
    /// Serialises registering, yielding and finishing, so consumers see values in yield order. Never taken by a
    /// stream's termination handler.
    private let order = NIOLock()
    private let bufferLimit: Int

    /// A broadcaster of events: a stream gets what is yielded after it started.
    init(bufferLimit: Int) {
        self.bufferLimit = bufferLimit
        self.state = NIOLockedValueBox(State())
    }

    /// A broadcaster of a value that changes: a stream starts with the newest value.
    init(bufferLimit: Int, current: Element) {
        self.bufferLimit = bufferLimit
        self.state = NIOLockedValueBox(State(current: current))
    }

    /// A new stream for one consumer (starting with the current value, if the broadcaster keeps one). After
    /// ``finish()`` it still starts with that value, then ends.
    func makeStream() -> AsyncStream<Element> {
        let (stream, continuation) = AsyncStream.makeStream(
            of: Element.self, bufferingPolicy: .bufferingNewest(bufferLimit))
        let id: Int? = order.withLock {
            let (id, current): (Int?, Element?) = state.withLockedValue { state in
                guard !state.finished else { return (nil, state.current) }
                let id = state.nextID
                state.nextID += 1
                state.continuations[id] = continuation
                return (id, state.current)
            }
            // The stream is not handed out yet: nothing can end it before this first value.
            if let current { continuation.yield(current) }
            return id
        }
        guard let id else {
            continuation.finish()
            return stream
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLockedValue { $0.continuations.removeValue(forKey: id) }
        }
        return stream
    }

    /// Sends `value` to every consumer (and makes it the current value, if the broadcaster keeps one).
    func yield(_ value: Element) {
        yield(contentsOf: CollectionOfOne(value))
    }

    /// Sends `values` to every consumer, in order, in one hand-over (and makes the last the current value, if the
    /// broadcaster keeps one): a consumer woken by the first finds the others buffered (a flood of errors reported in
    /// one batch of frames wakes it once, not once per error).
    func yield(contentsOf values: some BidirectionalCollection<Element>) {
        guard let last = values.last else { return }
        order.withLock {
            let continuations: [AsyncStream<Element>.Continuation] = state.withLockedValue { state in
                if state.current != nil { state.current = last }
                return Array(state.continuations.values)
            }
            // A stream that ended meanwhile ignores the values.
            for continuation in continuations {
                for value in values { continuation.yield(value) }
            }
        }
    }

    /// Ends every stream, present and future.
    func finish() {
        order.withLock {
            let continuations: [AsyncStream<Element>.Continuation] = state.withLockedValue { state in
                state.finished = true
                defer { state.continuations.removeAll() }
                return Array(state.continuations.values)
            }
            for continuation in continuations { continuation.finish() }
        }
    }
}
