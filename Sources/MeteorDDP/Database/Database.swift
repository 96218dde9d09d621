import Atomics
import EJSON
import Foundation
import Logging
import NIOConcurrencyHelpers
import OrderedCollections

extension Notification.Name {
    /// Posted by a ``Database`` (the notification's `object`) once per outermost write transaction that changed
    /// something; `userInfo[DatabaseChanges.userInfoKey]` holds the ``DatabaseChanges``. Posted on the database's
    /// ``Database/observerQueue``, in commit order (never on the notification queue: an observer may take its time
    /// and call the database or the client).
    public static let databaseDidChange = Notification.Name("MeteorDDP.Database.didChange")
}

/// The client's in-memory document cache.
///
/// For example:
/// ```swift
/// let database = Database()
/// database.performUpdates {
///     database.apply(.added(DocumentKey(collectionName: "players", documentID: "lovelace"), ["score": 25]))
/// }
/// database.collection("players").document(id: "lovelace")?["score"] // 25
/// ```
///
/// ## Concurrency
/// - **Serialized Writes**: one writer at a time, from any thread; ``performUpdates(_:)`` nests, and nested
///   transactions fold into the outermost.
/// - **Snapshot Reads**: readers on any thread load an immutable snapshot published atomically at the end of each
///   outermost transaction; a reader never waits for a writer and sees a whole transaction or none of it. The writing
///   thread, inside its transaction, reads its own uncommitted state.
/// - **Consolidated Notifications**: one ``DatabaseChanges`` per outermost transaction that changed something,
///   delivered in commit order on the notification queue (never under the write lock): to
///   `databaseDidChange`, to every ``changes`` consumer and to live queries.
public final class Database: @unchecked Sendable {
    // @unchecked because: `published` is an atomic reference; `transaction` is protected by `writeLock`;
    // `writerThread` is atomic; `subscribers` and `liveQueries` are protected by their own locks.

    // MARK: - Mutable State

    /// The newest committed generation. Atomic: loaded by readers without a lock, stored by the committing writer.
    private let published: ManagedAtomic<SnapshotGeneration>
    /// Serialises writers; recursive so that transactions nest on one thread.
    private let writeLock = NSRecursiveLock()
    /// The open transaction. Protected by `writeLock`. Checked for exclusive access at run time in every build: app
    /// code (a `performUpdates` block, a stub) reaches it.
    private var transaction: WriteTransaction?
    /// Called with every committed change set, in commit order, under the write lock (the offline store's
    /// write-behind: one append). Protected by `writeLock`.
    private var commitObserver: (@Sendable (DatabaseChanges) -> Void)?
    /// The epoch of the next outermost transaction (each writes only memory it allocated). Protected by `writeLock`.
    private var nextEpoch: UInt64 = 1
    /// The arrival order the next document coming into the cache takes (see `Document.arrival`). Protected by
    /// `writeLock`.
    private var nextArrival: UInt64 = 1
    /// Callbacks waiting for a document to come into the cache (``whenDocumentExists(_:_:)``), by key and token.
    /// Protected by `writeLock`.
    private var documentWaiters: [DocumentKey: [Int: @Sendable () -> Void]] = [:]
    /// The next waiter's token. Protected by `writeLock`.
    private var nextDocumentWaiter = 0
    /// The thread inside the open transaction (0: none). Atomic, so readers can tell whether they are that thread.
    private let writerThread = ManagedAtomic<UInt>(0)
    /// Consumers of ``changes``. Protected by its lock.
    let subscribers = NIOLockedValueBox<[ObjectIdentifier: DatabaseChangesSubscriber]>([:])
    /// How many change sets were committed. Each commit's number is published with its data (the generation carries
    /// it): a consumer made while a generation is the newest skips the deliveries up to its number, exactly those a
    /// read then sees (``DatabaseChangesSubscriber``). Protected by `writeLock`.
    private var changeSetsCommitted: UInt64 = 0

    /// The number of the last change set whose data a read made now sees.
    var changeSetsVisible: UInt64 { published.load(ordering: .acquiring).changeSetsCommitted }
    /// Live queries to update after each commit. Protected by its lock.
    let liveQueries = NIOLockedValueBox<[ObjectIdentifier: any LiveQueryEngine]>([:])

    /// Where change sets are computed and handed to consumers and live queries, in commit order. No user code runs
    /// on it.
    public let notificationQueue: DispatchQueue
    /// Where `databaseDidChange` is posted, in commit order (serial).
    public let observerQueue: DispatchQueue
    let logger: Logger
    /// Bounds the anomaly lines a flood makes (a client's database shares the client's).
    let logThrottle: LogThrottle?
    /// The cache's metrics, when the client's record (`nil`: no metrics work at all).
    let metrics: DatabaseMetrics?
    /// The document counts last reported to ``metrics``. Protected by `writeLock`.
    private var reportedCounts = ReportedDocumentCounts()

