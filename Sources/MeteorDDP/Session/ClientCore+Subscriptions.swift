import EJSON

/// Subscriptions as events of the core (LC `subscribe`, the handle's `stop`, `_process_ready`, `_livedata_nosub`).
extension ClientCore {
    /// The app subscribes, or joins the subscription with the same name and parameters.
    struct Subscribed {
        /// The subscription (shared by every handle).
        let record: SubscriptionManager.Record
        /// Whether it was made now (not joined).
        let isNew: Bool
        /// Whether its `sub` goes out now: a new subscription on an open socket (marked sent; otherwise it goes out
        /// after the next socket's reconnect hooks).
        let sendNow: Bool
    }

    mutating func subscribe(
        name: String, params: [EJSONValue], notInUseTimeout: Duration, userCode: UserCodeQueue,
        state: SubscriptionState? = nil, makeID: () -> String
    ) -> Subscribed {
        let (record, isNew) = session.subscriptions.acquire(
            name: name, params: params, notInUseTimeout: notInUseTimeout, userCode: userCode, state: state,
            makeID: makeID)
        let sendNow = isNew && machine.isSocketOpen
        if sendNow { session.subscriptions.markSent(record.id) }
        return Subscribed(record: record, isNew: isNew, sendNow: sendNow)
    }

    /// An unused subscription's delay (`notInUseTimeout`) elapsed: the subscription to `unsub` (stopped), if no
    /// handle took it up again meanwhile, and the held messages to apply when quiescence waited for it.
    mutating func unsubscribeIfUnused(_ id: String, generation: Int) -> (
        record: SubscriptionManager.Record, quiescent: QuiescenceHold?
    )? {
        guard let record = session.subscriptions.unsubscribeTimerFired(id, generation: generation) else { return nil }
        return (record, quiescenceIfReached())
    }

    /// The first connection after a restart stops awaiting the restored subscriptions the app did not make again:
    /// the held messages to apply when that was all quiescence waited for.
    mutating func stopAwaitingRestoredSubscriptions() -> QuiescenceHold? {
        session.subscriptions.stopAwaitingRestored()
        return quiescenceIfReached()
    }

    /// `ready` (LC `_process_ready`): the subscriptions it names, each settled as ready once the data that came
    /// before it is applied unless it is already (a revived one, or a second `ready`), and the ids no subscription has
    /// (logged, as Meteor ignores them). A subscription counts as ready for quiescence at once; its handle's status
    /// changes with the cache (Meteor sets both then).
    mutating func subscriptionsReady(_ ids: [String]) -> (ready: [SubscriptionManager.Record], unknown: [String]) {
        session.subscriptions.ready(ids)
    }

    /// `nosub` (LC `_livedata_nosub`), or a `ready` or `nosub` for it that did not parse: the subscription it ends,
    /// to be settled as failed or stopped (`nil`: none has the id, for example one already stopped here).
    mutating func subscriptionEnded(_ id: String) -> SubscriptionManager.Record? {
        session.subscriptions.nosub(id)
    }

    /// `ready` through the funnel: the ids no subscription has are logged, and each subscription it names becomes
    /// ready for its handles once the data that came before is applied (unless it is already: a revived one, or a
    /// second `ready`); restored calls waiting for the server's data are judged then too.
    mutating func subscriptionsReadyActions(_ ids: [String], storeIsIdle: Bool) -> [Action] {
        let (ready, unknown) = subscriptionsReady(ids)
        var actions = unknown.map { Action.logUnknownSubscription(frame: "ready", id: $0) }
        for record in ready where record.shared.status != .ready {
            actions += afterServerDocumentsFlushed(.subscriptionReady(record.shared), storeIsIdle: storeIsIdle)
        }
        if restoredCallsAwaitServerData {
            actions += afterServerDocumentsFlushed(.judgeRestoredCalls, storeIsIdle: storeIsIdle)
        }
        return actions
    }

    /// `nosub` through the funnel: the subscription it ends is stopped, or failed with the server's error (an id no
    /// subscription has is logged); restored calls waiting for the server's data are judged once it is applied.
    mutating func subscriptionEndedActions(_ id: String, error: MeteorError?, storeIsIdle: Bool) -> [Action] {
        guard let record = subscriptionEnded(id) else { return [.logUnknownSubscription(frame: "nosub", id: id)] }
        let status: SubscriptionStatus =
            error.map { .failed(SubscriptionError(name: record.name, meteorError: $0)) } ?? .stopped
        var actions: [Action] = [.settleSubscription(record, status)]
        if restoredCallsAwaitServerData {
            actions += afterServerDocumentsFlushed(.judgeRestoredCalls, storeIsIdle: storeIsIdle)
        }
        return actions
    }

    /// `work`, queued behind the stub-written documents' server versions and the cache's updates, as actions.
    private mutating func afterServerDocumentsFlushed(_ work: AfterUpdateWork, storeIsIdle: Bool) -> [Action] {
        switch runWhenAllServerDocumentsAreFlushed(work, storeIsIdle: storeIsIdle) {
        case .runNow: [.performAfterUpdate(work)]
        case .queued: []
        case .requestFlush(let ticket): [.requestFlush(ticket: ticket)]
        }
    }

    /// A handle let go of subscription `id`: when none uses it any more, the delay after which to unsubscribe and the
    /// generation to hand back with ``unsubscribeIfUnused(_:generation:)``.
    mutating func subscriptionReleased(_ id: String) -> (delay: Duration, generation: Int)? {
        session.subscriptions.release(id)
    }
}
