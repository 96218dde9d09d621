/// The app's lifecycle as events of the core (``DDPClient/didEnterBackground()``,
/// ``DDPClient/willEnterForeground()``), with the rules of ``BackgroundPolicy``. The rules decide a step here; the
/// funnel (`ClientCore.swift`) drives the connection and heartbeat machines accordingly.
extension ClientCore {
    /// Where the app stands, as the client was told.
    struct AppLifecycle {
        /// Between `didEnterBackground()` and `willEnterForeground()`.
        var inBackground = false
        /// The background policy paused the heartbeats.
        var heartbeatsPaused = false
        /// The background policy disconnected: coming back connects.
        var disconnectedInBackground = false
        /// A ping went out on coming back: a frame must come before ``Timer/foregroundPing``.
        var probing = false
    }

    /// What entering the background leads to.
    enum BackgroundStep: Equatable {
        case nothing
        case pauseHeartbeats
        case disconnect(after: Duration)
    }

    /// What coming back leads to, in this order.
    struct ForegroundStep: Equatable {
        /// The background disconnect's timer is cancelled.
        var cancelsBackgroundDisconnect = false
        /// The heartbeats the policy paused start again.
        var restartsHeartbeats = false
        /// The connection's step.
        var connection = Connection.keep

        enum Connection: Equatable {
            case keep
            /// Connect (the policy disconnected) or try now (waiting for the back-off).
            case connect
            /// Ping the silent socket; replace it if nothing answers in time.
            case probe
        }
    }

    /// The app moved to the background: the policy's step (`nothing` if it already was, or the client is closed).
    mutating func enteredBackground() -> BackgroundStep {
        guard !isClosed, !app.inBackground else { return .nothing }
        app.inBackground = true
        switch settings.backgroundPolicy {
        case .keepConnection: return .nothing
        case .pauseHeartbeats:
            app.heartbeatsPaused = true
            return .pauseHeartbeats
        case .disconnect(let after): return .disconnect(after: after)
        }
    }

    /// Whether the policy's disconnect is still due (the app is still in the background).
    func backgroundDisconnectIsDue() -> Bool {
        app.inBackground && !isClosed
    }

    /// The app comes back; the socket heard nothing for `silentFor` (`nil`: none is open). A client the policy
    /// disconnected connects; one waiting for its back-off tries at once; a socket silent for longer than the
    /// heartbeat interval is pinged (replaced if no frame comes within the foreground ping's timeout).
    mutating func enteringForeground(silentFor: Duration?, established: Bool, waitingToRetry: Bool) -> ForegroundStep {
        guard !isClosed else { return ForegroundStep() }
        var step = ForegroundStep()
        if case .disconnect = settings.backgroundPolicy { step.cancelsBackgroundDisconnect = app.inBackground }
        app.inBackground = false
        if app.heartbeatsPaused {
            app.heartbeatsPaused = false
            step.restartsHeartbeats = established && settings.heartbeatInterval > .zero
        }
        if app.disconnectedInBackground || waitingToRetry {
            app.disconnectedInBackground = false
            step.connection = .connect
        } else if established, settings.heartbeatInterval > .zero, let silentFor,
            silentFor > settings.heartbeatInterval, !app.probing
        {
            app.probing = true
            step.connection = .probe
        }
        return step
    }

    /// A frame arrived while a foreground ping awaited its answer: the socket is alive.
    mutating func foregroundProbeAnswered() -> [Action] {
        app.probing = false
        return [.cancelTimer(.foregroundPing)]
    }

    /// The foreground ping's timeout passed: whether it was still unanswered (then the socket is replaced).
    mutating func foregroundPingExpired() -> Bool {
        defer { app.probing = false }
        return app.probing
    }
}
