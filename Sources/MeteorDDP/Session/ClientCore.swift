/// Everything the client queue decides with, in one value: the connection and heartbeat machines, the session's
/// subscriptions, method blocks, stub-written documents' server copies, quiescence hold, after-update queue,
/// undeclared collections, reconnect hooks and resume token, and the offline store's durability gate and
/// reconciliation state.
///
/// No clock, no queue, no I/O: events go in as `mutating` functions (one family per file: `ClientCore+Methods.swift`,
/// `+Data`, `+AfterUpdate`, `+Quiescence`, `+Reconnect`, `+Subscriptions`, `+Reconciliation`), and what the client
/// must do comes out as values that ``DDPClient`` performs once the mutation is complete. Not `Sendable`: the client
/// queue owns the one instance, in ``DDPClient``. docs/ARCHITECTURE.md lists the events and what comes out.
struct ClientCore {
    /// The connection lifecycle.
    var machine: ConnectionStateMachine
    /// Heartbeat bookkeeping for the current session.
    var heartbeat = HeartbeatStateMachine()
    /// Identifies the client's newest transport connection; bumped for every attempt and every loss
    /// (``transportStarted()``, ``transportEnded()``): events of an older one are ignored.
    private(set) var connectionGeneration = 0
    /// Subscriptions, methods, stub-written documents and quiescence.
    var session: SessionState
    /// The offline store's gate on sending calls (empty without persistence).
    var durability = DurabilityGate()
    /// The offline store's restored state to reconcile and what the store was last given (empty without
    /// persistence).
    var offline = OfflineState()
    /// Whether `close()` was called: everything asked afterwards is answered at once.
    private(set) var isClosed = false
    /// The pong owed for the pings of the batch of frames being handled: the last ping's id (`.some(nil)` for a ping
    /// without one). One pong answers every ping of a batch (``pingReceived(id:)``).
    private(set) var owedPong: String?? = nil
    /// The most data messages held while waiting for quiescence
    /// (``DDPClient/Configuration/maxMessagesHeldForQuiescence``).
    let maxMessagesHeldForQuiescence: Int

    init(configuration: DDPClient.Configuration) {
        machine = ConnectionStateMachine(supportedVersions: configuration.supportedVersions)
        session = SessionState(
            maxDocumentsInUndeclaredCollections: configuration.maxDocumentsInUndeclaredCollections,
            rebasesStubs: configuration.pendingStubMode == .rebase)
        maxMessagesHeldForQuiescence = configuration.maxMessagesHeldForQuiescence
    }
}

extension ClientCore {
    /// What closing leaves to fail and stop.
    struct Closing {
        /// Every pending call, in call order: each fails with ``MethodError/Kind/clientClosed``.
        let failedCalls: [Invocation]
        /// Every subscription, in subscription order: each is stopped.
        let stoppedSubscriptions: [SubscriptionManager.Record]
    }

    /// `close()`: nothing is pending any more. `nil` when the client was closed already.
    mutating func close() -> Closing? {
        guard !isClosed else { return nil }
        isClosed = true
        return Closing(
            failedCalls: session.methods.removeAll(), stoppedSubscriptions: session.subscriptions.removeAll())
    }
}

// MARK: - Transport generations

extension ClientCore {
    /// A new transport connection starts: its events carry the generation returned.
    mutating func transportStarted() -> Int {
        connectionGeneration += 1
        return connectionGeneration
    }

    /// The current transport connection is closed or lost: whatever it still delivers is ignored.
    mutating func transportEnded() {
        connectionGeneration += 1
        owedPong = nil
    }
}

// MARK: - Pings

extension ClientCore {
    /// The server sent a ping: a pong is owed, sent once the batch of frames it came in is handled
    /// (``takeOwedPong()``). Pings of one batch are answered by one pong, with the last one's id: Meteor's client
    /// answers each, and a server pinging faster than the client drains (a flood: 100,000 pings cost 100,000 socket
    /// writes) gets one answer per batch instead. Meteor's server reads any message as a sign of life and never
    /// checks a pong's id; at Meteor's rate (a ping after 15 s of silence) every ping is still answered.
    mutating func pingReceived(id: String?) {
        owedPong = .some(id)
    }

    /// The pong owed for the batch just handled, if any (then none is owed).
    mutating func takeOwedPong() -> String?? {
        defer { owedPong = nil }
        return owedPong
    }
}
