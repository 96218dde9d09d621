import EJSON

@testable import MeteorDDP

/// Steps of the event scripts that drive a ``ClientCore`` in tests: the app's calls and subscriptions and a socket's
/// life, as the client would feed them to the core.
extension ClientCore {
    private static let userCode = UserCodeQueue(label: "ClientCore event scripts")

    /// A core with the default configuration, holding at most `holdLimit` messages for quiescence.
    static func scripted(holdLimit: Int = 50_000) -> ClientCore {
        var configuration = DDPClient.Configuration()
        configuration.maxMessagesHeldForQuiescence = holdLimit
        return ClientCore(configuration: configuration)
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
}
