import EJSON

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
    /// Called as soon as the server's `result` for the call arrives, which may be before the method's writes are
    /// visible in the cache (Meteor's `onResultReceived`): with the value, the server's ``MeteorError``, or a
    /// ``MethodError`` of kind ``MethodError/Kind/protocolViolation`` for a result that did not parse. Not called
    /// when no result comes (a closed client, a dropped `noRetry` call, a stub that threw with
    /// ``throwStubExceptions``, a call made inside a stub).
    ///
    /// Runs on the client's callback queue (see <doc:WhereCallbacksRun>), handed there by the client queue as it
    /// handles the `result`, in order with the other callbacks: with ``DDPClient/call(_:params:options:completion:)``
    /// it runs before the call's `completion`, which runs on the same queue once the writes are visible. The `async`
    /// ``DDPClient/call(_:params:options:)`` resumes its caller from the client queue, not through the callback
    /// queue: the `await` may return before this has run.
    public var onResultReceived: (@Sendable (Result<EJSONValue?, any Error>) -> Void)?
    /// Like ``onResultReceived``, but called on the client queue while the result is handled, before anything else
    /// happens (for the client's own logins: the token must be resumable before a reconnect can follow).
    var onResultReceivedOnClientQueue: (@Sendable (Result<EJSONValue?, any Error>) -> Void)?
    /// Called once the call's record is on disk with the offline store (`true`: it survives a kill from now on and
    /// is sent again after a restart), or with `false` when it will not be stored (no offline store, a method of
    /// ``Persistence/memoryOnlyMethods``, a store that failed, a call made inside a stub or on a closed client).
    /// Runs on the callback queue, once. For an app's "saved offline" mark; a stored call goes out only once it is
    /// on disk.
    public var onDurable: (@Sendable (_ stored: Bool) -> Void)?
    /// How long the call may take, measured on the client's scheduler from the call to its completion; `nil` (the
    /// default): ``DDPClient/Configuration/callTimeout``. Past it, a call with no `result` fails with
    /// ``MethodError/Kind/timedOut``: its stub's writes are undone, a `wait` call's barrier is released, a late answer
    /// is logged and ignored. One whose `result` came but not its data completes with that result then.
    public var timeout: Duration?
    /// Whether the call stays in memory whatever its name (logins: their parameters are credentials).
    var keepsInMemoryOnly = false
    /// Whether ``DDPClient/Configuration/callTimeout`` applies when ``timeout`` is `nil` (not to the client's logins).
    var takesDefaultTimeout = true

    /// Options of a call whose parameters or answer are secrets (passwords, tokens, 2FA codes): never written to the
    /// offline store.
    static func credentials(wait: Bool = false) -> MethodOptions {
        var options = MethodOptions(wait: wait)
        options.keepsInMemoryOnly = true
        options.takesDefaultTimeout = false
        return options
    }

    /// Creates the default options.
    public init(
        wait: Bool = false, noRetry: Bool = false, returnStubValue: Bool = false, throwStubExceptions: Bool = false
    ) {
        self.wait = wait
        self.noRetry = noRetry
        self.returnStubValue = returnStubValue
        self.throwStubExceptions = throwStubExceptions
    }
}
