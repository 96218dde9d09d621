import EJSON

/// What happens to the client, as the client queue hands it to the core: ``ClientCore/handle(_:)`` decides, and
/// returns what the client must do (``ClientCore/Action``), performed once the mutation is complete.
///
/// Everything that changes the client queue's state goes through here: the connection's life (the app's requests,
/// the transport's events, the handshake's and heartbeat's frames, the timers, the app's reconnect hooks), a call's
/// making and answers, the server's data, subscriptions, the work that waits for the cache, the stub replays, the
/// login's resume token and the offline store's bookkeeping. ``DDPClient`` cannot write the core otherwise: its
/// `core` has a private setter, and the one function that mutates it hands an input here.
extension ClientCore {
    /// Large payloads of rare inputs are boxed (`indirect`): every input is moved at least once, and the frequent ones
    /// stay small.
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
        /// ``DDPClient/didEnterBackground()``.
        case enteredBackground
        /// ``DDPClient/willEnterForeground()``: the socket heard nothing for `silentFor` (`nil`: none is open).
        case enteringForeground(silentFor: Duration?)
        /// ``DDPClient/onReconnect(_:_:)``.
        case reconnectHookSet(name: String, hook: @Sendable () -> Void)

        // MARK: The transport (each event carries the generation of the connection it comes from)

        case transportOpened(generation: Int)
        case transportClosed(TransportError?, generation: Int)
        case binaryFrameReceived(byteCount: Int, generation: Int)
        /// A frame of the current connection arrived, whatever it holds (a sign of life for the heartbeat).
        /// `counted`: a message other than `ping` and `pong` (a resumable session counts them, as the server does).
        case frameReceived(counted: Bool)

        // MARK: The handshake and heartbeat's frames

        case connectedReceived(session: String)
        case failedReceived(version: String)
        case pingReceived(id: String?)

        // MARK: Calls

        /// A new call's stub ran (or it has none, or it threw): the call takes the core's next id.
        indirect case stubRan(StubRun)
        /// A call whose stub ran was made; `kept`: its record is on its way to the offline store.
        case callMade(MethodCoordinator.Invocation, kept: Bool)
        /// `updated` for `ids` (held as a data message; `held` as for ``documentReceived(_:held:)``). `storeIsIdle`:
        /// whether the cache has applied everything queued for it.
        case updatedReceived(ids: [String], storeIsIdle: Bool, held: Bool)
        /// A call's `result` (a result that did not parse: a failure).
        case resultReceived(id: String, Result<EJSONValue?, any Error>)
        /// A call's `updated` arrived and what it waited for was applied to the cache (or, for a call not re-sent
        /// after a reconnect, quiescence came).
        case methodDataVisible(id: String)
        /// A kept call's record is on disk (the offline store's writer).
        case callBecameDurable(id: String)

        // MARK: Subscriptions

        /// ``DDPClient/subscribe(_:params:notInUseTimeout:)`` (or a handle made inside a transaction, now bound).
        indirect case subscribeRequested(SubscribeRequest)
        /// A handle let go of subscription `id`.
        case subscriptionReleased(id: String)
        /// A `ready` or `nosub` for `id` that did not parse (reported already): the subscription fails.
        indirect case subscriptionFrameUnreadable(id: String, DDPProtocolViolation)
        /// `ready` for `ids` (held as a data message; `held` as for ``documentReceived(_:held:)``). `storeIsIdle`:
        /// whether the cache has applied everything queued for it (work that waits for the cache is decided with it).
        case readyReceived(ids: [String], storeIsIdle: Bool, held: Bool)
        /// `nosub` for `id`, with the server's error if it failed.
        indirect case nosubReceived(id: String, error: MeteorError?, storeIsIdle: Bool, held: Bool)

        // MARK: The cache

        /// `added` or `changed` of the established session (its fields packed): held while the session waits for
        /// quiescence, else routed (`held`: quiescence came, and it is one of the messages it held: routed now,
        /// whatever holds since). The flood path: nothing is asked of the cache.
        case documentReceived(DocumentMessage, held: Bool)
        /// `removed` of the established session (`held` as for ``documentReceived(_:held:)``).
        case removedReceived(collection: String, id: String, held: Bool)
        /// Quiescence came for a call that is not sent again: the documents only its stub still held get the server's
        /// version.
        case callSettledAtQuiescence(id: String, storeIsIdle: Bool)
        /// A resetting hold was applied to the cache.
        case sessionResetApplied
        /// Work waits for the cache (``AfterUpdateWork``); `afterServerDocuments`: also for every document the sent
        /// calls' stubs wrote to have its server version.
        case afterUpdateRequested(AfterUpdateWork, afterServerDocuments: Bool, storeIsIdle: Bool)
        /// The cache's flush of `ticket` completed.
        case flushCompleted(ticket: Int)
        /// Due work handed out by ``Action/performAfterUpdate(_:then:)`` was done: the next is due, if any.
        case afterUpdatePerformed
        /// The client handled a burst of incoming frames.
        case burstHandled

