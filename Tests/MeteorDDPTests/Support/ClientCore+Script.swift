import EJSON

@testable import MeteorDDP

/// Steps of the event scripts that drive a ``ClientCore`` in tests: the app's calls and subscriptions and a socket's
/// life, as the client would feed them to the core.
extension ClientCore {
    private static let userCode = UserCodeQueue(label: "ClientCore event scripts")

    /// A core with the default configuration, holding at most `holdLimit` messages for quiescence.
    static func scripted(holdLimit: Int = 50_000, resumesSessions: Bool = false) -> ClientCore {
        var configuration = DDPClient.Configuration()
        configuration.maxMessagesHeldForQuiescence = holdLimit
        configuration.resumesSessions = resumesSessions
        return ClientCore(configuration: configuration)
    }

    /// A core whose session ("s1") is established on its first socket, through the funnel. Meteor's classic reconnect
    /// unless `configuration` turns resumption on (resumption has its own scripts).
    static func established(_ configuration: DDPClient.Configuration = DDPClient.Configuration()) -> ClientCore {
        var core = ClientCore(configuration: configuration)
        _ = core.handle(.connectRequested)
        _ = core.handle(.transportOpened(generation: 1))
        _ = core.handle(.reconnectHooksFinished(run: 1))
        _ = core.handle(.connectedReceived(session: "s1"))
        return core
    }

    /// Subscribes to `name` (id `sub-<name>`), sends it and, with `ready`, marks it ready; returns its id.
    @discardableResult
    mutating func subscribe(_ name: String, ready: Bool = true) -> String {
        let (record, _) = session.subscriptions.acquire(
            name: name, params: [], notInUseTimeout: .zero, userCode: Self.userCode
        ) { "sub-\(name)" }
        session.subscriptions.markSent(record.id)
        if ready { _ = session.subscriptions.ready([record.id]) }
        return record.id
    }

    /// Calls `name` and, when it landed in the first block, sends it (a wait call starts holding data).
    @discardableResult
    mutating func call(_ name: String, wait: Bool = false, noRetry: Bool = false) -> MethodCoordinator.Invocation {
        let id = session.methods.makeMethodID()
        let invocation = MethodCoordinator.Invocation(
            id: id, name: name, message: .method(id: id, method: name, params: [], randomSeed: nil),
            options: MethodOptions(wait: wait, noRetry: noRetry), completion: { _ in }
        )
        _ = callMade(invocation, kept: false)
        return invocation
    }

    /// A new socket with no `onReconnect` hooks, then `connected`: returns the hold when nothing is awaited.
    mutating func reconnect() -> QuiescenceHold? {
        let reset = socketReset()
        _ = reconnectHooksFinished(run: reset.userHooks.run)
        _ = reconnectHooksRan()
        return sessionConnected(isReconnect: true, reconciling: false)
    }

    /// `close()` through the funnel: what it hands back to fail and stop (`nil`: closed already).
    mutating func close() -> Closing? {
        for case .closed(let closing) in handle(.closeRequested) { return closing }
        return nil
    }

    /// The due work `input` hands out (``Input/flushCompleted(ticket:)``, ``Input/afterUpdatePerformed``), if any.
    mutating func due(after input: Input) -> AfterUpdateWork? {
        for case .performAfterUpdate(let work) in handle(input) { return work }
        return nil
    }

