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
        var setAsideCalls: Set<String> = []
        for action in setAside {
            switch action {
            case .send(.sub(let id, _, _)): setAsideSubscriptions.insert(id)
            case .sendCalls(let calls): for call in calls { setAsideCalls.insert(call.id) }
            default: break
            }
        }
        for id in session.subscriptions.order where !setAsideSubscriptions.contains(id) {
            guard let record = session.subscriptions.records[id], !record.isReady else { continue }
            actions.append(.send(.sub(id: record.id, name: record.name, params: record.params)))
        }
        for id in unsubsAwaitingNosub.sorted() { actions.append(.send(.unsub(id: id))) }
        actions += setAside
        resumedCallsAwaitingResult = session.methods.sentWithoutResult().filter { !setAsideCalls.contains($0) }
        if !resumedCallsAwaitingResult.isEmpty {
            actions.append(.schedule(.resumedCallsDeadline, after: settings.resumedCallTimeout))
        }
        return actions
    }

    /// A new session: nothing of the old one's is resumed (its reset sends again what matters).
    mutating func newSessionForgetsResumption() -> [Action] {
        framesSetAside = []
        unsubsAwaitingNosub = []
        guard !resumedCallsAwaitingResult.isEmpty else { return [] }
        resumedCallsAwaitingResult = []
        return [.cancelTimer(.resumedCallsDeadline)]
    }

    /// The calls in flight at the resume that are still unanswered fail: a `result` with
    /// ``MethodError/Kind/outcomeUnknown`` and an `updated`, as if the server had sent them (the stub's writes give
    /// way to the server's versions once the cache has caught up).
    mutating func resumedCallsDeadlineActions() -> [Action] {
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
