import Dispatch
import EJSON

// MARK: - Calling methods

extension DDPClient {
    /// Defines (or replaces) the stub of a method: it runs locally, at once, whenever the method is called.
    ///
    /// For example:
    /// ```swift
    /// client.defineStub("todos.setDone") { context in
    ///     guard let id = context.params[0]?.stringValue else { return nil }   // a parameter not passed is nil
    ///     return .number(Double(try context.collection("todos").update(id, ["$set": ["done": true]])))
    /// }
    /// ```
    public func defineStub(_ name: String, _ stub: @escaping MethodStub) {
        stubs.withLockedValue { $0[name] = stub }
    }

    /// Calls a method and returns once the server has answered *and* the method's writes are visible in the cache.
    ///
    /// For example:
    /// ```swift
    /// let id = try await client.call("todos.add", params: ["milk"])
    /// ```
    /// Inside a stub, a call runs only the other method's stub, sends nothing and returns its value.
    /// A cancelled task returns at once with `CancellationError`; the call itself goes on as Meteor's would.
    /// - Throws: the server's ``MeteorError`` when it refuses the call, ``MethodError`` for a local failure, or
    ///   `CancellationError`.
    @discardableResult
    public func call(_ name: String, params: [EJSONValue] = [], options: MethodOptions = MethodOptions()) async throws
        -> EJSONValue?
    {
        if let enclosing = MethodInvocationContext.current {
            return try runNestedStub(name, params: params, enclosing: enclosing)
        }
        return try await withCancellableContinuation {
            (resume: @escaping @Sendable (Result<EJSONValue?, any Error>) -> Void) in
            _ = try call(name, params: params, options: options, completesInline: true) { resume($0.mapError { $0 }) }
        }
    }

    /// Calls a method; `completion` runs once the server has answered and the method's writes are visible
    /// (on the callback queue).
    ///
    /// - Returns: The stub's value when `options.returnStubValue` is set (Meteor's `returnStubValue`), else `nil`.
    /// - Throws: ``MethodError`` of kind ``MethodError/Kind/stubFailed`` when the stub throws and
    ///   `options.throwStubExceptions` is set (nothing is sent then).
    ///
    /// Called inside ``Database/performUpdates(_:)``, the call is made when that transaction commits, on the same
    /// thread (the client would otherwise wait for the write lock the caller holds); it returns `nil` then, and a
    /// stub failure goes to `completion`.
    @discardableResult
    public func call(
        _ name: String,
        params: [EJSONValue] = [],
        options: MethodOptions = MethodOptions(),
        completion: @escaping @Sendable (Result<EJSONValue?, any Error>) -> Void
    ) throws -> EJSONValue? {
        try call(name, params: params, options: options, completesInline: false, completion: completion)
    }

