/// Where a subscription stands.
public enum SubscriptionStatus: Sendable, Equatable {
    /// Sent (or queued until connected); the server has not said `ready` yet.
    case pending
    /// The server sent `ready` and the subscription's initial documents are in the cache.
    case ready
    /// The server ended it with an error (`nosub` with `error`).
    case failed(SubscriptionError)
    /// Stopped: by ``Subscription/stop()`` or by the server (`nosub` without error).
    case stopped
}
