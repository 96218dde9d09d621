import DequeModule

/// Work that must wait until the cache has applied everything queued before it, run in the order it was queued
/// (LC `_afterUpdateCallbacks`): methods' "data visible" and subscriptions becoming ready. Because every such callback
/// goes through this one queue, completions keep the order of the server messages that caused them, whatever the
/// timing of the data buffer's flushes.
///
/// Each callback carries a *flush ticket*: the number of the flush request it waits for. A callback queued while
/// the cache has nothing pending takes the newest ticket already requested (it must still run behind the callbacks
/// waiting for it). A value type with no I/O, confined to the client queue.
struct AfterUpdateCallbacks {
    typealias Callback = @Sendable () -> Void

    // MARK: - Mutable State (confined to the client queue)

    /// Callbacks in the order they were queued, with the ticket each waits for. Confined to the client queue.
    private var entries: Deque<(ticket: Int, callback: Callback)> = []
    /// The newest ticket requested. Confined to the client queue.
    private var requestedTicket = 0
    /// The newest ticket whose flush has completed. Confined to the client queue.
    private var flushedTicket = 0

    var isEmpty: Bool { entries.isEmpty }

    /// Queues `callback` behind the others. With `needsFlush` it waits for a new ticket, returned so the owner
    /// requests that flush; otherwise it waits only for the tickets requested before.
    mutating func append(_ callback: @escaping Callback, needsFlush: Bool) -> Int? {
        if needsFlush { requestedTicket += 1 }
        entries.append((requestedTicket, callback))
        return needsFlush ? requestedTicket : nil
    }

    /// The flush of `ticket` completed (tickets complete in order).
    mutating func flushed(_ ticket: Int) {
        flushedTicket = max(flushedTicket, ticket)
    }

    /// Removes and returns the first callback if its flush has completed.
    mutating func popDue() -> Callback? {
        guard let first = entries.first, first.ticket <= flushedTicket else { return nil }
        return entries.removeFirst().callback
    }

    /// Forgets every queued callback (a new session: LC `_livedata_connected`). Tickets in flight stay valid.
    mutating func removeAll() {
        entries.removeAll()
    }
}

extension AfterUpdateCallbacks {
    /// What waits, for ``DDPClient/stateSummary()``.
    var summary: String { "\(entries.count) waiting, ticket requested \(requestedTicket), flushed \(flushedTicket)" }
}
