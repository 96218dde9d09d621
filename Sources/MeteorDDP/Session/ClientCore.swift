/// Everything the client queue decides with, in one value: the connection and heartbeat machines, the session's
/// subscriptions, method blocks, stub-written documents' server copies, quiescence hold, after-update queue,
/// undeclared collections, reconnect hooks, the login lifecycle (account, logins in progress, logout reason, resume
/// token), and the offline store's durability gate and reconciliation state.
///
/// No clock, no queue, no I/O. Everything that changes it goes in through one funnel, ``handle(_:)``: an ``Input``
/// in, the ``Action``s the client performs out (async-http-client's `HTTPConnectionPool.StateMachine` shape).
/// ``DDPClient`` cannot write it otherwise (its `core` has a private setter; the one write hands an input here). The
/// machines and the lifecycle are the core's own: only ``handle(_:)`` drives them; each family's decisions live in its
/// concept folder as an extension (`ClientCore+Methods.swift`, `+Data`, `+AfterUpdate`, `+Quiescence`, `+Reconnect`,
/// `+Subscriptions`, `+StubReplays`, `+Reconciliation`), called from ``handle(_:)``. Not `Sendable`: the client queue
/// owns the one instance, in ``DDPClient``. docs/ARCHITECTURE.md lists the inputs and what comes out.
struct ClientCore {
    /// The connection lifecycle. Driven only by ``handle(_:)``.
    private(set) var machine: ConnectionStateMachine
    /// Heartbeat bookkeeping for the current session. Driven only by ``handle(_:)``.
    private(set) var heartbeat = HeartbeatStateMachine()
    /// Identifies the client's newest transport connection; bumped for every attempt and every loss: events of an
    /// older one are ignored.
    private(set) var connectionGeneration = 0
    /// Subscriptions, methods, stub-written documents and quiescence.
    var session: SessionState
    /// The offline store's gate on sending calls (empty without persistence).
    var durability = DurabilityGate()
    /// The offline store's restored state to reconcile and what the store was last given (empty without
    /// persistence).
    var offline = OfflineState()
    /// The client's life: open until `close()`, closed for good after (everything asked then is answered at once).
    private(set) var lifecycle = Lifecycle.open
    /// The account, the logins in progress, the logout reason and the resume token. Changed only by ``handle(_:)``.
    private(set) var login = LoginState()
    /// What a resumable session keeps for its resumption (Meteor 3.5+): frames set aside while down, what the old
    /// socket may have lost, the calls in flight at the resume and their deadline.
    var resumption = Resumption()
    /// Calls whose late or second answer may still come in this session: failed at a deadline (theirs, or the
    /// resumed calls'), or a login a resumed session sent again (its server may run it twice). Their `result` and
    /// `updated` are logged, not reported as the server's violation. Bounded by the app's calls; a new session
    /// forgets them.
    var lateAnswersExpected: Set<String> = []
    /// ``DDPClient/waitForPendingWrites()``'s waits: by token, the calls each still waits for. Bounded by the app's
    /// waits and calls.
    var pendingWritesWaits: [Int: Set<String>] = [:]
    /// The app's lifecycle (background, foreground) and what the background policy did.
    var app = AppLifecycle()
    /// The pong owed for the pings of the batch of frames being handled: the last ping's id (`.some(nil)` for a ping
    /// without one). One pong answers every ping of a batch (``Input/pingReceived(id:)``).
    private var owedPong: String?? = nil
    /// The connection's timings and policies, from the configuration.
    let settings: ConnectionSettings
    /// The most data messages held while waiting for quiescence
    /// (``DDPClient/Configuration/maxMessagesHeldForQuiescence``).
    let maxMessagesHeldForQuiescence: Int
    /// Whether the client has an offline store (``DDPClient/Configuration/persistence``): the session's changes are
    /// handed to it.
    let persists: Bool

