import Atomics
import EJSON
import HashTreeCollections

/// An immutable version of the whole cache: collections (a persistent hash tree of ``DocumentTable``s, themselves
/// persistent), so a new version shares everything it did not change with the previous one and costs O(changes) to make.
struct DatabaseSnapshot: Sendable {
    private(set) var collections: TreeDictionary<String, DocumentTable> = [:]

    func document(_ key: DocumentKey) -> Document? {
        collections[key.collectionName]?[key.documentID]
    }

    func documents(in collection: String) -> DocumentTable {
        collections[collection] ?? DocumentTable()
    }

    mutating func setTable(_ name: String, _ table: DocumentTable) {
        if table.isEmpty { collections.removeValue(forKey: name) } else { collections[name] = table }
    }

    var allKeys: [DocumentKey] {
        collections.flatMap { name, table in table.ids.map { DocumentKey(collectionName: name, documentID: $0) } }
    }
}

/// The published snapshot, swapped atomically at the end of each outermost transaction; readers load it without
/// taking any lock.
final class PublishedSnapshot: AtomicReference, Sendable {
    let snapshot: DatabaseSnapshot

    init(_ snapshot: DatabaseSnapshot) {
        self.snapshot = snapshot
    }
}
