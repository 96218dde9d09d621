/// What the core tracks for the offline store beyond the durability gate: the restored state the first connection
/// reconciles, the restored calls' judgements, and the subscriptions the store was last given.
struct OfflineState {
    /// Whether the first connection after a restart has yet to reconcile the restored cache.
    var pendingReconciliation = false
    /// The subscriptions that were active when the app stopped, until the reconciliation delay ends.
    var restoredSubscriptions: Set<StoredSubscription> = []
    /// Per restored call that may complete with a refusal: what its stub did, to compare with the server's data.
    var restoredStubEffects: [String: [StoredStubEffect]] = [:]
    /// Restored calls whose judgement waits for the subscriptions' data.
    var awaitingServerData: [String: [StoredStubEffect]] = [:]
    /// The subscriptions last handed to the store.
    var storedSubscriptions: [StoredSubscription] = []
    /// What ``storedSubscriptions`` was made from (the subscriptions' membership version; how many restored ones
    /// were added, -1 for none): the list is rebuilt only when it may differ.
    var storedSubscriptionsSource: (membershipVersion: Int, restored: Int)?
}

/// The offline store's reconciliation as events of the core: after a restart the first connection waits, like a
/// reconnect, for the subscriptions the app had (those it makes again within the delay), then replaces the restored
/// cache with the server's data; a restored call is judged against the server's data when it completes.
extension ClientCore {
    /// The store was read at launch: what it held to reconcile.
    mutating func restored(
        subscriptions: [StoredSubscription], stubEffects: [String: [StoredStubEffect]], hasState: Bool
    ) {
        offline.restoredSubscriptions = Set(subscriptions)
        offline.storedSubscriptions = subscriptions
        offline.restoredStubEffects = stubEffects
        offline.pendingReconciliation = hasState
    }

    /// The store was read at launch: the server's versions of the documents the restored calls' stubs wrote. From
    /// now on the core notes every change of them for the store (``takeServerDocumentChanges()``).
    mutating func restoreServerDocuments(_ documents: [StoredServerDocument], methods: [StoredMethod]) {
        session.serverDocuments.trackChanges()
        session.serverDocuments.restore(
            documents.map {
                ($0.key, ServerDocumentBuffer.Version(fields: $0.fields, writtenByMethods: $0.writtenByMethods))
            },
            stubWrites: methods.map { (methodID: $0.id, wrote: $0.stubWrote) })
    }

    /// The server versions of stub-written documents that changed since the last call, for the store.
    mutating func takeServerDocumentChanges() -> [(DocumentKey, StoredServerDocument?)] {
        Self.stored(session.serverDocuments.takeChanges())
    }

    /// Kept documents' changes as the store takes them.
    static func stored(_ changes: [(DocumentKey, ServerDocumentBuffer.Version?)]) -> [(
        DocumentKey, StoredServerDocument?
    )] {
        changes.map { key, version in
            (
                key,
                version.map { StoredServerDocument(key: key, fields: $0.fields, writtenByMethods: $0.writtenByMethods) }
            )
        }
    }

    /// `connected`: whether this connection reconciles a restored cache, and whether the client arms the
    /// reconciliation delay (restored subscriptions the app has not made again are awaited until it elapses).
    mutating func startReconciliationIfPending() -> (reconciling: Bool, armDelay: Bool) {
        guard offline.pendingReconciliation else { return (false, false) }
        session.subscriptions.startRestoredRevival(
            Set(offline.restoredSubscriptions.map { SubscriptionManager.Identity(name: $0.name, params: $0.params) }))
        return (true, !session.subscriptions.awaitingRestored.isEmpty)
    }

    /// The reconciliation delay elapsed: restored subscriptions the app did not make again are no longer awaited.
    /// Returns the held messages to apply when that was all quiescence waited for.
    mutating func reconciliationDelayElapsed() -> QuiescenceHold? {
        offline.restoredSubscriptions = []
        return stopAwaitingRestoredSubscriptions()
    }

    /// A resetting hold was applied: returns whether it reconciled the restored cache (the client then cancels the
    /// delay).
    mutating func reconciliationApplied() -> Bool {
        guard offline.pendingReconciliation else { return false }
        offline.pendingReconciliation = false
        offline.restoredSubscriptions = []
        return true
    }

    /// The subscriptions to hand to the store, when they changed since it was last given them: the app's, with the
    /// restored ones still awaited while the first connection has not reconciled. (After `close()` the store keeps
    /// those it had: close stopped them here, not in the app.)
    mutating func subscriptionsToStore() -> [StoredSubscription]? {
        guard !isClosed else { return nil }
        let source = (
            membershipVersion: session.subscriptions.membershipVersion,
            restored: offline.pendingReconciliation ? offline.restoredSubscriptions.count : -1
        )
        guard offline.storedSubscriptionsSource.map({ $0 != source }) ?? true else { return nil }
        offline.storedSubscriptionsSource = source
        var subscriptions = session.subscriptions.active.map { StoredSubscription(name: $0.name, params: $0.params) }
        if offline.pendingReconciliation {
            let made = Set(subscriptions)
            subscriptions += offline.restoredSubscriptions.filter { !made.contains($0) }.sorted { $0.name < $1.name }
        }
        guard subscriptions != offline.storedSubscriptions else { return nil }
        offline.storedSubscriptions = subscriptions
        return subscriptions
    }

