/// A sequence of what a client publishes over time: its connection status (``ConnectionStatusUpdates``), the errors
/// it survived (``DDPErrors``), its account (``AccountUpdates``), its logins and logouts (``LoginEvents``), a
/// subscription's status (``SubscriptionStatusUpdates``).
///
/// Each iteration is an independent consumer; what a consumer that falls behind keeps, and whether it first gets
/// the current value, is documented where the sequence is offered. The sequence ends when the client is closed (a
/// subscription's, when the subscription ends). Cancelling the iterating task ends the iteration and unregisters the
/// consumer.
public struct ClientUpdates<Element: Sendable>: AsyncSequence, Sendable {
    public typealias Failure = Never
    let stream: AsyncStream<Element>

    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(base: stream.makeAsyncIterator()) }

    /// Iterates the updates.
    public struct AsyncIterator: AsyncIteratorProtocol {
        public typealias Failure = Never
        var base: AsyncStream<Element>.AsyncIterator
        public mutating func next() async -> Element? { await base.next() }
    }
}

/// The connection's status over time: the current status first, then every change.
///
/// A consumer that falls behind keeps only the newest 64 statuses (older ones are dropped: status is a state, not a
/// log). The sequence ends when the client is closed.
/// For example:
/// ```swift
/// for await status in client.statusUpdates where status.isConnected { print("online") }
/// ```
public typealias ConnectionStatusUpdates = ClientUpdates<ConnectionStatus>

/// Errors the client survived: protocol violations, server `error` messages, lost connections.
///
/// Each iteration sees errors from the moment it starts; a consumer that falls behind keeps the newest 256. The errors
/// a batch of incoming frames causes arrive together once the batch is handled (up to 256 at a time), after the
/// completions and status changes of that batch. The sequence ends when the client is closed.
public typealias DDPErrors = ClientUpdates<DDPError>

/// The logged-in account now and every change after it (`nil`: logged out). A consumer that falls behind keeps the
/// newest 16. The sequence ends when the client is closed.
public typealias AccountUpdates = ClientUpdates<Account?>

/// Logins, failed logins and logouts from the moment iteration starts, in order. A consumer that falls behind keeps
/// the newest 64. The sequence ends when the client is closed.
public typealias LoginEvents = ClientUpdates<LoginEvent>

/// A subscription's status now and every change after it; `failed` and `stopped` end the sequence.
public typealias SubscriptionStatusUpdates = ClientUpdates<SubscriptionStatus>
