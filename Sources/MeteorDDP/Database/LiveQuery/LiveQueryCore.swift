import NIOConcurrencyHelpers

/// The incremental engine of a ``LiveQuery``: the full sorted list of matching documents, updated from each
/// ``DatabaseChanges`` by re-evaluating only the documents it names.
///
/// `sorted` and `seeded` are confined to the database's notification queue; receivers are protected by a lock.
final class LiveQueryCore: @unchecked Sendable {
    // @unchecked because `sorted`/`seeded` are confined to the notification queue and `shared` is lock-protected.

    // MARK: - Mutable State
    // - `sorted`, `seeded`: confined to the database's notification queue.
    // - `shared` (receivers, current result, finished): protected by its lock.

    let collection: String
    let query: Query

    /// Every matching document in query order (before the limit). Confined to the notification queue.
    private var sorted: [Document] = []
    /// Whether the initial result was computed. Confined to the notification queue.
    private var seeded = false

    private struct Shared {
        /// Receivers of snapshots, by registration token. Protected by `shared`'s lock.
        var receivers: [Int: Receiver] = [:]
        /// The next registration token. Protected by `shared`'s lock.
        var nextToken = 0
        /// The visible result last published. Protected by `shared`'s lock.
        var current: [Document] = []
        /// Protected by `shared`'s lock.
        var finished = false
    }

    /// One registered receiver: called with each snapshot, and `finish` (if any) when the live query stops.
    struct Receiver {
        let receive: @Sendable (LiveQuerySnapshot) -> Void
        let finish: (@Sendable () -> Void)?
    }

    private let shared = NIOLockedValueBox(Shared())

    init(collection: String, query: Query) {
        self.collection = collection
        self.query = query
    }

    var current: [Document] { shared.withLockedValue { $0.current } }

    /// A token for ``register(_:token:)`` and ``unregister(_:)``.
    func makeToken() -> Int {
        shared.withLockedValue { state in
            defer { state.nextToken += 1 }
            return state.nextToken
        }
    }

    /// Registers a receiver and hands it the current result with an empty diff. Must run on the notification queue,
    /// after the seed: every later snapshot is published on that queue too, so the receiver gets the current result
    /// first and every later one in order. A live query already stopped finishes the receiver at once.
    func register(_ receiver: Receiver, token: Int) {
        let current: [Document]? = shared.withLockedValue { state in
            guard !state.finished else { return nil }
            state.receivers[token] = receiver
            return state.current
        }
        guard let current else {
            receiver.finish?()
            return
        }
        receiver.receive(LiveQuerySnapshot(documents: current, diff: LiveQueryDiff()))
    }

    /// Removes a receiver (a cancelled iteration); it is not finished.
    func unregister(_ token: Int) {
        _ = shared.withLockedValue { $0.receivers.removeValue(forKey: token) }
    }

    func seed(_ snapshot: DatabaseSnapshot) {
        var all = snapshot.allDocuments(in: collection).filter(query.matches)
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

    /// Stops delivery and finishes every receiver that asked to be told (outside the lock).
    func finish() {
        let receivers: [Receiver] = shared.withLockedValue { state in
            state.finished = true
            defer { state.receivers.removeAll() }
            return Array(state.receivers.values)
        }
        for receiver in receivers { receiver.finish?() }
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
        let receivers: [Receiver] = shared.withLockedValue { state in
            state.current = documents
            return state.finished ? [] : state.receivers.sorted { $0.key < $1.key }.map(\.value)
        }
        let snapshot = LiveQuerySnapshot(documents: documents, diff: diff)
        for receiver in receivers { receiver.receive(snapshot) }
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
