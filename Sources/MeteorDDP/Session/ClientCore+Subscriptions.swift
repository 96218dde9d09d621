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

    /// `ready` through the funnel (held while the session waits for quiescence): the ids no subscription has are
    /// logged, and each subscription it names becomes ready for its handles once the data that came before is applied
    /// (unless it is already: a revived one, or a second `ready`); restored calls waiting for the server's data are
    /// judged then too.
    mutating func subscriptionsReadyActions(_ ids: [String], storeIsIdle: Bool, held: Bool) -> [Action] {
        if !held, isHoldingForQuiescence { return holdActions(.message(.ready(subscriptionIDs: ids))) }
        let (ready, unknown) = subscriptionsReady(ids)
        var actions = unknown.map { Action.logUnknownSubscription(frame: "ready", id: $0) }
        for record in ready where record.shared.status != .ready {
            let work = AfterUpdateWork.subscriptionReady(record.shared)
            if let action = afterUpdateAction(work, afterServerDocuments: true, storeIsIdle: storeIsIdle) {
                actions.append(action)
            }
        }
        if restoredCallsAwaitServerData {
            if let action = afterUpdateAction(.judgeRestoredCalls, afterServerDocuments: true, storeIsIdle: storeIsIdle)
            {
                actions.append(action)
            }
        }
        return actions
    }

    /// `nosub` through the funnel (held while the session waits for quiescence): the subscription it ends is stopped,
    /// or failed with the server's error (an id no subscription has is logged); restored calls waiting for the
    /// server's data are judged once it is applied.
    /// `expected`: the `nosub` answers an `unsub` the client sent (no subscription has its id any more: not logged).
    mutating func subscriptionEndedActions(
        _ id: String, error: MeteorError?, storeIsIdle: Bool, held: Bool, expected: Bool = false
    ) -> [Action] {
        if !held, isHoldingForQuiescence { return holdActions(.message(.nosub(id: id, error: error))) }
        guard let record = subscriptionEnded(id) else {
            return expected ? [] : [.logUnknownSubscription(frame: "nosub", id: id)]
        }
        let status: SubscriptionStatus =
            error.map { .failed(SubscriptionError(name: record.name, meteorError: $0)) } ?? .stopped
        var actions: [Action] = [.settleSubscription(record, status)]
        if restoredCallsAwaitServerData {
            if let action = afterUpdateAction(.judgeRestoredCalls, afterServerDocuments: true, storeIsIdle: storeIsIdle)
            {
                actions.append(action)
            }
        }
        return actions
    }

    /// A handle let go of subscription `id`: when none uses it any more, the delay after which to unsubscribe and the
    /// generation to hand back with ``unsubscribeIfUnused(_:generation:)``.
    mutating func subscriptionReleased(_ id: String) -> (delay: Duration, generation: Int)? {
        session.subscriptions.release(id)
    }

    /// The app subscribes (``Input/subscribeRequested(_:)``): the record first (for the caller's handle), then its
    /// `sub` when it goes out now and the store's list. A closed client subscribes to nothing: the subscription is
    /// stopped at once, as `close()` stopped the others.
    mutating func subscribeActions(_ request: SubscribeRequest) -> [Action] {
        let subscribed = subscribe(
            name: request.name, params: request.params, notInUseTimeout: request.notInUseTimeout,
            userCode: request.userCode, state: request.state, makeID: request.makeID)
        let record = subscribed.record
        if isClosed {
            _ = subscriptionEnded(record.id)
            return [.subscribed(record, isNew: false, state: request.state), .settleSubscription(record, .stopped)]
        }
        var actions: [Action] = [.subscribed(record, isNew: subscribed.isNew, state: request.state)]
        if subscribed.sendNow { actions.append(.send(.sub(id: record.id, name: request.name, params: request.params))) }
        return actions + sessionChangesActions()
    }

    /// A handle let go of subscription `id`: when none uses it any more, it is let go after its `notInUseTimeout`
    /// (at once when zero).
    mutating func subscriptionReleasedActions(_ id: String) -> [Action] {
        guard let (delay, generation) = subscriptionReleased(id) else { return [] }
        guard delay > .zero else { return unsubscribeActions(id, generation: generation) }
        return [.schedule(.unsubscribe(id: id, generation: generation), after: delay)]
    }

    /// Subscription `id`'s `notInUseTimeout` elapsed: unless a handle took it up again, it stops and `unsub` goes out
    /// (the held data applied when quiescence waited for it).
    mutating func unsubscribeActions(_ id: String, generation: Int) -> [Action] {
        guard let (record, quiescent) = unsubscribeIfUnused(id, generation: generation) else { return [] }
        var actions: [Action] = [.logUnsubscribed(record), .settleSubscription(record, .stopped), .send(.unsub(id: id))]
        resumption.unsubscribed(id)
        if let quiescent { actions.append(.applyQuiescence(quiescent)) }
        // The store is told once a hold this released is applied (applying it changes what the store keeps).
        if persists { actions.append(.persistSessionChanges) }
        return actions
    }

    /// A `ready` or `nosub` for `id` that did not parse: the subscription fails with the violation (none has the id:
    /// ignored, the violation was reported).
    mutating func subscriptionFrameUnreadableActions(_ id: String, _ violation: DDPProtocolViolation) -> [Action] {
        guard let record = subscriptionEnded(id) else { return [] }
        let error = MeteorError(error: .string("protocol-violation"), reason: violation.description)
        return [
            .settleSubscription(
                record, .failed(SubscriptionError(name: record.name, meteorError: error, violation: violation)))
        ]
    }
}
