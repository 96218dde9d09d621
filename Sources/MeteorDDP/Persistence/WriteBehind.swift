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
///
/// **Held documents.** The disk always holds a state of this run in which every stored call's stub effect is
/// present (the README's "every durable effect is there at first read"). In memory, a call's `updated` replaces
/// what its stub wrote with the server's version, which may not have arrived yet (its subscription went out after
/// the call): the document leaves the cache, as in Meteor. The call's record leaves the store only when it completes
/// (result and data), later. So ``hold(_:)``: from a stored call's `updated` on, the documents it released are not
/// written, and the disk keeps them as before the `updated` (the stub's version, and the server's version with its
/// claim); their later changes and server versions are kept here instead, newest winning. A held document is
/// written at its current state:
/// - in the batch that removes the last stored call whose stub wrote it (``methodRemoved(_:)``);
/// - in the batch of a stored call whose stub writes it again (``methodAdded(_:durable:)``: its commit and its claim
///   are the current state);
/// - before a clear that drops those calls (``clear(keepingDocuments:keepingCalls:)``: the erasure wins).
/// Held changes are written in order with the others: those committed before the hold are in the batches before it,
/// and a released one goes in after every change pending then, before every later one.
final class WriteBehind: @unchecked Sendable {
    // @unchecked because `state` is protected by its lock and everything else is immutable or confined to `queue`.

    struct Pending {
        /// Committed transactions not written yet, in commit order. Protected by `state`'s lock.
        var changes: [DatabaseChanges] = []
        /// Document changes listed in `changes`. Protected by `state`'s lock.
        var changeCount = 0
        /// When `changeCount` passes it, `changes` are folded into one (see ``WriteBehind/committed(_:)``).
        /// Protected by `state`'s lock.
        var foldThreshold = WriteBehind.foldThreshold
        /// Protected by `state`'s lock.
        var serverDocuments: [DocumentKey: StoredServerDocument?] = [:]
        /// Protected by `state`'s lock.
        var methodsAdded: [StoredMethod] = []
        /// Protected by `state`'s lock.
        var methodResults: [(id: String, result: StoredMethodResult)] = []
        /// Protected by `state`'s lock.
        var methodsRemoved: [String] = []
        /// Protected by `state`'s lock.
        var subscriptions: [StoredSubscription]?
        /// Run once what was pending with them is on disk. Protected by `state`'s lock.
        var durable: [@Sendable () -> Void] = []
        /// Whether a write is queued on `queue`. Protected by `state`'s lock.
        var scheduled = false
        /// Set once a write failed. Protected by `state`'s lock.
        var failed = false
        /// A clear asked for (a logout) and what was pending before it: written first, then the store is cleared,
        /// then the rest. Protected by `state`'s lock.
        var clear: ClearRequest?
        /// When the first of it was enqueued (``ClientMetrics/now()``; 0 without metrics): its write-behind lag
        /// runs from then to its batch's commit. Protected by `state`'s lock.
        var enqueuedAt: UInt64 = 0

        var isEmpty: Bool {
            changes.isEmpty && serverDocuments.isEmpty && methodsAdded.isEmpty && methodResults.isEmpty
                && methodsRemoved.isEmpty
                && subscriptions == nil && durable.isEmpty && clear == nil
        }
    }

    /// The documents held back from the disk (see the type's comment), and what tells when to let them go. It outlives
    /// the batches. Protected by `state`'s lock.
    struct Holds {
        /// For each document written by the stub of a stored call (handed to ``WriteBehind/methodAdded(_:durable:)``
        /// or ``WriteBehind/restored(_:)``, not removed or cleared since): those calls.
        var writers: [DocumentKey: Set<String>] = [:]
        /// The documents each of those calls' stubs wrote.
        var written: [String: [DocumentKey]] = [:]
        /// The held documents, with what was kept from the disk since their hold began.
        var held: [DocumentKey: Held] = [:]
        /// The calls stored (handed to ``WriteBehind/methodAdded(_:durable:)`` or ``WriteBehind/restored(_:)``, not
        /// removed or cleared since), whatever their stubs wrote.
        var storedCalls: Set<String> = []

