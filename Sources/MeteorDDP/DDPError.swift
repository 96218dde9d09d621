import Foundation

/// An error of the DDP client, with a clear message and a stable ``Code`` to switch on.
///
/// For example:
/// ```swift
/// for await error in client.errors where error.code == .protocolViolation {
///     logger.warning("server sent a bad frame: \(error)")
/// }
/// ```
public struct DDPError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What kind of error this is.
    public enum Code: String, Sendable, Hashable {
        /// The server sent a frame that is not a valid DDP message (see ``DDPError/violation``). It was skipped.
        case protocolViolation
        /// The server sent an `error` message about one of ours.
        case serverError
        /// The server wants a DDP version this client does not support; the client stopped.
        case versionNegotiationFailed
        /// The connection was lost (closed, network error); the client retries.
        case connectionLost
        /// The socket or the DDP handshake did not complete in time.
        case connectTimedOut
        /// The server stopped answering heartbeats.
        case heartbeatTimedOut
        /// The client was closed or disconnected while the operation was pending.
        case clientClosed
        /// A limit that bounds what a server can make the client hold was reached; the message says which, and what
        /// the client did (see the limits in ``DDPClient/Configuration``).
        case limitReached
        /// The offline store failed (see ``DDPError/persistenceError``); the client goes on in memory.
        case persistenceFailed
        /// With ``PendingStubMode/rebase``: a pending call's stub threw when it was replayed over the server's newest
        /// data (its document was removed by someone else, a precondition no longer holds). Reported once each time
        /// the stub goes from succeeding to throwing; see ``DDPError/methodName``. The call still goes to the server,
        /// whose answer decides.
        case stubReplayFailed
        /// With ``PendingStubMode/rebase``, in debug builds: a stub run twice over the same state wrote different
        /// documents (it reads or writes something besides the cache and its parameters), so replaying it is not
        /// safe; see ``DDPError/methodName``.
        case stubNotReplayable
    }

    /// What kind of error this is.
    public let code: Code
    /// A human-readable explanation.
    public let message: String
    /// The protocol violation, for ``Code/protocolViolation``.
    public let violation: DDPProtocolViolation?
    /// The transport failure behind a lost connection, if any.
    public let transportError: TransportError?
    /// The offline store's failure, for ``Code/persistenceFailed``.
    public let persistenceError: PersistenceError?
    /// The method whose stub is concerned, for ``Code/stubReplayFailed`` and ``Code/stubNotReplayable``.
    public let methodName: String?

    init(
        _ code: Code, _ message: String, violation: DDPProtocolViolation? = nil, transportError: TransportError? = nil,
        persistenceError: PersistenceError? = nil, methodName: String? = nil
    ) {
        self.code = code
        self.message = message
        self.violation = violation
        self.transportError = transportError
        self.persistenceError = persistenceError
        self.methodName = methodName
    }

    public var description: String { message }

    static func protocolViolation(_ violation: DDPProtocolViolation) -> DDPError {
        DDPError(.protocolViolation, violation.description, violation: violation)
    }

    static func serverError(reason: String, offendingMessage: String?) -> DDPError {
        DDPError(
            .serverError, "server error: \(reason)" + (offendingMessage.map { " (offending message: \($0))" } ?? ""))
    }

    static func versionNegotiationFailed(serverVersion: String) -> DDPError {
        DDPError(.versionNegotiationFailed, "DDP version negotiation failed; server requested version \(serverVersion)")
    }

    static func connectionLost(_ reason: String, transportError: TransportError? = nil) -> DDPError {
        DDPError(.connectionLost, "connection lost: \(reason)", transportError: transportError)
    }

    static func connectTimedOut() -> DDPError {
        DDPError(.connectTimedOut, "connection attempt timed out")
    }

    static func heartbeatTimedOut() -> DDPError {
        DDPError(.heartbeatTimedOut, "DDP heartbeat timed out")
    }

    static func limitReached(_ message: String) -> DDPError {
        DDPError(.limitReached, message)
    }

    static func clientClosed() -> DDPError {
        DDPError(.clientClosed, "the client was closed")
    }

    static func stubReplayFailed(_ methodName: String, methodID: String, _ error: any Error) -> DDPError {
        DDPError(
            .stubReplayFailed,
            "the stub of '\(methodName)' (call \(methodID)) threw when replayed over the server's newest data: "
                + "\(error); the call goes on and the server's answer decides",
            methodName: methodName)
    }

    static func stubNotReplayable(_ methodName: String, differing: [DocumentKey]) -> DDPError {
        let documents = differing.prefix(3).map { "\($0.collectionName)/\($0.documentID)" }.joined(separator: ", ")
        return DDPError(
            .stubNotReplayable,
            "the stub of '\(methodName)' wrote different documents when run twice over the same state (\(documents)): "
                + "a replayed stub must read only the cache and its parameters and write only through its context",
            methodName: methodName)
    }
}
