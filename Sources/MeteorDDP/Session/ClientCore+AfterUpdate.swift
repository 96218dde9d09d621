/// Work that waits for the cache, as events of the core (LC `_afterUpdateCallbacks`,
/// `_runWhenAllServerDocsAreFlushed`, `_process_updated`): a method's data becomes visible and a subscription ready
/// only once the cache has applied what came before, in the order the server's messages came. Whether the cache has
/// anything pending is an input (``DDPClient`` asks its store); the core decides what waits for which flush. The work
/// is data (``AfterUpdateWork``): the client performs it when the core hands it out.
extension ClientCore {
    /// What the client does with work queued after the cache's updates.
    enum AfterUpdate: Equatable {
        /// Nothing is pending and nothing waits before it: perform it now.
        case runNow
        /// It waits behind work already waiting for a flush, or for the server's versions of stub-written documents.
        case queued
        /// It waits for a new flush of the cache: request it, then report ``afterUpdateFlushed(_:)`` with `ticket`.
        case requestFlush(ticket: Int)
    }

    /// Queues `work` behind everything queued for the cache before it and all work queued before it.
    mutating func runAfterUpdate(_ work: AfterUpdateWork, storeIsIdle: Bool) -> AfterUpdate {
        if storeIsIdle, session.afterUpdate.isEmpty { return .runNow }
        guard let ticket = session.afterUpdate.append(work, needsFlush: !storeIsIdle) else { return .queued }
        return .requestFlush(ticket: ticket)
    }

    /// The cache's flush of `ticket` completed: ``dueAfterUpdateActions()`` hands out what it released, one at a
    /// time (performing each may queue more, behind the rest).
    mutating func afterUpdateFlushed(_ ticket: Int) {
        session.afterUpdate.flushed(ticket)
    }

    /// Queues `work` to be done once every document written by the stubs of the sent calls has its server version in
    /// the cache (then it goes through ``runAfterUpdate(_:storeIsIdle:)``, as the released documents' work does:
    /// ``releaseDocuments(writtenBy:)``); when no such document waits, through ``runAfterUpdate(_:storeIsIdle:)``
    /// at once.
    mutating func runWhenAllServerDocumentsAreFlushed(_ work: AfterUpdateWork, storeIsIdle: Bool) -> AfterUpdate {
        let token = session.serverDocuments.runWhenAllFlushed(
            sentMethods: session.methods.sentIDs, sentGeneration: session.methods.sentGeneration)
        guard let token else { return runAfterUpdate(work, storeIsIdle: storeIsIdle) }
        session.afterUpdate.waitForServerDocuments(token, work)
        return .queued
    }

    /// What a call's `updated` releases.
    struct ReleasedDocuments {
        /// The server versions noted before it, for the offline store (empty unless it tracks them).
        let serverChanges: [(DocumentKey, StoredServerDocument?)]
        /// The documents that no other pending call's stub wrote: the cache takes the server's version of each.
        let replacements: [ServerDocumentBuffer.Replacement]
        /// The work that waited for those documents, in order: each goes through ``runAfterUpdate(_:storeIsIdle:)``
        /// once the replacements are queued for the cache.
        let flushedWork: [AfterUpdateWork]
    }

    /// Call `id`'s `updated` arrived (or, for a call not sent again after a reconnect, quiescence came): the
    /// documents only its stub still held get the server's version.
    mutating func releaseDocuments(writtenBy id: String) -> ReleasedDocuments {
        let changes = Self.stored(session.serverDocuments.takeChanges())
        let sent = session.methods.sentIDs
        let wrote = session.serverDocuments.documentsWritten(by: id)
        let (replacements, flushedWaiters) = session.serverDocuments.methodUpdated(id, isSent: sent.contains)
        if session.stubReplays.isOn {
            let replaced = Set(replacements.map(\.key))
            session.stubReplays.callDone(
                id, documentsStillKept: wrote.lazy.filter { !replaced.contains($0) }, released: replaced)
        }
        return ReleasedDocuments(
            serverChanges: changes, replacements: replacements,
            flushedWork: session.afterUpdate.serverDocumentsFlushed(flushedWaiters))
    }

    /// `updated` for `ids` (``Input/updatedReceived(ids:storeIsIdle:held:)``): held while the session waits for
    /// quiescence, else, per call (LC `_process_updated`): the documents only its stub still held get the server's
    /// version, and its data is visible once those and every sent call's stub-written documents are applied. An id no
    /// call has is reported at once, as Meteor's client throws ("No callback invoker"): waiting for the flush first
    /// would let a call made meanwhile take the id, and this `updated` would count as its own.
    mutating func updatedActions(_ ids: [String], storeIsIdle: Bool, held: Bool) -> [Action] {
        if !held, isHoldingForQuiescence { return holdActions(.message(.updated(methodIDs: ids))) }
        var idle = storeIsIdle
        var actions: [Action] = []
        for id in ids {
            release(writtenBy: id, storeIsIdle: &idle, into: &actions)
            methodUpdated(id)
            guard let invocation = session.methods.invocations[id] else {
                actions.append(unknownAnswerAction(id, frame: "updated"))
                continue
            }
            invocation.updatedReceived = true
            if let action = afterUpdateAction(.methodDataVisible(id: id), afterServerDocuments: true, storeIsIdle: idle)
            {
                actions.append(action)
            }
        }
        return actions
    }

    /// The documents only call `id`'s stub still held get the server's version (``releaseDocuments(writtenBy:)``),
    /// then the work that waited for them is queued behind. `storeIsIdle` turns false when something is queued for
    /// the cache.
    mutating func release(writtenBy id: String, storeIsIdle: inout Bool, into actions: inout [Action]) {
        let released = releaseDocuments(writtenBy: id)
        if !released.replacements.isEmpty || !released.serverChanges.isEmpty {
            actions.append(.releaseDocuments(released))
            if !released.replacements.isEmpty { storeIsIdle = false }
        }
        for work in released.flushedWork {
            if let action = afterUpdateAction(work, afterServerDocuments: false, storeIsIdle: storeIsIdle) {
                actions.append(action)
            }
        }
    }

    /// `work` queued behind the cache's updates (and, `afterServerDocuments`, behind the sent calls' stub-written
    /// documents' server versions), as an action: done now, or a flush asked for (`nil`: it waits behind other work).
    mutating func afterUpdateAction(_ work: AfterUpdateWork, afterServerDocuments: Bool, storeIsIdle: Bool)
        -> Action?
    {
        let decision =
            afterServerDocuments
            ? runWhenAllServerDocumentsAreFlushed(work, storeIsIdle: storeIsIdle)
            : runAfterUpdate(work, storeIsIdle: storeIsIdle)
        switch decision {
        case .runNow: return .performAfterUpdate(work)
        case .queued: return nil
        case .requestFlush(let ticket): return .requestFlush(ticket: ticket)
        }
    }

    /// The next queued work whose flush completed, handed out one at a time: performing it may queue more, behind
    /// the rest (``Input/afterUpdatePerformed`` asks for the next).
    mutating func dueAfterUpdateActions() -> [Action] {
        session.afterUpdate.popDue().map { [.performAfterUpdate($0)] } ?? []
    }
}
