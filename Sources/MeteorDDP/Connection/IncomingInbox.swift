import NIOConcurrencyHelpers

/// Hands transport events (already parsed frames, opens, closes) from the transport's thread to the client queue in
/// arrival order, in batches: a burst of frames costs one queue hop, not one per frame.
///
/// While the app's reconnect hooks run (on the callback queue), the inbox is *held*: items are kept in order and no
/// drain is scheduled, so the transport's thread goes on reading without waiting for user code, and the new session's
/// messages are handled only after the calls the hooks made. A hold keeps at most `holdLimit` items.
final class IncomingInbox: @unchecked Sendable {
    // @unchecked because `state` is protected by its lock.

    enum Item: Sendable {
        case message(Result<IncomingMessage, DDPProtocolViolation>, generation: Int)
        case transport(TransportEvent, generation: Int)
    }

    /// What the thread that appended an item must do.
    enum AppendOutcome: Equatable {
        /// Hand the items over to the client queue now, without waiting for it: the item is one something waits on (a
        /// method's result, a subscription's `ready`, a transport event). Returned once until the next
        /// ``takeAll()``: items appended meanwhile go with it.
        case handOver
        /// Drain on the client queue now: `backlogLimit` items wait, and nothing more is read until the client has
        /// caught up (a WebSocket's reader waits at its ``ReadGate``; another transport's thread waits for the drain).
        case drainNow
        /// Schedule a drain a moment later (``dataBatchingDelay``), for whatever arrives meanwhile too.
        case drainSoon
        /// Nothing: a drain is already scheduled, or the inbox is held.
        case none
        /// The hold just reached its limit: tell the client queue to stop holding (returned once per hold).
        case holdLimitReached
    }

    private struct State {
        /// Items not yet handed over. Protected by `state`'s lock.
        var items: [Item] = []
        /// Whether a drain is already scheduled on the client queue. Protected by `state`'s lock.
        var drainScheduled = false
        /// Whether a hand-over (``AppendOutcome/handOver``) is on its way to the client queue. Protected by `state`'s
        /// lock.
        var handOverScheduled = false
        /// Whether items are held until ``release()``. Protected by `state`'s lock.
        var held = false
        /// Whether this hold reported reaching its limit. Protected by `state`'s lock.
        var holdLimitReported = false
        /// An empty array with capacity, the one the last drain handed back (``recycle(_:)``): the next items go
        /// into it, so handing a frame over allocates nothing. Protected by `state`'s lock.
        var spare: [Item] = []
    }

    /// The largest array kept for reuse (a burst of one frame then allocates nothing).
    static let reusedCapacity = 1_024
    /// Arrays above `idleCapacity` are kept only while they carry batches of at least `floodBatch` items: on a flood
    /// the batch array is reused, and a client back to single frames (or idle, one of thousands) keeps a small one.
    static let idleCapacity = 4
    static let floodBatch = 64

    private let state = NIOLockedValueBox(State())
    private let holdLimit: Int
    private let backlogLimit: Int

    /// The most items that wait for a scheduled drain before the transport's thread drains them itself: about 2 MB of
    /// decoded documents, while a drain hop costs one thread wake-up per batch, not per frame.
    static let defaultBacklogLimit = 4_096

    /// How long data that no caller waits on (`added`, `changed`, `removed`) waits on the transport's side for more
    /// before a drain hands it to the client queue. Small next to the cache's own batching interval (5 ms).
    static let dataBatchingDelay = Duration.microseconds(250)

    init(holdLimit: Int = .max, backlogLimit: Int = IncomingInbox.defaultBacklogLimit) {
        self.holdLimit = holdLimit
        self.backlogLimit = max(1, backlogLimit)
    }

    /// Adds an item; says whether and when the caller must drain. `waitedOn`: something waits on the item's effect
    /// (it is not `added`, `changed` or `removed` data), so it is handled before the transport's thread goes on.
    func append(_ item: consuming Item, waitedOn: Bool) -> AppendOutcome {
        // Moved into the array (not copied: no retain and release of the message's strings and fields).
        var moving: Item? = consume item
        return state.withLockedValue { state in
            state.items.append(moving.take()!)
            if state.held {
                guard !state.holdLimitReported, state.items.count >= holdLimit else { return .none }
                state.holdLimitReported = true
                return .holdLimitReached
            }
            if state.items.count >= backlogLimit { return .drainNow }
            if waitedOn {
                if state.handOverScheduled { return .none }
                state.handOverScheduled = true
                return .handOver
            }
            if state.drainScheduled { return .none }
            state.drainScheduled = true
            return .drainSoon
        }
    }

    /// Takes every pending item (none while held); the next `append` schedules a new drain. Hand the array back
    /// with ``recycle(_:)`` once done with it.
    func takeAll() -> [Item] {
        state.withLockedValue { state in
            guard !state.held else { return [] }
            state.drainScheduled = false
            state.handOverScheduled = false
            var taken: [Item] = []
            swap(&taken, &state.spare)
            swap(&taken, &state.items)
            return taken
        }
    }

    /// Takes back an array ``takeAll()`` returned, emptied, for the next items (unless it grew large, or is larger
    /// than the batch it carried needs).
    func recycle(_ items: consuming [Item]) {
        var items = items
        guard Self.keepsForReuse(capacity: items.capacity, count: items.count) else { return }
        items.removeAll(keepingCapacity: true)
        state.withLockedValue { state in
            if state.spare.capacity < items.capacity { swap(&state.spare, &items) }
        }
    }

    /// Whether an array of `capacity` that just carried `count` items is worth keeping for the next batch.
    static func keepsForReuse(capacity: Int, count: Int) -> Bool {
        capacity <= idleCapacity || (capacity <= reusedCapacity && count >= floodBatch)
    }

    /// Holds what arrives from now on, until ``release()``. Called on the client queue.
    func hold() {
        state.withLockedValue { state in
            state.held = true
            state.holdLimitReported = false
        }
    }

    /// Puts back items taken but not handled (the drain that took them started a hold), ahead of the others.
    /// Returns whether the hold just reached its limit with them (as ``append(_:waitedOn:)`` would say: once per
    /// hold): a batch handed over at once may carry more than the limit. Called on the client queue.
    func putBack(_ unhandled: ArraySlice<Item>) -> Bool {
        state.withLockedValue { state in
            state.items.insert(contentsOf: unhandled, at: 0)
            guard state.held, !state.holdLimitReported, state.items.count >= holdLimit else { return false }
            state.holdLimitReported = true
            return true
        }
    }

    /// Ends the hold; the caller drains what was held (on the client queue).
    func release() {
        state.withLockedValue { state in
            state.held = false
            state.drainScheduled = false
        }
    }
}

extension IncomingInbox {
    /// What the inbox holds, for ``DDPClient/stateSummary()``.
    var summary: String {
        state.withLockedValue { "\($0.items.count) items, held \($0.held), drain scheduled \($0.drainScheduled)" }
    }
}
