/// Why a method call failed on this side: the client closed, a dropped connection with `noRetry`, a stub's error,
/// an answer that did not parse. A refusal by the server is not one of these: it is thrown as the server's own
/// ``MeteorError``, whatever made the call (``DDPClient/call(_:params:options:)``, typed calls, collection writes,
/// logins), as Meteor's JavaScript gets a `Meteor.Error`.
///
/// For example:
/// ```swift
/// do {
///     _ = try await client.call("todos.remove", params: ["x"])
/// } catch let error as MeteorError where error.error == "not-authorized" {
///     print(error.reason ?? "")                    // the server's refusal
/// } catch let error as MethodError {
///     print(error)                                 // a local failure (closed, stub, unreadable answer)
/// }
/// ```
public struct MethodError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What kind of failure this is.
    public enum Kind: String, Sendable, Hashable {
        /// The connection dropped after the call was sent and it was made with `noRetry`: it may or may not have run
        /// (Meteor's `invocation-failed`).
        case invocationFailed
        /// The stub threw and the call was made with `throwStubExceptions` (nothing was sent);
        /// ``MethodError/stubError`` is the stub's error.
        case stubFailed
        /// The client was closed before the call completed.
        case clientClosed
        /// The server's `result` for the call did not parse (``MethodError/violation`` says why; the frame is also
        /// reported on ``DDPClient/errors``). Meteor's client drops such a frame and the call never completes.
        case protocolViolation
        /// The session was resumed after the call's frame had gone out, and no answer came within
        /// ``DDPClient/Configuration/resumedCallTimeout``: the frame may have been lost with the old socket, or the
        /// server may still be running the method (its data then arrives as any server data does). The stub's writes
        /// were undone. The call is not sent again, since the server may have run it.
        case outcomeUnknown
        /// No `result` came within the call's deadline (``MethodOptions/timeout``,
        /// ``DDPClient/Configuration/callTimeout``). Sent, its outcome is unknown: the server may still run it (its
        /// data then arrives as any server data does). Not sent yet (behind a `wait` call, or waiting for the offline
        /// store's disk), it never will be. The stub's writes were undone; a late answer is logged and ignored.
        case timedOut
    }

    /// The method's name.
    public let methodName: String
    /// What kind of failure this is.
    public let kind: Kind
    /// The error the stub threw (for ``Kind/stubFailed``), for example a ``MethodParameterError``.
    public let stubError: (any Error)?
    /// A description of the stub's error (for ``Kind/stubFailed``).
    public let stubErrorDescription: String?
    /// What was wrong with the server's answer (for ``Kind/protocolViolation``).
    public let violation: DDPProtocolViolation?

    init(
        methodName: String, kind: Kind, stubError: (any Error)? = nil, stubErrorDescription: String? = nil,
        violation: DDPProtocolViolation? = nil
    ) {
        self.methodName = methodName
        self.kind = kind
        self.stubError = stubError
        self.stubErrorDescription = stubErrorDescription ?? stubError.map { String(describing: $0) }
        self.violation = violation
    }

    static func stubFailed(_ name: String, _ error: any Error) -> MethodError {
        if let error = error as? MethodError, error.kind == .stubFailed { return error }
        return MethodError(methodName: name, kind: .stubFailed, stubError: error)
    }

    static func invocationFailed(_ name: String) -> MethodError {
        MethodError(methodName: name, kind: .invocationFailed)
    }

    public static func == (lhs: MethodError, rhs: MethodError) -> Bool {
        lhs.methodName == rhs.methodName && lhs.kind == rhs.kind && lhs.stubErrorDescription == rhs.stubErrorDescription
            && lhs.violation == rhs.violation
    }

    public var description: String {
        switch kind {
        case .invocationFailed:
            return
                "method '\(methodName)' might have failed: "
                + "the connection dropped and noRetry was set [invocation-failed]"
        case .stubFailed: return "the stub of method '\(methodName)' threw: \(stubErrorDescription ?? "?")"
        case .clientClosed: return "method '\(methodName)' did not complete: the client was closed"
        case .protocolViolation:
            return
                "method '\(methodName)' failed: its result did not parse "
                + "(\(violation.map(String.init(describing:)) ?? "?"))"
        case .outcomeUnknown:
            return
                "method '\(methodName)' has an unknown outcome: it was in flight when the session was resumed and no "
                + "answer came (the server may still run it; it was not sent again)"
        case .timedOut:
            return
                "method '\(methodName)' timed out: no result came within its deadline (if it was sent, the server "
                + "may still run it)"
        }
    }
}
