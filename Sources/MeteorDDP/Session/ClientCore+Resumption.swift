/// Session resumption (Meteor 3.5+, ddp-semantics §13) as events of the core. A new socket offers the server the
/// session and the count of messages received in it (``ConnectionStateMachine``); the server answers with the same id
/// (resumed) or a new one (the reset of any new session follows).
///
/// Resumed, nothing is reset and no login, subscription or call is sent again, with three exceptions for frames the old
/// socket may have lost on its way to the server (the server counts only what it sends, so nothing tells the client):
/// - a subscription not ready yet is sent again (a server that has it ignores a `sub` with a live id); if its `nosub`
///   comes afterwards (the server may have ended it while the socket was down, so the `sub` sent again started it
///   anew), an `unsub` follows once;
/// - an `unsub` whose `nosub` has not come is sent again (the server answers another `nosub`);
/// - a login in flight is sent again (safe to run twice; a second answer is logged, not reported);
/// - any other call is never sent again (the server would run it twice): one not answered within
///   ``DDPClient/Configuration/resumedCallTimeout`` fails as ``MethodError/Kind/outcomeUnknown``, its stub's writes
///   undone as for any failed call (the server's versions shown), and a late answer is logged and ignored.
///
/// Then what the app asked while the socket was down goes out, in order.
extension ClientCore {
    /// What a resumable session keeps for its resumption. Everything here is bounded by what the app asked (its
    /// subscriptions and calls), never by what a server sends; a new session forgets it all.
    struct Resumption {
        /// Frames of the session (calls, `sub`, `unsub`) decided while they could not go out, in order
        /// (``ConnectionStateMachine/keepsSessionFramesForResumption``): sent when the server resumes the session,
        /// dropped when a new session's reset sends what matters again.
        var framesSetAside: [Action] = []
        /// Subscriptions whose `unsub` went out and whose `nosub` has not come back: a resumed session sends them
        /// again (the frame may have been lost with the old socket; the server answers a second one with another
        /// `nosub`).
        private(set) var unsubsAwaitingNosub: Set<String> = []
        /// Subscriptions whose `sub` a resumed session sent again: if their `nosub` comes, the server may have ended
        /// them while the socket was down and started them anew on the `sub` sent again, so an `unsub` follows.
        private(set) var subscriptionsSentAgain: Set<String> = []
        /// The calls in flight when the session was last resumed, not answered yet: they fail as
        /// ``MethodError/Kind/outcomeUnknown`` at ``DDPClient/Configuration/resumedCallTimeout``.
        var callsAwaitingResult: [String] = []
        /// Where the deadline of ``callsAwaitingResult`` stands.
        var deadline = Deadline.none

        /// Where the deadline of ``callsAwaitingResult`` stands.
        enum Deadline {
            case none
            /// Scheduled.
            case armed
            /// It passed while the socket was down: the next resume decides.
            case passedWhileDown
        }

        /// `unsub` went out for subscription `id`.
        mutating func unsubscribed(_ id: String) {
            unsubsAwaitingNosub.insert(id)
            subscriptionsSentAgain.remove(id)
        }

        /// `nosub` came for subscription `id`: whether an `unsub` must follow (its `sub` was sent again on a resumed
        /// session, which may have started it anew on the server). Then its answer is awaited.
        mutating func nosubReceived(_ id: String) -> (awaited: Bool, unsubscribeAgain: Bool) {
            let awaited = unsubsAwaitingNosub.remove(id) != nil
            guard subscriptionsSentAgain.remove(id) != nil else { return (awaited, false) }
            unsubsAwaitingNosub.insert(id)
            return (awaited, true)
        }

        mutating func sentAgain(subscription id: String) { subscriptionsSentAgain.insert(id) }
    }

    /// `nosub` through the funnel: the subscription ends
    /// (``subscriptionEndedActions(_:error:storeIsIdle:held:expected:)``); the answer to an `unsub` is not logged as
    /// unknown; one whose `sub` a resumed session sent again is unsubscribed.
    mutating func nosubActions(_ id: String, error: MeteorError?, storeIsIdle: Bool, held: Bool) -> [Action] {
        if !held, isHoldingForQuiescence { return holdActions(.message(.nosub(id: id, error: error))) }
        let (awaited, unsubscribeAgain) = resumption.nosubReceived(id)
        var actions = subscriptionEndedActions(
            id, error: error, storeIsIdle: storeIsIdle, held: true, expected: awaited)
        if unsubscribeAgain { actions.append(.send(.unsub(id: id))) }
        return actions
    }

