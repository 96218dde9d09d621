/// Everything the client queue owns, in one value (issue 36's `ClientCore`, being moved here piece by piece): the
/// connection and heartbeat machines, the session's subscriptions, methods, server documents and quiescence hold.
///
/// No clock, no queue, no I/O: events go in as `mutating` functions, and what the client must do comes out as values
/// that ``DDPClient`` performs once the mutation is complete (see `ClientCore+Quiescence.swift`). Not `Sendable`:
/// the client queue owns the one instance, in ``DDPClient``.
struct ClientCore {
    /// The connection lifecycle.
    var machine: ConnectionStateMachine
    /// Heartbeat bookkeeping for the current session.
    var heartbeat = HeartbeatStateMachine()
    /// Identifies the client's newest transport connection; bumped for every attempt and every loss.
    var connectionGeneration = 0
    /// Subscriptions, methods, stub-written documents and quiescence.
    var session: SessionState
    /// The most data messages held while waiting for quiescence
    /// (``DDPClient/Configuration/maxMessagesHeldForQuiescence``).
    let maxMessagesHeldForQuiescence: Int

    init(configuration: DDPClient.Configuration) {
        machine = ConnectionStateMachine(supportedVersions: configuration.supportedVersions)
        session = SessionState(maxDocumentsInUndeclaredCollections: configuration.maxDocumentsInUndeclaredCollections)
        maxMessagesHeldForQuiescence = configuration.maxMessagesHeldForQuiescence
    }
}
