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
    /// The thread inside the open transaction (0: none). Atomic, so readers can tell whether they are that thread.
    private let writerThread = ManagedAtomic<UInt>(0)
    /// Consumers of ``changes``. Protected by its lock.
    let subscribers = NIOLockedValueBox<[ObjectIdentifier: DatabaseChangesSubscriber]>([:])
    /// Live queries to update after each commit. Protected by its lock.
    let liveQueries = NIOLockedValueBox<[ObjectIdentifier: LiveQueryCore]>([:])

    /// Where change sets are computed and handed to consumers and live queries, in commit order. No user code runs
    /// on it.
    public let notificationQueue: DispatchQueue
    /// Where `databaseDidChange` is posted, in commit order (serial).
    public let observerQueue: DispatchQueue
    let logger: Logger

    /// Creates an empty database.
    public init(logger: Logger = Logger(label: "MeteorDDP.Database", factory: { _ in SwiftLogNoOpLogHandler() })) {
        self.published = ManagedAtomic(SnapshotGeneration(collections: [:]))
        self.notificationQueue = DispatchQueue(label: "MeteorDDP.Database.notifications")
        self.observerQueue = DispatchQueue(label: "MeteorDDP.Database.observers")
        self.logger = logger
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
        Array(snapshot.collections.keys)
    }

    // MARK: - Writing

    /// Runs `body` as one write transaction: everything it writes becomes visible to readers at once, and one
    /// ``DatabaseChanges`` describes it. Nested calls fold into the outermost.
    public func performUpdates<T>(_ body: () throws -> T) rethrows -> T {
        begin()
        defer { end() }
        return try body()
    }

    /// Like ``performUpdates(_:)``, and returns every document the body wrote with its version from before the body
    /// (`nil`: it did not exist), also when the body throws (what it wrote before throwing stays written). Latency
    /// compensation keeps those as the server's versions.
    func performUpdatesRecordingOriginals<T>(_ body: () throws -> T) -> (
        value: Result<T, any Error>, originals: [(DocumentKey, EJSONObject?)]
    ) {
        begin()
        transaction!.recorders.append(Recorder())
        let value = Result { try body() }
        let recorder = transaction!.recorders.removeLast()
        end()
        return (value, recorder.originals.map { ($0.key, $0.value) })
    }

    /// Applies one update with the tolerance of Meteor's client store (anomalies are logged, never fatal).
    public func apply(_ update: DataUpdate) {
        let update = CacheUpdate(update)
        var anomalies = ApplyAnomalies(collecting: logger.logLevel <= .debug)
        begin()
        Self.apply(update, prepared: nil, to: &transaction!, anomalies: &anomalies)
        end()
        anomalies.log(to: logger)
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
        var anomalies = ApplyAnomalies(collecting: logger.logLevel <= .debug)
        begin()
        // One access to the open transaction for the whole batch (checked at run time, not once per update). Nothing
        // inside calls out: anomalies are logged once the transaction has committed (a log handler is app code).
        Self.apply(takingCacheUpdates: &updates, to: &transaction!, anomalies: &anomalies)
        end()
        anomalies.log(to: logger)
    }

    private static func apply(
        takingCacheUpdates updates: inout [CacheUpdate], to transaction: inout WriteTransaction,
        anomalies: inout ApplyAnomalies
    ) {
        transaction.changeList.reserveCapacity(transaction.changeList.count + updates.count)
        updates.withUnsafeMutableBufferPointer { buffer in
            guard let base = buffer.baseAddress else { return }
            /// The update at `index`, moved out (a trivial one left in its place for the array to destroy).
            func take(_ index: Int) -> CacheUpdate {
                let slot = base + index
                defer { slot.initialize(to: .vacated) }
                return slot.move()
            }
            let updates = UnsafeBufferPointer(buffer)
            guard VersionPreparation.isWorthwhile(for: updates) else {
                for index in buffer.indices {
                    apply(take(index), prepared: nil, to: &transaction, anomalies: &anomalies)
                }
                return
            }
            // A large batch: new versions are made on a second thread while this one installs them. A chunk the helper
            // may still be reading is read in place, never moved out.
            let preparation = VersionPreparation(updates: updates, snapshot: transaction.pending)
            defer { preparation.finish() }
            for chunk in 0..<preparation.chunkCount {
                switch preparation.claimForWriter(chunk) {
                case .writers:
                    for index in preparation.indices(ofChunk: chunk) {
                        apply(take(index), prepared: nil, to: &transaction, anomalies: &anomalies)
                    }
                case .prepared:
                    for index in preparation.indices(ofChunk: chunk) {
                        apply(
                            take(index), prepared: preparation.version(at: index), to: &transaction,
                            anomalies: &anomalies)
                    }
                case .helperStillMaking:
                    for index in preparation.indices(ofChunk: chunk) {
                        apply(updates[index], prepared: nil, to: &transaction, anomalies: &anomalies)
                    }
                }
            }
        }
        updates.removeAll()
    }

    /// Applies one update; `prepared`, a version made ahead on another thread, is used if it was made from the
    /// version the update finds.
    private static func apply(
        _ update: consuming CacheUpdate, prepared: VersionPreparation.PreparedVersion?,
        to transaction: inout WriteTransaction, anomalies: inout ApplyAnomalies
    ) {
        // The update is taken apart here, once, and each closure captures only what it needs (no copy of the update).
        switch consume update {
        case .added(let key, let fields):
            let location = prepared.map { transaction.locate(key, knownAt: $0.found) } ?? transaction.locate(key)
            guard let stored = location.document else {
                return transaction.write(key, fields, at: location, previous: nil)
            }
            let current = Document(storage: stored.takeUnretainedValue())
            anomalies.note(.addedExisting, key)
            transaction.write(
                key, prepared?.document(for: current) ?? current.setting(fields), at: location, previous: current)
        case .changed(let key, let fields, let cleared):
            let location = prepared.map { transaction.locate(key, knownAt: $0.found) } ?? transaction.locate(key)
            guard let stored = location.document else {
                anomalies.note(.changedMissing, key)
                return transaction.write(key, fields, at: location, previous: nil)
            }
            let current = Document(storage: stored.takeUnretainedValue())
            transaction.write(
                key, prepared?.document(for: current) ?? current.setting(fields, clearing: cleared), at: location,
                previous: current)
        case .replaced(let key, let document):
            transaction.update(key) { _ in .some(document) }
        case .removed(let key):
            var missing = false
            transaction.update(key) { current -> Document?? in
                guard current != nil else {
                    missing = true
                    return nil
                }
                return .some(nil)
            }
            if missing { anomalies.note(.removedMissing, key) }
        }
    }

    /// Puts documents made elsewhere (restored from a store) into the cache, in one transaction.
    func install(_ documents: [(DocumentKey, Document)]) {
        performUpdates {
            for (key, document) in documents {
                transaction!.update(key) { _ in .some(document) }
            }
        }
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
        let changes = DatabaseChanges(
            uniqueDetails: DatabaseChanges.droppingUnchanged(
                transaction!.changeList, checking: transaction!.unsureChanges.lazy.map { Int($0) }))
        let afterCommit = transaction!.afterCommit
        nextArrival = transaction!.nextArrival
        transaction = nil
        // A new generation takes over the tables; the one it replaces keeps what only it (and older ones) can see.
        let replaced: SnapshotGeneration? = wroteTables ? publish(finished, retiring: retired) : nil
        writerThread.store(0, ordering: .releasing)
        if !changes.isEmpty {
            commitObserver?(changes)
            // Enqueued under the lock so deliveries keep commit order; delivered without it.
            let committed = changes
            notificationQueue.async { self.deliver(committed) }
        }
        writeLock.unlock()
        for work in afterCommit { work() }
        // The replaced generation is let go here, after the lock: unless a reader still holds it, what only it used
        // is freed on the thread that allocated it (freeing on another thread contends for the allocator's lock).
        withExtendedLifetime(replaced) {}
    }

    /// Publishes a new generation with the collections of `finished`, the current one keeping what only it can see.
    /// Returns the one it replaced.
    private func publish(_ finished: DatabaseSnapshot, retiring retired: RetiredMemory) -> SnapshotGeneration {
        let generation = SnapshotGeneration(collections: finished.collections)
        published.load(ordering: .acquiring).supersede(by: generation, retiring: retired)
        return published.exchange(generation, ordering: .acquiringAndReleasing)
    }

    private func deliver(_ changes: DatabaseChanges) {
        observerQueue.async {
            NotificationCenter.default.post(
                name: .databaseDidChange, object: self, userInfo: [DatabaseChanges.userInfoKey: changes])
        }
        for subscriber in subscribers.withLockedValue({ Array($0.values) }) { subscriber.receive(changes) }
        let snapshot = published.load(ordering: .acquiring).snapshot
        for query in liveQueries.withLockedValue({ Array($0.values) }) {
            query.update(with: changes, snapshot: snapshot)
        }
    }
}

