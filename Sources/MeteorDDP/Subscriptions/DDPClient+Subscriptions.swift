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
    public func subscribe(_ name: String, params: [EJSONValue] = [], notInUseTimeout: Duration = .seconds(180))
        -> Subscription
    {
        let (record, isNew) = onClientQueue {
            let subscribed = core.subscribe(
                name: name, params: params, notInUseTimeout: notInUseTimeout, userCode: userCode
            ) {
                randomGenerator.id()
            }
            let record = subscribed.record
            if core.isClosed {
                // A closed client subscribes to nothing: the handle is stopped at once, as close() stopped the others.
                _ = core.subscriptionEnded(record.id)
                record.shared.update(.stopped)
                return (record, false)
            }
            if subscribed.sendNow { send(.sub(id: record.id, name: name, params: params)) }
            persistSessionChanges()
            return (record, subscribed.isNew)
        }
        logger.debug(isNew ? "subscribed" : "joined subscription", metadata: ["name": "\(name)", "id": "\(record.id)"])
        return Subscription(name: name, params: params, id: record.id, shared: record.shared, client: self)
    }

    /// A handle let go of its subscription.
    func release(subscriptionID id: String) {
        queue.async {
            guard let (delay, generation) = self.core.subscriptionReleased(id) else { return }
            if delay <= .zero {
                self.unsubscribeIfUnused(id, generation: generation)
            } else {
                _ = self.scheduler.schedule(after: delay) { [weak self] in
                    guard let self else { return }
                    self.queue.async { self.unsubscribeIfUnused(id, generation: generation) }
                }
            }
        }
    }

    private func unsubscribeIfUnused(_ id: String, generation: Int) {
        guard let (record, quiescent) = core.unsubscribeIfUnused(id, generation: generation) else { return }
        logger.debug("unsubscribed", metadata: ["name": "\(record.name)", "id": "\(id)"])
        record.shared.update(.stopped)
        send(.unsub(id: id))
        if let quiescent { applyQuiescence(quiescent) }
        persistSessionChanges()
    }

    /// Runs `body` on the client queue: synchronously from any other thread, directly when already on it.
    func onClientQueue<T>(_ body: () throws -> T) rethrows -> T {
        if isOnClientQueue { return try body() }
        return try queue.sync(execute: body)
    }

    /// Whether the calling code runs on the client queue.
    var isOnClientQueue: Bool { DispatchQueue.getSpecific(key: DDPClient.queueKey) == ObjectIdentifier(self) }
}
