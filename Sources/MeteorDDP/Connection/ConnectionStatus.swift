import Foundation

/// Where the client's connection stands, as Meteor's `Meteor.status()` reports it.
///
/// For example:
/// ```swift
/// for await status in client.statusUpdates {
///     if status.state == .waiting { print("retrying in", status.retryTime!.timeIntervalSinceNow, "s") }
/// }
/// ```
public struct ConnectionStatus: Sendable, Equatable, CustomStringConvertible {
    /// The phase of the connection.
    public enum State: String, Sendable, Equatable {
        /// Not connected and not trying (before ``DDPClient/connect()``, after ``DDPClient/disconnect()``,
        /// or while the network is known to be unreachable).
        case offline
        /// Opening a socket or waiting for the DDP handshake.
        case connecting
        /// The DDP session is established (the server sent `connected`).
        case connected
        /// The connection was lost; a retry is scheduled at ``ConnectionStatus/retryTime``.
        case waiting
        /// Gave up for good (for example the server wants a DDP version this client does not support).
        case failed
    }

    /// The phase of the connection.
    public var state: State
    /// How many reconnect attempts were made since the last successful connection.
    public var retryCount: Int
    /// When the next attempt is scheduled (only while ``State/waiting``).
    public var retryTime: Date?
    /// Why the connection was lost or failed, if it was.
    public var reason: DDPError?

    /// Creates a status.
    public init(state: State, retryCount: Int = 0, retryTime: Date? = nil, reason: DDPError? = nil) {
        self.state = state
        self.retryCount = retryCount
        self.retryTime = retryTime
        self.reason = reason
    }

    /// Whether the DDP session is established.
    public var isConnected: Bool { state == .connected }

    public var description: String {
        var text = "\(state.rawValue) (retryCount \(retryCount))"
        if let reason { text += ": \(reason)" }
        return text
    }
}
