import DequeModule

/// Work that waits for the cache (LC `_afterUpdateCallbacks`, `_runWhenAllServerDocsAreFlushed`): what the client
/// does once the cache has applied what came before it. Data, not closures: the core holds none of the client's code,
/// and the client performs each (``DDPClient``'s `perform(_:)`).
enum AfterUpdateWork {
    /// A call's `updated` took effect: its data is visible (``ClientCore/Input/methodDataVisible(id:)``).
    case methodDataVisible(id: String)
    /// A subscription's `ready` took effect: its handles see it ready.
    case subscriptionReady(SubscriptionState)
    /// Restored calls waiting for the server's data are judged now that it arrived.
    case judgeRestoredCalls
}

/// Work that must wait until the cache has applied everything queued before it, done in the order it was queued
/// (LC `_afterUpdateCallbacks`): methods' "data visible" and subscriptions becoming ready. Because every such piece of
/// work goes through this one queue, completions keep the order of the server messages that caused them, whatever the
/// timing of the data buffer's flushes.
///
/// Each entry carries a *flush ticket*: the number of the flush request it waits for. An entry queued while the cache
/// has nothing pending takes the newest ticket already requested (it must still run behind the entries waiting for
/// it). Before that, work may wait for the server's versions of the documents the sent calls' stubs wrote
/// (``ServerDocumentBuffer``'s flush waiters, by token). A value type with no I/O, confined to the client queue.
struct AfterUpdateQueue {
    // MARK: - Mutable State (confined to the client queue)

    /// Work in the order it was queued, with the ticket each waits for. Confined to the client queue.
    private var entries: Deque<(ticket: Int, work: AfterUpdateWork)> = []
    /// The newest ticket requested. Confined to the client queue.
    private var requestedTicket = 0
    /// The newest ticket whose flush has completed. Confined to the client queue.
    private var flushedTicket = 0
    /// Work waiting for a flush waiter of the server documents, by its token, in the order registered. Confined to
    /// the client queue.
    private var waitingForServerDocuments: [Int: [AfterUpdateWork]] = [:]

    var isEmpty: Bool { entries.isEmpty }

    /// Queues `work` behind the others. With `needsFlush` it waits for a new ticket, returned so the owner requests
    /// that flush; otherwise it waits only for the tickets requested before.
    mutating func append(_ work: AfterUpdateWork, needsFlush: Bool) -> Int? {
        if needsFlush { requestedTicket += 1 }
        entries.append((requestedTicket, work))
        return needsFlush ? requestedTicket : nil
    }

    /// The flush of `ticket` completed (tickets complete in order).
    mutating func flushed(_ ticket: Int) {
        flushedTicket = max(flushedTicket, ticket)
    }

    /// Removes and returns the first entry's work if its flush has completed.
    mutating func popDue() -> AfterUpdateWork? {
        guard let first = entries.first, first.ticket <= flushedTicket else { return nil }
        return entries.removeFirst().work
    }

    /// Forgets every queued entry (a new session: LC `_livedata_connected`). Tickets in flight stay valid.
    mutating func removeAll() {
        entries.removeAll()
    }

    /// `work` waits for the server documents' flush waiter `token` (several may share one).
    mutating func waitForServerDocuments(_ token: Int, _ work: AfterUpdateWork) {
        waitingForServerDocuments[token, default: []].append(work)
    }

    /// The server documents' flush waiters `tokens` are done: their work, in order.
    mutating func serverDocumentsFlushed(_ tokens: [Int]) -> [AfterUpdateWork] {
        tokens.flatMap { waitingForServerDocuments.removeValue(forKey: $0) ?? [] }
    }

    /// Forgets the data-visible work of calls `ids` (their old run's: they are sent again, and the new run brings its
    /// own `updated`), wherever it waits. The rest keeps its order and tickets.
    mutating func dropDataVisible(of ids: Set<String>) {
        guard !ids.isEmpty else { return }
        func isDropped(_ work: AfterUpdateWork) -> Bool {
            if case .methodDataVisible(let id) = work { return ids.contains(id) }
            return false
        }
        entries.removeAll { isDropped($0.work) }
        for token in waitingForServerDocuments.keys { waitingForServerDocuments[token]!.removeAll(where: isDropped) }
    }

    /// The server documents' flush waiters were dropped (a new session's data: their work is redone for it).
    mutating func dropServerDocumentWaiters() {
        waitingForServerDocuments.removeAll()
    }
}

extension AfterUpdateQueue {
    /// What waits, for ``DDPClient/stateSummary()``.
    var summary: String {
        "\(entries.count) waiting, ticket requested \(requestedTicket), flushed \(flushedTicket), "
            + "\(waitingForServerDocuments.count) waiting for server documents"
    }
}
