import Dispatch
import NIOConcurrencyHelpers

/// An incremental query engine the database updates after each commit, on its notification queue, in commit order
/// (a ``LiveQuery``'s, or a live related query's).
protocol LiveQueryEngine: AnyObject, Sendable {
    /// Brings the result up to date with one committed transaction (`snapshot` is the state it committed).
    func update(with changes: DatabaseChanges, snapshot: DatabaseSnapshot)
    /// Stops the engine: its receivers finish and it publishes nothing more.
    func finish()
}

/// A live result at one moment with its diff from the previous one, as a consumer that coalesces needs it.
protocol LiveResultSnapshot: Sendable {
    /// The same result with an empty diff: a consumer's first.
    var withoutDiff: Self { get }
    /// The same result with the diff from `previous` (a consumer that missed the snapshots in between).
    func rediffed(from previous: Self) -> Self
}

/// The receivers of a live result's snapshots and the result last published: an engine's state shared with any
/// thread, behind one lock. Receivers are called outside the lock.
final class SnapshotReceivers<Snapshot: LiveResultSnapshot>: Sendable {
    /// One registered receiver: called with each snapshot, and `finish` (if any) when the result stops.
    struct Receiver: Sendable {
        let receive: @Sendable (Snapshot) -> Void
        let finish: (@Sendable () -> Void)?
    }

    private struct State {
        var receivers: [Int: Receiver] = [:]
        var nextToken = 0
        var current: Snapshot
        var finished = false
    }

    private let state: NIOLockedValueBox<State>

    init(empty: Snapshot) {
        state = NIOLockedValueBox(State(current: empty))
    }

    /// The snapshot last published.
    var current: Snapshot { state.withLockedValue { $0.current } }

    /// A token for ``register(_:token:)`` and ``unregister(_:)``.
    func makeToken() -> Int {
        state.withLockedValue { state in
            defer { state.nextToken += 1 }
            return state.nextToken
        }
    }

    /// Registers a receiver and hands it the current result with an empty diff. Must run on the notification queue,
    /// after the seed: every later snapshot is published there too, so the receiver gets the current result first
    /// and every later one in order. A result already stopped finishes the receiver at once.
    func register(_ receiver: Receiver, token: Int) {
        let current: Snapshot? = state.withLockedValue { state in
            guard !state.finished else { return nil }
            state.receivers[token] = receiver
            return state.current
        }
        guard let current else {
            receiver.finish?()
            return
        }
        receiver.receive(current.withoutDiff)
    }

    /// Removes a receiver (a cancelled iteration); it is not finished.
    func unregister(_ token: Int) {
        _ = state.withLockedValue { $0.receivers.removeValue(forKey: token) }
    }

    /// Makes `snapshot` the current one and hands it to every receiver, in registration order.
    func publish(_ snapshot: Snapshot) {
        let receivers: [Receiver] = state.withLockedValue { state in
            state.current = snapshot
            return state.finished ? [] : state.receivers.sorted { $0.key < $1.key }.map(\.value)
        }
        for receiver in receivers { receiver.receive(snapshot) }
    }

    /// Registers a receiver on the notification queue, after the seed, so it sees the current result first and no
    /// commit is missed or doubled.
    func register(_ receiver: Receiver, token: Int, on notificationQueue: DispatchQueue) {
        notificationQueue.async { self.register(receiver, token: token) }
    }

    /// Removes a receiver on the notification queue, so it runs after its registration even when the consumer went
    /// away before the registration ran.
    func unregister(_ token: Int, on notificationQueue: DispatchQueue) {
        notificationQueue.async { self.unregister(token) }
    }

    /// Calls `handler` with every snapshot, the current one first, on `queue`, until the returned token is
    /// cancelled (no call starts after ``ObservationToken/cancel()`` returns). Releasing the token does not cancel.
    func onChange(
        on queue: DispatchQueue, notificationQueue: DispatchQueue, _ handler: @escaping @Sendable (Snapshot) -> Void
    ) -> ObservationToken {
        let cancelled = NIOLockedValueBox(false)
        let token = makeToken()
        let receiver = Receiver(
            receive: { snapshot in
                queue.async {
                    guard !cancelled.withLockedValue({ $0 }) else { return }
                    handler(snapshot)
                }
            },
            finish: nil)
        register(receiver, token: token, on: notificationQueue)
        return ObservationToken(cancelsOnDeinit: false) { [weak self] in
            cancelled.withLockedValue { $0 = true }
            self?.unregister(token, on: notificationQueue)
        }
    }

    /// Finishes every receiver; later registrations finish at once.
    func finish() {
        let receivers: [Receiver] = state.withLockedValue { state in
            state.finished = true
            defer { state.receivers.removeAll() }
            return Array(state.receivers.values)
        }
        for receiver in receivers { receiver.finish?() }
    }
}

extension LiveQuerySnapshot: LiveResultSnapshot {
    var withoutDiff: LiveQuerySnapshot {
        LiveQuerySnapshot(documents: documents, diff: LiveQueryDiff(), metadata: metadata)
    }

    func rediffed(from previous: LiveQuerySnapshot) -> LiveQuerySnapshot {
        let diff = LiveQueryCore.diff(from: previous.documents, to: documents, changed: Set(documents.map(\.id)))
        return LiveQuerySnapshot(documents: documents, diff: diff, metadata: metadata)
    }
}