    /// Creates an empty database.
    public convenience init(
        logger: Logger = Logger(label: "MeteorDDP.Database", factory: { _ in SwiftLogNoOpLogHandler() })
    ) {
        self.init(logger: logger, logThrottle: nil)
    }

    init(logger: Logger, logThrottle: LogThrottle?, metrics: DatabaseMetrics? = nil) {
        self.published = ManagedAtomic(SnapshotGeneration(collections: [:]))
        self.notificationQueue = DispatchQueue(label: "MeteorDDP.Database.notifications")
        self.observerQueue = DispatchQueue(label: "MeteorDDP.Database.observers")
        self.logger = logger
        self.logThrottle = logThrottle
        self.metrics = metrics
    }

    // MARK: - Reading

    /// The current snapshot: the committed one, or the open transaction's state on its own thread (valid only until
    /// that thread's next write).
    var snapshot: DatabaseSnapshot {
        if writerThread.load(ordering: .acquiring) == currentThreadID() {
            writeLock.lock()
            defer { writeLock.unlock() }
            if let transaction { return transaction.materialized }
        }
        return published.load(ordering: .acquiring).snapshot
    }

    /// The document with this key, if present.
    public func document(_ key: DocumentKey) -> Document? {
        snapshot.document(key)
    }

    /// The collection named `name` (created on demand; it is empty until documents arrive).
    public func collection(_ name: String) -> LocalCollection {
        LocalCollection(name: name, database: self)
    }

    /// The names of the collections that have documents.
    public var collectionNames: [String] {
        let snapshot = snapshot
        snapshot.readLog?.noteEverything()
        return Array(snapshot.collections.keys)
    }

    // MARK: - Writing

    /// Runs `body` as one write transaction: everything it writes becomes visible to readers at once, and one
    /// ``DatabaseChanges`` describes it. Nested calls fold into the outermost.
    public func performUpdates<T>(_ body: () throws -> T) rethrows -> T {
        begin()
        defer { end() }
        return try body()
    }

    /// Runs `body` as ``performUpdates(_:)`` does if the write lock is free now (or this thread holds it); returns
    /// `nil` at once, without running it, if another thread holds it.
    func performUpdatesIfUnlocked<T>(_ body: () throws -> T) rethrows -> T? {
        guard writeLock.try() else { return nil }
        defer { writeLock.unlock() }
        begin()
        defer { end() }
        return try body()
    }

    /// What a part of a transaction did
    /// (``performUpdatesRecordingOriginals(markingPendingWrites:recordingReads:_:)``).
    struct RecordedRun<T> {
        /// What the body returned or threw.
        let value: Result<T, any Error>
        /// Every document the body wrote, with its version from before the body (`nil`: it did not exist).
        let originals: [(DocumentKey, EJSONObject?)]
        /// What the body read, when asked for (nested parts' reads included), but the documents it wrote.
        let reads: CacheReads?
    }

    /// Like ``performUpdates(_:)``, and returns every document the body wrote with its version from before the body
    /// (`nil`: it did not exist), also when the body throws (what it wrote before throwing stays written). Latency
    /// compensation keeps those as the server's versions.
    /// - Parameters:
    ///   - markingPendingWrites: Those documents hold pending writes from this transaction on.
    ///   - recordingReads: Note what the body reads from the cache too (``PendingStubMode/rebase``).
    func performUpdatesRecordingOriginals<T>(
        markingPendingWrites: Bool = false, recordingReads: Bool = false, _ body: () throws -> T
    ) -> RecordedRun<T> {
        begin()
        transaction!.recorders.append(Recorder())
        let enclosingLog = transaction!.readLog
        let log = recordingReads ? CacheReadLog(enclosing: enclosingLog) : nil
        if let log { transaction!.readLog = log }
        let value = Result { try body() }
        transaction!.readLog = enclosingLog
        let recorder = transaction!.recorders.removeLast()
        if markingPendingWrites, !recorder.originals.isEmpty {
            transaction!.pending.metadata.pendingWrites.formUnion(recorder.originals.keys)
        }
        end()
        return RecordedRun(
            value: value, originals: recorder.originals.map { ($0.key, $0.value) },
            reads: log?.reads(excluding: recorder.originals))
    }

    /// Applies one update with the tolerance of Meteor's client store (anomalies are logged, never fatal).
    public func apply(_ update: DataUpdate) {
        let update = CacheUpdate(update)
        var anomalies = ApplyAnomalies(loggingTo: logger, throttle: logThrottle)
        begin()
        transaction!.apply(update, prepared: nil, anomalies: &anomalies)
        end()
        anomalies.log()
    }

