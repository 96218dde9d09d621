/// The connection's status over time: the current status first, then every change.
///
/// Each iteration is an independent consumer. A consumer that falls behind keeps only the newest 64 statuses
/// (older ones are dropped: status is a state, not a log). The sequence ends when the client is closed.
/// For example:
/// ```swift
/// for await status in client.statusUpdates where status.isConnected { print("online") }
/// ```
public struct ConnectionStatusUpdates: AsyncSequence, Sendable {
    public typealias Element = ConnectionStatus
    let stream: AsyncStream<ConnectionStatus>

    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(base: stream.makeAsyncIterator()) }

    /// Iterates the statuses; cancelling the task ends the iteration and unregisters the consumer.
    public struct AsyncIterator: AsyncIteratorProtocol {
        var base: AsyncStream<ConnectionStatus>.AsyncIterator
        public mutating func next() async -> ConnectionStatus? { await base.next() }
    }
}

/// Errors the client survived: protocol violations, server `error` messages, lost connections.
///
/// Each iteration is an independent consumer that sees errors from the moment it starts; a consumer that falls
/// behind keeps the newest 256. The sequence ends when the client is closed.
public struct DDPErrors: AsyncSequence, Sendable {
    public typealias Element = DDPError
    let stream: AsyncStream<DDPError>

    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(base: stream.makeAsyncIterator()) }

    /// Iterates the errors.
    public struct AsyncIterator: AsyncIteratorProtocol {
        var base: AsyncStream<DDPError>.AsyncIterator
        public mutating func next() async -> DDPError? { await base.next() }
    }
}