        // MARK: Stub replays (PendingStubMode.rebase)

        /// A replay's next round is asked for (``Action/replayRound(_:)``, or nothing when none is due).
        case replayRoundRequested(stubNamed: (String) -> MethodStub?)
        /// A round's stubs ran; `escaped`: documents they wrote outside its plan.
        case replayRoundRan([ReplayedStub], escaped: [DocumentKey], round: Int)

        // MARK: The login and the app's collections

        /// A login succeeded (or its result arrived): new sockets resume with `token`; `nil`: logged out.
        case resumeTokenChanged(String?)
        /// An account restored from the ``DDPClient/Configuration/accountStore`` at start-up
        /// (``LoginState/restored(_:)``).
        case storedAccountRestored(Account)
        /// The stored account's token expires within the hour at start-up: the client starts logged out.
        case storedAccountExpired
        /// The app called a login method.
        case loginStarted
        /// A login ended, completed or failed (`resuming`: a resume, the first of which ends the start-up one).
        case loginEnded(resuming: Bool)
        /// A login's account is set (``Action/accountChanged(_:)`` if it differs); a successful login also clears the
        /// logout reason.
        case accountSet(Account?, clearingLogoutReason: Bool)
        /// Meteor's `makeClientLoggedOut`: no resume from now on; an account there was is cleared
        /// (``Action/loggedOut(userID:reason:)``).
        case logoutRequired(LogoutReason)
        /// The closed client's account was cleared with its stores (no stream or notification follows it any more).
        case closedAccountForgotten
        /// ``DDPClient/collection(_:idGeneration:)``: the collection's data is no longer bounded.
        case collectionDeclared(String)

        // MARK: The offline store

        /// The store was read at launch.
        indirect case storeRestored(RestoredState)
        /// The client hands the store what changed in the session.
        case sessionChangesRequested
        /// Logging out erased the store's subscriptions.
        case storedSubscriptionsErased
        /// Call `id` completed (`wasKept`: it was in the store): a restored call is judged against the server's data
        /// (``Action/judgeRestoredCall(id:_:waited:)``), a kept one leaves the store.
        case callCompleted(id: String, wasKept: Bool)
        /// The app waits for the calls pending now (``DDPClient/waitForPendingWrites()``), as wait `token`.
        case pendingWritesWaitRequested(token: Int)
        /// Wait `token`'s task was cancelled.
        case pendingWritesWaitCancelled(token: Int)
        /// A restored call's judgement found a document missing: it waits for the subscriptions' data, if any is on
        /// its way (else it is judged now).
        case restoredCallMissesData(id: String, [StoredStubEffect])
        /// Subscriptions became ready or ended (`force`: the client is closing): restored calls that waited are judged.
        case restoredCallsJudgementDue(force: Bool)

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
        /// The calls in flight when the session was resumed have had ``DDPClient/Configuration/resumedCallTimeout``
        /// to be answered.
        case resumedCallsDeadline
        /// Subscription `id`'s `notInUseTimeout` after its last handle let go (`generation`: of that release).
        case unsubscribe(id: String, generation: Int)
        /// Call `id`'s deadline (``MethodOptions/timeout``, ``DDPClient/Configuration/callTimeout``).
        case callDeadline(id: String)
        /// The app's time in the background reached ``BackgroundPolicy/disconnect(after:)``'s.
        case backgroundDisconnect
        /// The ping sent when the app came back had ``DDPClient/Configuration/foregroundPingTimeout`` to be answered.
        case foregroundPing
    }

    /// What a new call's stub did (``Input/stubRan(_:)``).
    struct StubRun {
        /// The id the client took for the call (``nextMethodID``).
        let id: String
        /// For ``PendingStubMode/rebase``: the call to replay (`nil`: it has no stub, or its stub threw and nothing is
        /// sent).
        let replay: StubReplays.Call?
        /// The documents it wrote, with their versions from before (`nil`: nothing is sent, what it wrote is undone).
        let originals: [(DocumentKey, EJSONObject?)]?
    }

    /// A subscription the app asks for.
    struct SubscribeRequest {
        let name: String
        let params: [EJSONValue]
        let notInUseTimeout: Duration
        let userCode: UserCodeQueue
        /// A handle made inside a transaction: a new subscription takes its state.
        let state: SubscriptionState?
        /// The new subscription's id (asked only when none is joined).
        let makeID: () -> String
    }

    /// One stub's replay, as the core records it.
    struct ReplayedStub {
        let id: String
        let originals: [(DocumentKey, EJSONObject?)]
        let failed: Bool
        let randomSeed: String?
        let reads: CacheReads
    }

    /// What the offline store held at launch, as the core takes it.
    struct RestoredState {
        let serverDocuments: [StoredServerDocument]
        let methods: [StoredMethod]
        /// The restored calls, in call order, as the client will complete them.
        let calls: [(method: StoredMethod, invocation: MethodCoordinator.Invocation)]
        let subscriptions: [StoredSubscription]
        let stubEffects: [String: [StoredStubEffect]]
        let hasState: Bool
    }
}
