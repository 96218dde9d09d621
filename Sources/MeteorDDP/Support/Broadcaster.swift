import NIOConcurrencyHelpers

/// Fans values out to any number of `AsyncStream` consumers: each consumer gets every value yielded after it
/// started iterating (and an optional current value first), buffered up to `bufferLimit` newest values.
final class Broadcaster<Element: Sendable>: @unchecked Sendable {
    // @unchecked because `state` is protected by its lock; continuations are resumed outside the lock.

    // MARK: - Mutable State

    private struct State {
        /// Live consumers. Protected by `state`'s lock.
        var continuations: [Int: AsyncStream<Element>.Continuation] = [:]
        /// Protected by `state`'s lock.
        var nextID = 0
        /// Once finished, new consumers end at once. Protected by `state`'s lock.
        var finished = false
    }

    private let state = NIOLockedValueBox(State())
    private let bufferLimit: Int

    init(bufferLimit: Int) {
        self.bufferLimit = bufferLimit
    }

    /// A new stream for one consumer, starting with `initial` when given.
    func makeStream(initial: Element? = nil) -> AsyncStream<Element> {
        let (stream, continuation) = AsyncStream.makeStream(of: Element.self, bufferingPolicy: .bufferingNewest(bufferLimit))
        let id: Int? = state.withLockedValue { state in
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
        if let initial { continuation.yield(initial) }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLockedValue { $0.continuations.removeValue(forKey: id) }
        }
        return stream
    }

    /// Sends `value` to every consumer.
    func yield(_ value: Element) {
        let continuations = state.withLockedValue { Array($0.continuations.values) }
        for continuation in continuations { continuation.yield(value) }
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
