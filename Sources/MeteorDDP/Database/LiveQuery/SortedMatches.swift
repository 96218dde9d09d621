/// Every document of a collection that matches a query, in the query's order, kept up to date one changed document
/// at a time: the state of a live query's engine. Confined to the database's notification queue by its owner.
struct SortedMatches {
    let collection: String
    let query: Query

    /// Every matching document in query order (before the window). Its order is total: ties are broken by id.
    private(set) var sorted: [Document] = []
    /// The version of each document in `sorted`, by id: a document's place is found by binary search, so a commit of
    /// k changes costs O(k log n), not O(k·n).
    private(set) var byID: [String: Document] = [:]

    init(collection: String, query: Query) {
        self.collection = collection
        self.query = query
    }

    /// Computes the matches from scratch.
    mutating func seed(_ snapshot: DatabaseSnapshot) {
        var all = snapshot.allDocuments(in: collection).filter(query.matches)
        all.sort(by: query.areInIncreasingOrder)
        sorted = all
        byID = Dictionary(all.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
    }

    /// Re-evaluates the documents of `keys` (all in this collection) against `snapshot`. Returns the previous
    /// version of each that matched before.
    mutating func apply(_ keys: [DocumentKey], _ snapshot: DatabaseSnapshot) -> [String: Document] {
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
        return previous
    }

    /// The documents in the query's window (skip and limit), not projected.
    func window() -> [Document] {
        let window = query.window(count: sorted.count)
        return window.count == sorted.count ? sorted : Array(sorted[window])
    }

    /// The window, projected: what the query shows (a projection costs O(window) per change).
    func visible() -> [Document] { query.project(window()) }

    /// The indexes in the current window of documents that were in `old` (the window before ``apply(_:_:)``) and
    /// whose visible fields changed; `previous` is what ``apply(_:_:)`` returned. O(k log n) for k changes.
    func updatedIndexes(previous: [String: Document], old: [Document]) -> [Int] {
        let windowed = query.limit != nil || query.skip != 0
        let oldIDs: Set<String>? = windowed ? Set(old.lazy.map(\.id)) : nil
        let window = query.window(count: sorted.count)
        var updated: [Int] = []
        for (id, before) in previous {
            guard let after = byID[id], after != before, oldIDs?.contains(id) ?? true else { continue }
            if let fields = query.fields, fields.apply(after) == fields.apply(before) { continue }
            let index = index(of: after) - window.lowerBound
            if index >= 0, index < window.count { updated.append(index) }
        }
        return updated.sorted()
    }

    /// Where `version` (a version in `sorted`) is.
    private func index(of version: Document) -> Int {
        let index = insertionIndex(for: version)
        if index < sorted.count, sorted[index].id == version.id { return index }
        // Not where the order says (cannot happen with a total order); fall back to a search.
        return sorted.firstIndex { $0.id == version.id }!
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
}
