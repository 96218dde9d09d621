import NIOConcurrencyHelpers

/// Fans values out to any number of `AsyncStream` consumers: each consumer gets every value yielded after it
/// started (buffered up to `bufferLimit` newest values). A broadcaster made with a current value keeps the newest one
/// and starts every stream with it: registering a consumer and reading that value happen under the same lock as
/// every yield, so a stream never misses a value yielded after its start nor goes back to an older one.
final class Broadcaster<Element: Sendable>: @unchecked Sendable {
    // @unchecked because `state` is protected by its lock. Yields happen under it (an `AsyncStream` continuation's
    // yield runs no user code: it only enqueues the value and wakes the consumer's task).

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
        let (stream, continuation) = AsyncStream.makeStream(of: Element.self, bufferingPolicy: .bufferingNewest(bufferLimit))
        let id: Int? = state.withLockedValue { state in
            if let current = state.current { continuation.yield(current) }
            guard !state.finished else { return nil }
            let id = state.nextID
            state.nextID += 1
            state.continuations[id] = continuation
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
        state.withLockedValue { state in
            if state.current != nil { state.current = value }
            for continuation in state.continuations.values { continuation.yield(value) }
        }
    }

    /// Ends every stream, present and future.
    func finish() {
        let continuations: [AsyncStream<Element>.Continuation] = state.withLockedValue { state in
            state.finished = true
            defer { state.continuations.removeAll() }
            return Array(state.continuations.values)
        }
        for continuation in continuations { continuation.finish() }
    }
}
