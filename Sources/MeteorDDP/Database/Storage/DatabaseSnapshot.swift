import Atomics
import EJSON
import HashTreeCollections

/// An immutable version of the whole cache: collections of documents in persistent hash trees, so a new version
/// shares everything it did not change with the previous one and costs O(changes) to make.
struct DatabaseSnapshot: Sendable {
    typealias DocumentTable = TreeDictionary<String, Document>

    private(set) var collections: TreeDictionary<String, DocumentTable> = [:]

    func document(_ key: DocumentKey) -> Document? {
        collections[key.collectionName]?[key.documentID]
    }

    func documents(in collection: String) -> DocumentTable {
        collections[collection] ?? [:]
    }

    mutating func set(_ key: DocumentKey, fields: EJSONObject?) {
        if let fields {
            collections[key.collectionName, default: [:]][key.documentID] = Document(id: key.documentID, fields: fields)
        } else if collections[key.collectionName] != nil {
            collections[key.collectionName]!.removeValue(forKey: key.documentID)
            if collections[key.collectionName]!.isEmpty { collections.removeValue(forKey: key.collectionName) }
        }
    }

    var allKeys: [DocumentKey] {
        collections.flatMap { name, table in table.keys.map { DocumentKey(collectionName: name, documentID: $0) } }
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