/// The state of an open write transaction. Protected by `Database.writeLock`.
struct WriteTransaction {
    /// The snapshot the transaction started from.
    var pending: DatabaseSnapshot
    /// This transaction's epoch: the table memory it allocated, and only that, it may write in place.
    let epoch: UInt64
    /// The arrival order of the next document this transaction adds.
    var nextArrival: UInt64
    /// What the transaction's writes took out of the tables that the previous generation still uses.
    var retired = RetiredMemory()
    /// Working copies of the collections written so far, kept out of `pending` so they stay uniquely referenced and
    /// change in place (only nodes shared with the published snapshot are copied, once).
    var tables: [String: DocumentTable] = [:]
    /// The table written last, kept out of `tables` (successive writes mostly go to one collection: no lookup).
    var currentTable: (name: String, table: DocumentTable)?
    var depth = 0
    /// Work to run on the writer's thread once the outermost transaction has committed and released the lock.
    var afterCommit: [() -> Void] = []
    /// Each written document's version from before the transaction and its latest version, in first-write order
    /// (one entry per document: the table keeps each stored document's position here).
    var changeList = ContiguousArray<DocumentChangeDetails>()
    /// Where the documents removed by this transaction have their change listed (a document added back finds its
    /// entry here: the table no longer has it).
    var removedChanges: [DocumentKey: Int32] = [:]
    /// The entries of `changeList` whose version after may equal the one before (written more than once, or by a
    /// write that may not have changed anything); the others certainly differ and are not compared at the end.
    var unsureChanges: [Int32] = []
    /// Nested recorders of originals (stubs).
    var recorders: [Recorder] = []
}

