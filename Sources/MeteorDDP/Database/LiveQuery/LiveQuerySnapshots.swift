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
        let subscriber = LiveQuerySnapshotsSubscriber()
        let token = liveQuery.core.makeToken()
        liveQuery.register(LiveQueryCore.Receiver(receive: subscriber.receive, finish: subscriber.finish), token: token)
        return AsyncIterator(liveQuery: liveQuery, subscriber: subscriber, token: token)
    }

    /// Iterates the snapshots; ends when the live query stops or the task is cancelled.
    public struct AsyncIterator: AsyncIteratorProtocol {
        let liveQuery: LiveQuery
        let subscriber: LiveQuerySnapshotsSubscriber
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

/// One consumer of ``LiveQuery/snapshots``: at most one pending snapshot and at most one waiting task.
final class LiveQuerySnapshotsSubscriber: Sendable {
    private struct State {
        /// The newest snapshot not taken yet. Protected by `state`'s lock.
        var pending: LiveQuerySnapshot?
        /// Whether `pending` replaced snapshots the consumer never took (its diff must be recomputed). Protected by
        /// `state`'s lock.
        var coalesced = false
        /// The documents of the snapshot the consumer took last (`nil`: none yet). Protected by `state`'s lock.
        var lastTaken: [Document]?
        /// Protected by `state`'s lock.
        var waiter: CheckedContinuation<LiveQuerySnapshot?, Never>?
        /// Protected by `state`'s lock.
        var finished = false
    }

    private let state = NIOLockedValueBox(State())

    /// Hands a snapshot to the waiting task, or keeps it as the pending one (replacing an older pending one).
    @Sendable func receive(_ snapshot: LiveQuerySnapshot) {
        let waiter: CheckedContinuation<LiveQuerySnapshot?, Never>? = state.withLockedValue { state in
            guard !state.finished else { return nil }
            if let waiter = state.waiter {
                state.waiter = nil
                state.lastTaken = snapshot.documents
                return waiter
            }
            if state.pending != nil { state.coalesced = true }
            state.pending = snapshot
            return nil
        }
        waiter?.resume(returning: snapshot)
    }

    func next() async -> LiveQuerySnapshot? {
        await withCheckedContinuation { continuation in
            let taken: (snapshot: LiveQuerySnapshot, rediffFrom: [Document]?)?? = state.withLockedValue { state in
                if let pending = state.pending {
                    let rediffFrom = state.coalesced ? (state.lastTaken ?? []) : nil
                    let firstEver = state.lastTaken == nil
                    state.pending = nil
                    state.coalesced = false
                    state.lastTaken = pending.documents
                    return .some(
                        (
                            firstEver
                                ? LiveQuerySnapshot(documents: pending.documents, diff: LiveQueryDiff()) : pending,
                            firstEver ? nil : rediffFrom
                        ))
                }
                if state.finished { return .some(nil) }
                state.waiter = continuation
                return .none
            }
            guard let taken else { return }
            guard let (snapshot, rediffFrom) = taken else {
                continuation.resume(returning: nil)
                return
            }
            guard let old = rediffFrom else {
                continuation.resume(returning: snapshot)
                return
            }
            let diff = LiveQueryCore.diff(from: old, to: snapshot.documents, changed: Set(snapshot.documents.map(\.id)))
            continuation.resume(returning: LiveQuerySnapshot(documents: snapshot.documents, diff: diff))
        }
    }

    /// Ends the iteration: a waiting task gets `nil`; a pending snapshot is still taken first.
    @Sendable func finish() {
        let waiter: CheckedContinuation<LiveQuerySnapshot?, Never>? = state.withLockedValue { state in
            state.finished = true
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(returning: nil)
    }
}