        mutating func add(_ id: String, wrote keys: [DocumentKey]) {
            storedCalls.insert(id)
            guard !keys.isEmpty else { return }
            written[id] = keys
            for key in keys { writers[key, default: []].insert(id) }
        }

        /// Forgets a call; returns the held documents no stored call's stub wrote any more.
        mutating func remove(_ id: String) -> [DocumentKey] {
            storedCalls.remove(id)
            guard let keys = written.removeValue(forKey: id) else { return [] }
            var freed: [DocumentKey] = []
            for key in keys {
                writers[key]?.remove(id)
                guard writers[key]?.isEmpty ?? true else { continue }
                writers.removeValue(forKey: key)
                if held[key] != nil { freed.append(key) }
            }
            return freed
        }
    }

    /// What a held document would have written.
    struct Held {
        /// The cache's changes of it since the hold began, folded into one: its "before" is what the disk has (every
        /// change before the hold is written before it), its "after" the cache's version now.
        var change: DocumentChangeDetails?
        /// The newest server version (the claim) since the hold began (`.some(nil)`: no longer kept).
        var serverDocument: StoredServerDocument??

        mutating func keep(_ detail: DocumentChangeDetails) {
            let before = change.map(\.documentBefore) ?? detail.documentBefore
            change = DocumentChangeDetails(key: detail.key, documentBefore: before, documentAfter: detail.documentAfter)
        }
    }

    /// What the producers share, under one lock (`state`'s).
    struct State {
        var pending = Pending()
        var holds = Holds()
        /// Where the offline queue's depth and the write-behind lag go (``recordMetrics(_:)``).
        var metrics: ClientMetrics?
    }

    /// A clear of the store, in order with the writes around it.
    final class ClearRequest: @unchecked Sendable {
        // @unchecked because it is immutable once made.
        let keepingDocuments: Bool
        let keepingCalls: Set<String>
        let before: Pending
        /// Set for an erasure (``WriteBehind/erase(_:)``): everything goes, `before` is not written, and this is told
        /// the outcome.
        let erased: (@Sendable ((any Error)?) -> Void)?

        init(
            keepingDocuments: Bool, keepingCalls: Set<String>, before: Pending,
            erased: (@Sendable ((any Error)?) -> Void)? = nil
        ) {
            self.keepingDocuments = keepingDocuments
            self.keepingCalls = keepingCalls
            self.before = before
            self.erased = erased
        }
    }

    let store: any ClientStore
    private let queue = DispatchQueue(label: "MeteorDDP.WriteBehind", qos: .utility)
    private let state = NIOLockedValueBox(State())
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

    var hasFailed: Bool { state.withLockedValue { $0.pending.failed } }

    /// From now on, the calls stored (`meteor_ddp_offline_calls`) and each batch's lag from its first enqueue to its
    /// commit (`meteor_ddp_write_behind_lag_duration`) go to `metrics`. Set before anything is enqueued.
    func recordMetrics(_ metrics: ClientMetrics) {
        state.withLockedValue { $0.metrics = metrics }
    }

    /// Document changes waiting for the disk (diagnostics, tests).
    var pendingChangeCount: Int { state.withLockedValue { $0.pending.changeCount } }

    /// Calls the store keeps (diagnostics).
    var storedCallCount: Int { state.withLockedValue { $0.holds.storedCalls.count } }

    /// Documents held back from the disk (tests).
    var heldKeys: Set<DocumentKey> { state.withLockedValue { Set($0.holds.held.keys) } }

    // MARK: - Producers

    /// Pending document changes past which the pending transactions are folded into one.
    static let foldThreshold = 100_000

