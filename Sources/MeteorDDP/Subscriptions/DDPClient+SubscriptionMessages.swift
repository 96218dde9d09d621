import EJSON

// The driver's handling of the server's subscription messages (`ready`, `nosub`), once routed as session data
// (Session/DDPClient+Driver.swift routes them).

extension DDPClient {
    func subscriptionsBecameReady(_ ids: [String]) {
        let (ready, unknown) = core.subscriptionsReady(ids)
        for id in unknown where admitsDebugLine(.unknownSubscription("ready")) {
            logger.debug("ready for an unknown subscription ignored", metadata: ["id": "\(id)"])
        }
        // A `ready` before a reconnect may not have taken effect yet (its data never flushed): the status decides.
        for record in ready where record.shared.status != .ready {
            runWhenAllServerDocumentsAreFlushed(.subscriptionReady(record.shared))
        }
        if core.restoredCallsAwaitServerData { runWhenAllServerDocumentsAreFlushed(.judgeRestoredCalls) }
    }

    func subscriptionEnded(_ id: String, error: MeteorError?) {
        guard let record = core.subscriptionEnded(id) else {
            if admitsDebugLine(.unknownSubscription("nosub")) {
                logger.debug("nosub for an unknown subscription ignored", metadata: ["id": "\(id)"])
            }
            return
        }
        if let error {
            logger.debug("subscription failed", metadata: ["name": "\(record.name)", "error": "\(error)"])
            record.shared.update(.failed(SubscriptionError(name: record.name, meteorError: error)))
        } else {
            record.shared.update(.stopped)
        }
        if core.restoredCallsAwaitServerData { runWhenAllServerDocumentsAreFlushed(.judgeRestoredCalls) }
    }
}
