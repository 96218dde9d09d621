import EJSON

/// What the client must do, as ``ClientCore/handle(_:)`` decides it: performed in order by ``DDPClient``'s
/// `run(_:)`, on the client queue, after the core's mutation is complete. Imperatives only: the decisions are made.
/// One performer hands an input back (``Action/runReconnectHooks(run:hooks:)`` with no hooks): it is always the last
/// action of its list, so the core's next mutation starts once this list is done.
extension ClientCore {
    /// Large payloads of rare actions are boxed (`indirect`): each action is copied out of its list once, and the
    /// frequent ones stay small.
    enum Action {
        // MARK: The transport

        /// Opens a transport connection whose events carry `generation`.
        case openTransport(generation: Int)
        /// Closes the current transport connection (its later events are ignored already).
        case closeTransport
        /// The current transport connection ended on its own: the client lets go of it.
        case forgetTransport
        /// The app ended the session: `{"msg":"disconnect"}` goes out on the current connection, which then closes once
        /// what it queued is written (Meteor 3.5+: the server keeps no session to resume).
        case endSession
        /// The server resumed the session on the new socket (logged at info).
        case logSessionResumed(session: String)
        case send(ClientMessage)
        /// Sends the calls the core released, in order (they are awaited from now on).
        case sendCalls([MethodCoordinator.Invocation])

        // MARK: Calls

        /// A `result` or `updated` the client expected after it settled the call without it (a call failed at the
        /// resumed calls' deadline, a login a resumed session sent again): logged at debug, ignored.
        case logLateAnswer(frame: String, id: String)

        /// A call's result arrived: the app's `onResultReceived` hears of it.
        case resultArrived(MethodCoordinator.Invocation)
        /// A kept call has its result but not its data: the result is stored (after a restart it completes at
        /// reconciliation instead of running again).
        case storeResult(MethodCoordinator.Invocation)
        /// The call completed: a kept one leaves the store (``Input/callCompleted(id:wasKept:)``), then its
        /// completion runs.
        case completeCall(MethodCoordinator.Invocation, wasKept: Bool)

        /// Every call wait `token` waited for completed: it returns (with the offline store, once the store has
        /// written what they changed), or throws ``DDPError/Code/clientClosed`` when `closed`.
        case pendingWritesSettled(token: Int, closed: Bool)

        // MARK: The cache

        /// A server message goes to the cache.
        case applyToCache(CacheUpdate)
        /// A document message did not go to the cache (kept aside for a pending stub, or dropped: an undeclared
        /// collection at its limit): logged or reported.
        case dataNotCached(DataRouting, DocumentKey)
        /// A call's `updated` released the documents only its stub held: the cache takes their server versions (and
        /// the offline store the versions noted before).
        case releaseDocuments(ReleasedDocuments)
        /// Hands the cache what the burst queued for it.
        case pushCacheUpdates
        /// Holds the cache's updates (``QuiescenceHold``) then applies the held messages, in order.
        case applyQuiescence(QuiescenceHold)

        // MARK: Stub replays

        /// Replays the pending stubs (a replay is due).
        case replayPendingStubs
        /// The round of the replay the client asked for (``Input/replayRoundRequested(stubNamed:)``).
        case replayRound(StubReplays.Plan)
        /// Call `id`'s replay started throwing (the app is told once the transaction committed).
        case replayStartedFailing(id: String)

        // MARK: The offline store

        /// Hands the store what changed in the session, read when performed: after the actions before it (a hold
        /// applied, stubs replayed) changed it (``Input/sessionChangesRequested``).
        case persistSessionChanges
        /// Hands the store the server versions of stub-written documents that changed, and the subscriptions when
        /// they did.
        case storeSessionChanges([(DocumentKey, StoredServerDocument?)], subscriptions: [StoredSubscription]?)
        /// A kept call leaves the store.
        case removeStoredCall(id: String)
        /// Judges whether the server has what a restored call's stub did (`waited`: it waited for the subscriptions'
        /// data).
        case judgeRestoredCall(id: String, [StoredStubEffect], waited: Bool)
        /// A restored call's judgement waits for the subscriptions' data.
        case restoredCallAwaitsServerData(id: String)
        /// A restored call's judgement is final: the server does not show its stub's effect.
        case restoredCallJudged(id: String, matchStub: Bool)

        // MARK: Subscriptions and work that waits for the cache

        /// A subscription's handles take `status` (a `nosub`: stopped, or failed with the server's error; a new socket
        /// stops those no handle used any more).
        indirect case settleSubscription(SubscriptionManager.Record, SubscriptionStatus)
        /// A `ready` or `nosub` named a subscription the client does not have (logged, as Meteor ignores it).
        case logUnknownSubscription(frame: String, id: String)
        /// Work that waited for the cache is due: the client does it now. (Handed out after a flush, it is the only
        /// action of its list: the client then asks for the next with ``Input/afterUpdatePerformed``, in a loop.)
        case performAfterUpdate(AfterUpdateWork)
        /// The app's subscription was made or joined: a handle made inside a transaction follows its state (`state`),
        /// and the first action of ``Input/subscribeRequested(_:)`` hands the record to the caller.
        case subscribed(SubscriptionManager.Record, isNew: Bool, state: SubscriptionState?)
        /// A subscription no handle used for its `notInUseTimeout` is let go (`unsub` follows).
        case logUnsubscribed(SubscriptionManager.Record)
        /// Work waits for a new flush of the cache: the client asks for it, and reports it with `ticket` once done.
        case requestFlush(ticket: Int)

        // MARK: Time

        case schedule(Timer, after: Duration)
        case cancelTimer(Timer)
        /// Waits `delay` before the next attempt: schedules ``Timer/retry`` and publishes the waiting status with the
        /// time the retry falls due (read on the client's clock).
        indirect case waitToRetry(retryCount: Int, delay: Duration, reason: DDPError)

        // MARK: What the app sees

        indirect case publishStatus(ConnectionStatus)
        indirect case report(DDPError)
        case logSessionEstablished(session: String, version: DDPVersion, isReconnect: Bool)

        // MARK: A new socket

        /// Sent `noRetry` calls a new socket failed (they complete at quiescence): logged.
        case logCallsFailedByReset([MethodCoordinator.Invocation])
        /// The login resumes with `token`, first on the new socket.
        case resumeLogin(token: String)
        /// The account changed: stored, broadcast, notified; a login waiting for its user's document fails.
        case accountChanged(Account?)
        /// The client logged out of `userID`'s account: the offline store forgets as `reason` says, and the login
        /// event is broadcast (after ``accountChanged(_:)`` to `nil`).
        indirect case loggedOut(userID: String, reason: LogoutReason)
        /// Runs the app's reconnect hooks of run `run` (none: the run finishes at once), holding incoming messages
        /// meanwhile; ``Input/reconnectHooksFinished(run:)`` follows.
        case runReconnectHooks(run: Int, hooks: [@Sendable () -> Void])
        /// The messages held while the hooks ran are handled now.
        case releaseHeldMessages

        // MARK: Closing

        /// `close()` took effect: the calls fail, the subscriptions stop, the streams end.
        case closed(Closing)
    }
}
