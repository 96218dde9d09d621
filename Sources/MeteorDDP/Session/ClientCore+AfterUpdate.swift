/// Work that waits for the cache, as events of the core (LC `_afterUpdateCallbacks`,
/// `_runWhenAllServerDocsAreFlushed`, `_process_updated`): a method's data becomes visible and a subscription ready
/// only once the cache has applied what came before, in the order the server's messages came. Whether the cache has
/// anything pending is an input (``DDPClient`` asks its store); the core decides what waits for which flush.
extension ClientCore {
    typealias AfterUpdateCallback = @Sendable () -> Void

    /// What the client does with work queued after the cache's updates.
    enum AfterUpdate: Equatable {
        /// Nothing is pending and nothing waits before it: run it now.
        case runNow
        /// It waits behind work already waiting for a flush.
        case queued
        /// It waits for a new flush of the cache: request it, then report ``afterUpdateFlushed(_:)`` with `ticket`.
        case requestFlush(ticket: Int)
    }

    /// Queues `callback` behind everything queued for the cache before it and every callback queued before it.
    mutating func runAfterUpdate(_ callback: @escaping AfterUpdateCallback, storeIsIdle: Bool) -> AfterUpdate {
        if storeIsIdle, session.afterUpdate.isEmpty { return .runNow }
        guard let ticket = session.afterUpdate.append(callback, needsFlush: !storeIsIdle) else { return .queued }
        return .requestFlush(ticket: ticket)
    }

    /// The cache's flush of `ticket` completed: ``nextDueAfterUpdate()`` hands out what it released, one at a time
    /// (each may queue more).
    mutating func afterUpdateFlushed(_ ticket: Int) {
        session.afterUpdate.flushed(ticket)
    }

    /// The first queued callback, if its flush completed.
    mutating func nextDueAfterUpdate() -> AfterUpdateCallback? {
        session.afterUpdate.popDue()
    }

    /// Registers `callback` to run once every document written by the stubs of the sent calls has its server version
    /// in the cache. Returns `false` when no such document waits: the callback goes to
    /// ``runAfterUpdate(_:storeIsIdle:)`` at once instead.
    mutating func runWhenAllServerDocumentsAreFlushed(_ callback: @escaping AfterUpdateCallback) -> Bool {
        session.serverDocuments.runWhenAllFlushed(
            sentMethods: session.methods.sentIDs, sentGeneration: session.methods.sentGeneration, callback)
    }

    /// What a call's `updated` releases.
    struct ReleasedDocuments {
        /// The server versions noted before it, for the offline store (empty unless it tracks them).
        let serverChanges: [(DocumentKey, StoredServerDocument?)]
        /// The documents that no other pending call's stub wrote: the cache takes the server's version of each.
        let replacements: [ServerDocumentBuffer.Replacement]
        /// Flush waiters those documents held, to run once the replacements are queued for the cache.
        let flushCallbacks: [AfterUpdateCallback]
    }

    /// Call `id`'s `updated` arrived (or, for a call not sent again after a reconnect, quiescence came): the
    /// documents only its stub still held get the server's version.
    mutating func releaseDocuments(writtenBy id: String) -> ReleasedDocuments {
        let changes = Self.stored(session.serverDocuments.takeChanges())
        let sent = session.methods.sentIDs
        let wrote = session.serverDocuments.documentsWritten(by: id)
        let (replacements, callbacks) = session.serverDocuments.methodUpdated(id, isSent: sent.contains)
        if session.stubReplays.isOn {
            let replaced = Set(replacements.map(\.key))
            session.stubReplays.callDone(
                id, documentsStillKept: wrote.lazy.filter { !replaced.contains($0) }, released: replaced)
        }
        return ReleasedDocuments(serverChanges: changes, replacements: replacements, flushCallbacks: callbacks)
    }
}
