import NIOConcurrencyHelpers

/// The snapshots of a ``LiveQuery`` as an `AsyncSequence` (see ``LiveQuery/snapshots``).
///
/// For example:
/// ```swift
/// for await snapshot in database.collection("players").observe(Query(sort: [.descending("score")])).snapshots {
///     tableView.apply(snapshot.diff)
/// }
/// ```
///
/// Memory stays bounded for a slow consumer: it holds at most one pending snapshot (the newest), with the diff from
/// the last snapshot it took. The iteration holds the live query, so observing a temporary works.
public struct LiveQuerySnapshots: AsyncSequence, Sendable {
    public typealias Element = LiveQuerySnapshot
    let liveQuery: LiveQuery

    public func makeAsyncIterator() -> AsyncIterator {
        let subscriber = LiveResultSubscriber<LiveQuerySnapshot>()
        let token = liveQuery.core.receivers.makeToken()
        liveQuery.register(LiveQueryCore.Receiver(receive: subscriber.receive, finish: subscriber.finish), token: token)
        return AsyncIterator(liveQuery: liveQuery, subscriber: subscriber, token: token)
    }

    /// Iterates the snapshots; ends when the live query stops or the task is cancelled.
    public struct AsyncIterator: AsyncIteratorProtocol {
        let liveQuery: LiveQuery
        let subscriber: LiveResultSubscriber<LiveQuerySnapshot>
        let token: Int

        public mutating func next() async -> LiveQuerySnapshot? {
            let subscriber = self.subscriber
            let next = await withTaskCancellationHandler {
                await subscriber.next()
            } onCancel: {
                subscriber.finish()
            }
            if next == nil { liveQuery.unregister(token: token) }
            return next
        }
    }
}

/// One consumer of a live result's snapshots (``LiveQuery/snapshots``): at most one pending snapshot and at most one
/// waiting task. A consumer that fell behind gets the newest snapshot with its diff recomputed from the one it took
/// last.
final class LiveResultSubscriber<Snapshot: LiveResultSnapshot>: Sendable {
    private struct State {
        /// The newest snapshot not taken yet. Protected by `state`'s lock.
        var pending: Snapshot?
        /// Whether `pending` replaced snapshots the consumer never took (its diff must be recomputed). Protected by
        /// `state`'s lock.
        var coalesced = false
        /// The snapshot the consumer took last (`nil`: none yet). Protected by `state`'s lock.
        var lastTaken: Snapshot?
        /// Protected by `state`'s lock.
        var waiter: CheckedContinuation<Snapshot?, Never>?
        /// Protected by `state`'s lock.
        var finished = false
    }

    /// What `next()` hands over: a snapshot with the one to rediff it from (outside the lock), or the end.
    private enum Taken {
        case snapshot(Snapshot, rediffFrom: Snapshot?)
        case end
    }

    private let state = NIOLockedValueBox(State())

    /// Hands a snapshot to the waiting task, or keeps it as the pending one (replacing an older pending one).
    @Sendable func receive(_ snapshot: Snapshot) {
        let waiter: CheckedContinuation<Snapshot?, Never>? = state.withLockedValue { state in
            guard !state.finished else { return nil }
            if let waiter = state.waiter {
                state.waiter = nil
                state.lastTaken = snapshot
                return waiter
            }
            if state.pending != nil { state.coalesced = true }
            state.pending = snapshot
            return nil
        }
        waiter?.resume(returning: snapshot)
    }

    func next() async -> Snapshot? {
        await withCheckedContinuation { continuation in
            let taken: Taken? = state.withLockedValue { state in
                if let pending = state.pending {
                    let previous = state.lastTaken
                    let rediffFrom = state.coalesced ? previous : nil
                    state.pending = nil
                    state.coalesced = false
                    state.lastTaken = pending
                    return previous == nil
                        ? .snapshot(pending.withoutDiff, rediffFrom: nil)
                        : .snapshot(pending, rediffFrom: rediffFrom)
                }
                if state.finished { return .end }
                state.waiter = continuation
                return nil
            }
            switch taken {
            case .none:
                return
            case .end?:
                continuation.resume(returning: nil)
            case .snapshot(let snapshot, let rediffFrom)?:
                continuation.resume(returning: rediffFrom.map { snapshot.rediffed(from: $0) } ?? snapshot)
            }
        }
    }

    /// Ends the iteration: a waiting task gets `nil`; a pending snapshot is still taken first.
    @Sendable func finish() {
        let waiter: CheckedContinuation<Snapshot?, Never>? = state.withLockedValue { state in
            state.finished = true
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(returning: nil)
    }
}