    /// Logging out erased the store's subscriptions: they stay erased until the app's subscriptions change (those
    /// active now were the last user's).
    mutating func storedSubscriptionsErased() {
        offline.storedSubscriptions = []
        offline.restoredSubscriptions = []
        offline.storedSubscriptionsSource = (
            membershipVersion: session.subscriptions.membershipVersion,
            restored: offline.pendingReconciliation ? 0 : -1
        )
    }

    /// Restored call `id` completed: what its stub did, to judge against the server's data now (`nil`: nothing to
    /// judge).
    mutating func restoredCallCompleted(_ id: String) -> [StoredStubEffect]? {
        guard !offline.restoredStubEffects.isEmpty else { return nil }
        return offline.restoredStubEffects.removeValue(forKey: id)
    }

    /// A restored call's judgement found a document missing while a subscription is still on its way: it waits for
    /// every subscription's data. Returns whether it waits (when none is on its way it is judged now).
    mutating func judgeWhenServerDataArrives(_ id: String, _ effects: [StoredStubEffect]) -> Bool {
        guard session.subscriptions.hasPendingSubscriptions else { return false }
        offline.awaitingServerData[id] = effects
        return true
    }

    /// Whether a restored call waits for the subscriptions' data (then a `ready` or `nosub` asks for
    /// ``restoredCallsToJudge(force:)`` once its data is applied).
    var restoredCallsAwaitServerData: Bool { !offline.awaitingServerData.isEmpty }

    /// The restored calls to judge now, in call order: once no subscription is on its way, or at once when `force`
    /// (the client is closing).
    mutating func restoredCallsToJudge(force: Bool) -> [(id: String, effects: [StoredStubEffect])] {
        guard !offline.awaitingServerData.isEmpty, force || !session.subscriptions.hasPendingSubscriptions else {
            return []
        }
        defer { offline.awaitingServerData = [:] }
        return offline.awaitingServerData.sorted { MethodCoordinator.idOrder($0.key, $1.key) }.map {
            (id: $0.key, effects: $0.value)
        }
    }

    /// What changed in the session for the offline store, as an action (none without a store, or when nothing did).
    mutating func sessionChangesActions() -> [Action] {
        guard persists else { return [] }
        let changes = takeServerDocumentChanges()
        let subscriptions = subscriptionsToStore()
        guard !changes.isEmpty || subscriptions != nil else { return [] }
        return [.storeSessionChanges(changes, subscriptions: subscriptions)]
    }

    /// The store was read at launch (``Input/storeRestored(_:)``): the server's versions of what the restored calls'
    /// stubs wrote, the calls in order (each replayed with ``PendingStubMode/rebase`` by the stub the app defines by
    /// then), the subscriptions to wait for. Server versions no restored call claims were dropped: the store forgets
    /// them too.
    mutating func storeRestoredActions(_ state: RestoredState) -> [Action] {
        restoreServerDocuments(state.serverDocuments, methods: state.methods)
        for (method, invocation) in state.calls {
            callRestored(invocation)
            stubCallMade(
                StubReplays.Call(
                    id: method.id, name: method.name, params: method.params, randomSeed: method.randomSeed, stub: nil))
        }
        restored(subscriptions: state.subscriptions, stubEffects: state.stubEffects, hasState: state.hasState)
        let changes = takeServerDocumentChanges()
        return changes.isEmpty ? [] : [.storeSessionChanges(changes, subscriptions: nil)]
    }

    /// Call `id` completed: a restored one is judged against the server's data, a kept one leaves the store (the
    /// server versions noted so far handed over first, to go with the documents held for it).
    mutating func callCompletedActions(_ id: String, wasKept: Bool) -> [Action] {
        var actions: [Action] = []
        if let effects = restoredCallCompleted(id) {
            actions.append(.judgeRestoredCall(id: id, effects, waited: false))
        }
        guard wasKept else { return actions }
        let changes = takeServerDocumentChanges()
        if !changes.isEmpty { actions.append(.storeSessionChanges(changes, subscriptions: nil)) }
        actions.append(.removeStoredCall(id: id))
        return actions
    }

    /// A restored call's judgement found a document its stub left present missing: it waits for the subscriptions'
    /// data when some is on its way, else it is final (the server does not show the stub's effect).
    mutating func restoredCallMissesDataActions(_ id: String, _ effects: [StoredStubEffect]) -> [Action] {
        judgeWhenServerDataArrives(id, effects)
            ? [.restoredCallAwaitsServerData(id: id)] : [.restoredCallJudged(id: id, matchStub: false)]
    }

    /// A resetting hold was applied: a restored cache is reconciled (the delay's timer cancelled; the client tells
    /// the store next, ``Input/sessionChangesRequested``).
    mutating func sessionResetAppliedActions() -> [Action] {
        reconciliationApplied() ? [.cancelTimer(.reconciliation)] : []
    }
}