    func call(
        _ name: String,
        params: [EJSONValue],
        options: MethodOptions,
        completesInline: Bool,
        stubOutcome: (@Sendable (Result<EJSONValue?, any Error>) -> Void)? = nil,
        completion: @escaping @Sendable (Result<EJSONValue?, any Error>) -> Void
    ) throws -> EJSONValue? {
        if let enclosing = MethodInvocationContext.current {
            let value: EJSONValue?
            do {
                value = try runNestedStub(name, params: params, enclosing: enclosing)
            } catch {
                stubOutcome?(.failure(error))
                throw error
            }
            stubOutcome?(.success(value))
            let onDurable = options.onDurable
            userCode.run {
                onDurable?(false)
                completion(.success(value))
            }
            return value
        }
        if database.isInTransactionOnCurrentThread {
            // Called inside the app's own `database.performUpdates`: the client queue may be waiting for the very
            // write lock this thread holds (to flush or to run another stub), so waiting for the client queue here
            // would deadlock. The call is made once the transaction commits, on this thread; its stub value is not
            // returned (nil).
            database.afterCurrentTransaction { [self] in
                do {
                    _ = try call(
                        name, params: params, options: options, completesInline: completesInline,
                        stubOutcome: stubOutcome, completion: completion)
                } catch {
                    completion(.failure(MethodError.stubFailed(name, error)))
                }
            }
            return nil
        }
        let stub = stubs.withLockedValue { $0[name] }
        return try onClientQueue {
            if core.isClosed {
                // Nothing would ever answer (or restore what a stub wrote): the call fails at once, as the calls
                // pending at close() did.
                let onDurable = options.onDurable
                stubOutcome?(.failure(MethodError(methodName: name, kind: .clientClosed)))
                userCode.run {
                    onDurable?(false)
                    completion(.failure(MethodError(methodName: name, kind: .clientClosed)))
                }
                return nil
            }
            let id = core.nextMethodID()
            var stubValue: EJSONValue?
            var randomSeed: String?
            var stubOriginals: [(DocumentKey, EJSONObject?)] = []
            if let stub {
                // Everything the transport handed over (data frames wait up to 250 µs in the inbox for their batch) and
                // everything queued for the cache lands before the stub: its originals are then the server's versions
                // as far as they arrived (data held for quiescence updates them later, once routed). Not from inside
                // another stub: its transaction is open, and server data never lands in the middle of one.
                if MethodInvocationContext.current == nil { drainInbox() }
                store.flush()
                let context = MethodInvocationContext(methodName: name, params: params, enclosing: nil, client: self)
                let (outcome, originals) = store.runStub {
                    try MethodInvocationContext.$current.withValue(context) { try stub(context) }
                }
                stubOriginals = originals
                switch outcome {
                case .success(let value):
                    core.stubRan(methodID: id, originals: originals)
                    stubValue = value
                    stubOutcome?(.success(value))
                case .failure(let error):
                    stubOutcome?(.failure(error))
                    if options.throwStubExceptions {
                        // Nothing is sent, so nothing would ever restore what the stub wrote before throwing: it is
                        // undone now (Meteor leaves it in the cache).
                        store.revert(originals)
                        throw MethodError.stubFailed(name, error)
                    }
                    // The call goes out anyway: what the stub wrote before throwing is kept aside like any stub's
                    // writes, and the server's versions replace it at `updated` (Meteor's _retrieveAndStoreOriginals).
                    core.stubRan(methodID: id, originals: originals)
                    // Logged where an app sees it, as Meteor's client logs it (Meteor._debug).
                    logger.warning(
                        "Exception while simulating the effect of invoking '\(name)'", metadata: ["error": "\(error)"])
                }
                randomSeed = context.randomSeedIfUsed
            } else {
                stubOutcome?(.success(nil))
            }
            let invocation = MethodCoordinator.Invocation(
                id: id,
                name: name,
                message: .method(id: id, method: name, params: params, randomSeed: randomSeed),
                options: options,
                completion: completion
            )
            invocation.completesInline = completesInline
            let kept = persistCall(invocation, randomSeed: randomSeed, params: params, stubOriginals: stubOriginals)
            send(calls: core.callMade(invocation, kept: kept))
            return options.returnStubValue ? stubValue : nil
        }
    }

    /// A call inside a stub: only the other stub runs, in the same transaction, with a seed derived from the
    /// enclosing invocation; nothing is sent.
    private func runNestedStub(_ name: String, params: [EJSONValue], enclosing: MethodInvocationContext) throws
        -> EJSONValue?
    {
        guard let stub = stubs.withLockedValue({ $0[name] }) else { return nil }
        var depth = 0
        var outer: MethodInvocationContext? = enclosing
        while let current = outer {
            depth += 1
            outer = current.enclosing
        }
        guard depth < 64 else {
            throw MethodError(
                methodName: name, kind: .stubFailed,
                stubErrorDescription: "stubs nested more than 64 deep (a stub calling itself?)")
        }
        let context = MethodInvocationContext(methodName: name, params: params, enclosing: enclosing, client: self)
        return try MethodInvocationContext.$current.withValue(context) { try stub(context) }
    }
}
