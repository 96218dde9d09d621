/// One source document of a live related result with its related documents.
struct RelatedEntry: Sendable {
    /// The source document, projected as the query's `fields` say.
    let source: Document
    /// Its related documents, in the relationship's order.
    let related: [Document]

    /// Whether both show the same documents (a projection makes new objects, so equal fields count as the same).
    func isSame(as other: RelatedEntry) -> Bool {
        guard source.isSameVersion(as: other.source) || source == other.source,
            related.count == other.related.count
        else { return false }
        return zip(related, other.related).allSatisfy { $0.isSameVersion(as: $1) || $0 == $1 }
    }
}

/// A live related result at one moment, and how it differs from the previous one (indexes of source entries; an
/// entry is updated when its source document or any of its related documents changed).
struct RelatedSnapshot: LiveResultSnapshot {
    let entries: [RelatedEntry]
    let diff: LiveQueryDiff

    var withoutDiff: RelatedSnapshot { RelatedSnapshot(entries: entries, diff: LiveQueryDiff()) }

    func rediffed(from previous: RelatedSnapshot) -> RelatedSnapshot {
        let before = Dictionary(previous.entries.map { ($0.source.id, $0) }, uniquingKeysWith: { first, _ in first })
        var updated: [Int] = []
        for (index, entry) in entries.enumerated() {
            if let old = before[entry.source.id], !old.isSame(as: entry) { updated.append(index) }
        }
        let diff = LiveQueryCore.diff(
            fromIDs: previous.entries.map(\.source.id), toIDs: entries.map(\.source.id), updated: updated)
        return RelatedSnapshot(entries: entries, diff: diff)
    }
}

/// The incremental engine of a live related query: the sources matching a query, each with its related documents,
/// updated from each ``DatabaseChanges`` by re-evaluating only the documents it names and the sources they concern.
///
/// It indexes the references both ways so a changed document finds the entries it concerns without a scan: for
/// `idIn` and `idsIn`, the sources naming each target; for `referencedBy`, the targets naming each source (every
/// target document with a reference, so a source entering the result finds its targets at once). The related
/// documents of each source in the window are kept and recomputed only when one of them, or the source, changed.
///
/// All of its state but `receivers` is confined to the database's notification queue.
final class RelatedLiveQueryCore: LiveQueryEngine, @unchecked Sendable {
    // @unchecked because everything but `receivers` (lock-protected) is confined to the notification queue.

    // MARK: - Mutable State (confined to the notification queue)

    /// The matching source documents, in query order.
    private var sources: SortedMatches
    /// `idIn`, `idsIn`: the targets each matching source names.
    private var namedTargets: [String: [String]] = [:]
    /// `idIn`, `idsIn`: the matching sources naming each target.
    private var namingSources: [String: Set<String>] = [:]
    /// `referencedBy`: the target documents naming each source id.
    private var referringTargets: [String: [String: Document]] = [:]
    /// `referencedBy`: the group each target is in. Not the one its version before a transaction names: an update
    /// reads the newest snapshot, which may be ahead of the commit it handles, so a target can be in a group its
    /// previous version did not name (it then showed in two entries at once).
    private var groupOfTarget: [String: String] = [:]
    /// The related documents of sources computed so far, dropped when they may have changed.
    private var related: [String: [Document]] = [:]
    /// The entries last published.
    private var published: [RelatedEntry] = []
    private var seeded = false

    let targetCollection: String
    let storage: RelationshipStorage
    /// Sorts, windows and projects each source's related documents (`referencedBy` only).
    let relatedQuery: Query
    let receivers = SnapshotReceivers(empty: RelatedSnapshot(entries: [], diff: LiveQueryDiff()))

    init(
        sourceCollection: String, query: Query, targetCollection: String, storage: RelationshipStorage,
        relatedQuery: Query
    ) {
        sources = SortedMatches(collection: sourceCollection, query: query)
        self.targetCollection = targetCollection
        self.storage = storage
        self.relatedQuery = relatedQuery
    }

    func seed(_ snapshot: DatabaseSnapshot) {
        sources.seed(snapshot)
        if case .referencedBy(let field) = storage {
            for target in snapshot.allDocuments(in: targetCollection) { index(target: target, field: field) }
        } else {
            for source in sources.sorted { index(source: source) }
        }
        seeded = true
        published = entries(snapshot)
        receivers.publish(RelatedSnapshot(entries: published, diff: LiveQueryDiff()))
    }

