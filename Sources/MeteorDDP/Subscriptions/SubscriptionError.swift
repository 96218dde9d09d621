import EJSON

/// Why a subscription ended without becoming (or staying) ready: the server's `nosub` error.
///
/// For example:
/// ```swift
/// do { try await client.subscribe("secret").ready() }
/// catch let error as SubscriptionError { print(error.meteorError.reason ?? "") } // "Subscription 'secret' not found"
/// ```
public struct SubscriptionError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The subscription's name.
    public let name: String
    /// Meteor's error: code (number or string), reason and details.
    public let meteorError: MeteorError

    public var description: String { "subscription '\(name)' failed: \(meteorError)" }
}

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

/// Thrown by ``Subscription/ready()`` when the subscription stops before it is ready.
public struct SubscriptionStoppedError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The subscription's name.
    public let name: String
    public var description: String { "subscription '\(name)' stopped before it was ready" }
}