    /// The server resumed the session.
    mutating func sessionResumedActions(session resumed: String) -> [Action] {
        var actions: [Action] = [.logSessionResumed(session: resumed)]
        let setAside = resumption.framesSetAside
        resumption.framesSetAside = []
        var setAsideSubscriptions: Set<String> = []
        var setAsideUnsubscriptions: Set<String> = []
        var setAsideCalls: Set<String> = []
        for action in setAside {
            switch action {
            case .send(.sub(let id, _, _)): setAsideSubscriptions.insert(id)
            case .send(.unsub(let id)): setAsideUnsubscriptions.insert(id)
            case .sendCalls(let calls): for call in calls { setAsideCalls.insert(call.id) }
            default: break
            }
        }
        // Not ready in this session: a subscription never ready, or one a new session revived and has not readied.
        for id in session.subscriptions.order where !setAsideSubscriptions.contains(id) {
            guard let record = session.subscriptions.records[id],
                !record.isReady || session.subscriptions.beingRevived.contains(id)
            else { continue }
            resumption.sentAgain(subscription: id)
            actions.append(.send(.sub(id: record.id, name: record.name, params: record.params)))
        }
        for id in resumption.unsubsAwaitingNosub.sorted() where !setAsideUnsubscriptions.contains(id) {
            actions.append(.send(.unsub(id: id)))
        }
        // A call set aside that completed meanwhile (its deadline passed) is not sent.
        for action in setAside {
            guard case .sendCalls(let calls) = action else {
                actions.append(action)
                continue
            }
            let pending = calls.filter { session.methods.isAwaitingResult($0.id) }
            if !pending.isEmpty { actions.append(.sendCalls(pending)) }
        }
        var inFlight: [MethodCoordinator.Invocation] = []
        for id in session.methods.sentWithoutResult() where !setAsideCalls.contains(id) {
            guard let invocation = session.methods.invocations[id] else { continue }
            if invocation.name == "login" {
                // A login is safe to run twice (a resume logs in again), and one lost with the old socket would leave
                // the session logged out: it goes again, and a second answer is expected.
                inFlight.append(invocation)
                lateAnswersExpected.insert(id)
            } else if !resumption.callsAwaitingResult.contains(id) {
                resumption.callsAwaitingResult.append(id)
            }
        }
        if !inFlight.isEmpty { actions.append(.sendCalls(inFlight)) }
        switch resumption.deadline {
        case .none where !resumption.callsAwaitingResult.isEmpty:
            // One deadline from the first resume a call saw: a link that keeps flapping does not put it off.
            resumption.deadline = .armed
            actions.append(.schedule(.resumedCallsDeadline, after: settings.resumedCallTimeout))
        case .passedWhileDown:
            // It passed while the socket was down: what the server queued meanwhile arrives right behind `connected`.
            resumption.deadline = .armed
            actions.append(.schedule(.resumedCallsDeadline, after: Self.resumedCallsLastChance))
        case .none, .armed:
            break
        }
        return actions
    }

    /// After a deadline that passed while the socket was down, how long a resumed session has to deliver what its
    /// server queued before the calls still unanswered fail.
    static let resumedCallsLastChance: Duration = .seconds(1)

    /// A new session, or the app ended the session: nothing of the old one's is resumed (a new session's reset sends
    /// again what matters), and no answer of the old one's can come any more.
    mutating func forgetResumption() -> [Action] {
        let wasArmed = resumption.deadline == .armed
        let awaited = !resumption.callsAwaitingResult.isEmpty
        resumption = Resumption()
        lateAnswersExpected = []
        return wasArmed || awaited ? [.cancelTimer(.resumedCallsDeadline)] : []
    }

    /// The calls in flight at the resume that are still unanswered fail: a `result` with
    /// ``MethodError/Kind/outcomeUnknown`` and, unless theirs came, an `updated`, as if the server had sent them (the
    /// stub's writes give way to the server's versions once the cache has caught up). Not while the socket is down or
    /// an offer to resume awaits its answer: the answers may be in the server's queue (the next resume gives them a
    /// last chance).
    mutating func resumedCallsDeadlineActions() -> [Action] {
        guard machine.sendsSessionFrames, machine.version != nil else {
            resumption.deadline = .passedWhileDown
            return []
        }
        resumption.deadline = .none
        let expired = resumption.callsAwaitingResult.filter { session.methods.isAwaitingResult($0) }
        resumption.callsAwaitingResult = []
        var actions: [Action] = []
        for id in expired {
            guard let invocation = session.methods.invocations[id] else { continue }
            lateAnswersExpected.insert(id)
            let failure = MethodError(methodName: invocation.name, kind: .outcomeUnknown)
            // Its `updated` may have come, its data not flushed yet: one `updated` only.
            let updatedCame = invocation.updatedReceived
            actions += Self.methodActions(methodResultReceived(id, .failure(failure)), id: id, frame: "result")
            if !updatedCame { actions += synthesizedUpdatedActions(id) }
        }
        return actions
    }
}