    func update(with changes: DatabaseChanges, snapshot: DatabaseSnapshot) {
        guard seeded else { return }
        var sourceKeys: [DocumentKey] = []
        var targetKeys: [DocumentKey] = []
        for key in changes.affectedDocumentKeys {
            // A relationship within one collection (a parent and its children) sees a key in both roles.
            if key.collectionName == sources.collection { sourceKeys.append(key) }
            if key.collectionName == targetCollection { targetKeys.append(key) }
        }
        guard !sourceKeys.isEmpty || !targetKeys.isEmpty else { return }
        var dirty = Set<String>()
        if !sourceKeys.isEmpty {
            _ = sources.apply(sourceKeys, snapshot)
            for key in sourceKeys {
                let id = key.documentID
                dirty.insert(id)
                guard storage.isInSource else { continue }
                unindex(source: id)
                if let source = sources.byID[id] { index(source: source) }
            }
        }
        for key in targetKeys {
            let id = key.documentID
            if case .referencedBy(let field) = storage {
                // It leaves the group it is in and joins the one its newest version names (read from the snapshot,
                // so a commit delivered after the seed already saw it is applied again harmlessly).
                if let old = groupOfTarget.removeValue(forKey: id) {
                    referringTargets[old]?.removeValue(forKey: id)
                    if referringTargets[old]?.isEmpty == true { referringTargets.removeValue(forKey: old) }
                    dirty.insert(old)
                }
                if let target = snapshot.document(key), let source = index(target: target, field: field) {
                    dirty.insert(source)
                }
            } else if let names = namingSources[id] {
                dirty.formUnion(names)
            }
        }
        guard !dirty.isEmpty else { return }
        for id in dirty { related.removeValue(forKey: id) }
        let old = published
        let new = entries(snapshot)
        published = new
        let before = Dictionary(
            old.lazy.filter { dirty.contains($0.source.id) }.map { ($0.source.id, $0) },
            uniquingKeysWith: { first, _ in first })
        var updated: [Int] = []
        for (index, entry) in new.enumerated() where dirty.contains(entry.source.id) {
            if let previous = before[entry.source.id], !previous.isSame(as: entry) { updated.append(index) }
        }
        let diff = LiveQueryCore.diff(fromIDs: old.map(\.source.id), toIDs: new.map(\.source.id), updated: updated)
        guard !diff.isEmpty else { return }
        receivers.publish(RelatedSnapshot(entries: new, diff: diff))
    }

    func finish() { receivers.finish() }

    // MARK: - Entries

    /// The window's sources with their related documents, reusing those that did not change.
    private func entries(_ snapshot: DatabaseSnapshot) -> [RelatedEntry] {
        let window = sources.window()
        let shown = sources.query.project(window)
        var entries: [RelatedEntry] = []
        entries.reserveCapacity(window.count)
        for (source, projected) in zip(window, shown) {
            let documents: [Document]
            if let known = related[source.id] {
                documents = known
            } else {
                documents = relatedDocuments(of: source.id, snapshot)
                related[source.id] = documents
            }
            entries.append(RelatedEntry(source: projected, related: documents))
        }
        if related.count > 2 * max(entries.count, 16) {
            // Sources that left the window: their related documents are dropped, bounded by twice the window.
            let shownIDs = Set(window.map(\.id))
            related = related.filter { shownIDs.contains($0.key) }
        }
        return entries
    }

    private func relatedDocuments(of sourceID: String, _ snapshot: DatabaseSnapshot) -> [Document] {
        if case .referencedBy = storage {
            guard let targets = referringTargets[sourceID] else { return [] }
            return relatedQuery.evaluate(targets.values)
        }
        return (namedTargets[sourceID] ?? []).compactMap {
            snapshot.document(DocumentKey(collectionName: targetCollection, documentID: $0))
        }
    }

    // MARK: - Reference indexes

    private func index(source: Document) {
        let targets = storage.targetIDs(of: source)
        guard !targets.isEmpty else { return }
        namedTargets[source.id] = targets
        for target in targets { namingSources[target, default: []].insert(source.id) }
    }

    private func unindex(source id: String) {
        for target in namedTargets.removeValue(forKey: id) ?? [] {
            namingSources[target]?.remove(id)
            if namingSources[target]?.isEmpty == true { namingSources.removeValue(forKey: target) }
        }
    }

    /// Indexes a target document under the source id its `field` names; returns that id.
    @discardableResult
    private func index(target: Document, field: String) -> String? {
        guard let source = RelationshipStorage.documentID(named: target[field]) else { return nil }
        referringTargets[source, default: [:]][target.id] = target
        groupOfTarget[target.id] = source
        return source
    }
}

extension RelationshipStorage {
    /// Whether the references are in the source documents (`idIn`, `idsIn`).
    var isInSource: Bool {
        if case .referencedBy = self { return false }
        return true
    }
}
