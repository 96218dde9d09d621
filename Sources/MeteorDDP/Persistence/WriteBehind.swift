import Dispatch
import EJSON
import NIOConcurrencyHelpers

/// Writes the client's state behind, on a serial queue of its own, one ``ClientStore`` transaction per batch.
///
/// The queue runs at `.utility` quality of service: the disk work yields the CPU to the threads that apply data and
/// post notifications (on Linux, Dispatch runs `.utility` work at nice 2; with the default QoS the writer's SQLite
/// transactions, a fourth busy thread on two cores, doubled the stub → notification p99). It is not `.background`:
/// calls are sent only once on disk, so the writer must not be starved.
///
/// Producers only append under a short lock: the database hands each committed ``DatabaseChanges`` as it commits
/// (under its write lock: one array append), the client queue hands calls, results and server versions. Whatever
/// accumulated while a batch was being written goes into the next one (coalesced: a document written many times is
/// written once, at its newest version). Calls' durability callbacks run once their batch is committed.
///
/// A failed write stops persistence for good (``failure``): later batches are dropped, durability callbacks still
/// run (the client goes on in memory), and `onFailure` reports the error once.
final class WriteBehind: @unchecked Sendable {
    // @unchecked because `pending` is protected by its lock and everything else is immutable or confined to `queue`.

    struct Pending {
        /// Committed transactions not written yet, in commit order. Protected by `pending`'s lock.
        var changes: [DatabaseChanges] = []
        /// Document changes listed in `changes`. Protected by `pending`'s lock.
        var changeCount = 0
        /// When `changeCount` passes it, `changes` are folded into one (see ``WriteBehind/committed(_:)``).
        /// Protected by `pending`'s lock.
        var foldThreshold = WriteBehind.foldThreshold
        /// Protected by `pending`'s lock.
        var serverDocuments: [DocumentKey: StoredServerDocument?] = [:]
        /// Protected by `pending`'s lock.
        var methodsAdded: [StoredMethod] = []
        /// Protected by `pending`'s lock.
        var methodResults: [(id: String, result: StoredMethodResult)] = []
        /// Protected by `pending`'s lock.
        var methodsRemoved: [String] = []
        /// Protected by `pending`'s lock.
        var subscriptions: [StoredSubscription]?
        /// Run once what was pending with them is on disk. Protected by `pending`'s lock.
        var durable: [@Sendable () -> Void] = []
        /// Whether a write is queued on `queue`. Protected by `pending`'s lock.
        var scheduled = false
        /// Set once a write failed. Protected by `pending`'s lock.
        var failed = false
        /// A clear asked for (a logout) and what was pending before it: written first, then the store is cleared,
        /// then the rest. Protected by `pending`'s lock.
        var clear: ClearRequest?

        var isEmpty: Bool {
            changes.isEmpty && serverDocuments.isEmpty && methodsAdded.isEmpty && methodResults.isEmpty && methodsRemoved.isEmpty
                && subscriptions == nil && durable.isEmpty && clear == nil
        }
    }

    /// A clear of the store, in order with the writes around it.
    final class ClearRequest: @unchecked Sendable {
        // @unchecked because it is immutable once made.
        let keepingDocuments: Bool
        let keepingCalls: Set<String>
        let before: Pending

        init(keepingDocuments: Bool, keepingCalls: Set<String>, before: Pending) {
            self.keepingDocuments = keepingDocuments
            self.keepingCalls = keepingCalls
            self.before = before
        }
    }

    let store: any ClientStore
    private let queue = DispatchQueue(label: "MeteorDDP.WriteBehind", qos: .utility)
    private let pending = NIOLockedValueBox(Pending())
    private let failureHandler = NIOLockedValueBox<(@Sendable (PersistenceError) -> Void)?>(nil)
    private let path: String?

    init(store: any ClientStore) {
        self.store = store
        self.path = (store as? SQLiteStore)?.fileURL.path
    }

    /// Told once, on the writer's queue, when a write fails.
    var onFailure: (@Sendable (PersistenceError) -> Void)? {
        get { failureHandler.withLockedValue { $0 } }
        set { failureHandler.withLockedValue { $0 = newValue } }
    }

    var hasFailed: Bool { pending.withLockedValue { $0.failed } }

    /// Document changes waiting for the disk (tests).
    var pendingChangeCount: Int { pending.withLockedValue { $0.changeCount } }

    // MARK: - Producers

    /// Pending document changes past which the pending transactions are folded into one.
    static let foldThreshold = 100_000

