import EJSON

/// Why a method call failed.
///
/// For example:
/// ```swift
/// do { _ = try await client.call("todos.remove", params: ["x"]) }
/// catch let error as MethodError where error.kind == .server { print(error.meteorError?.reason ?? "") }
/// ```
public struct MethodError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What kind of failure this is.
    public enum Kind: String, Sendable, Hashable {
        /// The server answered with an error (``MethodError/meteorError`` has its code, reason and details).
        case server
        /// The connection dropped after the call was sent and it was made with `noRetry`: it may or may not have run
        /// (Meteor's `invocation-failed`).
        case invocationFailed
        /// The stub threw and the call was made with `throwStubExceptions` (nothing was sent).
        case stubFailed
        /// The client was closed before the call completed.
        case clientClosed
        /// The server's `result` for the call did not parse (``MethodError/violation`` says why; the frame is also
        /// reported on ``DDPClient/errors``). Meteor's client drops such a frame and the call never completes.
        case protocolViolation
    }

    /// The method's name.
    public let methodName: String
    /// What kind of failure this is.
    public let kind: Kind
    /// The Meteor error (for ``Kind/server`` and ``Kind/invocationFailed``).
    public let meteorError: MeteorError?
    /// A description of the stub's error (for ``Kind/stubFailed``).
    public let stubErrorDescription: String?
    /// What was wrong with the server's answer (for ``Kind/protocolViolation``).
    public let violation: DDPProtocolViolation?

    init(
        methodName: String, kind: Kind, meteorError: MeteorError? = nil, stubErrorDescription: String? = nil,
        violation: DDPProtocolViolation? = nil
    ) {
        self.methodName = methodName
        self.kind = kind
        self.meteorError = meteorError
        self.stubErrorDescription = stubErrorDescription
        self.violation = violation
    }

    static func server(_ name: String, _ error: MeteorError) -> MethodError {
        MethodError(methodName: name, kind: .server, meteorError: error)
    }

    static func invocationFailed(_ name: String) -> MethodError {
        MethodError(
            methodName: name,
            kind: .invocationFailed,
            meteorError: MeteorError(
                error: .string("invocation-failed"),
                reason: "Method invocation might have failed due to dropped connection. Failing because `noRetry` option was passed to Meteor.apply."
            )
        )
    }

    public var description: String {
        switch kind {
        case .server: return "method '\(methodName)' failed: \(meteorError.map(String.init(describing:)) ?? "?")"
        case .invocationFailed: return "method '\(methodName)' might have failed: the connection dropped and noRetry was set"
        case .stubFailed: return "the stub of method '\(methodName)' threw: \(stubErrorDescription ?? "?")"
        case .clientClosed: return "method '\(methodName)' did not complete: the client was closed"
        case .protocolViolation: return "method '\(methodName)' failed: its result did not parse (\(violation.map(String.init(describing:)) ?? "?"))"
        }
    }
}

/// How a method call behaves (Meteor's `apply` options).
public struct MethodOptions: Sendable {
    /// Run alone: later calls wait until this one completes, and incoming data is held until its `updated`
    /// (logins use this).
    public var wait = false
    /// Do not re-send after a reconnect; fail with ``MethodError/Kind/invocationFailed`` instead.
    public var noRetry = false
    /// Return the stub's value from the synchronous call form.
    public var returnStubValue = false
    /// Throw the stub's error instead of logging it and sending the call anyway.
    public var throwStubExceptions = false
    /// Called as soon as the result arrives (before the method's data is visible). Runs on an unspecified thread.
    public var onResultReceived: (@Sendable (Result<EJSONValue?, MethodError>) -> Void)?
    /// Like ``onResultReceived``, but called on the client queue while the result is handled, before anything else
    /// happens (for the client's own logins: the token must be resumable before a reconnect can follow).
    var onResultReceivedOnClientQueue: (@Sendable (Result<EJSONValue?, MethodError>) -> Void)?
    /// Called once the call's record is on disk with the offline store (`true`: it survives a kill from now on and
    /// is sent again after a restart), or with `false` when it will not be stored (no offline store, a method of
    /// ``Persistence/memoryOnlyMethods``, a store that failed, a call made inside a stub or on a closed client).
    /// Runs on the callback queue, once. For an app's "saved offline" mark; a stored call goes out only once it is
    /// on disk.
    public var onDurable: (@Sendable (_ stored: Bool) -> Void)?
    /// Whether the call stays in memory whatever its name (logins: their parameters are credentials).
    var keepsInMemoryOnly = false

    /// Creates the default options.
    public init(wait: Bool = false, noRetry: Bool = false, returnStubValue: Bool = false, throwStubExceptions: Bool = false) {
        self.wait = wait
        self.noRetry = noRetry
        self.returnStubValue = returnStubValue
        self.throwStubExceptions = throwStubExceptions
    }
}