extension WriteTransaction {
    /// Calls `body` with the document's current version and writes the version it returns (`.some(nil)` removes the
    /// document, `nil` leaves it as it is), remembering the version from before the transaction and for each recorder.
    /// One hash lookup and one bucket scan. (Server data's `added` and `changed` take ``locate(_:)`` and
    /// ``write(_:_:at:previous:)`` instead.)
    mutating func update(_ key: DocumentKey, _ body: (Document?) -> Document??) {
        var previous: Document?
        var written: Document??
        selectTable(key.collectionName)
        var table = currentTable!.table
        var retired = RetiredMemory()
        swap(&retired, &self.retired)
        table.updateValue(forKey: key.documentID, epoch: epoch, retiring: &retired) { slot, change in
            previous = slot
            guard let result = body(slot) else { return }
            let after = result.map { placed($0, key, replacing: previous) }
            written = .some(after)
            slot = after
            noteChange(key, previous: previous, after: after, newVersionsDiffer: false, listedAt: &change)
        }
        swap(&retired, &self.retired)
        currentTable!.table = table
        guard written != nil else { return }
        record(key, previous: previous)
    }

    /// Makes the table of `collection` the current one.
    private mutating func selectTable(_ collection: String) {
        guard currentTable?.name != collection else { return }
        // Tables are plain values (pointers into memory the generations own): moving one copies no document.
        if let (name, table) = currentTable { tables[name] = table }
        currentTable = (collection, tables.removeValue(forKey: collection) ?? pending.documents(in: collection))
    }