    init(configuration: DDPClient.Configuration) {
        machine = ConnectionStateMachine(
            supportedVersions: configuration.supportedVersions, resumesSessions: configuration.resumesSessions)
        session = SessionState(
            maxDocumentsInUndeclaredCollections: configuration.maxDocumentsInUndeclaredCollections,
            rebasesStubs: configuration.pendingStubMode == .rebase)
        maxMessagesHeldForQuiescence = configuration.maxMessagesHeldForQuiescence
        persists = configuration.persistence != nil
        settings = ConnectionSettings(configuration)
    }

    /// What the core needs of the configuration to run the connection.
    struct ConnectionSettings {
        let connectTimeout: Duration
        /// Zero: no heartbeat.
        let heartbeatInterval: Duration
        let heartbeatTimeout: Duration
        let retryStrategy: RetryStrategy
        let respondsToPings: Bool
        /// How long a restored cache's subscriptions are awaited (``Persistence/reconciliationDelay``).
        let reconciliationDelay: Duration
        /// How long the calls in flight when a session is resumed may take to be answered.
        let resumedCallTimeout: Duration
        /// A call's deadline unless its options give one (``DDPClient/Configuration/callTimeout``).
        let callTimeout: Duration?
        /// ``DDPClient/Configuration/backgroundPolicy``.
        let backgroundPolicy: BackgroundPolicy
        /// ``DDPClient/Configuration/foregroundPingTimeout``.
        let foregroundPingTimeout: Duration

        init(_ configuration: DDPClient.Configuration) {
            connectTimeout = configuration.connectTimeout
            heartbeatInterval = configuration.heartbeatInterval
            heartbeatTimeout = configuration.heartbeatTimeout
            retryStrategy = configuration.retryStrategy
            respondsToPings = configuration.respondToPings
            reconciliationDelay = configuration.persistence?.reconciliationDelay ?? .zero
            resumedCallTimeout = configuration.resumedCallTimeout
            callTimeout = configuration.callTimeout
            backgroundPolicy = configuration.backgroundPolicy
            foregroundPingTimeout = configuration.foregroundPingTimeout
        }
    }

    /// Whether `close()` was called.
    var isClosed: Bool { lifecycle == .closed }

    /// The negotiated DDP version while the session is established.
    var sessionVersion: DDPVersion? { machine.version }

    /// Whether frames can be sent: the socket is open (handshake pending or done).
    var isSocketOpen: Bool { machine.isSocketOpen }
}

extension ClientCore {
    /// The client's life as the core sees it.
    enum Lifecycle: Equatable {
        /// Connecting, connected or not, as the connection machine says.
        case open
        /// `close()` took effect: no connection any more, calls fail and subscriptions stop at once.
        case closed
    }

    /// What closing leaves to fail and stop.
    struct Closing {
        /// Every pending call, in call order: each fails with ``MethodError/Kind/clientClosed``.
        let failedCalls: [Invocation]
        /// Every subscription, in subscription order: each is stopped.
        let stoppedSubscriptions: [SubscriptionManager.Record]
    }
}

// MARK: - The funnel

extension ClientCore {
    /// Decides what `input` leads to: the core's state moves on, and the actions returned, in order, are what the
    /// client performs (none of them has been performed; the core holds no closure of the client's).
    mutating func handle(_ input: consuming Input) -> [Action] {
        let actions = decide(input)
        // The session's frames wait while the socket is down or an offer to resume awaits its answer.
        guard !machine.sendsSessionFrames, !actions.isEmpty else { return actions }
        return settingAsideSessionFrames(actions)
    }

    /// Keeps the session's frames among `actions` aside for its resumption (or leaves them to the client, which
    /// drops them while no socket is open, when the session cannot be resumed: its next reset sends them again).
    private mutating func settingAsideSessionFrames(_ actions: [Action]) -> [Action] {
        guard machine.keepsSessionFramesForResumption else { return actions }
        var kept: [Action] = []
        for action in actions {
            switch action {
            case .sendCalls, .send(.sub), .send(.unsub), .send(.method): resumption.framesSetAside.append(action)
            default: kept.append(action)
            }
        }
        return kept
    }

