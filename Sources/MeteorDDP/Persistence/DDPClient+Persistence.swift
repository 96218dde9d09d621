import Dispatch
import EJSON

extension DDPClient {
    /// The calls restored from the offline store at launch and their outcomes (empty without persistence).
    public var restoredCalls: RestoredCalls { persistence?.restoredCalls ?? RestoredCalls(calls: []) }

    /// Puts the stored state back: the cache (in one transaction, before anything can observe it), the server's
    /// versions of stub-written documents, the unanswered calls in order, and the subscriptions to wait for. Then
    /// starts writing behind. Called once, at the end of `init`.
    func restore(_ state: StoredState, into persistence: ClientPersistence) {
        if !state.documents.isEmpty {
            database.install(state.documents.map { ($0.key, $0.document) })
        }
        persistence.writer.onFailure = { [weak self] problem in
            self?.report(DDPError(.persistenceFailed, problem.description, persistenceError: problem))
        }
        queue.sync {
            let calls = persistence.restoredCalls
            var restored: [(method: StoredMethod, invocation: MethodCoordinator.Invocation)] = []
            for method in state.methods {
                guard let call = persistence.restoredByID[method.id] else { continue }
                var options = MethodOptions()
                options.wait = method.wait
                options.noRetry = method.noRetry
                let source: RestoredCallOutcome.Source =
                    method.result != nil ? .savedAnswer : (method.noRetry ? .notSent : .sentAgain)
                let invocation = MethodCoordinator.Invocation(
                    id: method.id,
                    name: method.name,
                    message: .method(
                        id: method.id, method: method.name, params: method.params, randomSeed: method.randomSeed),
                    options: options,
                    completion: { calls.record(call, $0, source: source) }
                )
                // Records the outcome; runs no user code.
                invocation.completesInline = true
                switch method.result {
                case .value(let value)?: invocation.result = .success(value)
                case .error(let error)?: invocation.result = .failure(error)
                case nil where method.noRetry:
                    // Whether it went out before the restart cannot be known, and it must not run twice: it fails as a
                    // sent noRetry call does at a reconnect (completing, with its stub's effect undone, at
                    // reconciliation).
                    invocation.result = .failure(MethodError.invocationFailed(method.name))
                case nil: break
                }
                restored.append((method, invocation))
            }
            handle(
                .storeRestored(
                    ClientCore.RestoredState(
                        serverDocuments: state.serverDocuments, methods: state.methods, calls: restored,
                        subscriptions: state.subscriptions, stubEffects: Self.restoredStubEffects(state),
                        hasState: !state.documents.isEmpty || !state.subscriptions.isEmpty
                            || !state.methods.isEmpty)))
            // The restored stubs' documents hold pending writes, and the data is the store's until reconciled.
            let pending = core.session.serverDocuments.keys
            let fromCache = !state.documents.isEmpty && core.offline.pendingReconciliation
            database.performUpdates {
                database.setPendingWrites(pending, true)
                database.setFromCache(fromCache)
            }
            persistence.writer.restored(state.methods)
        }
        let writer = persistence.writer
        database.observeCommits { writer.committed($0) }
    }

    // MARK: - Calls

    /// A call was made (on the client queue, after its stub ran): unless its method stays in memory, its record goes
    /// to the store, and its frame waits until it is on disk (the core's ``DurabilityGate``). Returns whether it is
    /// kept.
    ///
    /// `stubOriginals` are the versions from before the stub of each document it wrote; the cache holds the versions
    /// it left (server data for them is kept aside from now on), so what the stub did is recorded with the call.
    func persistCall(
        _ invocation: MethodCoordinator.Invocation, randomSeed: String?, params: [EJSONValue],
        stubOriginals: [(DocumentKey, EJSONObject?)]
    ) -> Bool {
        guard let persistence, !invocation.options.keepsInMemoryOnly,
            !persistence.settings.memoryOnlyMethods.contains(invocation.name),
            !persistence.writer.hasFailed
        else {
            if let onDurable = invocation.options.onDurable { userCode.run { onDurable(false) } }
            return false
        }
        let id = invocation.id
        // The stub's server versions first: they are in the same batch as the call, or an earlier one.
        handle(.sessionChangesRequested)
        let effects = stubOriginals.map { key, before in
            StoredStubEffect(key: key, before: before, after: database.document(key)?.fields)
        }
        let method = StoredMethod(
            id: id, name: invocation.name, params: params, randomSeed: randomSeed, wait: invocation.options.wait,
            noRetry: invocation.options.noRetry, stubWrote: stubOriginals.map(\.0), stubEffects: effects
        )
        let onDurable = invocation.options.onDurable
        let writer = persistence.writer
        persistence.writer.methodAdded(method) { [weak self] in
            guard let self else { return }
            if let onDurable {
                let stored = !writer.hasFailed
                self.userCode.run { onDurable(stored) }
            }
            self.queue.async { self.handle(.callBecameDurable(id: id)) }
        }
        return true
    }

    /// The server answered a kept call before its data was visible: the answer is kept too (after a restart the
    /// call is not sent again; it completes at reconciliation, as after a reconnect).
    func persistResult(_ invocation: MethodCoordinator.Invocation) {
        guard let persistence, let result = invocation.result else { return }
        switch result {
        case .success(let value): persistence.writer.methodResult(invocation.id, .value(value))
        case .failure(let error):
            guard let meteorError = error as? MeteorError else { return }
            persistence.writer.methodResult(invocation.id, .error(meteorError))
        }
    }