    /// A committed transaction (called under the database's write lock: one append).
    ///
    /// Bounded: while the disk lags (a slow or stalled write), the transactions waiting for it are folded into one
    /// change set (each document's newest version) whenever they list more than twice as many changes as the last
    /// fold left, and at least ``foldThreshold``; what waits is then at most about one version per document, however
    /// long the server goes on changing the same documents.
    func committed(_ changes: DatabaseChanges) {
        enqueue { pending in
            pending.changes.append(changes)
            pending.changeCount += changes.count
            guard pending.changeCount > pending.foldThreshold, pending.changes.count > 1 else { return }
            var folded = pending.changes[0]
            for later in pending.changes.dropFirst() { folded.merge(later) }
            pending.changes = [folded]
            pending.changeCount = folded.count
            pending.foldThreshold = max(Self.foldThreshold, 2 * folded.count)
        }
    }

    func serverDocumentsChanged(_ documents: [(DocumentKey, StoredServerDocument?)]) {
        guard !documents.isEmpty else { return }
        enqueue { pending in
            for (key, document) in documents { pending.serverDocuments[key] = .some(document) }
        }
    }

    /// A call to keep; `durable` runs (on the writer's queue) once it is on disk, or once persistence failed.
    func methodAdded(_ method: StoredMethod, durable: @escaping @Sendable () -> Void) {
        enqueue { pending in
            pending.methodsAdded.append(method)
            pending.durable.append(durable)
        }
    }

    func methodResult(_ id: String, _ result: StoredMethodResult) {
        enqueue { $0.methodResults.append((id, result)) }
    }

    func methodRemoved(_ id: String) {
        enqueue { $0.methodsRemoved.append(id) }
    }

    func subscriptionsChanged(_ subscriptions: [StoredSubscription]) {
        enqueue { $0.subscriptions = subscriptions }
    }

    /// Clears the store (logging out), in order: what was enqueued before is written first, what is enqueued after
    /// is kept; so are the calls in `keepingCalls` (see ``ClientStore/clear(keepingDocuments:keepingCalls:)``).
    func clear(keepingDocuments: Bool, keepingCalls: Set<String>) {
        enqueue { pending in
            var before = Pending()
            swap(&before, &pending)
            pending.failed = before.failed
            pending.scheduled = before.scheduled
            pending.clear = ClearRequest(keepingDocuments: keepingDocuments, keepingCalls: keepingCalls, before: before)
        }
    }

    /// Runs `done` (on the writer's queue) once everything enqueued so far is on disk, or the store failed.
    func whenWritten(_ done: @escaping @Sendable () -> Void) {
        enqueue { $0.durable.append(done) }
    }

    /// Waits until everything enqueued so far is on disk (or dropped after a failure). For tests and benchmarks.
    func waitUntilWritten() {
        queue.sync {}
    }

    private func enqueue(_ body: (inout Pending) -> Void) {
        let schedule: Bool = pending.withLockedValue { pending in
            body(&pending)
            guard !pending.scheduled else { return false }
            pending.scheduled = true
            return true
        }
        if schedule { queue.async { self.writePending() } }
    }

    // MARK: - Writing (on `queue`)

    private func writePending() {
        let taken: Pending = pending.withLockedValue { pending in
            var taken = Pending()
            swap(&taken, &pending)
            pending.failed = taken.failed
            return taken
        }
        write(taken)
    }

    private func write(_ taken: Pending) {
        if let clear = taken.clear {
            write(clear.before)
            if !hasFailed {
                do {
                    try store.clear(keepingDocuments: clear.keepingDocuments, keepingCalls: clear.keepingCalls)
                } catch {
                    fail(error)
                }
            }
        }
        defer { for durable in taken.durable { durable() } }
        guard !hasFailed else { return }
        var batch = StoreBatch()
        batch.documents = Self.newestVersions(taken.changes)
        batch.serverDocuments = taken.serverDocuments.map { ($0.key, $0.value) }
        batch.methodsAdded = taken.methodsAdded
        batch.methodResults = taken.methodResults
        batch.methodsRemoved = taken.methodsRemoved
        batch.subscriptions = taken.subscriptions
        guard !batch.isEmpty else { return }
        do {
            try store.write(batch)
        } catch {
            fail(error)
        }
    }

    private func fail(_ error: any Error) {
        let first: Bool = pending.withLockedValue { pending in
            defer { pending.failed = true }
            return !pending.failed
        }
        guard first else { return }
        let problem = (error as? PersistenceError) ?? PersistenceError(.writeFailed, path: path, reason: "\(error)")
        onFailure?(problem)
    }

    /// Each document's newest version across the transactions, once (`nil`: removed).
    static func newestVersions(_ changes: [DatabaseChanges]) -> [(key: DocumentKey, document: Document?)] {
        if changes.count == 1 {
            return changes[0].documentChangeDetails.map { ($0.key, $0.documentAfter) }
        }
        var newest: [DocumentKey: Document?] = [:]
        var order: [DocumentKey] = []
        for transaction in changes {
            for detail in transaction.documentChangeDetails {
                if newest.updateValue(detail.documentAfter, forKey: detail.key) == nil { order.append(detail.key) }
            }
        }
        return order.map { ($0, newest[$0]!) }
    }
}
