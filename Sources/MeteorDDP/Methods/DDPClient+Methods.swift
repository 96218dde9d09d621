import Dispatch
import EJSON
import NIOConcurrencyHelpers

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
        let waiter = CallWaiter()
        defer { if waiter.finish() { queue.async { self.drainInbox() } } }
        return try await withTaskCancellationHandler {
            _ = try call(name, params: params, options: options, completesInline: true, waiter: waiter) {
                waiter.complete($0.mapError { $0 })
            }
            while true {
                switch await waiter.next() {
                case .drain: drainHandedOver()
                case .completed(let outcome): return try outcome.get()
                case .cancelled: throw CancellationError()
                }
            }
        } onCancel: {
            waiter.cancel()
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
        waiter: CallWaiter? = nil,
        stubOutcome: (@Sendable (Result<EJSONValue?, any Error>) -> Void)? = nil,
        completion: @escaping @Sendable (Result<EJSONValue?, any Error>) -> Void
    ) throws -> EJSONValue? {
        if let enclosing = MethodInvocationContext.current {
            let value: EJSONValue?
            do {
                value = try runNestedStub(name, params: params, enclosing: enclosing)
            } catch {
                if !enclosing.isReplay { stubOutcome?(.failure(error)) }
                throw error
            }
            // A replayed stub's calls completed when it first ran.
            guard !enclosing.isReplay else { return value }
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
                        name, params: params, options: options, completesInline: completesInline, waiter: waiter,
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
            if stub != nil {
                // Everything the transport handed over (data frames wait up to 250 µs in the inbox for their batch) and
                // everything queued for the cache lands before the stub: its originals are then the server's versions
                // as far as they arrived (data held for quiescence updates them later, once routed). Not from inside
                // another stub: its transaction is open, and server data never lands in the middle of one.
                if MethodInvocationContext.current == nil { drainInbox() }
                store.flush()
            }
            let stubRun = try runStub(stub, name, params: params, options: options, stubOutcome: stubOutcome)
            reportStubRun(stubRun, name)
            return send(
                stubRun, name, params: params, options: options, completesInline: completesInline, waiter: waiter,
                completion: completion)
        }
    }

    /// What a call's stub did, before the call is recorded and sent.
    struct StubRun {
        let id: String
        let value: EJSONValue?
        let randomSeed: String?
        let originals: [(DocumentKey, EJSONObject?)]
        /// The stub's error, when it threw and the call goes out anyway.
        var stubError: (any Error)? = nil
        /// When its two runs differed (debug builds, ``PendingStubMode/rebase``): the documents whose writes did.
        var notReplayable: [DocumentKey]? = nil
    }

    /// Whether new calls' stubs run twice, to report one that cannot be replayed: debug builds, with
    /// ``PendingStubMode/rebase``.
    private var checksStubsAreReplayable: Bool {
        #if DEBUG
            core.rebasesStubs
        #else
            false
        #endif
    }

    /// Reports what a stub's run showed once its transaction committed (a log handler is app code): its failure,
    /// as Meteor's client logs it (Meteor._debug), and a stub that cannot be replayed.
    private func reportStubRun(_ stubRun: StubRun, _ name: String) {
        if let error = stubRun.stubError {
            logger.warning(
                "Exception while simulating the effect of invoking '\(name)'", metadata: ["error": "\(error)"])
        }
        if let differing = stubRun.notReplayable { report(.stubNotReplayable(name, differing: differing)) }
    }

    /// Runs a new call's stub, if it has one (on the client queue, the cache brought up to date before).
    ///
    /// - Throws: ``MethodError`` of kind ``MethodError/Kind/stubFailed`` when the stub throws and
    ///   `options.throwStubExceptions` is set; what it wrote is undone and nothing is to be sent.
    private func runStub(
        _ stub: MethodStub?, _ name: String, params: [EJSONValue], options: MethodOptions,
        stubOutcome: (@Sendable (Result<EJSONValue?, any Error>) -> Void)?
    ) throws -> StubRun {
        guard let stub else {
            let id = core.nextMethodID
            handle(.stubRan(ClientCore.StubRun(id: id, replay: nil, originals: nil)))
            stubOutcome?(.success(nil))
            return StubRun(id: id, value: nil, randomSeed: nil, originals: [])
        }
        var context = MethodInvocationContext(methodName: name, params: params, enclosing: nil, client: self)
        var notReplayable: [DocumentKey]?
        let stubStarted = metrics.isRecording ? ClientMetrics.now() : 0
        defer {
            if stubStarted != 0 {
                let nanoseconds = Int64(clamping: ClientMetrics.now() &- stubStarted)
                emitMetrics { $0.stubDuration.recordNanoseconds(nanoseconds) }
            }
        }
        let run = store.runStub(recordingReads: core.rebasesStubs) {
            if checksStubsAreReplayable {
                let twice = runStubTwice(stub, name, params: params, context: context)
                context = twice.context
                if twice.differs { notReplayable = twice.differing }
                return try twice.value.get()
            }
            return try MethodInvocationContext.$current.withValue(context) { try stub(context) }
        }
        let (outcome, originals) = (run.value, run.originals)
        // The call takes its id once its stub ran (a stub's own calls take none: they only run their stubs).
        let id = core.nextMethodID
        let threw: Bool = if case .failure = outcome { true } else { false }
        let sent = !threw || !options.throwStubExceptions
        handle(
            .stubRan(
                ClientCore.StubRun(
                    id: id,
                    replay: sent
                        ? StubReplays.Call(
                            id: id, name: name, params: params, randomSeed: context.randomSeedIfUsed, stub: stub,
                            lastReplayFailed: threw, reads: run.reads) : nil,
                    originals: sent ? originals : nil)))
        switch outcome {
        case .success(let value):
            stubOutcome?(.success(value))
            return StubRun(
                id: id, value: value, randomSeed: context.randomSeedIfUsed, originals: originals,
                notReplayable: notReplayable)
        case .failure(let error):
            stubOutcome?(.failure(error))
            if !sent {
                // Nothing is sent, so nothing would ever restore what the stub wrote before throwing: it is undone now
                // (Meteor leaves it in the cache).
                store.revert(
                    originals, settled: originals.map(\.0).filter { !core.session.serverDocuments.contains($0) })
                // Only a single call throws (a joint transaction's calls go out anyway): its transaction committed.
                if let differing = notReplayable { report(.stubNotReplayable(name, differing: differing)) }
                throw MethodError.stubFailed(name, error)
            }
            // The call goes out anyway: what the stub wrote before throwing is kept aside like any stub's writes, and
            // the server's versions replace it at `updated` (Meteor's _retrieveAndStoreOriginals).
            return StubRun(
                id: id, value: nil, randomSeed: context.randomSeedIfUsed, originals: originals, stubError: error,
                notReplayable: notReplayable)
        }
    }

    /// Records a call whose stub ran and sends it (or queues it behind a wait method or the disk).
    private func send(
        _ stubRun: StubRun, _ name: String, params: [EJSONValue], options: MethodOptions, completesInline: Bool,
        waiter: CallWaiter? = nil, completion: @escaping @Sendable (Result<EJSONValue?, any Error>) -> Void
    ) -> EJSONValue? {
        let invocation = MethodCoordinator.Invocation(
            id: stubRun.id,
            name: name,
            message: .method(id: stubRun.id, method: name, params: params, randomSeed: stubRun.randomSeed),
            options: options,
            completion: completion
        )
        invocation.completesInline = completesInline
        invocation.waiter = waiter
        let kept = persistCall(
            invocation, randomSeed: stubRun.randomSeed, params: params, stubOriginals: stubRun.originals)
        callStarted(invocation.id)
        handle(.callMade(invocation, kept: kept))
        return options.returnStubValue ? stubRun.value : nil
    }

    /// Makes several calls whose stubs run in one transaction, so observers see their writes as one change (as a
    /// Meteor web app's reactivity sees stubs run in a row before its next flush); they are sent in order, and this
    /// returns their results once every one was answered and its writes are visible. A cancelled task returns at
    /// once with `CancellationError`; the calls go on, as Meteor's would.
    ///
    /// - Throws: The first call's error that failed, in call order (the other calls go on), or `CancellationError`.
    func callInOneTransaction(_ calls: [(name: String, params: [EJSONValue])]) async throws -> [EJSONValue?] {
        guard !calls.isEmpty else { return [] }
        return try await withCancellableContinuation {
            (resume: @escaping @Sendable (Result<[EJSONValue?], any Error>) -> Void) throws -> Void in
            let collected = CallResults(count: calls.count, done: resume)
            let stubs = stubs.withLockedValue { stubs in calls.map { stubs[$0.name] } }
            onClientQueue {
                guard !core.isClosed else {
                    for index in calls.indices {
                        collected.complete(
                            index, .failure(MethodError(methodName: calls[index].name, kind: .clientClosed)))
                    }
                    return
                }
                drainInbox()
                store.flush()
                // One transaction for every stub; the calls are recorded and sent once it committed.
                let stubRuns = database.performUpdates {
                    zip(calls, stubs).map { call, stub in
                        // Without throwStubExceptions a stub's failure is not thrown (the call goes out anyway).
                        try! runStub(stub, call.name, params: call.params, options: MethodOptions(), stubOutcome: nil)
                    }
                }
                for (call, stubRun) in zip(calls, stubRuns) { reportStubRun(stubRun, call.name) }
                for (index, (call, stubRun)) in zip(calls, stubRuns).enumerated() {
                    _ = send(
                        stubRun, call.name, params: call.params, options: MethodOptions(), completesInline: true
                    ) { collected.complete(index, $0) }
                }
            }
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