    /// Applies updates in order, in one transaction (an array, a slice of one, any sequence).
    public func apply(_ updates: some Sequence<DataUpdate>) {
        var packed = CacheUpdate.packing(updates)
        apply(takingCacheUpdates: &packed)
    }

    /// Applies updates in the cache's form in order, in one transaction.
    /// Each update is moved out of `updates` (left empty) and consumed on its way into the tables: its key and
    /// fields are not retained and released again per update (on a flood, atomic operations on cache lines the decoding
    /// thread wrote last).
    func apply(takingCacheUpdates updates: inout [CacheUpdate]) {
        var anomalies = ApplyAnomalies(loggingTo: logger, throttle: logThrottle)
        begin()
        // One access to the open transaction for the whole batch (checked at run time, not once per update). Nothing
        // inside calls out: anomalies are logged once the transaction has committed (a log handler is app code).
        transaction!.apply(takingCacheUpdates: &updates, anomalies: &anomalies)
        end()
        anomalies.log()
    }

    /// Puts documents made elsewhere (restored from a store) into the cache, in one transaction.
    func install(_ documents: [(DocumentKey, Document)]) {
        performUpdates {
            for (key, document) in documents {
                transaction!.update(key) { _ in .some(document) }
            }
        }
    }

    /// Which documents hold local writes the server has not confirmed yet, and whether the data is from the offline
    /// store (see ``CacheMetadata``), as of the current snapshot.
    public var metadata: CacheMetadata {
        snapshot.metadata
    }

    /// Marks documents as holding pending writes, or not, in the open transaction (or one of their own); a change is
    /// reported in the transaction's ``DatabaseChanges/metadataChange``.
    func setPendingWrites(_ keys: some Sequence<DocumentKey>, _ pending: Bool) {
        performUpdates {
            for key in keys {
                if pending {
                    transaction!.pending.metadata.pendingWrites.insert(key)
                } else {
                    transaction!.pending.metadata.pendingWrites.remove(key)
                }
            }
        }
    }

    /// Sets ``CacheMetadata/isFromCache`` in the open transaction (or one of its own).
    func setFromCache(_ isFromCache: Bool) {
        performUpdates { transaction!.pending.metadata.isFromCache = isFromCache }
    }

    /// Removes every document except those in `keeping` (in a transaction: when the same transaction adds documents
    /// back, only the real differences are reported).
    public func removeAllDocuments(except keeping: Set<DocumentKey> = []) {
        performUpdates {
            for key in transaction!.materialized.allKeys where !keeping.contains(key) {
                transaction!.update(key) { _ in .some(nil) }
            }
        }
    }

    /// Waits until every change set committed so far was handed to consumers and live queries and posted to
    /// observers (a deterministic hook for tests and benchmarks).
    func waitUntilDelivered() {
        notificationQueue.sync {}
        observerQueue.sync {}
    }

    /// Runs `callback` once the document with `key` is in a committed snapshot: at once, on this thread, when it is
    /// now (returning `nil`); otherwise on the thread of the commit that brings it, after that commit released the
    /// write lock (returning a token for ``cancelDocumentWaiter(_:token:)``). The callback must not block.
    func whenDocumentExists(_ key: DocumentKey, _ callback: @escaping @Sendable () -> Void) -> Int? {
        writeLock.lock()
        if published.load(ordering: .acquiring).snapshot.document(key) != nil {
            writeLock.unlock()
            callback()
            return nil
        }
        defer { writeLock.unlock() }
        nextDocumentWaiter += 1
        documentWaiters[key, default: [:]][nextDocumentWaiter] = callback
        return nextDocumentWaiter
    }

    /// Forgets a waiter of ``whenDocumentExists(_:_:)`` (it gave up). Returns whether it was still waiting.
    @discardableResult
    func cancelDocumentWaiter(_ key: DocumentKey, token: Int) -> Bool {
        writeLock.lock()
        defer { writeLock.unlock() }
        guard documentWaiters[key]?.removeValue(forKey: token) != nil else { return false }
        if documentWaiters[key]?.isEmpty == true { documentWaiters.removeValue(forKey: key) }
        return true
    }

    /// Sets the observer of committed change sets (see `commitObserver`).
    func observeCommits(_ observer: @escaping @Sendable (DatabaseChanges) -> Void) {
        writeLock.lock()
        defer { writeLock.unlock() }
        commitObserver = observer
    }

    // MARK: - Transactions

    /// Whether the calling thread is inside a write transaction (``performUpdates(_:)``, a stub, a batch).
    var isInTransactionOnCurrentThread: Bool {
        writerThread.load(ordering: .acquiring) == currentThreadID()
    }

    /// Runs `work` on this thread once its write transaction has committed and released the write lock.
    /// Only valid inside a transaction (``isInTransactionOnCurrentThread``).
    func afterCurrentTransaction(_ work: @escaping () -> Void) {
        writeLock.lock()
        defer { writeLock.unlock() }
        precondition(
            transaction != nil && isInTransactionOnCurrentThread, "afterCurrentTransaction outside a transaction")
        transaction!.afterCommit.append(work)
    }

