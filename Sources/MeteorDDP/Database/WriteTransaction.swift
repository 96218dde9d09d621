import EJSON
import OrderedCollections

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
    /// The innermost log of reads, while a part of the transaction that records them runs.
    var readLog: CacheReadLog?
    /// The metadata of the snapshot the transaction started from (the transaction's own is `pending.metadata`).
    var metadataBefore = CacheMetadata()
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
        snapshot.readLog = readLog
        return snapshot
    }
}

// MARK: - Applying server data

extension WriteTransaction {
    /// Applies updates in the cache's form in order (``Database/apply(takingCacheUpdates:)``), noting the anomalies it
    /// tolerates. Calls out to nothing: the database logs the anomalies once the transaction has committed.
    mutating func apply(takingCacheUpdates updates: inout [CacheUpdate], anomalies: inout ApplyAnomalies) {
        changeList.reserveCapacity(changeList.count + updates.count)
        /// The update at `index` of `buffer`, moved out (a trivial one left in its place to be destroyed).
        func take(_ index: Int, of buffer: UnsafeMutableBufferPointer<CacheUpdate>) -> CacheUpdate {
            let slot = buffer.baseAddress! + index
            defer { slot.initialize(to: .vacated) }
            return slot.move()
        }
        guard updates.withUnsafeBufferPointer({ VersionPreparation.isWorthwhile(for: $0) }) else {
            updates.withUnsafeMutableBufferPointer { buffer in
                for index in buffer.indices {
                    apply(take(index, of: buffer), prepared: nil, anomalies: &anomalies)
                }
            }
            updates.removeAll()
            return
        }
        // A large batch: new versions are made on a second thread while this one installs them. A chunk the helper may
        // still be reading is read in place, never moved out; the batch outlives whichever of the two finishes first.
        let batch = CacheUpdateBatch(moving: &updates)
        let buffer = batch.updates
        let preparation = VersionPreparation(batch: batch, snapshot: pending)
        defer { preparation.finish() }
        for chunk in 0..<preparation.chunkCount {
            switch preparation.claimForWriter(chunk) {
            case .writers:
                for index in preparation.indices(ofChunk: chunk) {
                    apply(take(index, of: buffer), prepared: nil, anomalies: &anomalies)
                }
            case .prepared:
                for index in preparation.indices(ofChunk: chunk) {
                    apply(take(index, of: buffer), prepared: preparation.version(at: index), anomalies: &anomalies)
                }
            case .helperStillMaking:
                for index in preparation.indices(ofChunk: chunk) {
                    apply(buffer[index], prepared: nil, anomalies: &anomalies)
                }
            }
        }
    }

    /// Applies one update; `prepared`, a version made ahead on another thread, is used if it was made from the
    /// version the update finds.
    mutating func apply(
        _ update: consuming CacheUpdate, prepared: VersionPreparation.PreparedVersion?,
        anomalies: inout ApplyAnomalies
    ) {
        // The update is taken apart here, once, and each closure captures only what it needs (no copy of the update).
        switch consume update {
        case .added(let key, let fields):
            let location = prepared.map { locate(key, knownAt: $0.found) } ?? locate(key)
            guard let stored = location.document else {
                return write(key, fields, at: location, previous: nil)
            }
            let current = Document(storage: stored.takeUnretainedValue())
            anomalies.note(.addedExisting, key)
            write(
                key, prepared?.document(for: current) ?? current.setting(fields), at: location, previous: current)
        case .changed(let key, let fields, let cleared):
            let location = prepared.map { locate(key, knownAt: $0.found) } ?? locate(key)
            guard let stored = location.document else {
                anomalies.note(.changedMissing, key)
                return write(key, fields, at: location, previous: nil)
            }
            let current = Document(storage: stored.takeUnretainedValue())
            write(
                key, prepared?.document(for: current) ?? current.setting(fields, clearing: cleared), at: location,
                previous: current)
        case .replaced(let key, let document):
            self.update(key) { _ in .some(document) }
        case .removed(let key):
            var missing = false
            self.update(key) { current -> Document?? in
                guard current != nil else {
                    missing = true
                    return nil
                }
                return .some(nil)
            }
            if missing { anomalies.note(.removedMissing, key) }
        }
    }
}

/// Versions from before a nested part of a transaction.
struct Recorder {
    var originals: OrderedDictionary<DocumentKey, EJSONObject?> = [:]
}
