import EJSON

/// Everything the client tracks about its DDP session beyond the connection itself: subscriptions, method calls,
/// stub-written documents, and quiescence (LC `_subsBeingRevived`, `_methodsBlockingQuiescence`,
/// `_afterUpdateCallbacks`, `_resetStores`). Confined to the client queue.
struct SessionState {
    /// Confined to the client queue.
    var subscriptions = SubscriptionManager()
    /// Confined to the client queue.
    var methods = MethodCoordinator()
    /// Confined to the client queue.
    var serverDocuments = ServerDocumentBuffer()
    /// Wait methods (and methods re-sent after a reconnect) whose `updated` has not arrived. Confined to the client queue.
    var methodsBlockingQuiescence: Set<String> = []
    /// Whether the store is held for quiescence, and whether its release resets it. Confined to the client queue.
    var holding: (resetting: Bool, since: Int)?
    /// Work to do once quiescence ends and its batch was applied. Confined to the client queue.
    var afterQuiescence: [@Sendable () -> Void] = []
    /// Hooks run on every new socket, before old methods are re-sent (accounts' resume login). Confined to the client queue.
    var reconnectHooks: [String: () -> Void] = [:]

    var isWaitingForQuiescence: Bool {
        subscriptions.isReviving || !methodsBlockingQuiescence.isEmpty
    }
}
