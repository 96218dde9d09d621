/// The incremental engine of a ``LiveQuery``: the full sorted list of matching documents, updated from each
/// ``DatabaseChanges`` by re-evaluating only the documents it names.
///
/// `matches` and `seeded` are confined to the database's notification queue; receivers are protected by a lock.
final class LiveQueryCore: LiveQueryEngine, @unchecked Sendable {
    // @unchecked because `matches`/`seeded` are confined to the notification queue and `receivers` is lock-protected.

    // MARK: - Mutable State
    // - `matches`, `seeded`: confined to the database's notification queue.
    // - `receivers` (receivers, current result, finished): protected by its lock.

    /// Every matching document in query order. Confined to the notification queue.
    private var matches: SortedMatches
    /// Whether the initial result was computed. Confined to the notification queue.
    private var seeded = false

    typealias Receiver = SnapshotReceivers<LiveQuerySnapshot>.Receiver

    let receivers = SnapshotReceivers(empty: LiveQuerySnapshot(documents: [], diff: LiveQueryDiff()))

    init(collection: String, query: Query) {
        matches = SortedMatches(collection: collection, query: query)
    }

    var collection: String { matches.collection }
    var query: Query { matches.query }
    var current: [Document] { receivers.current.documents }

    func seed(_ snapshot: DatabaseSnapshot) {
        matches.seed(snapshot)
        seeded = true
        let visible = matches.visible()
        receivers.publish(
            LiveQuerySnapshot(
                documents: visible, diff: LiveQueryDiff(),
                metadata: snapshot.metadata.result(collection: collection, documents: visible)))
    }

    func update(with changes: DatabaseChanges, snapshot: DatabaseSnapshot) {
        guard seeded else { return }
        let keys = changes.affectedDocumentKeys.filter { $0.collectionName == collection }
        let metadataChanged = !changes.metadataChange.isEmpty
        guard !keys.isEmpty || metadataChanged else { return }
        let old = matches.visible()
        var new = old
        var diff = LiveQueryDiff()
        if !keys.isEmpty {
            let previous = matches.apply(keys, snapshot)
            new = matches.visible()
            diff = Self.diff(from: old, to: new, updated: matches.updatedIndexes(previous: previous, old: old))
        }
        // The flags are computed when the documents or the metadata changed (only the pending documents are looked
        // up when they are fewer than the result's).
        let before = receivers.current.metadata
        let metadata =
            metadataChanged || !diff.isEmpty ? snapshot.metadata.result(collection: collection, documents: new) : before
        guard !diff.isEmpty || metadata != before else { return }
        receivers.publish(LiveQuerySnapshot(documents: new, diff: diff, metadata: metadata))
    }

    func finish() { receivers.finish() }

    /// The index diff between two results: removals and insertions by id, moves inferred, updates for documents in
    /// both that the transaction changed.
    static func diff(from old: [Document], to new: [Document], changed: Set<String>) -> LiveQueryDiff {
        let oldByID = Dictionary(old.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        var updated: [Int] = []
        for (index, document) in new.enumerated() where changed.contains(document.id) {
            if let before = oldByID[document.id], before != document { updated.append(index) }
        }
        return diff(from: old, to: new, updated: updated)
    }

    /// The index diff between two results, with the indexes (in `new`) of the documents updated in place.
    static func diff(from old: [Document], to new: [Document], updated: [Int]) -> LiveQueryDiff {
        diff(fromIDs: old.map(\.id), toIDs: new.map(\.id), updated: updated)
    }

    /// The index diff between two results given by their ids, with the indexes (in `new`) of the entries updated in
    /// place.
    static func diff(fromIDs old: [String], toIDs new: [String], updated: [Int]) -> LiveQueryDiff {
        let difference = new.difference(from: old).inferringMoves()
        var diff = LiveQueryDiff()
        for change in difference {
            switch change {
            case .remove(let offset, _, let associated):
                if let associated {
                    diff.moved.append(.init(from: offset, to: associated))
                } else {
                    diff.removed.append(offset)
                }
            case .insert(let offset, _, let associated):
                if associated == nil { diff.inserted.append(offset) }
            }
        }
        diff.updated = updated
        diff.removed.sort()
        diff.inserted.sort()
        diff.moved.sort { $0.from < $1.from }
        return diff
    }
}
