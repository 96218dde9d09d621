import EJSON

/// Why a subscription ended without becoming (or staying) ready: the server's `nosub` error, or a `ready`/`nosub`
/// frame that did not parse. It is what ``SubscriptionStatus/failed(_:)`` holds; ``Subscription/ready()`` throws the
/// server's error itself as a ``MeteorError`` (one shape for every refusal), and this type only for a frame that did
/// not parse.
///
/// For example:
/// ```swift
/// do { try await client.subscribe("secret").ready() }
/// catch let error as MeteorError { print(error.reason ?? "") } // "Subscription 'secret' not found"
/// ```
public struct SubscriptionError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The subscription's name.
    public let name: String
    /// Meteor's error: code (number or string), reason and details. For a frame that did not parse, the code is
    /// `protocol-violation` and ``violation`` says what was wrong.
    public let meteorError: MeteorError
    /// The server's `ready` or `nosub` for this subscription did not parse (it is also reported on
    /// ``DDPClient/errors``); `nil` when the server ended the subscription with an error.
    public let violation: DDPProtocolViolation?

    init(name: String, meteorError: MeteorError, violation: DDPProtocolViolation? = nil) {
        self.name = name
        self.meteorError = meteorError
        self.violation = violation
    }

    public var description: String { "subscription '\(name)' failed: \(meteorError)" }

    /// What ``Subscription/ready()`` throws: the server's error itself, or this error for a frame that did not parse.
    var thrown: any Error { violation == nil ? meteorError : self }
}

/// Thrown by ``Subscription/ready()`` when the subscription stops before it is ready.
public struct SubscriptionStoppedError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The subscription's name.
    public let name: String
    public var description: String { "subscription '\(name)' stopped before it was ready" }
}

/// Thrown by ``Subscription/ready(timeout:)`` when the subscription is not ready within the time given. The
/// subscription goes on: it may still become ready (``Subscription/stop()`` gives it up).
public struct SubscriptionTimeoutError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The subscription's name.
    public let name: String
    /// How long it was awaited.
    public let timeout: Duration
    public var description: String { "subscription '\(name)' was not ready within \(timeout)" }
}