    /// Judges whether the server has what restored call `id`'s stub did
    /// (``RestoredCallOutcome/Result/alreadyApplied(_:)``): at its completion, the cache has the server's versions of
    /// what its stub wrote; when a document the stub left present is missing while a subscription is still on its way
    /// (one the app made after connecting: the reconciliation did not wait for it), the judgement waits for every
    /// subscription's data (`waited`: it did).
    func judgeRestoredCall(_ id: String, _ effects: [StoredStubEffect], waited: Bool) {
        guard let persistence else { return }
        let (match, missing) = judge(effects)
        if waited { return persistence.restoredCalls.judged(id, matchStub: match) }
        if !match, missing { return handle(.restoredCallMissesData(id: id, effects)) }
        persistence.restoredCalls.noteServerVersions(of: id, matchStub: match)
    }

    /// Whether the server's versions show what the stub did, and whether a document it left present is missing.
    private func judge(_ stub: [StoredStubEffect]) -> (match: Bool, missing: Bool) {
        // A document another pending call's stub also wrote still shows that stub's value: its server version is the
        // copy kept aside.
        let server = Dictionary(
            stub.map { effect in
                (
                    effect.key,
                    core.session.serverDocuments.contains(effect.key)
                        ? core.session.serverDocuments.serverFields(effect.key) : database.document(effect.key)?.fields
                )
            }, uniquingKeysWith: { first, _ in first })
        let missing = stub.contains { effect in effect.set != nil && (server[effect.key] ?? nil) == nil }
        return (RestoredCalls.serverHasStubEffect(stub: stub, server: server), missing)
    }

    /// Logging out: the store forgets the cache (unless ``Persistence/keepsCacheOnLogout``) and the calls, but the
    /// calls still unanswered. `logout` is a wait method, so these were made after it: they are not the last user's,
    /// and they stay durable with their stubs' effects.
    ///
    /// The stored subscriptions are erased too and stay so until the app's subscriptions change (those still active
    /// now were the last user's). `erased` runs (on the writer's queue) once the erasure is on disk, or the store
    /// failed.
    ///
    /// Without `keepingUnansweredCalls` (a refused resume, an expired token: the calls waiting behind the resume were
    /// made by the last user) every call is erased too; those calls still go out, as Meteor sends them, but are no
    /// longer kept for a relaunch.
    func clearPersistenceOnLogout(
        keepingUnansweredCalls: Bool = true, erased: @escaping @Sendable () -> Void
    ) {
        guard let persistence else { return erased() }
        persistence.writer.clear(
            keepingDocuments: persistence.settings.keepsCacheOnLogout,
            keepingCalls: keepingUnansweredCalls ? core.durability.kept : [])
        handle(.storedSubscriptionsErased)
        persistence.writer.whenWritten(erased)
    }

    /// Erases everything the client stored: the offline store's documents, calls and subscriptions, and the stored
    /// account (``Configuration/accountStore``); then empties the cache in memory. Firestore's `clearPersistence`,
    /// PowerSync's `disconnectAndClear`.
    ///
    /// It closes the client first (an open one would go on storing what the server sends): call it when the user's
    /// data must go at once, for example after a refused resume you do not want to wait for, or from a "forget
    /// me" setting; a plain logout already erases (``logout()``). It may be called on a closed client, and more
    /// than once. It returns once the erasure is on disk: with ``SQLiteStore`` none of the erased bytes remain in
    /// the store's files (see ``SQLiteStore``, "Erasure", for what a file system may still keep).
    ///
    /// To delete a store no client has open, use ``SQLiteStore/deleteFiles(at:)``.
    /// - Throws: the store's or the account store's error when erasing failed (the erasure was still tried in full).
    public func clearPersistence() async throws {
        close()
        let erased: (any Error)? = await withCheckedContinuation { continuation in
            // After close()'s work on the client queue: nothing of the session comes any more. What the buffer still
            // holds is applied, then the cache emptied: both are handed to the store before the erasure, which drops
            // them, so no document of the user's is written after it.
            queue.async {
                self.updateBuffer.flush()
                self.database.removeAllDocuments()
                guard let writer = self.persistence?.writer else { return continuation.resume(returning: nil) }
                writer.erase { continuation.resume(returning: $0) }
            }
        }
        var accountError: (any Error)?
        do { try configuration.accountStore?.save(nil) } catch { accountError = error }
        // Closed: no stream or notification follows the account any more.
        queue.sync { handle(.closedAccountForgotten) }
        if let error = erased ?? accountError { throw error }
    }

    /// Returns once every change committed and every call made before it is on disk (at once without persistence).
    ///
    /// The store writes behind on its own; call this where the app must know its state is saved, for example when
    /// it moves to the background. Everything already received is applied to the cache first.
    public func flushStore() async {
        guard persistence != nil else { return }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            DispatchQueue.global().async {
                self.waitUntilPersisted()
                continuation.resume()
            }
        }
    }

    /// Waits until everything handed to the store so far is on disk (``flushStore()``, tests).
    func waitUntilPersisted() {
        dispatchPrecondition(condition: .notOnQueue(queue))
        waitUntilIdle()
        queue.sync { store.flush() }
        persistence?.writer.waitUntilWritten()
    }
}