    /// A committed transaction (called under the database's write lock: one append).
    ///
    /// Bounded: while the disk lags (a slow or stalled write), the transactions waiting for it are folded into one
    /// change set (each document's newest version) whenever they list more than twice as many changes as the last
    /// fold left, and at least ``foldThreshold``; what waits is then at most about one version per document, however
    /// long the server goes on changing the same documents.
    ///
    /// While documents are held, their changes are taken out of the transaction and kept with them (a pass over the
    /// transaction's changes; none without holds).
    func committed(_ changes: DatabaseChanges) {
        enqueue { pending, holds in
            var changes = changes
            if !holds.held.isEmpty, let (kept, taken) = changes.splitting({ holds.held[$0] != nil }) {
                for detail in taken { holds.held[detail.key]!.keep(detail) }
                changes = kept
                guard !changes.isEmpty else { return }
            }
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
        enqueue { pending, holds in
            for (key, document) in documents {
                if holds.held[key] != nil {
                    holds.held[key]!.serverDocument = .some(document)
                } else {
                    pending.serverDocuments[key] = .some(document)
                }
            }
        }
    }

    /// The calls a store held at launch (restored): their stubs' documents may be held later.
    func restored(_ methods: [StoredMethod]) {
        let (metrics, moved) = state.withLockedValue { state in
            let before = state.holds.storedCalls.count
            for method in methods { state.holds.add(method.id, wrote: method.stubWrote) }
            return (state.metrics, state.holds.storedCalls.count - before)
        }
        if let metrics, moved != 0 { metrics.offlineCalls.move(by: moved) }
    }

    /// A call's `updated` gave these documents the server's versions in the cache: those a stored call's stub wrote
    /// are held (see the type's comment). Called on the client queue before the replacements are queued for the cache
    /// (their commits come after) and before the server versions' release is handed over.
    func hold(_ keys: [DocumentKey]) {
        state.withLockedValue { state in
            for key in keys where state.holds.writers[key] != nil && state.holds.held[key] == nil {
                state.holds.held[key] = Held()
            }
        }
    }

    /// A call to keep; `durable` runs (on the writer's queue) once it is on disk, or once persistence failed. The
    /// held documents its stub wrote are written with it, at their current state (its stub's commit and claim came
    /// before it).
    func methodAdded(_ method: StoredMethod, durable: @escaping @Sendable () -> Void) {
        enqueue { pending, holds in
            if !holds.held.isEmpty { Self.release(method.stubWrote, from: &holds, into: &pending) }
            holds.add(method.id, wrote: method.stubWrote)
            pending.methodsAdded.append(method)
            pending.durable.append(durable)
        }
    }

    func methodResult(_ id: String, _ result: StoredMethodResult) {
        enqueue { $0.methodResults.append((id, result)) }
    }

    /// A call left the store: the held documents only it still held are written in the same batch.
    func methodRemoved(_ id: String) {
        enqueue { pending, holds in
            pending.methodsRemoved.append(id)
            Self.release(holds.remove(id), from: &holds, into: &pending)
        }
    }

    func subscriptionsChanged(_ subscriptions: [StoredSubscription]) {
        enqueue { $0.subscriptions = subscriptions }
    }

    /// Clears the store (logging out), in order: what was enqueued before is written first, what is enqueued after
    /// is kept; so are the calls in `keepingCalls` (see ``ClientStore/clear(keepingDocuments:keepingCalls:)``). The
    /// documents only the calls cleared held are written before the clear, which erases them or keeps them as it does
    /// the others.
    func clear(keepingDocuments: Bool, keepingCalls: Set<String>) {
        enqueue { pending, holds in
            for id in holds.storedCalls where !keepingCalls.contains(id) {
                Self.release(holds.remove(id), from: &holds, into: &pending)
            }
            var before = Pending()
            swap(&before, &pending)
            pending.failed = before.failed
            pending.scheduled = before.scheduled
            pending.clear = ClearRequest(keepingDocuments: keepingDocuments, keepingCalls: keepingCalls, before: before)
        }
    }

    /// Erases everything the store holds (``DDPClient/clearPersistence()``) after the writes enqueued before, which
    /// are dropped (their durability callbacks still run); what is enqueued after is written after. The erasure is
    /// tried also after a failed write (the user's data must go); `erased` gets its error, on the writer's queue.
    func erase(_ erased: @escaping @Sendable ((any Error)?) -> Void) {
        enqueue { pending, holds in
            holds = Holds()
            var before = Pending()
            swap(&before, &pending)
            pending.failed = before.failed
            pending.scheduled = before.scheduled
            pending.clear = ClearRequest(keepingDocuments: false, keepingCalls: [], before: before, erased: erased)
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
        enqueue { pending, _ in body(&pending) }
    }

    private func enqueue(_ body: (inout Pending, inout Holds) -> Void) {
        let (schedule, metrics, callsMoved) = state.withLockedValue { state in
            let callsBefore = state.holds.storedCalls.count
            body(&state.pending, &state.holds)
            if state.metrics != nil, state.pending.enqueuedAt == 0 { state.pending.enqueuedAt = ClientMetrics.now() }
            let moved = state.holds.storedCalls.count - callsBefore
            guard !state.pending.scheduled else { return (false, state.metrics, moved) }
            state.pending.scheduled = true
            return (true, state.metrics, moved)
        }
        // The backend's handler, after the lock.
        if let metrics, callsMoved != 0 { metrics.offlineCalls.move(by: callsMoved) }
        if schedule { queue.async { self.writePending() } }
    }

    /// Ends the holds of `keys` (those held): what was kept goes into `pending`, after every change pending now.
    private static func release(_ keys: [DocumentKey], from holds: inout Holds, into pending: inout Pending) {
        var changes = ContiguousArray<DocumentChangeDetails>()
        for key in keys {
            guard let held = holds.held.removeValue(forKey: key) else { continue }
            if let change = held.change { changes.append(change) }
            if let serverDocument = held.serverDocument { pending.serverDocuments[key] = .some(serverDocument) }
        }
        guard !changes.isEmpty else { return }
        pending.changes.append(DatabaseChanges(uniqueDetails: changes))
        pending.changeCount += changes.count
    }

    // MARK: - Writing (on `queue`)

    private func writePending() {
        let (taken, metrics): (Pending, ClientMetrics?) = state.withLockedValue { state in
            var taken = Pending()
            swap(&taken, &state.pending)
            state.pending.failed = taken.failed
            return (taken, state.metrics)
        }
        write(taken)
        if let metrics, taken.enqueuedAt != 0 {
            metrics.writeBehindLag.recordNanoseconds(Int64(clamping: ClientMetrics.now() &- taken.enqueuedAt))
        }
    }

    private func write(_ taken: Pending) {
        if let clear = taken.clear, let erased = clear.erased {
            // What was pending before is dropped, earlier clears and erasures included (this one covers them): their
            // callbacks still run, an earlier erasure's with this one's outcome.
            let (durable, earlierErasures) = Self.callbacks(in: clear.before)
            var outcome: (any Error)?
            do { try store.erase() } catch { outcome = error }
            for callback in durable { callback() }
            for callback in earlierErasures + [erased] { callback(outcome) }
        } else if let clear = taken.clear {
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

    /// Every durability and erasure callback of `pending` and of the clears nested in it (each clear holds what was
    /// pending before it), in the order they were enqueued.
    private static func callbacks(
        in pending: Pending
    ) -> (durable: [@Sendable () -> Void], erased: [@Sendable ((any Error)?) -> Void]) {
        guard let clear = pending.clear else { return (pending.durable, []) }
        let earlier = callbacks(in: clear.before)
        return (earlier.durable + pending.durable, earlier.erased + (clear.erased.map { [$0] } ?? []))
    }

    private func fail(_ error: any Error) {
        let first: Bool = state.withLockedValue { state in
            defer { state.pending.failed = true }
            return !state.pending.failed
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
