import EJSON

/// Everything the client tracks about its DDP session beyond the connection itself: subscriptions, method calls,
/// stub-written documents, and quiescence (LC `_subsBeingRevived`, `_methodsBlockingQuiescence`,
/// `_messagesBufferedUntilQuiescence`, `_afterUpdateCallbacks`, `_resetStores`). Confined to the client queue.
struct SessionState {
    /// Confined to the client queue.
    var subscriptions = SubscriptionManager()
    /// Confined to the client queue.
    var methods = MethodCoordinator()
    /// Confined to the client queue.
    var serverDocuments = ServerDocumentBuffer()
    /// With ``PendingStubMode/rebase``: the pending stubs replayed over the server's newest data. Confined to the
    /// client queue.
    var stubReplays: StubReplays
    /// Wait methods (and methods re-sent after a reconnect) whose `updated` has not arrived. Confined to the client
    /// queue.
    var methodsBlockingQuiescence: Set<String> = []
    /// While waiting for quiescence: the data messages held back. Confined to the client queue.
    var quiescence: QuiescenceHold?
    /// Work to run once the cache has applied what was queued before it, in order. Confined to the client queue.
    var afterUpdate = AfterUpdateQueue()
    /// Documents cached for collections the app never declared, bounded. Confined to the client queue.
    var undeclaredCollections: UndeclaredCollections
    /// The app's hooks (``DDPClient/onReconnect(_:_:)``), run on the callback queue by name. Confined to the client
    /// queue.
    var userReconnectHooks: [String: @Sendable () -> Void] = [:]
    /// While the app's hooks run for a new socket: that run's number (incoming messages are held meanwhile; a reset
    /// with no hooks holds nothing and sets none). Confined to the client queue.
    var reconnectHooksRunning: Int?
    /// Numbers the runs of the app's hooks. Confined to the client queue.
    var reconnectHooksRuns = 0
    /// The run of the newest socket's reset while its calls and subscriptions wait to be sent again (until its hooks,
    /// possibly none, have run: ``ClientCore/Input/reconnectHooksFinished(run:)``). Confined to the client queue.
    var resetAwaitingResend: Int?

    init(maxDocumentsInUndeclaredCollections: Int, rebasesStubs: Bool) {
        stubReplays = StubReplays(isOn: rebasesStubs)
        undeclaredCollections = UndeclaredCollections(limit: maxDocumentsInUndeclaredCollections)
    }

    var isWaitingForQuiescence: Bool {
        subscriptions.isReviving || !methodsBlockingQuiescence.isEmpty
    }
}

/// Data messages held until quiescence (LC `_messagesBufferedUntilQuiescence`), processed in arrival order once no
/// revived subscription and no blocking method is outstanding. Holding the raw messages, before any routing, means a
/// stub that runs meanwhile takes the cache as it is as the server's version, and the held messages then update that
/// version: it is never older than what the server sent.
struct QuiescenceHold {
    /// Whether processing the messages replaces the cache (after a reconnect: the new session re-sends everything).
    let resetting: Bool
    /// The held messages, in arrival order.
    var messages: [IncomingMessage] = []
    /// Methods that had their result but not their data when the connection was lost: they are not re-sent, so their
    /// data counts as visible once the held messages are applied (LC `_livedata_connected`).
    var methodsVisibleAtQuiescence: [String] = []
}