    private mutating func decide(_ input: consuming Input) -> [Action] {
        switch consume input {
        case .connectRequested:
            app.disconnectedInBackground = false
            return isClosed ? [] : machineActions(machine.connectRequested())
        case .disconnectRequested:
            app.disconnectedInBackground = false
            return isClosed ? [] : machineActions(machine.disconnectRequested())
        case .reconnectRequested:
            app.disconnectedInBackground = false
            return isClosed ? [] : machineActions(machine.reconnectRequested())
        case .networkReachabilityChanged(let reachable):
            return isClosed ? [] : machineActions(machine.networkReachabilityChanged(reachable: reachable))
        case .closeRequested:
            guard !isClosed else { return [] }
            app = AppLifecycle()
            var actions = machineActions(machine.disconnectRequested())
            lifecycle = .closed
            login.closed()
            actions += pendingWritesWaits.keys.sorted().map { Action.pendingWritesSettled(token: $0, closed: true) }
            pendingWritesWaits = [:]
            actions.append(
                .closed(
                    Closing(
                        failedCalls: session.methods.removeAll(),
                        stoppedSubscriptions: session.subscriptions.removeAll())))
            return actions
        case .enteredBackground:
            // A foreground ping still awaiting its answer is forgotten: the background policy decides from here.
            let probe: [Action] = app.probing ? [.cancelTimer(.foregroundPing)] : []
            app.probing = false
            switch enteredBackground() {
            case .nothing: return probe
            case .pauseHeartbeats: return probe + heartbeatActions(heartbeat.stop())
            case .disconnect(let after):
                return probe
                    + (after > .zero ? [.schedule(.backgroundDisconnect, after: after)] : backgroundDisconnectActions())
            }
        case .enteringForeground(let silentFor):
            // Pings only where the session's version has heartbeats (not `pre1`).
            let step = enteringForeground(
                silentFor: silentFor, established: machine.version?.hasHeartbeats == true,
                waitingToRetry: machine.isWaitingToRetry)
            var actions: [Action] = step.cancelsBackgroundDisconnect ? [.cancelTimer(.backgroundDisconnect)] : []
            if step.restartsHeartbeats { actions += heartbeatActions(heartbeat.start()) }
            switch step.connection {
            case .keep: break
            case .connect: actions += machineActions(machine.connectRequested())
            case .probe:
                actions += [.send(.ping(id: nil)), .schedule(.foregroundPing, after: settings.foregroundPingTimeout)]
            }
            return actions
        case .reconnectHookSet(let name, let hook):
            session.userReconnectHooks[name] = hook
            return []

        case .transportOpened(let generation):
            guard generation == connectionGeneration else { return [] }
            return machineActions(machine.transportOpened())
        case .transportClosed(let error, let generation):
            guard generation == connectionGeneration else { return [] }
            transportEnded()
            let reason =
                error.map { DDPError.connectionLost($0.message, transportError: $0) } ?? .connectionLost("closed")
            return [.forgetTransport] + machineActions(machine.transportClosed(reason))
        case .binaryFrameReceived(let byteCount, let generation):
            guard generation == connectionGeneration else { return [] }
            return heartbeatActions(heartbeat.messageReceived()) + [
                .report(.protocolViolation(DDPProtocolViolation(.binaryFrame(byteCount: byteCount), frame: "<binary>")))
            ]
        case .frameReceived(let counted):
            machine.frameReceived(counted: counted)
            guard !app.probing else { return foregroundProbeAnswered() + heartbeatActions(heartbeat.messageReceived()) }
            return heartbeatActions(heartbeat.messageReceived())

        case .connectedReceived(let session):
            let actions = machineActions(machine.receivedConnected(session: session))
            guard actions.isEmpty else { return actions }
            return [
                .report(
                    Self.unexpected(
                        .connected(session: session), "the session is already established or no connect was sent"))
            ]
        case .failedReceived(let version):
            let actions = machineActions(machine.receivedFailed(version: version))
            guard actions.isEmpty else { return actions }
            return [.report(Self.unexpected(.failed(version: version), "no connect is pending"))]
        case .pingReceived(let id):
            // One pong answers the pings of a batch (``takeOwedPong()``).
            if settings.respondsToPings { owedPong = .some(id) }
            return []

        case .stubRan(let run): return stubRanActions(run)
        case .callMade(let invocation, let kept):
            let deadline = startDeadline(of: invocation)
            let calls = callMade(invocation, kept: kept)
            return deadline + (calls.isEmpty ? [] : [.sendCalls(calls)])
        case .updatedReceived(let ids, let storeIsIdle, let held):
            return updatedActions(ids, storeIsIdle: storeIsIdle, held: held)
        case .resultReceived(let id, let outcome):
            let progress = methodResultReceived(id, outcome)
            guard !progress.unknown else { return [unknownAnswerAction(id, frame: "result")] }
            return Self.methodActions(progress, id: id, frame: "result")
        case .methodDataVisible(let id):
            let progress = methodDataVisible(id)
            guard !progress.unknown else { return [unknownAnswerAction(id, frame: "updated")] }
            return Self.methodActions(progress, id: id, frame: "updated")
        case .callBecameDurable(let id):
            let calls = callBecameDurable(id)
            return calls.isEmpty ? [] : [.sendCalls(calls)]

        case .subscribeRequested(let request): return subscribeActions(request)
        case .subscriptionReleased(let id): return subscriptionReleasedActions(id)
        case .subscriptionFrameUnreadable(let id, let violation):
            return subscriptionFrameUnreadableActions(id, violation)
        case .readyReceived(let ids, let storeIsIdle, let held):
            return subscriptionsReadyActions(ids, storeIsIdle: storeIsIdle, held: held)
        case .nosubReceived(let id, let error, let storeIsIdle, let held):
            return nosubActions(id, error: error, storeIsIdle: storeIsIdle, held: held)

        case .documentReceived(let message, let held): return documentReceivedActions(message, held: held)
        case .removedReceived(let collection, let id, let held):
            return removedActions(collection: collection, id: id, held: held)
        case .callSettledAtQuiescence(let id, let storeIsIdle):
            var (idle, actions) = (storeIsIdle, [Action]())
            release(writtenBy: id, storeIsIdle: &idle, into: &actions)
            return actions
        case .sessionResetApplied: return sessionResetAppliedActions()
        case .afterUpdateRequested(let work, let afterServerDocuments, let storeIsIdle):
            return afterUpdateAction(work, afterServerDocuments: afterServerDocuments, storeIsIdle: storeIsIdle).map {
                [$0]
            } ?? []
        case .flushCompleted(let ticket):
            afterUpdateFlushed(ticket)
            return dueAfterUpdateActions()
        case .afterUpdatePerformed: return dueAfterUpdateActions()
        case .burstHandled:
            // One pong answers the burst's pings (``takeOwedPong()``); the stubs a change concerns are replayed over
            // it; the cache gets the burst's updates; the store what changed.
            var actions: [Action] = []
            if let id = takeOwedPong() { actions.append(.send(.pong(id: id))) }
            if stubReplayIsDue { actions.append(.replayPendingStubs) }
            actions.append(.pushCacheUpdates)
            if persists { actions.append(.persistSessionChanges) }
            return actions

        case .replayRoundRequested(let stubNamed):
            return takeReplayPlan(stubNamed: stubNamed).map { [.replayRound($0)] } ?? []
        case .replayRoundRan(let runs, let escaped, let round):
            return replayRoundRanActions(runs, escaped: escaped, round: round)

        case .resumeTokenChanged(let token):
            login.resumeTokenChanged(token)
            return []
        case .storedAccountRestored(let account):
            login.restored(account)
            return []
        case .storedAccountExpired:
            login.restoredAccountExpired()
            return []
        case .loginStarted:
            login.loginStarted()
            return []
        case .loginEnded(let resuming):
            login.loginEnded(resuming: resuming)
            return []
        case .accountSet(let account, let clearing):
            return login.setAccount(account, clearingLogoutReason: clearing) ? [.accountChanged(account)] : []
        case .logoutRequired(let reason):
            guard let userID = login.loggedOut(reason) else { return [] }
            _ = login.setAccount(nil, clearingLogoutReason: false)
            return [.accountChanged(nil), .loggedOut(userID: userID, reason: reason)]
        case .closedAccountForgotten:
            _ = login.setAccount(nil, clearingLogoutReason: false)
            return []
        case .collectionDeclared(let name):
            collectionDeclared(name)
            return []

        case .storeRestored(let state): return storeRestoredActions(state)
        case .sessionChangesRequested: return sessionChangesActions()
        case .storedSubscriptionsErased:
            storedSubscriptionsErased()
            return sessionChangesActions()
        case .callCompleted(let id, let wasKept):
            return callCompletedActions(id, wasKept: wasKept) + pendingWritesActions(completed: id)
        case .pendingWritesWaitRequested(let token): return pendingWritesWaitActions(token)
        case .pendingWritesWaitCancelled(let token):
            pendingWritesWaits.removeValue(forKey: token)
            return []
        case .restoredCallMissesData(let id, let effects): return restoredCallMissesDataActions(id, effects)
        case .restoredCallsJudgementDue(let force):
            return restoredCallsToJudge(force: force).map { .judgeRestoredCall(id: $0.id, $0.effects, waited: true) }

        case .timerFired(let timer):
            switch timer {
            case .connectTimeout: return machineActions(machine.connectTimeoutElapsed())
            case .retry: return machineActions(machine.retryElapsed())
            case .heartbeatInterval: return heartbeatActions(heartbeat.intervalElapsed())
            case .heartbeatTimeout: return heartbeatActions(heartbeat.timeoutElapsed())
            case .reconciliation:
                // The store is told once the hold is applied (applying it changes what the store keeps).
                let hold = reconciliationDelayElapsed().map { [Action.applyQuiescence($0)] } ?? []
                return hold + (persists ? [.persistSessionChanges] : [])
            case .unsubscribe(let id, let generation): return unsubscribeActions(id, generation: generation)
            case .resumedCallsDeadline: return resumedCallsDeadlineActions()
            case .callDeadline(let id): return callDeadlineActions(id)
            case .backgroundDisconnect: return backgroundDisconnectActions()
            case .foregroundPing:
                // Unanswered: the socket is replaced now, as a heartbeat timeout would replace it.
                return foregroundPingExpired() ? machineActions(machine.heartbeatTimedOut()) : []
            }
        case .reconnectHooksFinished(let run):
            let held = reconnectHooksAreRunning
            guard reconnectHooksFinished(run: run) else { return [] }
            return resendAfterReconnectHooks(held: held)
        case .reconnectHooksHoldLimitReached:
            guard stopWaitingForReconnectHooks() else { return [] }
            let report = DDPError.limitReached(
                "held \(maxMessagesHeldForQuiescence) messages while onReconnect hooks ran; "
                    + "re-sending methods and subscriptions without waiting for the hooks")
            return [.report(report)] + resendAfterReconnectHooks(held: true)
        }
    }

