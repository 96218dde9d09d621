import NIOConcurrencyHelpers

/// Hands transport events (already parsed frames, opens, closes) from the transport's thread to the client queue in
/// arrival order, in batches: a burst of frames costs one queue hop, not one per frame.
final class IncomingInbox: @unchecked Sendable {
    // @unchecked because `state` is protected by its lock.

    enum Item: Sendable {
        case message(Result<ServerMessage, DDPProtocolViolation>, generation: Int)
        case transport(TransportEvent, generation: Int)
    }

    private struct State {
        /// Items not yet handed over. Protected by `state`'s lock.
        var items: [Item] = []
        /// Whether a drain is already scheduled on the client queue. Protected by `state`'s lock.
        var drainScheduled = false
    }

    private let state = NIOLockedValueBox(State())

    /// Adds an item; returns `true` when the caller must schedule a drain.
    func append(_ item: Item) -> Bool {
        state.withLockedValue { state in
            state.items.append(item)
            defer { state.drainScheduled = true }
            return !state.drainScheduled
        }
    }

    /// Takes every pending item; the next `append` schedules a new drain.
    func takeAll() -> [Item] {
        state.withLockedValue { state in
            state.drainScheduled = false
            defer { state.items.removeAll(keepingCapacity: true) }
            return state.items
        }
    }
}
