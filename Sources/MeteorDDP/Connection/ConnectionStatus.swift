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
    /// How the current session began (only while ``State/connected``).
    public var sessionStart: SessionStart?

    /// How a session began.
    public enum SessionStart: String, Sendable, Equatable {
        /// A new session: the first connection, or a new socket that offered no session to resume (resumption is off,
        /// or the app ended the session with ``DDPClient/disconnect()``).
        case new
        /// The server resumed the session the client had (Meteor 3.5+): no login, no subscription and no call was
        /// sent again, no document downloaded again.
        case resumed
        /// The client offered to resume its session and the server started a new one (a server before Meteor 3.5,
        /// a grace period that ran out, a message lost with the old socket, a session the server closed; the server
        /// answers with another session id and no reason, so the client cannot tell which): the client resumed its
        /// login and sent its subscriptions and calls again, as on any new session.
        case resumeRefused
    }

    /// Creates a status.
    public init(
        state: State, retryCount: Int = 0, retryTime: Date? = nil, reason: DDPError? = nil,
        sessionStart: SessionStart? = nil
    ) {
        self.state = state
        self.retryCount = retryCount
        self.retryTime = retryTime
        self.reason = reason
        self.sessionStart = sessionStart
    }

    /// Whether the DDP session is established.
    public var isConnected: Bool { state == .connected }

    public var description: String {
        var text = "\(state.rawValue) (retryCount \(retryCount))"
        if let sessionStart { text += ", session \(sessionStart.rawValue)" }
        if let reason { text += ": \(reason)" }
        return text
    }
}
