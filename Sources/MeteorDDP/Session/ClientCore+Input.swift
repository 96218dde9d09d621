import EJSON

/// What happens to the client, as the client queue hands it to the core: ``ClientCore/handle(_:)`` decides, and
/// returns what the client must do (``ClientCore/Action``), performed once the mutation is complete.
///
/// The connection's life goes through here (the app's connection requests, the transport's events, the handshake's
/// and heartbeat's frames, the timers and the app's reconnect hooks), a call's answers and the server's `ready` and
/// `nosub`. (A call's making, data and the app's subscribing still enter by their own functions, listed in
/// docs/ARCHITECTURE.md.)
extension ClientCore {
    enum Input {
        // MARK: The app

        /// ``DDPClient/connect()``.
        case connectRequested
        /// ``DDPClient/disconnect()``.
        case disconnectRequested
        /// ``DDPClient/reconnect()``.
        case reconnectRequested
        /// ``DDPClient/networkDidBecomeReachable()`` and ``DDPClient/networkDidBecomeUnreachable()``.
        case networkReachabilityChanged(reachable: Bool)
        /// ``DDPClient/close()``.
        case closeRequested
        /// ``DDPClient/onReconnect(_:_:)``.
        case reconnectHookSet(name: String, hook: @Sendable () -> Void)

        // MARK: The transport (each event carries the generation of the connection it comes from)

        case transportOpened(generation: Int)
        case transportClosed(TransportError?, generation: Int)
        case binaryFrameReceived(byteCount: Int, generation: Int)
        /// A frame of the current connection arrived, whatever it holds (a sign of life for the heartbeat).
        case frameReceived

        // MARK: The handshake and heartbeat's frames

        case connectedReceived(session: String)
        case failedReceived(version: String)
        case pingReceived(id: String?)

        // MARK: Calls

        /// A call's `result` (a result that did not parse: a failure).
        case resultReceived(id: String, Result<EJSONValue?, any Error>)
        /// A call's `updated` arrived and what it waited for was applied to the cache (or, for a call not re-sent
        /// after a reconnect, quiescence came).
        case methodDataVisible(id: String)
        /// A kept call's record is on disk (the offline store's writer).
        case callBecameDurable(id: String)

        // MARK: Subscriptions

        /// `ready` for `ids`. `storeIsIdle`: whether the cache has applied everything queued for it (work that waits
        /// for the cache is decided with it).
        case readyReceived(ids: [String], storeIsIdle: Bool)
        /// `nosub` for `id`, with the server's error if it failed.
        case nosubReceived(id: String, error: MeteorError?, storeIsIdle: Bool)

        // MARK: Timers and hooks

        /// A timer the core scheduled fell due (the client drops firings of timers cancelled or scheduled again).
        case timerFired(Timer)
        /// The app's reconnect hooks of run `run` returned (or there were none).
        case reconnectHooksFinished(run: Int)
        /// The inbox held ``DDPClient/Configuration/maxMessagesHeldForQuiescence`` messages while the hooks ran.
        case reconnectHooksHoldLimitReached
    }

    /// The timers the core schedules (``Action/schedule(_:after:)``).
    enum Timer: Hashable {
        case connectTimeout, retry, heartbeatInterval, heartbeatTimeout, reconciliation
    }
}
