import NIOConcurrencyHelpers

/// The incremental engine of a ``LiveQuery``: the full sorted list of matching documents, updated from each
/// ``DatabaseChanges`` by re-evaluating only the documents it names.
///
/// `sorted` and `visible` are confined to the database's notification queue; handlers are protected by a lock.
final class LiveQueryCore: @unchecked Sendable {
    // @unchecked because `sorted`/`seeded` are confined to the notification queue and `shared` is lock-protected.
    let collection: String
    let query: Query

    /// Every matching document in query order (before the limit). Confined to the notification queue.
    private var sorted: [Document] = []
    /// Whether the initial result was computed. Confined to the notification queue.
    private var seeded = false

    private struct Shared {
        /// Protected by `shared`'s lock.
        var handlers: [@Sendable (LiveQuerySnapshot) -> Void] = []
        /// The visible result last published. Protected by `shared`'s lock.
        var current: [Document] = []
        /// Whether a first result was published. Protected by `shared`'s lock.
        var published = false
        /// Protected by `shared`'s lock.
        var finished = false
    }

    private let shared = NIOLockedValueBox(Shared())

    init(collection: String, query: Query) {
        self.collection = collection
        self.query = query
    }

    var current: [Document] { shared.withLockedValue { $0.current } }

    func addHandler(_ handler: @escaping @Sendable (LiveQuerySnapshot) -> Void) {
        let (current, published) = shared.withLockedValue { state -> ([Document], Bool) in
            state.handlers.append(handler)
            return (state.current, state.published)
        }
        if published { handler(LiveQuerySnapshot(documents: current, diff: LiveQueryDiff())) }
    }

    func seed(_ snapshot: DatabaseSnapshot) {
        var all = Array(snapshot.documents(in: collection).values).filter(query.matches)
        all.sort(by: query.areInIncreasingOrder)
        sorted = all
        seeded = true
        publish(visible(), diff: LiveQueryDiff())
    }

    func update(with changes: DatabaseChanges, snapshot: DatabaseSnapshot) {
        guard seeded else { return }
        let keys = changes.affectedDocumentKeys.filter { $0.collectionName == collection }
        guard !keys.isEmpty else { return }
        let old = visible()
        for key in keys {
            if let index = sorted.firstIndex(where: { $0.id == key.documentID }) { sorted.remove(at: index) }
            if let document = snapshot.document(key), query.matches(document) {
                let index = insertionIndex(for: document)
                sorted.insert(document, at: index)
            }
        }
        let new = visible()
        let diff = Self.diff(from: old, to: new, changed: Set(keys.map(\.documentID)))
        guard !diff.isEmpty else { return }
        publish(new, diff: diff)
    }

    func finish() {
        shared.withLockedValue { state in
            state.finished = true
            state.handlers.removeAll()
        }
    }

    private func visible() -> [Document] {
        guard let limit = query.limit, sorted.count > limit else { return sorted }
        return Array(sorted.prefix(limit))
    }

    private func insertionIndex(for document: Document) -> Int {
        var low = 0
        var high = sorted.count
        while low < high {
            let mid = (low + high) / 2
            if query.areInIncreasingOrder(sorted[mid], document) { low = mid + 1 } else { high = mid }
        }
        return low
    }

    private func publish(_ documents: [Document], diff: LiveQueryDiff) {
        let handlers: [@Sendable (LiveQuerySnapshot) -> Void] = shared.withLockedValue { state in
            state.current = documents
            state.published = true
            return state.finished ? [] : state.handlers
        }
        let snapshot = LiveQuerySnapshot(documents: documents, diff: diff)
        for handler in handlers { handler(snapshot) }
    }

    /// The index diff between two results: removals and insertions by id, moves inferred, updates for documents in
    /// both that the transaction changed.
    static func diff(from old: [Document], to new: [Document], changed: Set<String>) -> LiveQueryDiff {
        let difference = new.map(\.id).difference(from: old.map(\.id)).inferringMoves()
        var diff = LiveQueryDiff()
        for change in difference {
            switch change {
            case .remove(let offset, _, let associated):
                if let associated { diff.moved.append(.init(from: offset, to: associated)) } else { diff.removed.append(offset) }
            case .insert(let offset, _, let associated):
                if associated == nil { diff.inserted.append(offset) }
            }
        }
        let oldByID = Dictionary(old.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        for (index, document) in new.enumerated() where changed.contains(document.id) {
            if let before = oldByID[document.id], before != document { diff.updated.append(index) }
        }
        diff.removed.sort()
        diff.inserted.sort()
        diff.moved.sort { $0.from < $1.from }
        return diff
    }
}
