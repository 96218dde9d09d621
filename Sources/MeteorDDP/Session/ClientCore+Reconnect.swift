/// A new socket as events of the core (LC `onReset`, `_callOnReconnectAndSendAppropriateOutstandingMethods`;
/// accounts-base's `onReconnect`): the login is resumed first, then the app's `onReconnect` hooks run, then unanswered
/// methods go out again behind what the hooks called, then every subscription not yet sent.
extension ClientCore {
    /// What the client does on a new socket, in this order.
    struct SocketReset {
        /// Sent `noRetry` calls the reset failed (they complete at reconnect quiescence).
        var failedCalls: [MethodCoordinator.Invocation]
        /// Subscriptions no handle used any more: their lingering ends with the socket, and they are stopped.
        var stoppedSubscriptions: [SubscriptionManager.Record]
        /// The token to resume the login with, first on the new socket (the newest one the client has).
        var resumeToken: String?
        /// The app's hooks to run, in name order, as run `run` (possibly none): until ``reconnectHooksFinished(run:)``
        /// the reset waits, and incoming messages too when there are hooks.
        var userHooks: (run: Int, hooks: [@Sendable () -> Void])
    }

    /// A new socket is open and `connect` was just sent.
    mutating func socketReset() -> SocketReset {
        let (failed, sentAgain) = session.methods.socketReset()
        // The calls sent again lose the data-visible work their old run's `updated` queued, behind a flush or behind
        // other calls' stub-written documents (a deadline frees that wait before the new session's quiescence): done
        // later, it would count the old run's data as the new run's (the call would complete at its `result`, and its
        // `updated` would name a call the client no longer has).
        session.afterUpdate.dropDataVisible(of: sentAgain)
        let stopped = session.subscriptions.socketReset()
        durability.socketReset()
        let hooks = session.userReconnectHooks.sorted(by: { $0.key < $1.key }).map(\.value)
        session.reconnectHooksRuns += 1
        session.resetAwaitingResend = session.reconnectHooksRuns
        // Only hooks hold incoming messages: a drain running meanwhile (a resume's `login` stub brings the cache up to
        // date first) goes on handling them. (A hold an earlier socket's hooks started is released by this run.)
        let holds = !hooks.isEmpty || session.reconnectHooksRunning != nil
        session.reconnectHooksRunning = holds ? session.reconnectHooksRuns : nil
        return SocketReset(
            failedCalls: failed, stoppedSubscriptions: stopped, resumeToken: login.resumeToken,
            userHooks: (session.reconnectHooksRuns, hooks))
    }

    /// What a new socket leads to, in this order: subscriptions no handle uses stop, `noRetry` calls sent before fail,
    /// the login resumes, the app's hooks run (``Input/reconnectHooksFinished(run:)`` then re-sends the rest).
    mutating func socketResetActions() -> [Action] {
        let reset = socketReset()
        var actions: [Action] = []
        for record in reset.stoppedSubscriptions { actions.append(.settleSubscription(record, .stopped)) }
        if !reset.failedCalls.isEmpty { actions.append(.logCallsFailedByReset(reset.failedCalls)) }
        if let token = reset.resumeToken { actions.append(.resumeLogin(token: token)) }
        actions.append(.runReconnectHooks(run: reset.userHooks.run, hooks: reset.userHooks.hooks))
        return actions
    }

    /// The app's hooks ran (or the client stopped waiting for them): the calls set aside and the subscriptions go
    /// out, then the messages held meanwhile (`held`: there were hooks) are handled.
    mutating func resendAfterReconnectHooks(held: Bool) -> [Action] {
        let (calls, subscriptions) = reconnectHooksRan()
        var actions: [Action] = calls.isEmpty ? [] : [.sendCalls(calls)]
        for record in subscriptions {
            actions.append(.send(.sub(id: record.id, name: record.name, params: record.params)))
        }
        // The new session's hold, decided before the reset's frames were out (a refused offer to resume), is reached
        // now if they leave nothing to wait for.
        if session.quiescence?.resetting == true, let hold = quiescenceIfReached() {
            actions.append(.applyQuiescence(hold))
        }
        if held { actions.append(.releaseHeldMessages) }
        return actions
    }

    /// Whether the app's hooks are running (incoming messages wait meanwhile).
    var reconnectHooksAreRunning: Bool { session.reconnectHooksRunning != nil }

    /// The app's hooks of run `run` returned (or there were none). Returns whether that run was still awaited (a
    /// later socket's run, or the hold limit, may have moved on): then ``resendAfterReconnectHooks(held:)`` follows.
    mutating func reconnectHooksFinished(run: Int) -> Bool {
        guard session.resetAwaitingResend == run else { return false }
        session.resetAwaitingResend = nil
        session.reconnectHooksRunning = nil
        return true
    }

    /// The messages held while the app's hooks ran reached the limit: the reset goes on without them. Returns whether
    /// hooks were running (then the client reports it, and ``resendAfterReconnectHooks(held:)`` follows; a reset with
    /// no hooks holds nothing, so it never reaches the limit).
    mutating func stopWaitingForReconnectHooks() -> Bool {
        guard session.reconnectHooksRunning != nil else { return false }
        session.reconnectHooksRunning = nil
        session.resetAwaitingResend = nil
        return true
    }

    /// After the hooks: the calls to send now (the blocks set aside, behind what the hooks called, past the
    /// durability gate) and the subscriptions not sent on this socket yet, in subscription order (marked sent).
    mutating func reconnectHooksRan() -> (
        calls: [MethodCoordinator.Invocation], subscriptions: [SubscriptionManager.Record]
    ) {
        let calls = transmitting(session.methods.reconnectHooksRan())
        // `connected` may have come first (a refused offer to resume decides both at once, a slow hook too): the calls
        // going out now block the new session's hold as they would have had they gone out before it.
        if session.quiescence?.resetting == true {
            for call in calls where !session.stubReplays.isOn || call.options.wait {
                session.methodsBlockingQuiescence.insert(call.id)
            }
        }
        let subscriptions = session.subscriptions.recordsNotSent()
        for record in subscriptions { session.subscriptions.markSent(record.id) }
        return (calls, subscriptions)
    }
}