    private func begin() {
        writeLock.lock()
        if transaction == nil {
            transaction = WriteTransaction(
                pending: published.load(ordering: .acquiring).snapshot, epoch: nextEpoch, nextArrival: nextArrival)
            transaction!.metadataBefore = transaction!.pending.metadata
            nextEpoch += 1
            writerThread.store(currentThreadID(), ordering: .releasing)
        }
        transaction!.depth += 1
    }

    private func end() {
        transaction!.depth -= 1
        guard transaction!.depth == 0 else {
            writeLock.unlock()
            return
        }
        let wroteTables = !transaction!.tables.isEmpty || transaction!.currentTable != nil
        let finished = transaction!.materialized
        let retired = transaction!.retired
        let metadataChange = CacheMetadataChange(from: transaction!.metadataBefore, to: finished.metadata)
        let changes = DatabaseChanges(
            uniqueDetails: DatabaseChanges.droppingUnchanged(
                transaction!.changeList, checking: transaction!.unsureChanges.lazy.map { Int($0) }),
            metadataChange: metadataChange)
        // Numbered with the generation that publishes it: a consumer registered once a read sees it skips it.
        if !changes.isEmpty { changeSetsCommitted &+= 1 }
        let sequence = changeSetsCommitted
        let afterCommit = transaction!.afterCommit
        nextArrival = transaction!.nextArrival
        // The counts of the collections written, as committed (decided under the lock, reported after it).
        var documentMoves: [(collection: String, by: Int)] = []
        if metrics != nil, !changes.isEmpty {
            let written = transaction!.tables.keys + (transaction!.currentTable.map { [$0.name] } ?? [])
            documentMoves = reportedCounts.moves(of: written, in: finished)
        }
        transaction = nil
        // A new generation takes over the tables; the one it replaces keeps what only it (and older ones) can see.
        let replaced: SnapshotGeneration? =
            wroteTables || !metadataChange.isEmpty ? publish(finished, retiring: retired) : nil
        writerThread.store(0, ordering: .releasing)
        var documentsArrived: [@Sendable () -> Void] = []
        if !documentWaiters.isEmpty, replaced != nil {
            let committed = published.load(ordering: .acquiring).snapshot
            for key in Array(documentWaiters.keys) where committed.document(key) != nil {
                documentsArrived += documentWaiters.removeValue(forKey: key)!.sorted { $0.key < $1.key }.map(\.value)
            }
        }
        if !changes.isEmpty {
            commitObserver?(changes)
            // Enqueued under the lock so deliveries keep commit order; delivered without it.
            let committed = changes
            let committedAt = metrics != nil ? ClientMetrics.now() : 0
            notificationQueue.async { self.deliver(committed, sequence: sequence, committedAt: committedAt) }
        }
        writeLock.unlock()
        if let metrics, !changes.isEmpty { metrics.committed(documentMoves) }
        for callback in documentsArrived { callback() }
        for work in afterCommit { work() }
        // The replaced generation is let go here, after the lock: unless a reader still holds it, what only it used
        // is freed on the thread that allocated it (freeing on another thread contends for the allocator's lock).
        withExtendedLifetime(replaced) {}
    }

    /// Publishes a new generation with the collections of `finished`, the current one keeping what only it can see.
    /// Returns the one it replaced.
    private func publish(_ finished: DatabaseSnapshot, retiring retired: RetiredMemory) -> SnapshotGeneration {
        let generation = SnapshotGeneration(
            collections: finished.collections, metadata: finished.metadata, changeSetsCommitted: changeSetsCommitted)
        published.load(ordering: .acquiring).supersede(by: generation, retiring: retired)
        return published.exchange(generation, ordering: .acquiringAndReleasing)
    }

    private func deliver(_ changes: DatabaseChanges, sequence: UInt64, committedAt: UInt64) {
        observerQueue.async {
            self.metrics?.notificationPosted(committedAt: committedAt)
            NotificationCenter.default.post(
                name: .databaseDidChange, object: self, userInfo: [DatabaseChanges.userInfoKey: changes])
        }
        for subscriber in subscribers.withLockedValue({ Array($0.values) }) {
            subscriber.receive(changes, sequence: sequence)
        }
        let snapshot = published.load(ordering: .acquiring).snapshot
        for query in liveQueries.withLockedValue({ Array($0.values) }) {
            query.update(with: changes, snapshot: snapshot)
        }
    }
}

/// An identifier of the calling thread.
@inline(__always)
func currentThreadID() -> UInt {
    #if canImport(Darwin)
        return UInt(bitPattern: pthread_self())
    #else
        return UInt(pthread_self())
    #endif
}
