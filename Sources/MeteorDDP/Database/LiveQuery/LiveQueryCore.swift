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
    /// The version of each document in `sorted`, by id: finds a document's place by binary search (the order is
    /// total: ties are broken by id), so a commit of k changes costs O(k log n), not O(k·n). Confined to the
    /// notification queue.
    private var byID: [String: Document] = [:]
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
        byID = Dictionary(all.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        seeded = true
        publish(visible(), diff: LiveQueryDiff())
    }

    func update(with changes: DatabaseChanges, snapshot: DatabaseSnapshot) {
        guard seeded else { return }
        let keys = changes.affectedDocumentKeys.filter { $0.collectionName == collection }
        guard !keys.isEmpty else { return }
        let old = visible()
        var previous: [String: Document] = [:]
        var current: [Document] = []
        for key in keys {
            if let version = byID.removeValue(forKey: key.documentID) { previous[key.documentID] = version }
            if let document = snapshot.document(key), query.matches(document) {
                current.append(document)
                byID[key.documentID] = document
            }
        }
        if keys.count <= 64 || keys.count * 32 < sorted.count {
            // A few changes: each is found and placed by binary search (O(k log n), plus moving the array's tail).
            for version in previous.values { sorted.remove(at: index(of: version)) }
            for document in current { sorted.insert(document, at: insertionIndex(for: document)) }
        } else {
            // Many: one pass drops the changed documents, one merge adds their new versions (O(n + k log k)).
            let changedIDs = Set(keys.map(\.documentID))
            sorted.removeAll { changedIDs.contains($0.id) }
            current.sort(by: query.areInIncreasingOrder)
            sorted = Self.merge(sorted, current, by: query.areInIncreasingOrder)
        }
        let new = visible()
        // Updated: changed documents in both results, found by binary search (O(k log n)).
        let windowed = query.limit != nil || query.skip != 0
        let oldIDs: Set<String>? = windowed ? Set(old.lazy.map(\.id)) : nil
        var updated: [Int] = []
        for (id, before) in previous {
            guard let after = byID[id], after != before, oldIDs?.contains(id) ?? true else { continue }
            if let fields = query.fields, fields.apply(after) == fields.apply(before) { continue }
            let index = index(of: after) - query.window(count: sorted.count).lowerBound
            if index >= 0, index < new.count { updated.append(index) }
        }
        let diff = Self.diff(from: old, to: new, updated: updated.sorted())
        guard !diff.isEmpty else { return }
        publish(new, diff: diff)
    }

    func finish() {
        let receivers: [Receiver] = shared.withLockedValue { state in
            state.finished = true
            defer { state.receivers.removeAll() }
            return Array(state.receivers.values)
        }
        for receiver in receivers { receiver.finish?() }
    }

    /// The window of the result the query shows, projected (a projection costs O(window) per change).
    private func visible() -> [Document] {
        let window = query.window(count: sorted.count)
        return query.project(window.count == sorted.count ? sorted : Array(sorted[window]))
    }

    /// Where `version` (a version in `sorted`) is.
    private func index(of version: Document) -> Int {
        let index = insertionIndex(for: version)
        if index < sorted.count, sorted[index].id == version.id { return index }
        // Not where the order says (cannot happen with a total order); fall back to a search.
        return sorted.firstIndex { $0.id == version.id }!
    }

    private static func merge(_ a: [Document], _ b: [Document], by areInIncreasingOrder: (Document, Document) -> Bool)
        -> [Document]
    {
        var merged: [Document] = []
        merged.reserveCapacity(a.count + b.count)
        var i = 0
        var j = 0
        while i < a.count, j < b.count {
            if areInIncreasingOrder(b[j], a[i]) {
                merged.append(b[j])
                j += 1
            } else {
                merged.append(a[i])
                i += 1
            }
        }
        merged.append(contentsOf: a[i...])
        merged.append(contentsOf: b[j...])
        return merged
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
        let oldByID = Dictionary(old.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        var updated: [Int] = []
        for (index, document) in new.enumerated() where changed.contains(document.id) {
            if let before = oldByID[document.id], before != document { updated.append(index) }
        }
        return diff(from: old, to: new, updated: updated)
    }

    /// The index diff between two results, with the indexes (in `new`) of the documents updated in place.
    static func diff(from old: [Document], to new: [Document], updated: [Int]) -> LiveQueryDiff {
        let difference = new.map(\.id).difference(from: old.map(\.id)).inferringMoves()
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
