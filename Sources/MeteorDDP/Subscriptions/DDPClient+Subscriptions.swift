import Dispatch
import EJSON

// MARK: - Subscribing

extension DDPClient {
    /// Subscribes to a publication, or joins the existing subscription with the same name and EJSON-equal
    /// parameters (one server subscription, reference-counted by handles).
    ///
    /// For example:
    /// ```swift
    /// let sub = client.subscribe("todos", params: ["listA"])
    /// try await sub.ready()
    /// ```
    /// - Parameters:
    ///   - name: The publication's name.
    ///   - params: Its parameters.
    ///   - notInUseTimeout: How long the subscription lingers after its last handle stops before `unsub` is sent
    ///     (so a quick re-subscribe reuses it). Default 180 s; zero unsubscribes at once.
    /// - Returns: A handle; keep it while you need the data and call ``Subscription/stop()`` (or drop it) after.
    ///
    /// Inside the app's own `database.performUpdates { … }` the subscription is made when the transaction commits,
    /// on the same thread (see ``Subscription``, "Inside a transaction"): the client queue may be waiting for the
    /// transaction's write lock, so waiting for it here could deadlock.
    public func subscribe(_ name: String, params: [EJSONValue] = [], notInUseTimeout: Duration = .seconds(180))
        -> Subscription
    {
        if database.isInTransactionOnCurrentThread, !isOnClientQueue {
            let handle = Subscription(
                unboundName: name, params: params, provisionalID: randomGenerator.id(), userCode: userCode,
                client: self)
            database.afterCurrentTransaction { [self] in bind(handle, notInUseTimeout: notInUseTimeout) }
            return handle
        }
        let (record, isNew) = subscribeOnClientQueue(name, params: params, notInUseTimeout: notInUseTimeout)
        logger.debug(isNew ? "subscribed" : "joined subscription", metadata: ["name": "\(name)", "id": "\(record.id)"])
        return Subscription(name: name, params: params, id: record.id, shared: record.shared, client: self)
    }

    /// Makes or joins the subscription for a handle made inside a transaction, now that it committed.
    private func bind(_ handle: Subscription, notInUseTimeout: Duration) {
        guard !handle.isStopped else {
            handle.shared.update(.stopped)
            return
        }
        let (record, isNew) = subscribeOnClientQueue(
            handle.name, params: handle.params, notInUseTimeout: notInUseTimeout, handle: handle)
        logger.debug(
            isNew ? "subscribed" : "joined subscription", metadata: ["name": "\(handle.name)", "id": "\(record.id)"])
        if !handle.bind(to: record.id) {
            // Stopped while it was being made: let go of it as a stop would have.
            release(subscriptionID: record.id)
            if record.shared !== handle.shared {
                handle.shared.stopFollowing(record.shared)
                handle.shared.update(.stopped)
            }
        }
    }

    /// Makes (or joins) the subscription on the client queue. With `handle` (one made inside a transaction), a new
    /// subscription takes its id and state, and a joined one's state is followed by the handle's.
    private func subscribeOnClientQueue(
        _ name: String, params: [EJSONValue], notInUseTimeout: Duration, handle: Subscription? = nil
    ) -> (SubscriptionManager.Record, isNew: Bool) {
        onClientQueue {
            let actions = decide(
                .subscribeRequested(
                    ClientCore.SubscribeRequest(
                        name: name, params: params, notInUseTimeout: notInUseTimeout, userCode: userCode,
                        state: handle?.shared, makeID: { handle?.id ?? self.randomGenerator.id() })))
            guard case .subscribed(let record, let isNew, _)? = actions.first else {
                preconditionFailure("Internal inconsistency: a subscription request's first action is its record")
            }
            run(actions)
            return (record, isNew)
        }
    }

    /// A handle let go of its subscription.
    func release(subscriptionID id: String) {
        queue.async { self.handle(.subscriptionReleased(id: id)) }
    }

    /// Runs `body` on the client queue: synchronously from any other thread, directly when already on it.
    func onClientQueue<T>(_ body: () throws -> T) rethrows -> T {
        if isOnClientQueue { return try body() }
        return try queue.sync(execute: body)
    }

    /// Whether the calling code runs on the client queue.
    var isOnClientQueue: Bool { DispatchQueue.getSpecific(key: DDPClient.queueKey) == ObjectIdentifier(self) }
}
