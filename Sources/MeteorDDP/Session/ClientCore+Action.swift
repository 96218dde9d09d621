import EJSON

/// What the client must do, as ``ClientCore/handle(_:)`` decides it: performed in order by ``DDPClient``'s
/// `run(_:)`, on the client queue, after the core's mutation is complete. Imperatives only: the decisions are made.
/// One performer hands an input back (``Action/runReconnectHooks(run:hooks:)`` with no hooks): it is always the last
/// action of its list, so the core's next mutation starts once this list is done.
extension ClientCore {
    enum Action {
        // MARK: The transport

        /// Opens a transport connection whose events carry `generation`.
        case openTransport(generation: Int)
        /// Closes the current transport connection (its later events are ignored already).
        case closeTransport
        /// The current transport connection ended on its own: the client lets go of it.
        case forgetTransport
        case send(ClientMessage)
        /// Sends the calls the core released, in order (they are awaited from now on).
        case sendCalls([MethodCoordinator.Invocation])

        // MARK: Calls

        /// A call's result arrived: the app's `onResultReceived` hears of it.
        case resultArrived(MethodCoordinator.Invocation)
        /// A kept call has its result but not its data: the result is stored (after a restart it completes at
        /// reconciliation instead of running again).
        case storeResult(MethodCoordinator.Invocation)
        /// The call completed: a kept one leaves the store, then its completion runs.
        case completeCall(MethodCoordinator.Invocation, wasKept: Bool)

        // MARK: Subscriptions and work that waits for the cache

        /// A subscription's handles take `status` (a `nosub`: stopped, or failed with the server's error; a new socket
        /// stops those no handle used any more).
        case settleSubscription(SubscriptionManager.Record, SubscriptionStatus)
        /// A `ready` or `nosub` named a subscription the client does not have (logged, as Meteor ignores it).
        case logUnknownSubscription(frame: String, id: String)
        /// Work that waited for the cache is due: the client does it now.
        case performAfterUpdate(AfterUpdateWork)
        /// Work waits for a new flush of the cache: the client asks for it, and reports it with `ticket` once done.
        case requestFlush(ticket: Int)

        // MARK: Time

        case schedule(Timer, after: Duration)
        case cancelTimer(Timer)
        /// Waits `delay` before the next attempt: schedules ``Timer/retry`` and publishes the waiting status with the
        /// time the retry falls due (read on the client's clock).
        case waitToRetry(retryCount: Int, delay: Duration, reason: DDPError)

        // MARK: What the app sees

        case publishStatus(ConnectionStatus)
        case report(DDPError)
        case logSessionEstablished(session: String, version: DDPVersion, isReconnect: Bool)

        // MARK: A new socket

        /// Sent `noRetry` calls a new socket failed (they complete at quiescence): logged.
        case logCallsFailedByReset([MethodCoordinator.Invocation])
        /// The login resumes with `token`, first on the new socket.
        case resumeLogin(token: String)
        /// Runs the app's reconnect hooks of run `run` (none: the run finishes at once), holding incoming messages
        /// meanwhile; ``Input/reconnectHooksFinished(run:)`` follows.
        case runReconnectHooks(run: Int, hooks: [@Sendable () -> Void])
        /// The messages held while the hooks ran are handled now.
        case releaseHeldMessages

        // MARK: The session's data

        /// Applies the messages held until quiescence (``QuiescenceHold``).
        case applyQuiescence(QuiescenceHold)
        /// Hands the offline store what changed in the session.
        case persistSessionChanges

        // MARK: Closing

        /// `close()` took effect: the calls fail, the subscriptions stop, the streams end.
        case closed(Closing)
    }
}