    /// The app's time in the background reached the policy's: the client disconnects (the server ends the session)
    /// until the app comes back.
    private mutating func backgroundDisconnectActions() -> [Action] {
        // Offline or failed already (the app's `disconnect()`, a lost network, a refused upgrade): nothing to end, and
        // coming back must not connect.
        guard backgroundDisconnectIsDue(), machine.isActive else { return [] }
        let actions = machineActions(machine.disconnectRequested())
        if !actions.isEmpty { app.disconnectedInBackground = true }
        return actions
    }

    /// The pong owed for the batch just handled, if any (then none is owed; ``Input/burstHandled``). Pings of one
    /// batch are answered by one pong, with the last one's id: Meteor's client answers each, and a server pinging
    /// faster than the client drains (a flood: 100,000 pings cost 100,000 socket writes) gets one answer per batch
    /// instead. Meteor's server reads any message as a sign of life and never checks a pong's id; at Meteor's rate (a
    /// ping after 15 s of silence) every ping is still answered.
    private mutating func takeOwedPong() -> String?? {
        defer { owedPong = nil }
        return owedPong
    }

    /// A message the session did not expect now (reported, as Meteor's client throws it away).
    static func unexpected(_ message: ServerMessage, _ reason: String) -> DDPError {
        .protocolViolation(
            DDPProtocolViolation(.unexpected(message: message.name, reason: reason), message: message.ejsonValue))
    }