    /// Remembers the document's version from before for each recorder that has none for it yet.
    private mutating func record(_ key: DocumentKey, previous: Document?) {
        for index in recorders.indices where recorders[index].originals[key] == nil {
            recorders[index].originals[key] = .some(previous?.fields)
        }
    }

    // The hot path of server data (`added`, `changed`: each makes a new version from the current one): the same work
    // as `update` in two steps with the caller's code between, instead of closures within closures. Profiles of
    // `update` on a flood of `changed` counted ~55 reference-count operations per document, most of them copies of
    // the key and the versions into and out of the closures' contexts.

    /// Where the document is, or would go (the current version, if any, not retained: valid until `write`).
    mutating func locate(_ key: DocumentKey) -> DocumentTable.Location {
        selectTable(key.collectionName)
        return currentTable!.table.locate(key.documentID, epoch: epoch)
    }

    /// ``locate(_:)`` for a document a lookup in the snapshot the transaction started from found at `earlier`.
    mutating func locate(_ key: DocumentKey, knownAt earlier: DocumentTable.Location) -> DocumentTable.Location {
        selectTable(key.collectionName)
        return currentTable!.table.locate(key.documentID, epoch: epoch, knownAt: earlier)
    }

    /// Writes `new` where ``locate(_:)`` found the document (nothing written since), whose version was `previous`; a
    /// `new` other than `previous` itself differs from it (as ``Document/setting(_:clearing:)`` guarantees: the two
    /// need not be compared).
    mutating func write(_ key: DocumentKey, _ new: Document, at location: DocumentTable.Location, previous: Document?) {
        let new = placed(new, key, replacing: previous)
        var change = location.change
        noteChange(key, previous: previous, after: new, newVersionsDiffer: true, listedAt: &change)
        currentTable!.table.write(new, change: change, at: location, epoch: epoch, retiring: &retired)
        if !recorders.isEmpty { record(key, previous: previous) }
    }

    /// `new` at its place in the arrival order: `previous`'s, or (a document coming into the collection) the next.
    /// A document this transaction removed and adds back keeps its place (a reconnect's reset removes every document
    /// and adds back those the server sends again: they stay where they were).
    private mutating func placed(_ new: Document, _ key: DocumentKey, replacing previous: Document?) -> Document {
        if let previous { return new.placed(at: previous.arrival) }
        if !removedChanges.isEmpty, let change = removedChanges[key],
            let removed = changeList[Int(change)].documentBefore
        {
            return new.placed(at: removed.arrival)
        }
        defer { nextArrival += 1 }
        return new.placed(at: nextArrival)
    }

    /// Lists a write: the first write of a document keeps its version from before, every write sets the version
    /// after. `change` is where the document's entry is (-1: not listed yet, unless it was removed and comes back).
    private mutating func noteChange(
        _ key: DocumentKey, previous: Document?, after: Document?, newVersionsDiffer: Bool, listedAt change: inout Int32
    ) {
        if change < 0, !removedChanges.isEmpty, let listed = removedChanges[key] { change = listed }
        if change >= 0 {
            changeList[Int(change)].documentAfter = after
            unsureChanges.append(change)
        } else {
            precondition(changeList.count < Int32.max, "too many changes in one transaction")
            change = Int32(changeList.count)
            changeList.append(DocumentChangeDetails(key: key, documentBefore: previous, documentAfter: after))
            let differs: Bool
            switch (previous, after) {
            case (let previous?, let after?): differs = newVersionsDiffer && !after.isIdentical(to: previous)
            case (nil, nil): differs = false
            default: differs = true
            }
            if !differs { unsureChanges.append(change) }
        }
        if after == nil { removedChanges[key] = change }
    }

    /// The transaction's state as a snapshot.
    var materialized: DatabaseSnapshot {
        var snapshot = pending
        for (name, table) in tables { snapshot.setTable(name, table) }
        if let (name, table) = currentTable { snapshot.setTable(name, table) }
        return snapshot
    }
}

/// Versions from before a nested part of a transaction.
struct Recorder {
    var originals: OrderedDictionary<DocumentKey, EJSONObject?> = [:]
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