    /// Each action as a short line, for scripts to compare.
    static func describe(_ actions: [Action]) -> [String] {
        actions.map { action in
            switch action {
            case .openTransport(let generation): "openTransport(\(generation))"
            case .closeTransport: "closeTransport"
            case .forgetTransport: "forgetTransport"
            case .endSession: "endSession"
            case .logSessionResumed(let session): "sessionResumed(\(session))"
            case .send(.pong(let id)): "send(pong \(id ?? "-"))"
            case .send(let message): "send(\(message.name))"
            case .sendCalls(let calls): "sendCalls(\(calls.map(\.name).joined(separator: " ")))"
            case .logLateAnswer(let frame, _): "lateAnswer(\(frame))"
            case .pendingWritesSettled(let token, let closed):
                "pendingWritesSettled(\(token)\(closed ? ", closed" : ""))"
            case .resultArrived(let call): "resultArrived(\(call.name))"
            case .storeResult(let call): "storeResult(\(call.name))"
            case .completeCall(let call, let wasKept): "complete(\(call.name)\(wasKept ? ", kept" : ""))"
            case .settleSubscription(let record, let status): "settle(\(record.name), \(status))"
            case .logUnknownSubscription(let frame, let id): "unknown(\(frame) \(id))"
            case .performAfterUpdate(let work): "perform(\(work))"
            case .requestFlush(let ticket): "requestFlush(\(ticket))"
            case .schedule(let timer, _): "schedule(\(timer))"
            case .cancelTimer(let timer): "cancel(\(timer))"
            case .waitToRetry(let retryCount, _, _): "waitToRetry(\(retryCount))"
            case .publishStatus(let status): "status(\(status.state))"
            case .report(let error): "report(\(error.code))"
            case .logSessionEstablished(let session, _, let isReconnect):
                "established(\(session), reconnect: \(isReconnect))"
            case .logCallsFailedByReset(let calls): "failedByReset(\(calls.map(\.name).joined(separator: " ")))"
            case .resumeLogin(let token): "resumeLogin(\(token))"
            case .accountChanged(let account): "accountChanged(\(account?.userID ?? "nil"))"
            case .loggedOut(let userID, _): "loggedOut(\(userID))"
            case .runReconnectHooks(let run, let hooks): "runHooks(\(run), \(hooks.count) hooks)"
            case .releaseHeldMessages: "releaseHeldMessages"
            case .applyQuiescence(let hold): "applyQuiescence(resetting: \(hold.resetting))"
            case .applyToCache(.added(let key, _)): "applyToCache(added \(key.documentID))"
            case .applyToCache(.changed(let key, _, _)): "applyToCache(changed \(key.documentID))"
            case .applyToCache(.replaced(let key, _)): "applyToCache(replaced \(key.documentID))"
            case .applyToCache(.removed(let key)): "applyToCache(removed \(key.documentID))"
            case .dataNotCached(let routing, let key): "notCached(\(routing), \(key.documentID))"
            case .releaseDocuments(let released): "release(\(released.replacements.map(\.key.documentID)))"
            case .pushCacheUpdates: "pushCacheUpdates"
            case .persistSessionChanges: "persistSessionChanges"
            case .replayPendingStubs: "replayPendingStubs"
            case .replayRound(let plan): "replayRound(\(plan.calls.map(\.0.name).joined(separator: " ")))"
            case .replayStartedFailing(let id): "replayStartedFailing(\(id))"
            case .storeSessionChanges(let changes, let subscriptions):
                "store(\(changes.count) documents, subscriptions: \(subscriptions.map { "\($0.count)" } ?? "-"))"
            case .removeStoredCall(let id): "removeStoredCall(\(id))"
            case .judgeRestoredCall(let id, _, let waited): "judge(\(id)\(waited ? ", waited" : ""))"
            case .restoredCallAwaitsServerData(let id): "awaitServerData(\(id))"
            case .restoredCallJudged(let id, let match): "judged(\(id), \(match))"
            case .subscribed(let record, let isNew, _): "subscribed(\(record.name)\(isNew ? ", new" : ""))"
            case .logUnsubscribed(let record): "unsubscribed(\(record.name))"
            case .closed(let closing):
                "closed(calls: \(closing.failedCalls.map(\.name).joined(separator: " ")), subscriptions: "
                    + "\(closing.stoppedSubscriptions.map(\.name).joined(separator: " ")))"
            }
        }
    }
}
