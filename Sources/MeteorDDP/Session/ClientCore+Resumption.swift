/// Session resumption (Meteor 3.5+, ddp-semantics §13) as events of the core. A new socket offers the server the
/// session and the count of messages received in it (``ConnectionStateMachine``); the server answers with the same id
/// (resumed) or a new one (the reset of any new session follows).
///
/// Resumed, nothing is reset and no login, subscription or call is sent again, with three exceptions for frames the old
/// socket may have lost on its way to the server (the server counts only what it sends, so nothing tells the client):
/// - a subscription not ready yet is sent again (a server that has it ignores a `sub` with a live id);
/// - an `unsub` whose `nosub` has not come is sent again (the server answers another `nosub`);
/// - a call is never sent again (the server would run it twice): one not answered within
///   ``DDPClient/Configuration/resumedCallTimeout`` fails as ``MethodError/Kind/outcomeUnknown``, its stub's writes
///   undone as for any failed call (the server's versions shown), and a late answer is ignored.
///
/// Then what the app asked while the socket was down goes out, in order.
extension ClientCore {
    /// The server resumed the session.
    mutating func sessionResumedActions(session resumed: String) -> [Action] {
        var actions: [Action] = [.logSessionResumed(session: resumed)]
        let setAside = framesSetAside
        framesSetAside = []
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
            actions.append(.send(.sub(id: record.id, name: record.name, params: record.params)))
        }
        for id in unsubsAwaitingNosub.sorted() where !setAsideUnsubscriptions.contains(id) {
            actions.append(.send(.unsub(id: id)))
        }
        actions += setAside
        var inFlight: [MethodCoordinator.Invocation] = []
        for id in session.methods.sentWithoutResult() where !setAsideCalls.contains(id) {
            guard let invocation = session.methods.invocations[id] else { continue }
            if invocation.name == "login" {
                // A login is safe to run twice (a resume logs in again), and one lost with the old socket would leave
                // the session logged out: it goes again.
                inFlight.append(invocation)
            } else if !resumedCallsAwaitingResult.contains(id) {
                resumedCallsAwaitingResult.append(id)
            }
        }
        if !inFlight.isEmpty { actions.append(.sendCalls(inFlight)) }
        switch resumedCallsDeadline {
        case .none where !resumedCallsAwaitingResult.isEmpty:
            // One deadline from the first resume a call saw: a link that keeps flapping does not put it off.
            resumedCallsDeadline = .armed
            actions.append(.schedule(.resumedCallsDeadline, after: settings.resumedCallTimeout))
        case .passedWhileDown:
            // It passed while the socket was down: what the server queued meanwhile arrives right behind `connected`.
            resumedCallsDeadline = .armed
            actions.append(.schedule(.resumedCallsDeadline, after: Self.resumedCallsLastChance))
        case .none, .armed:
            break
        }
        return actions
    }

    /// After a deadline that passed while the socket was down, how long a resumed session has to deliver what its
    /// server queued before the calls still unanswered fail.
    static let resumedCallsLastChance: Duration = .seconds(1)

    /// Where the deadline of ``ClientCore/resumedCallsAwaitingResult`` stands.
    enum ResumedCallsDeadline {
        case none
        /// Scheduled.
        case armed
        /// It passed while the socket was down: the next resume decides.
        case passedWhileDown
    }

    /// A new session, or the app ended the session: nothing of the old one's is resumed (a new session's reset sends
    /// again what matters).
    mutating func forgetResumption() -> [Action] {
        framesSetAside = []
        unsubsAwaitingNosub = []
        let wasArmed = resumedCallsDeadline == .armed
        resumedCallsDeadline = .none
        guard wasArmed || !resumedCallsAwaitingResult.isEmpty else { return [] }
        resumedCallsAwaitingResult = []
        return [.cancelTimer(.resumedCallsDeadline)]
    }

    /// The calls in flight at the resume that are still unanswered fail: a `result` with
    /// ``MethodError/Kind/outcomeUnknown`` and an `updated`, as if the server had sent them (the stub's writes give
    /// way to the server's versions once the cache has caught up). Not while the socket is down or an offer to resume
    /// awaits its answer: the answers may be in the server's queue (the next resume gives them a last chance).
    mutating func resumedCallsDeadlineActions() -> [Action] {
        guard machine.sendsSessionFrames, machine.version != nil else {
            resumedCallsDeadline = .passedWhileDown
            return []
        }
        resumedCallsDeadline = .none
        let expired = resumedCallsAwaitingResult.filter { session.methods.isAwaitingResult($0) }
        resumedCallsAwaitingResult = []
        var actions: [Action] = []
        for id in expired {
            guard let invocation = session.methods.invocations[id] else { continue }
            let failure = MethodError(methodName: invocation.name, kind: .outcomeUnknown)
            let updatedCame = invocation.dataVisible
            actions += Self.methodActions(methodResultReceived(id, .failure(failure)), id: id, frame: "result")
            if !updatedCame { actions += updatedActions([id], storeIsIdle: false, held: false) }
        }
        return actions
    }
}