    /// The connection machine's actions as the client performs them: the core's own parts (the transport's
    /// generation, the heartbeat, the new socket's reset, the established session's quiescence) decided here.
    private mutating func machineActions(_ machineActions: [ConnectionStateMachine.Action]) -> [Action] {
        var actions: [Action] = []
        for action in machineActions {
            switch action {
            case .openTransport:
                connectionGeneration += 1
                actions.append(.openTransport(generation: connectionGeneration))
            case .closeTransport:
                transportEnded()
                actions.append(.closeTransport)
            case .endSession:
                transportEnded()
                actions += forgetResumption()
                actions.append(.endSession)
            case .sessionResumed(let session, _): actions += sessionResumedActions(session: session)
            case .sendConnect(let message): actions.append(.send(message))
            case .resetSession:
                // A new session: the reset sends again what matters of what was set aside.
                actions += forgetResumption()
                actions += socketResetActions()
            case .scheduleConnectTimeout: actions.append(.schedule(.connectTimeout, after: settings.connectTimeout))
            case .cancelConnectTimeout: actions.append(.cancelTimer(.connectTimeout))
            case .scheduleRetry(let retryCount, let reason):
                let delay = settings.retryStrategy.delay(forRetryCount: retryCount)
                actions.append(.waitToRetry(retryCount: retryCount, delay: delay, reason: reason))
            case .cancelRetry: actions.append(.cancelTimer(.retry))
            case .startHeartbeat:
                // Not while the background policy pauses them (a socket opened in the background).
                if settings.heartbeatInterval > .zero, !app.heartbeatsPaused {
                    actions += heartbeatActions(heartbeat.start())
                }
            case .stopHeartbeat: actions += heartbeatActions(heartbeat.stop())
            case .sessionEstablished(let session, let version, let isReconnect):
                actions.append(.logSessionEstablished(session: session, version: version, isReconnect: isReconnect))
                // The first connection after a restart reconciles the restored cache as a reconnect resets it.
                let (reconciling, armDelay) = startReconciliationIfPending()
                if armDelay { actions.append(.schedule(.reconciliation, after: settings.reconciliationDelay)) }
                if let hold = sessionConnected(isReconnect: isReconnect, reconciling: reconciling) {
                    actions.append(.applyQuiescence(hold))
                }
            // Subscriptions, calls and the cache are kept for the next socket (its reset re-sends them).
            case .connectionLost(let error): actions.append(.report(error))
            case .disconnectedByClient: break
            case .publishStatus(let status): actions.append(.publishStatus(status))
            }
        }
        return actions
    }

    private mutating func heartbeatActions(_ heartbeatActions: [HeartbeatStateMachine.Action]) -> [Action] {
        guard !heartbeatActions.isEmpty else { return [] }
        var actions: [Action] = []
        for action in heartbeatActions {
            switch action {
            case .scheduleInterval: actions.append(.schedule(.heartbeatInterval, after: settings.heartbeatInterval))
            case .cancelInterval: actions.append(.cancelTimer(.heartbeatInterval))
            case .sendPing: actions.append(.send(.ping(id: nil)))
            case .scheduleTimeout: actions.append(.schedule(.heartbeatTimeout, after: settings.heartbeatTimeout))
            case .cancelTimeout: actions.append(.cancelTimer(.heartbeatTimeout))
            case .reportTimeout: actions += machineActions(machine.heartbeatTimedOut())
            }
        }
        return actions
    }

    /// The current transport connection is closed or lost: whatever it still delivers is ignored.
    private mutating func transportEnded() {
        connectionGeneration += 1
        owedPong = nil
    }
}
